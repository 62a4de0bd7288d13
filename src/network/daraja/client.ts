/**
 * Safaricom M-Pesa Daraja connector (Safaricom, KES): STK push (Lipa na M-Pesa Online) and its
 * query, C2B registration (validation and confirmation arrive at the callback routes), B2C for
 * payments, the Reversal API for reversals, and transaction status for whatever needs confirming.
 *
 * Nothing is believed on a callback alone: an STK callback wakes the request's workflow, which then
 * asks the STK push query; a paybill confirmation, a B2C result or a reversal result wakes its
 * workflow, which asks transaction status. Daraja answers transaction status asynchronously, at our
 * result URL, under a ConversationID it gave only to us: the answer is kept with its query
 * (the core's records, services/networks/records.ts) and read at the workflow's next look.
 *
 * A retried call never pays or charges twice: B2C carries an OriginatorConversationID derived from
 * our payout (Daraja refuses a repeat with "Duplicate OriginatorConversationID", which means "already
 * sent"); an STK push or a reversal whose answer was lost is never sent again for the same attempt:
 * the operator's callback names it (for a push: by number and amount, only when exactly one unanswered push in the
 * service fits) and a status query settles it.
 */
import { createHash } from 'node:crypto';
import type { MpesaSettings } from './settings';
import { compareDecimal } from '../../domain/money';
import type {
  PaymentPrompt,
  Payout,
  PayoutResult,
  PromptResult,
  PromptStatus,
  ReportedPayment,
  ReportedPaymentStatus,
  TakenPrompt,
  ConnectorDeps,
  NetworkOperation,
  ReceiptNaming,
} from '../adapter';
import {
  callOperator,
  callWithToken,
  createTokenCache,
  field,
  msisdnOf,
  nested,
  neverSent,
  wholeAmount,
  type OperatorAnswer,
} from '../operator-http';

/** The one network Daraja serves (in KES). */
export const DARAJA_NETWORK = 'Safaricom';

/** A push whose answer was lost and that no callback named in this long has timed out on the phone too. */
export const UNANSWERED_PROMPT_SECONDS = 120;
/** Daraja's result for a reversal of a transaction already reversed: the reversal is done. */
const ALREADY_REVERSED = 'R000001';
/** A reversal's subject: the M-Pesa transaction it sends back, which Daraja's result names (OriginalTransactionID). */
export const reversalSubject = (originalTransactionId: string): string => `reversal-of:${originalTransactionId}`;
/**
 * How long a push of ours to a number that the STK push query has not yet called paid or failed holds
 * back a reported payment of the same number and amount: the push's request is credited first (a
 * prompt times out on the phone within minutes), and a push paid without its receipt then takes it.
 */
const UNSETTLED_PROMPT_SECONDS = 15 * 60;

/**
 * The callback routes Daraja calls (./callbacks.ts), under PUBLIC_BASE_URL. Safaricom
 * refuses registered URLs that name it or its product, so none of these does.
 */
export const DARAJA_CALLBACK_PATHS = {
  stkResult: '/network/prompts/result',
  validation: '/network/paybill/validation',
  confirmation: '/network/paybill/confirmation',
  result: '/network/results',
  timeout: '/network/timeouts',
} as const;

/** STK push result codes (MpesaExpressSimulate's table) in words a merchant understands. */
const STK_RESULTS: Readonly<Record<string, string>> = {
  '1': "The subscriber's M-Pesa balance is not enough.",
  '2': "The amount is below M-Pesa's minimum.",
  '3': "The amount is above M-Pesa's maximum for one transaction.",
  '4': "The payment would pass the subscriber's daily M-Pesa limit.",
  '8': "The payment would pass the account's maximum balance.",
  '17': 'M-Pesa refused a repeat of the same payment within two minutes.',
  '1019': 'The prompt expired before the subscriber answered.',
  '1025': 'M-Pesa could not send the prompt.',
  '1032': 'The subscriber cancelled the payment prompt.',
  '1037': "The subscriber's phone could not be reached.",
  '2001': 'The subscriber entered a wrong M-Pesa PIN.',
  '8006': "The subscriber's M-Pesa PIN is locked.",
};
export const stkFailure = (code: string, description: string | undefined): string =>
  STK_RESULTS[code] ?? `M-Pesa refused the payment (${code}${description ? `: ${description}` : ''}).`;

