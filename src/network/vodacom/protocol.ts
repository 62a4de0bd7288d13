/**
 * The M-Pesa OpenAPI's protocol as the Vodacom connector reads and writes it, with no call: its response codes and
 * transaction states in a merchant's words, and the ids, references, descriptions and amounts it takes. The calls
 * are ./client.ts, each market's sessions ./market-client.ts.
 */
import { createHash } from 'node:crypto';
import { currencyDecimals } from '../../domain/money';
import type { OperatorAnswer } from '../operator-http';

/** A 2xx answer (M-Pesa answers 200 or 201 for a call it took; the code in the body says how it went). */
export const accepted = (answer: OperatorAnswer): boolean => answer.status >= 200 && answer.status < 300;

/** `output_ResponseCode`s in words a merchant understands (the collection's words; a payout's differ for INS-2006). */
const RESPONSE_CODES: Readonly<Record<string, string>> = {
  'INS-4': "This number's M-Pesa account is not active.",
  'INS-5': 'The subscriber cancelled the payment (or did not enter the PIN).',
  'INS-6': 'M-Pesa could not complete the transaction.',
  'INS-13': 'M-Pesa does not know the service provider code (VODACOM_SERVICE_PROVIDER_CODE).',
  'INS-14': 'M-Pesa refused the transaction reference.',
  'INS-15': 'M-Pesa does not take this amount.',
  'INS-17': 'M-Pesa refused the transaction reference.',
  'INS-18': 'M-Pesa does not know the transaction to reverse.',
  'INS-19': 'M-Pesa refused the conversation id.',
  'INS-20': 'M-Pesa said a field of the request was missing.',
  'INS-21': 'M-Pesa refused a field of the request.',
  'INS-22': 'M-Pesa refused the operation type.',
  'INS-24': 'M-Pesa refused the initiator.',
  'INS-25': 'M-Pesa refused the security credential.',
  'INS-26': 'This M-Pesa application is not authorised for the transaction.',
  'INS-995': "The subscriber's M-Pesa profile has a problem.",
  'INS-996': "This number's M-Pesa account is not active.",
  'INS-998': 'M-Pesa refused the market.',
  'INS-2001': 'M-Pesa refused the initiator.',
  'INS-2002': 'This number may not receive M-Pesa.',
  'INS-2006': "The subscriber's M-Pesa balance is not enough.",
  'INS-2051': 'This is not a valid M-Pesa number (not registered).',
};
/**
 * Codes that say nothing of whether the transaction went through (internal error, timeout, duplicate, unknown status):
 * the status query decides.
 */
export const UNDECIDED_CODES: ReadonlySet<string> = new Set(['INS-1', 'INS-9', 'INS-10', 'INS-23']);
/** Codes of a name query about a number with no (active) M-Pesa account. */
export const UNREGISTERED_CODES: ReadonlySet<string> = new Set(['INS-4', 'INS-995', 'INS-996', 'INS-2002', 'INS-2051']);
/** `output_ResponseTransactionStatus` values of a transaction that ended without moving money. */
export const FAILED_STATES: Readonly<Record<string, string>> = {
  cancelled: 'The subscriber cancelled the payment or did not approve it in time.',
  expired: 'The payment request expired before the subscriber approved it.',
  failed: 'M-Pesa could not complete the transaction.',
  declined: 'M-Pesa declined the transaction.',
  rejected: 'M-Pesa declined the transaction.',
};

export const vodacomFailure = (
  code: string | undefined,
  description?: string,
  whose: 'subscriber' | 'merchant' = 'subscriber',
): string => {
  if (code === 'INS-2006' && whose === 'merchant') return "The merchant's M-Pesa account balance is not enough.";
  const said = [code, description].filter(Boolean).join(': ');
  return (code && RESPONSE_CODES[code]) ?? `M-Pesa refused the transaction${said ? ` (${said})` : ''}.`;
};

/**
 * Our ThirdPartyConversationID for a transaction: derived from our ids (a retry repeats it), `C` a collection, `B` a
 * payment, `R` a reversal.
 */
export const conversationIdOf = (kind: 'C' | 'B' | 'R', serviceProviderCode: string, reference: string): string =>
  `${kind}${createHash('sha256').update(`${serviceProviderCode}:${kind}:${reference}`).digest('hex').slice(0, 31)}`;
/** `input_TransactionReference` (1 to 20 letters and digits): the conversation id's first 20 characters. */
export const transactionReferenceOf = (conversationId: string): string => conversationId.slice(0, 20);
/** A description M-Pesa shows: letters, digits and spaces, at most 100 characters. */
export const descriptionOf = (text: string): string =>
  text
    .replace(/[^A-Za-z0-9 ]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 100) || 'Payment';

/**
 * An amount as the OpenAPI takes it: whole for a currency without minor units (TZS), else with its two decimals
 * (`12.50`).
 */
export function vodacomAmount(amount: string, currency: string): string {
  const decimals = currencyDecimals(currency) ?? 2;
  const [whole = '0', fraction = ''] = amount.split('.');
  const units = BigInt(whole || '0').toString();
  return decimals === 0 ? units : `${units}.${fraction.padEnd(decimals, '0').slice(0, decimals)}`;
}
