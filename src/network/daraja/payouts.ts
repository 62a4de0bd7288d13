/**
 * Money out through Daraja: B2C for payments, carrying an OriginatorConversationID derived from our payout (Daraja
 * refuses a repeat with "Duplicate OriginatorConversationID", which means "already sent"), and the Reversal API for
 * reversals of an M-Pesa receipt, never sent again for the same attempt while its answer may still come. A B2C result
 * or a reversal result wakes the workflow (./callbacks.ts), which asks transaction status (./status-queries.ts).
 */
import { createHash } from 'node:crypto';
import type { DarajaCalls } from './calls';
import {
  DARAJA_CALLBACK_PATHS,
  DARAJA_NETWORK,
  accepted,
  completedFor,
  errorOf,
  readResult,
  reversalSubject,
  whole,
  type StatusAnswer,
} from './protocol';
import type { StatusOf } from './status-queries';
import type { NetworkOperation, NetworkRecords, Payout, PayoutResult } from '../adapter';
import { field, msisdnOf, type OperatorAnswer } from '../operator-http';

/** Daraja's result for a reversal of a transaction already reversed: the reversal is done. */
const ALREADY_REVERSED = 'R000001';

/** A payout's status answer settles it when M-Pesa knows the transaction and it is no longer in progress. */
const settlesPayout = (answer: StatusAnswer) =>
  answer.resultCode === '0' &&
  answer.parameters.TransactionStatus !== undefined &&
  !/pending|progress/i.test(answer.parameters.TransactionStatus);

/** What a settling transaction status answer says of a payout or reversal of `payout.amount`. */
function payoutOfAnswer(result: StatusAnswer, payout: Payout, subject: string): PayoutResult {
  const receipt = result.parameters.ReceiptNo ?? result.transactionId ?? null;
  if (completedFor(result, payout.amount)) return { status: 'completed', remoteTransactionId: receipt ?? subject };
  if (
    result.parameters.TransactionStatus === undefined ||
    /pending|progress/i.test(result.parameters.TransactionStatus)
  )
    return { status: 'pending', remoteTransactionId: receipt };
  return {
    status: 'rejected',
    error: `M-Pesa did not pay it out: ${result.parameters.TransactionStatus}.`,
    remoteTransactionId: receipt,
  };
}

/** Reversals of an M-Pesa receipt go through the Reversal API; anything else is sent back by B2C. */
const usesReversalApi = (payout: Payout) =>
  payout.kind === 'reversal' && /^[A-Z0-9]{10}$/.test(payout.originalTransactionId ?? '');

const network = DARAJA_NETWORK;

/** What the payout functions work with, built once per connector by `createDarajaPayouts`. */
type PayoutContext = DarajaCalls & {
  records: NetworkRecords;
  statusOf: StatusOf;
  /**
   * A reversal whose answer and result were both lost is sent again once its window has passed since the last send
   * (Daraja reverses a payment once).
   */
  reversalResendSeconds: number;
};

/**
 * Our B2C OriginatorConversationID: the payout's reference, namespaced by this app so two deployments never collide.
 */
const originatorConversationId = ({ settings }: PayoutContext, reference: string) =>
  `${reference}-${createHash('sha256').update(`${settings.consumerKey}:${reference}`).digest('hex').slice(0, 10)}`;

async function sendB2c(
  { settings, post, url, records }: PayoutContext,
  payout: Payout,
  conversationKey: string,
): Promise<PayoutResult> {
  const answer = await post('/mpesa/b2c/v3/paymentrequest', {
    OriginatorConversationID: conversationKey,
    InitiatorName: settings.initiatorName,
    SecurityCredential: settings.securityCredential,
    CommandID: 'BusinessPayment',
    Amount: whole(payout.amount),
    PartyA: settings.shortcode,
    PartyB: msisdnOf(payout.phoneNumber),
    Remarks: payout.kind === 'reversal' ? 'Payment returned' : 'Payment',
    QueueTimeOutURL: url(DARAJA_CALLBACK_PATHS.timeout),
    ResultURL: url(DARAJA_CALLBACK_PATHS.result),
    Occassion: payout.reference,
  });
  const conversationId = field(answer.body, 'ConversationID');
  if (accepted(answer) && conversationId !== undefined) {
    const operation = await records.findOperation(network, conversationKey);
    if (operation) await records.setOperatorReference(operation.id, conversationId);
    return { status: 'pending', remoteTransactionId: null };
  }
  // A repeat of our own OriginatorConversationID: Daraja has the payout already.
  if (/duplicate originatorconversationid/i.test(field(answer.body, 'errorMessage') ?? ''))
    return { status: 'pending', remoteTransactionId: null };
  if (answer.status === 400)
    return {
      status: 'rejected',
      error: `M-Pesa refused the payout (${errorOf(answer)}).`,
      remoteTransactionId: null,
    };
  throw new Error(`Daraja B2C not taken: ${errorOf(answer)}`);
}

