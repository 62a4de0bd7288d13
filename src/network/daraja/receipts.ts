/**
 * The M-Pesa receipt of a push the STK push query says was paid. The query gives none and a callback is a claim
 * anyone can send, so the receipt is what transaction status states (./status-queries.ts); a push is credited once,
 * under its receipt or under the push itself until Daraja names the receipt for it
 * (docs/architecture.md#one-receipt-one-credit).
 */
import {
  DARAJA_NETWORK,
  PUSH_SUBJECT,
  callbackItems,
  completedFor,
  numberOfParty,
  receiptNaming,
  type StatusAnswer,
} from './protocol';
import type { StatusOf } from './status-queries';
import { compareDecimal } from '../../domain/money';
import type { NetworkOperation, NetworkRecords, PromptStatus, TakenPrompt } from '../adapter';
import { field, msisdnOf, nested } from '../operator-http';

const network = DARAJA_NETWORK;

/** What the receipt functions work with, built once per connector by `createPushReceipts`. */
type ReceiptContext = { records: NetworkRecords; statusOf: StatusOf };

/**
 * The receipt an STK callback gave, when it claims success for exactly this prompt's amount and number (only a
 * candidate: transaction status decides).
 */
function receiptOfHint(operation: NetworkOperation, prompt: TakenPrompt): string | null {
  const callback = nested(operation.hint, 'Body', 'stkCallback');
  if (field(callback, 'ResultCode') !== '0') return null;
  const items = callbackItems(callback);
  const amount = items.Amount;
  const sameAmount =
    amount !== undefined && /^\d+(\.\d+)?$/.test(amount) && compareDecimal(amount, prompt.amount) === 0;
  return sameAmount && items.PhoneNumber === msisdnOf(prompt.phoneNumber) ? (items.MpesaReceiptNumber ?? null) : null;
}

/**
 * The receipt of a paid prompt as transaction status states it: a completed transaction of exactly
 * the prompt's amount, from the prompt's number when M-Pesa names the payer in full, that
 * `asked` (the receipt a callback claimed) names, when it names one. Null when the answer says
 * otherwise.
 */
function receiptOfAnswer(answer: StatusAnswer, prompt: TakenPrompt, asked: string | null): string | null {
  const receipt = answer.parameters.ReceiptNo ?? null;
  if (receipt === null || !/^[A-Z0-9]{6,20}$/.test(receipt) || !completedFor(answer, prompt.amount)) return null;
  if (asked !== null && receipt !== asked) return null;
  const payer = numberOfParty(answer.parameters.DebitPartyName);
  return payer === null || payer === prompt.phoneNumber ? receipt : null;
}

/**
 * What the service knows of a paid push's receipt: `known`, still `waiting` for an answer, `unknown`, or `taken` by
 * another credit.
 */
type PushReceipt = { state: 'known'; receipt: string } | { state: 'waiting' | 'unknown' | 'taken' };

/** `receipt`, unless another payment holds it (a callback may name any real one). */
const ownReceipt = async (
  { records }: ReceiptContext,
  receipt: string | null,
  operation: NetworkOperation,
  prompt: TakenPrompt,
): Promise<PushReceipt | null> => {
  if (receipt === null) return null;
  return (await records.receiptHeldElsewhere(network, receipt, operation.id, prompt.promptReference))
    ? { state: 'taken' }
    : { state: 'known', receipt };
};

/**
 * The M-Pesa receipt of a prompt the STK push query says was paid, as transaction status states it
 * (the STK push query gives none, and a callback is a claim anyone can send): the callback's receipt
 * asked by its TransactionID, or, with no callback or one transaction status refutes, the push asked
 * by its CheckoutRequestID as the OriginalConversationID. Daraja documents only the first (a
 * transaction status of a CheckoutRequestID may answer R000002, "The OriginalTransactionID is
 * invalid"): with no receipt from either, it is `unknown`, and the push is credited without it.
 */
