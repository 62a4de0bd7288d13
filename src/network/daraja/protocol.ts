/**
 * Daraja's protocol as the connector reads and writes it, with no call and no record: its callback paths, result
 * codes in a merchant's words, timestamps, the shapes of its callbacks and asynchronous results (read from whatever
 * arrived), and what a transaction status answer states. The connector's calls are ./client.ts and the files it is
 * made of; its callback routes are ./callbacks.ts.
 */
import { compareDecimal, parsePositiveAmount } from '../../domain/money';
import type { ReceiptNaming } from '../adapter';
import { field, nested, wholeAmount, type OperatorAnswer } from '../operator-http';

/** The one network Daraja serves (in KES). */
export const DARAJA_NETWORK = 'Safaricom';

/** A push whose answer was lost and that no callback named in this long has timed out on the phone too. */
export const UNANSWERED_PROMPT_SECONDS = 120;
/** A reversal's subject: the M-Pesa transaction it sends back, which Daraja's result names (OriginalTransactionID). */
export const reversalSubject = (originalTransactionId: string): string => `reversal-of:${originalTransactionId}`;

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

type ResultParameters = Record<string, string>;

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
  /** What the request's `Occasion` said, as Daraja gives it back in the result's reference data. */
  occasion?: string;
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
    occasion: namedValues(nested(result, 'ReferenceData', 'ReferenceItem'), 'Key').Occasion,
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
/**
 * The reference of a transaction status query of ours, before a random id: its `Occasion`, by which a result that
 * comes before Daraja's answer to the query finds it (./status-queries.ts).
 */
export const STATUS_QUERY_REFERENCE = 'status:';
/** The subject of the status query about a push by its CheckoutRequestID, before that id. */
export const PUSH_SUBJECT = 'stk-push:';

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

/** A transaction status answer (an asynchronous `Result`) as `readResult` reads it. */
export type StatusAnswer = NonNullable<ReturnType<typeof readResult>>;

/** A status answer that says the transaction completed for exactly `amount`. */
export const completedFor = (result: StatusAnswer, amount: string) =>
  result.resultCode === '0' &&
  result.parameters.TransactionStatus === 'Completed' &&
  result.parameters.Amount !== undefined &&
  /^\d+(\.\d+)?$/.test(result.parameters.Amount) &&
  compareDecimal(result.parameters.Amount, amount) === 0;

/** An amount in whole shillings as Daraja sends it (`10`, `10.00`), without its zero decimals; null otherwise. */
export const wholeShillings = (value: string | number) => {
  const amount = String(value).trim();
  return /^\d{1,12}(\.0+)?$/.test(amount) && parsePositiveAmount(amount.replace(/\.0+$/, '')) !== null
    ? amount.replace(/\.0+$/, '')
    : null;
};

/** Daraja's error in an answer: its code (or the HTTP status) and message. */
export const errorOf = (answer: OperatorAnswer) =>
  `${field(answer.body, 'errorCode') ?? `HTTP ${answer.status}`}: ${field(answer.body, 'errorMessage') ?? ''}`.trim();
/** Whether Daraja took a request (HTTP 200 and ResponseCode 0). */
export const accepted = (answer: OperatorAnswer) => answer.status === 200 && field(answer.body, 'ResponseCode') === '0';
/** An amount as Daraja takes it: whole shillings. */
export const whole = (amount: string) => Number(wholeAmount(amount) ?? Math.round(Number(amount)));

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