/**
 * Sends a reversal to Daraja's Reversal API; the ConversationID of an answer that came is kept (the first one
 * stays). Null when no answer came: Daraja may have reversed it all the same.
 */
async function postReversal(
  { settings, post, url, records }: PayoutContext,
  payout: Payout,
  operation: NetworkOperation,
): Promise<OperatorAnswer | null> {
  const answer = await post('/mpesa/reversal/v1/request', {
    Initiator: settings.initiatorName,
    SecurityCredential: settings.securityCredential,
    CommandID: 'TransactionReversal',
    TransactionID: payout.originalTransactionId,
    Amount: whole(payout.amount),
    ReceiverParty: settings.shortcode,
    RecieverIdentifierType: '11',
    ResultURL: url(DARAJA_CALLBACK_PATHS.result),
    QueueTimeOutURL: url(DARAJA_CALLBACK_PATHS.timeout),
    Remarks: 'Payment returned',
  }).catch(() => null);
  const conversationId = answer ? field(answer.body, 'ConversationID') : undefined;
  if (answer && accepted(answer) && conversationId !== undefined)
    await records.setOperatorReference(operation.id, conversationId);
  return answer;
}

/**
 * Where a reversal stands. Daraja's result (kept as the operation's hint, tied to it by its
 * ConversationID or by the transaction it reverses: ./callbacks.ts) or its first answer gives what
 * transaction status finds the reversal by: the reversal's own TransactionID, else its ConversationID.
 * With neither (the answer and the result both lost), nothing is asked about nothing: once the window
 * (`reversalResendSeconds`) has passed since its last send, the reversal is sent again, once per
 * window however often it is looked at, and Daraja either carries it out (it never got the first) or
 * answers "already reversed".
 *
 * "Already reversed" (R000001) completes the reversal, whichever send it answers: Daraja reverses a
 * transaction once, so the subscriber has the money back. Answering a resend, it is our first send
 * carried out. Answering the first send, the collection was reversed outside this service (the M-Pesa
 * organization portal, Safaricom's customer care): the money went back to the subscriber all the
 * same, so the merchant's wallet keeps the one debit this reversal made when it was created. Failing
 * it would give that debit back while M-Pesa has sent the money out: the merchant would hold it twice.
 */
async function reversalStatus(context: PayoutContext, payout: Payout): Promise<PayoutResult> {
  const { records, statusOf, reversalResendSeconds } = context;
  const subject = `reversal:${payout.reference}`;
  const operation = await records.findOperation(network, subject);
  if (!operation) return { status: 'pending', remoteTransactionId: null };
  const hint = readResult(operation.hint);
  if (hint?.resultCode === ALREADY_REVERSED) return { status: 'completed', remoteTransactionId: subject };
  const keys = {
    transactionId: hint?.resultCode === '0' ? hint.transactionId : undefined,
    originalConversationId: operation.operatorReference ?? hint?.conversationId,
  };
  if (!keys.transactionId && !keys.originalConversationId) {
    if (await records.claimResend(operation.id, reversalResendSeconds)) await postReversal(context, payout, operation);
    return { status: 'pending', remoteTransactionId: null };
  }
  const status = await statusOf(subject, payout.workflowId, () => keys, settlesPayout);
  // An answer that does not know the transaction (yet): the result and its transaction status are awaited.
  if (status.state !== 'answered' || status.result.resultCode !== '0')
    return { status: 'pending', remoteTransactionId: null };
  return payoutOfAnswer(status.result, payout, subject);
}

/**
 * How a reversal went out, fixed by its first send: by the Reversal API (a record under `reversal:<reference>`), by
 * B2C (a record under its OriginatorConversationID: its collection had no receipt yet), or not by this connector
 * yet. The collection's id is read anew at each call and may have changed since (credited under its push, then
 * named by its receipt), so the id it names now does not say how the reversal was sent: sending it the other way
 * would pay the subscriber twice.
 */
async function reversalSentBy(context: PayoutContext, payout: Payout): Promise<'reversal-api' | 'b2c' | null> {
  const { records } = context;
  if (await records.findOperation(network, `reversal:${payout.reference}`)) return 'reversal-api';
  if (await records.findOperation(network, originatorConversationId(context, payout.reference))) return 'b2c';
  return null;
}