async function receiptOfPaidPrompt(
  context: ReceiptContext,
  operation: NetworkOperation,
  prompt: TakenPrompt,
  checkoutRequestId: string,
): Promise<PushReceipt> {
  const { statusOf } = context;
  const hinted = receiptOfHint(operation, prompt);
  if (hinted !== null) {
    // Any answer settles what M-Pesa says of one receipt.
    const byReceipt = await statusOf(
      `stk-receipt:${hinted}`,
      prompt.workflowId,
      () => ({ transactionId: hinted }),
      () => true,
    );
    if (byReceipt.state === 'waiting') return { state: 'waiting' };
    const confirmed =
      byReceipt.state === 'answered'
        ? await ownReceipt(context, receiptOfAnswer(byReceipt.result, prompt, hinted), operation, prompt)
        : null;
    if (confirmed?.state === 'known') return confirmed;
  }
  const byPush = await statusOf(
    `${PUSH_SUBJECT}${checkoutRequestId}`,
    prompt.workflowId,
    () => ({ originalConversationId: checkoutRequestId }),
    (answer) => receiptOfAnswer(answer, prompt, null) !== null,
  );
  if (byPush.state === 'waiting') return { state: 'waiting' };
  const stated =
    byPush.state === 'answered'
      ? await ownReceipt(context, receiptOfAnswer(byPush.result, prompt, null), operation, prompt)
      : null;
  // `taken`: M-Pesa names the push's receipt and another credit holds it: crediting the push too would credit it
  // twice.
  return stated ?? { state: 'unknown' };
}

/**
 * A push the STK push query says was paid: credited once, under its receipt when transaction status
 * states it, else under the push itself (its CheckoutRequestID), whose receipt then attaches to that
 * credit once Daraja names it for the push (its late callback, a transaction status answer naming the push, each
 * confirmed by transaction status asked by the receipt: `reportedPaymentStatus`); until then the credit stays under
 * the push. docs/architecture.md#one-receipt-one-credit
 */
async function paidPrompt(
  context: ReceiptContext,
  operation: NetworkOperation,
  prompt: TakenPrompt,
  checkoutRequestId: string,
): Promise<PromptStatus> {
  const { records } = context;
  const paid = (remoteTransactionId: string): PromptStatus => ({
    status: 'paid',
    remoteTransactionId,
    paymentDate: new Date().toISOString(),
  });
  if (operation.remoteTransactionId !== null) return paid(operation.remoteTransactionId);
  if (records.awaitsReceipt(operation)) return paid(checkoutRequestId);
  const learnt = await receiptOfPaidPrompt(context, operation, prompt, checkoutRequestId);
  if (learnt.state === 'known') return paid(await records.settleRemoteTransactionId(operation.id, learnt.receipt));
  if (learnt.state === 'taken') return { status: 'pending', recorded: true };
  if (learnt.state !== 'unknown') return { status: 'pending' };
  // A callback that came since `operation` was read is followed first (its receipt may be the push's).
  return (await records.markPromptPaid(operation.id, operation.hint)) ? paid(checkoutRequestId) : { status: 'pending' };
}

/**
 * The push of ours (its CheckoutRequestID) Daraja names for a receipt: the transaction status answer about the
 * receipt names the push as its ConversationID, or the push's own callback or status query named the receipt
 * (`receiptNaming`). `unsettled`: the push named is not settled yet and its request is open, so that request's own
 * workflow receives it. Null when Daraja names no push of ours awaiting its receipt; never a push guessed by number and
 * amount.
 */
async function pushNamedFor(
  { records }: ReceiptContext,
  result: StatusAnswer,
  receipt: string,
): Promise<string | null | 'unsettled'> {
  const conversationId = result.parameters.ConversationID;
  const push = conversationId ? await records.findOperationByOperatorReference(network, conversationId) : undefined;
  if (push?.kind === 'prompt' && push.operatorReference !== null) {
    // A push not settled yet whose request ended is still followed by that request, which may only learn that it was
    // paid, not its receipt, and would then credit it under the push: the receipt Daraja names for it is its payment,
    // and the push takes it now (`attachReceipt`), so that both credit it once, under the receipt.
    if (push.result === null && push.remoteTransactionId === null)
      return (await records.promptRequestOpen(push.reference)) ? 'unsettled' : push.operatorReference;
    if (records.awaitsReceipt(push)) return push.operatorReference;
  }
  return await records.pushNamingReceipt(network, receiptNaming(receipt));
}

/** `paidPrompt` and `pushNamedFor` of the connector, reading and keeping receipts in `records`. */
export function createPushReceipts(records: NetworkRecords, statusOf: StatusOf) {
  const context: ReceiptContext = { records, statusOf };
  return {
    paidPrompt: (operation: NetworkOperation, prompt: TakenPrompt, checkoutRequestId: string) =>
      paidPrompt(context, operation, prompt, checkoutRequestId),
    pushNamedFor: (result: StatusAnswer, receipt: string) => pushNamedFor(context, result, receipt),
  };
}