/** Daraja's timestamps are Kenya's local time (EAT, UTC+3), YYYYMMDDHHmmss. */
export function darajaTimestamp(now = new Date()): string {
  return new Date(now.getTime() + 3 * 3600_000).toISOString().replace(/\D/g, '').slice(0, 14);
}

export type ResultParameters = Record<string, string>;

/**
 * Daraja's lists of `{Name, Value}` or `{Key, Value}` pairs (an STK callback's metadata items, a
 * result's parameters) by name, read from whatever arrived: a list, or a lone pair where Daraja sends
 * one item bare. Anything that is not such a pair is passed over; a name can repeat
 * (DebitPartyName twice in the documented sample), and the first stays.
 */
function namedValues(list: unknown, nameField: 'Name' | 'Key'): ResultParameters {
  const values: ResultParameters = Object.create(null) as ResultParameters;
  const items: unknown[] = Array.isArray(list) ? list : typeof list === 'object' && list !== null ? [list] : [];
  for (const item of items) {
    const name = field(item, nameField);
    const value = field(item, 'Value');
    if (name !== undefined && value !== undefined && !Object.hasOwn(values, name)) values[name] = value;
  }
  return values;
}

/** An STK callback's metadata items by name (`Amount`, `MpesaReceiptNumber`, `PhoneNumber`, ...). */
export const callbackItems = (callback: unknown): ResultParameters =>
  namedValues(nested(callback, 'CallbackMetadata', 'Item'), 'Name');

/** The `Result` of an asynchronous Daraja answer: its code, description and parameters by key. */
export function readResult(body: unknown): {
  resultCode: string;
  description: string;
  conversationId?: string;
  originatorConversationId?: string;
  transactionId?: string;
  parameters: ResultParameters;
} | null {
  const result = nested(body, 'Result');
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return null;
  const parameters = namedValues(nested(result, 'ResultParameters', 'ResultParameter'), 'Key');
  return {
    resultCode: field(result, 'ResultCode') ?? '',
    description: field(result, 'ResultDesc') ?? '',
    conversationId: field(result, 'ConversationID'),
    originatorConversationId: field(result, 'OriginatorConversationID'),
    transactionId: field(result, 'TransactionID'),
    parameters,
  };
}

/** `254712345678 - Jane Doe` → `+254712345678`, when the party is a number given in full. */
export function numberOfParty(party: string | undefined): string | null {
  const digits = /^\s*(\d{12})\b/.exec(party ?? '')?.[1];
  return digits ? `+${digits}` : null;
}

/**
 * The subjects of the status queries about a paid push's receipt: by the receipt its callback named, and by the push.
 */
export const PUSH_RECEIPT_SUBJECT = /^stk-(?:receipt|push):/;
/** The subject of the status query about a push by its CheckoutRequestID, before that id. */
const PUSH_SUBJECT = 'stk-push:';

/**
 * What names `receipt` as a push's in Daraja's own words: the push's callback (its MpesaReceiptNumber) or a
 * transaction status answer about the push (its ReceiptNo) (services/networks/receipts.ts `pushNamingReceipt`).
 */
export const receiptNaming = (receipt: string): ReceiptNaming => ({
  hintNaming: {
    Body: { stkCallback: { CallbackMetadata: { Item: [{ Name: 'MpesaReceiptNumber', Value: receipt }] } } },
  },
  answerNaming: { Result: { ResultParameters: { ResultParameter: [{ Key: 'ReceiptNo', Value: receipt }] } } },
  statusSubjectPrefix: PUSH_SUBJECT,
});