async function sendMoney(context: PayoutContext, payout: Payout): Promise<PayoutResult> {
  const { tokens, records } = context;
  const sentBy = payout.kind === 'reversal' ? await reversalSentBy(context, payout) : null;
  // Sent the Reversal API's way before: its status tells.
  if (sentBy === 'reversal-api') return { status: 'pending', remoteTransactionId: null };
  if (usesReversalApi(payout) && sentBy === null) {
    const reference = `reversal:${payout.reference}`;
    await tokens.get();
    const operation = await records.recordOperation({
      network,
      kind: 'reversal',
      reference,
      workflowId: payout.workflowId,
      subject: reversalSubject(payout.originalTransactionId!),
      phoneNumber: payout.phoneNumber,
      amount: payout.amount,
    });
    // Sent before (its answer may have been lost): a second would be refused as "already reversed".
    if (!operation.inserted) return { status: 'pending', remoteTransactionId: null };
    await records.markOperationSent(operation.id);
    const answer = await postReversal(context, payout, operation);
    if (answer?.status === 400) {
      await records.forgetOperation(operation.id);
      return {
        status: 'rejected',
        error: `M-Pesa refused the reversal (${errorOf(answer)}).`,
        remoteTransactionId: null,
      };
    }
    return { status: 'pending', remoteTransactionId: null };
  }
  const conversationKey = originatorConversationId(context, payout.reference);
  const operation = await records.recordOperation({
    network,
    kind: 'payout',
    reference: conversationKey,
    workflowId: payout.workflowId,
    subject: conversationKey,
    phoneNumber: payout.phoneNumber,
    amount: payout.amount,
  });
  if (operation.operatorReference !== null) return { status: 'pending', remoteTransactionId: null };
  return await sendB2c(context, payout, conversationKey);
}

async function payoutStatus(context: PayoutContext, payout: Payout): Promise<PayoutResult> {
  const { records, statusOf } = context;
  const sentBy = payout.kind === 'reversal' ? await reversalSentBy(context, payout) : null;
  if (sentBy === 'reversal-api') return await reversalStatus(context, payout);
  // Recorded by the core but never sent by this connector (the worker stopped between the two): sent now, once its
  // window has passed since the core recorded it (an attempt still under way has long recorded its own by then).
  if (sentBy === null && usesReversalApi(payout)) {
    const recordedAt = payout.recorded?.at.getTime();
    if (recordedAt === undefined || Date.now() - recordedAt < context.reversalResendSeconds * 1000)
      return { status: 'pending', remoteTransactionId: null };
    return await sendMoney(context, payout);
  }
  const subject = originatorConversationId(context, payout.reference);
  const operation = await records.findOperation(network, subject);
  const hint = readResult(operation?.hint);
  // Our own OriginatorConversationID, never a receipt a callback claimed: the callback may lie.
  const status = await statusOf(subject, payout.workflowId, () => ({ originalConversationId: subject }), settlesPayout);
  if (status.state !== 'answered') return { status: 'pending', remoteTransactionId: null };
  const { result } = status;
  // M-Pesa has no such transaction: a B2C it never took is sent again under the same id (a repeat is refused as a
  // duplicate).
  if (result.resultCode !== '0') return await sendB2c(context, payout, subject);
  const settled = payoutOfAnswer(result, payout, subject);
  if (settled.status !== 'rejected') return settled;
  const reason = hint && hint.resultCode !== '0' ? hint.description : result.parameters.TransactionStatus;
  // B2C result 1: our paybill's utility account held too little (its float), so another route may pay it.
  return {
    ...settled,
    error: `M-Pesa did not pay it out: ${reason}.`,
    ...(hint?.resultCode === '1' ? { routeFault: true as const } : {}),
  };
}

/** `sendMoney` and `payoutStatus` of the connector; `inFlightWindowSeconds`: the connector's (./client.ts). */
export function createDarajaPayouts(
  { settings, tokens, post, url }: DarajaCalls,
  records: NetworkRecords,
  statusOf: StatusOf,
  inFlightWindowSeconds: number,
) {
  const context: PayoutContext = {
    settings,
    tokens,
    post,
    url,
    records,
    statusOf,
    reversalResendSeconds: inFlightWindowSeconds,
  };
  return {
    sendMoney: (payout: Payout) => sendMoney(context, payout),
    payoutStatus: (payout: Payout) => payoutStatus(context, payout),
  };
}