/** The completed payment a transaction status answer states (its receipt, payer in full, whole amount), or null. */
export function completedPaymentOf(
  result: ReturnType<typeof readResult>,
): { receipt: string; phoneNumber: string; amount: string } | null {
  const receipt = result?.parameters.ReceiptNo;
  const amount = /^(\d{1,12})(\.0+)?$/.exec(result?.parameters.Amount ?? '')?.[1];
  const phoneNumber = numberOfParty(result?.parameters.DebitPartyName);
  if (
    result?.resultCode !== '0' ||
    result.parameters.TransactionStatus !== 'Completed' ||
    receipt === undefined ||
    !/^[A-Z0-9]{6,20}$/.test(receipt)
  )
    return null;
  return amount !== undefined && phoneNumber !== null ? { receipt, phoneNumber, amount } : null;
}

/** `inFlightWindowSeconds`: the unit's window (docs/going-live.md#in-doubt-is-not-refused), or the configured one. */
type DarajaDeps = Pick<ConnectorDeps, 'records' | 'callbackBaseUrl' | 'inFlightWindowSeconds'>;
export function createDarajaConnector(
  settings: MpesaSettings,
  { records, callbackBaseUrl, inFlightWindowSeconds }: DarajaDeps,
  statusPollSeconds: number,
) {
  const network = DARAJA_NETWORK;
  // A reversal whose answer and result were both lost is sent again once its window has passed since the last send
  // (Daraja reverses a payment once).
  const reversalResendSeconds = inFlightWindowSeconds;
  const url = (path: string) => `${callbackBaseUrl}${path}`;
  const tokens = createTokenCache(async () => {
    const answer = await callOperator({
      method: 'GET',
      url: `${settings.baseUrl}/oauth/v1/generate?grant_type=client_credentials`,
      headers: {
        Authorization: `Basic ${Buffer.from(`${settings.consumerKey}:${settings.consumerSecret}`).toString('base64')}`,
      },
    });
    const token = field(answer.body, 'access_token');
    if (answer.status !== 200 || token === undefined)
      throw new Error(`Daraja token refused: HTTP ${answer.status} ${field(answer.body, 'errorCode') ?? ''}`.trim());
    // Daraja sends expires_in as text ("3599") or as a number.
    return { value: token, expiresAt: Date.now() + (Number(field(answer.body, 'expires_in')) || 3599) * 1000 };
  });
  const post = (path: string, json: Record<string, unknown>) =>
    callWithToken(tokens, { method: 'POST', url: `${settings.baseUrl}${path}`, json });
  const password = (timestamp: string) =>
    Buffer.from(`${settings.shortcode}${settings.passkey}${timestamp}`).toString('base64');
  const errorOf = (answer: OperatorAnswer) =>
    `${field(answer.body, 'errorCode') ?? `HTTP ${answer.status}`}: ${field(answer.body, 'errorMessage') ?? ''}`.trim();
  const accepted = (answer: OperatorAnswer) => answer.status === 200 && field(answer.body, 'ResponseCode') === '0';
  /**
   * Our B2C OriginatorConversationID: the payout's reference, namespaced by this app so two deployments never collide.
   */
  const originatorConversationId = (reference: string) =>
    `${reference}-${createHash('sha256').update(`${settings.consumerKey}:${reference}`).digest('hex').slice(0, 10)}`;
  const whole = (amount: string) => Number(wholeAmount(amount) ?? Math.round(Number(amount)));

  /**
   * Asks transaction status about `subject`; the answer arrives later at the result URL, under the ConversationID
   * recorded here.
   */
  async function askStatus(
    subject: string,
    workflowId: string,
    keys: { transactionId?: string; originalConversationId?: string },
  ): Promise<void> {
    const answer = await post('/mpesa/transactionstatus/v1/query', {
      Initiator: settings.initiatorName,
      SecurityCredential: settings.securityCredential,
      CommandID: 'TransactionStatusQuery',
      ...(keys.transactionId ? { TransactionID: keys.transactionId } : {}),
      ...(keys.originalConversationId ? { OriginalConversationID: keys.originalConversationId } : {}),
      PartyA: settings.shortcode,
      IdentifierType: '4',
      ResultURL: url(DARAJA_CALLBACK_PATHS.result),
      QueueTimeOutURL: url(DARAJA_CALLBACK_PATHS.timeout),
      Remarks: 'Status check',
      Occasion: subject.slice(0, 100),
    });
    const conversationId = field(answer.body, 'ConversationID');
    if (!accepted(answer) || conversationId === undefined)
      throw new Error(`Daraja transaction status not taken: ${errorOf(answer)}`);
    await records.recordOperation({
      network,
      kind: 'status_query',
      reference: `status:${field(answer.body, 'OriginatorConversationID') ?? conversationId}`,
      operatorReference: conversationId,
      workflowId,
      subject,
    });
  }

  type StatusAnswer = NonNullable<ReturnType<typeof readResult>>;
  type Confirmed = { state: 'answered'; result: StatusAnswer } | { state: 'waiting' | 'unanswered' };

  /**
   * The answer of the newest status query about `subject`, or an earlier query's answer that settles
   * the matter (an operator slower than a poll answers a query after the next one was asked). A new
   * query is asked (its answer comes at a later look) when there is none yet, or when the last answer
   * does not settle the matter (`settles` says no: not yet completed, not yet known) and a poll has
   * passed since it was asked. `waiting`: a query was just asked; `unanswered`: the last one went a
   * poll without an answer (asked again now).
   */
  async function statusOf(
    subject: string,
    workflowId: string,
    keys: () => { transactionId?: string; originalConversationId?: string },
    settles: (answer: StatusAnswer) => boolean,
  ): Promise<Confirmed> {
    const last = await records.latestStatusQuery(network, subject);
    const earlier = last?.result ? null : readResult(last?.newestAnswer);
    if (earlier && settles(earlier)) return { state: 'answered', result: earlier };
    const result = last?.result ? readResult(last.result) : null;
    const young = last !== undefined && Date.now() - last.created.getTime() < statusPollSeconds * 1000 * 0.8;
    if (result && (settles(result) || young)) return { state: 'answered', result };
    if (!result && young) return { state: 'waiting' };
    await askStatus(subject, workflowId, keys());
    if (result) return { state: 'answered', result };
    return { state: last === undefined ? 'waiting' : 'unanswered' };
  }

  /** A payout's status answer settles it when M-Pesa knows the transaction and it is no longer in progress. */
  const settlesPayout = (answer: StatusAnswer) =>
    answer.resultCode === '0' &&
    answer.parameters.TransactionStatus !== undefined &&
    !/pending|progress/i.test(answer.parameters.TransactionStatus);

  /** A status answer that says the transaction completed for exactly `amount`. */
  const completedFor = (result: NonNullable<ReturnType<typeof readResult>>, amount: string) =>
    result.resultCode === '0' &&
    result.parameters.TransactionStatus === 'Completed' &&
    result.parameters.Amount !== undefined &&
    /^\d+(\.\d+)?$/.test(result.parameters.Amount) &&
    compareDecimal(result.parameters.Amount, amount) === 0;

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
    operation: NetworkOperation,
    prompt: TakenPrompt,
    checkoutRequestId: string,
  ): Promise<PushReceipt> {
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
          ? await ownReceipt(receiptOfAnswer(byReceipt.result, prompt, hinted), operation, prompt)
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
        ? await ownReceipt(receiptOfAnswer(byPush.result, prompt, null), operation, prompt)
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
    operation: NetworkOperation,
    prompt: TakenPrompt,
    checkoutRequestId: string,
  ): Promise<PromptStatus> {
    const paid = (remoteTransactionId: string): PromptStatus => ({
      status: 'paid',
      remoteTransactionId,
      paymentDate: new Date().toISOString(),
    });
    if (operation.remoteTransactionId !== null) return paid(operation.remoteTransactionId);
    if (records.awaitsReceipt(operation)) return paid(checkoutRequestId);
    const learnt = await receiptOfPaidPrompt(operation, prompt, checkoutRequestId);
    if (learnt.state === 'known') return paid(await records.settleRemoteTransactionId(operation.id, learnt.receipt));
    if (learnt.state !== 'unknown') return { status: 'pending' };
    // A callback that came since `operation` was read is followed first (its receipt may be the push's).
    return (await records.markPromptPaid(operation.id, operation.hint))
      ? paid(checkoutRequestId)
      : { status: 'pending' };
  }

  /**
   * The push of ours (its CheckoutRequestID) Daraja names for a receipt: the transaction status answer about the
   * receipt names the push as its ConversationID, or the push's own callback or status query named the receipt
   * (`receiptNaming`). `unsettled`: the push named is not settled yet. Null when Daraja names no push of ours awaiting
   * its receipt; never a push guessed by number and amount.
   */
  async function pushNamedFor(result: StatusAnswer, receipt: string): Promise<string | null | 'unsettled'> {
    const conversationId = result.parameters.ConversationID;
    const push = conversationId ? await records.findOperationByOperatorReference(network, conversationId) : undefined;
    if (push?.kind === 'prompt' && push.operatorReference !== null) {
      // A push whose request ended is followed by nobody: it never settles, and nothing waits for it.
      if (
        push.result === null &&
        push.remoteTransactionId === null &&
        (await records.promptRequestOpen(push.reference))
      )
        return 'unsettled';
      if (records.awaitsReceipt(push)) return push.operatorReference;
    }
    return await records.pushNamingReceipt(network, receiptNaming(receipt));
  }

  async function sendB2c(payout: Payout, conversationKey: string): Promise<PayoutResult> {
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

  /**
   * Sends a reversal to Daraja's Reversal API; the ConversationID of an answer that came is kept (the first one
   * stays). Null when no answer came: Daraja may have reversed it all the same.
   */
  async function postReversal(payout: Payout, operation: NetworkOperation): Promise<OperatorAnswer | null> {
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
  async function reversalStatus(payout: Payout): Promise<PayoutResult> {
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
      if (await records.claimResend(operation.id, reversalResendSeconds)) await postReversal(payout, operation);
      return { status: 'pending', remoteTransactionId: null };
    }
    const status = await statusOf(subject, payout.workflowId, () => keys, settlesPayout);
    // An answer that does not know the transaction (yet): the result and its transaction status are awaited.
    if (status.state !== 'answered' || status.result.resultCode !== '0')
      return { status: 'pending', remoteTransactionId: null };
    return payoutOfAnswer(status.result, payout, subject);
  }

  /** Reversals of an M-Pesa receipt go through the Reversal API; anything else is sent back by B2C. */
  const usesReversalApi = (payout: Payout) =>
    payout.kind === 'reversal' && /^[A-Z0-9]{10}$/.test(payout.originalTransactionId ?? '');

  return {
    async requestPayment(prompt: PaymentPrompt): Promise<PromptResult> {
      // A token first: failing to get one sends nothing, and the activity's retry may push cleanly.
      await tokens.get();
      // Recorded by the core before this call, and pushed once per attempt: the operation journal
      // (src/network/routes.ts) never asks again for an attempt it recorded, since a push carries no id of ours that
      // a second one could be refused by.
      const timestamp = darajaTimestamp();
      const msisdn = Number(msisdnOf(prompt.phoneNumber));
      const answer = await post('/mpesa/stkpush/v1/processrequest', {
        BusinessShortCode: Number(settings.shortcode),
        Password: password(timestamp),
        Timestamp: timestamp,
        TransactionType: 'CustomerPayBillOnline',
        Amount: whole(prompt.amount),
        PartyA: msisdn,
        PartyB: Number(settings.shortcode),
        PhoneNumber: msisdn,
        CallBackURL: url(DARAJA_CALLBACK_PATHS.stkResult),
        // Shown on the phone: at most 12 characters; the transaction description at most 13.
        AccountReference: accountReference(prompt.reference),
        TransactionDesc: prompt.promptReference.slice(0, 13),
        // A connection refused sent nothing: the journal may take the prompt elsewhere. Any other failure may have
        // pushed.
      }).catch((error: unknown) => {
        if (neverSent(error)) throw error;
        return null;
      });
      const checkoutRequestId = answer ? field(answer.body, 'CheckoutRequestID') : undefined;
      // The core records the CheckoutRequestID as the prompt's operator reference.
      if (answer && accepted(answer) && checkoutRequestId !== undefined) {
        return { accepted: true, confirm: { operatorReference: checkoutRequestId } };
      }
      // No answer, or a server error: the push may have gone out. It is never repeated for this attempt;
      // its callback names it, or it counts as unanswered after UNANSWERED_PROMPT_SECONDS.
      const message = answer ? (field(answer.body, 'errorMessage') ?? '') : '';
      if (
        answer === null ||
        (answer.status >= 500 && !/lock subscriber|wrong credentials|merchant does not exist/i.test(message))
      ) {
        return { accepted: true, confirm: { operatorReference: prompt.promptReference } };
      }
      // Daraja refused it outright: nothing went out (the journal marks the attempt refused).
      if (/lock subscriber/i.test(message))
        return { accepted: false, error: 'Another M-Pesa prompt is still open on this phone.' };
      return { accepted: false, error: `M-Pesa refused the prompt (${errorOf(answer)}).` };
    },

    async promptStatus(prompt: TakenPrompt): Promise<PromptStatus> {
      const operation = await records.findOperation(network, prompt.promptReference);
      if (!operation) return { status: 'failed', error: 'The prompt never reached M-Pesa.' };
      // A push whose answer was lost has no CheckoutRequestID (the journal may hold our own reference in its place):
      // Daraja's push query knows nothing by ours, so only its callback can name it (./callbacks.ts). Until then it is
      // pending; after UNANSWERED_PROMPT_SECONDS it has timed out on the phone and the prompt fails. A payment of it
      // that still comes later is reported on its own, and goes to nobody its identifiers do not name.
      const checkoutRequestId = records.operatorReferenceOf(operation);
      if (checkoutRequestId === null) {
        const age = (Date.now() - operation.created.getTime()) / 1000;
        if (age <= UNANSWERED_PROMPT_SECONDS) return { status: 'pending' };
        await records.settlePrompt(operation.id, 'failed');
        return { status: 'failed', error: 'M-Pesa did not confirm the prompt.' };
      }
      const timestamp = darajaTimestamp();
      const answer = await post('/mpesa/stkpushquery/v1/query', {
        BusinessShortCode: Number(settings.shortcode),
        Password: password(timestamp),
        Timestamp: timestamp,
        CheckoutRequestID: checkoutRequestId,
      });
      const resultCode = field(answer.body, 'ResultCode');
      if (answer.status === 200 && resultCode !== undefined) {
        if (resultCode !== '0') {
          await records.settlePrompt(operation.id, 'failed');
          return { status: 'failed', error: stkFailure(resultCode, field(answer.body, 'ResultDesc')) };
        }
        return await paidPrompt(operation, prompt, checkoutRequestId);
      }
      if (/being processed/i.test(field(answer.body, 'errorMessage') ?? '')) return { status: 'pending' };
      if (answer.status === 400) {
        await records.settlePrompt(operation.id, 'failed');
        return { status: 'failed', error: `M-Pesa has no record of the prompt (${errorOf(answer)}).` };
      }
      throw new Error(`Daraja STK push query: ${errorOf(answer)}`);
    },

    /**
     * A paybill payment (or an STK payment no prompt of ours names) is believed once transaction status confirms it.
     */
    async reportedPaymentStatus(payment: ReportedPayment): Promise<ReportedPaymentStatus> {
      // Any answer settles a reported payment: M-Pesa either has the completed transaction or does not.
      const status = await statusOf(
        `c2b:${payment.remoteTransactionId}`,
        payment.workflowId,
        () => ({ transactionId: payment.remoteTransactionId }),
        () => true,
      );
      if (status.state !== 'answered') return { status: 'pending' };
      const { result } = status;
      if (result.resultCode !== '0')
        return {
          status: 'refused',
          reason: `M-Pesa does not know this transaction (${result.resultCode}: ${result.description}).`,
        };
      if (result.parameters.ReceiptNo !== undefined && result.parameters.ReceiptNo !== payment.remoteTransactionId) {
        return { status: 'refused', reason: "M-Pesa's record is of another transaction." };
      }
      if (!completedFor(result, payment.amount)) {
        return {
          status: 'refused',
          reason:
            `M-Pesa reports the transaction ${result.parameters.TransactionStatus ?? 'not completed'} for ` +
            `${result.parameters.Amount ?? 'no'} KES.`,
        };
      }
      const payer = numberOfParty(result.parameters.DebitPartyName);
      const named = await pushNamedFor(result, payment.remoteTransactionId);
      // The answer to a push of ours that is still being settled is that push's: it is received by the
      // push's request first, and this report then finds the receipt credited. A wait only: what the
      // report is matched with is what Daraja names below.
      if (
        named === 'unsettled' ||
        (await records.unsettledPromptFor(
          network,
          payer ?? payment.phoneNumber,
          payment.amount,
          UNSETTLED_PROMPT_SECONDS,
        ))
      )
        return { status: 'pending' };
      // A receipt a push of ours settled is that push's payment, whatever account the report names; so is one Daraja
      // names for a push credited before its receipt was known, which takes it now. Any other is a payment of its own,
      // matched by its account number (docs/architecture.md#one-receipt-one-credit).
      const promptReference = await records.attachReceipt(
        network,
        { phoneNumber: payer ?? payment.phoneNumber, amount: payment.amount },
        payment.remoteTransactionId,
        named,
      );
      return { status: 'confirmed', amount: payment.amount, phoneNumber: payer, promptReference };
    },

    async sendMoney(payout: Payout): Promise<PayoutResult> {
      if (usesReversalApi(payout)) {
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
        const answer = await postReversal(payout, operation);
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
      const conversationKey = originatorConversationId(payout.reference);
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
      return await sendB2c(payout, conversationKey);
    },

    async payoutStatus(payout: Payout): Promise<PayoutResult> {
      if (usesReversalApi(payout)) return await reversalStatus(payout);
      const subject = originatorConversationId(payout.reference);
      const operation = await records.findOperation(network, subject);
      const hint = readResult(operation?.hint);
      // Our own OriginatorConversationID, never a receipt a callback claimed: the callback may lie.
      const status = await statusOf(
        subject,
        payout.workflowId,
        () => ({ originalConversationId: subject }),
        settlesPayout,
      );
      if (status.state !== 'answered') return { status: 'pending', remoteTransactionId: null };
      const { result } = status;
      // M-Pesa has no such transaction: a B2C it never took is sent again under the same id (a repeat is refused as a
      // duplicate).
      if (result.resultCode !== '0') return await sendB2c(payout, subject);
      const settled = payoutOfAnswer(result, payout, subject);
      if (settled.status !== 'rejected') return settled;
      const reason = hint && hint.resultCode !== '0' ? hint.description : result.parameters.TransactionStatus;
      // B2C result 1: our paybill's utility account held too little (its float), so another route may pay it.
      return {
        ...settled,
        error: `M-Pesa did not pay it out: ${reason}.`,
        ...(hint?.resultCode === '1' ? { routeFault: true as const } : {}),
      };
    },

    /** Registers the paybill's validation and confirmation URLs (idempotent: Daraja keeps the last registration). */
    async registerUrls(): Promise<{ registered: boolean; detail: string }> {
      const answer = await post('/mpesa/c2b/v1/registerurl', {
        ShortCode: settings.shortcode,
        // What M-Pesa does when our validation cannot answer in time, or answers 429 past the callback throttle:
        // complete the payment (it then arrives as a confirmation).
        ResponseType: 'Completed',
        ConfirmationURL: url(DARAJA_CALLBACK_PATHS.confirmation),
        ValidationURL: url(DARAJA_CALLBACK_PATHS.validation),
      });
      return accepted(answer)
        ? { registered: true, detail: field(answer.body, 'ResponseDescription') ?? 'success' }
        : { registered: false, detail: errorOf(answer) };
    },
  };
}

/** What the subscriber sees as the account: letters, digits and spaces, at most 12 characters (Daraja's limit). */
export function accountReference(reference: string): string {
  return (
    reference
      .replace(/[^A-Za-z0-9 ]+/g, ' ')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, 12) || 'Payment'
  );
}
