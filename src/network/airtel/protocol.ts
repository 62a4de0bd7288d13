/**
 * Airtel Money's Open API as the connector reads and writes it, with no call: its networks by country, its callback
 * path and hash, its response codes in a merchant's words, our transaction ids and references, and what an answer
 * says. The calls are ./client.ts, the callback route ./callbacks.ts.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { field, nested, type OperatorAnswer } from '../operator-http';

/** The Airtel Money networks by country: the connector serves those of the countries it is configured for. */
export const AIRTEL_NETWORKS: Readonly<Record<string, string>> = {
  UG: 'Airtel Uganda',
  KE: 'Airtel Kenya',
  TZ: 'Airtel Tanzania',
  RW: 'Airtel Rwanda',
  CD: 'Airtel DRC',
};

/** The network names the Airtel connector serves in `countries`. */
export const airtelNetworks = (countries: readonly { country: string }[]): string[] =>
  countries.flatMap(({ country }) => (AIRTEL_NETWORKS[country] ? [AIRTEL_NETWORKS[country]] : []));

/** The path registered in Airtel's portal as the callback URL (under PUBLIC_BASE_URL). */
export const AIRTEL_CALLBACK_PATH = '/network/airtel/callback';

/**
 * A disbursement refused because our disbursement wallet at Airtel is short (DP00900001007): another route may pay it.
 */
export const airtelRefusal = (error: string): { error: string; routeFault?: true } =>
  error === FAILURE_REASONS.DP00900001007 ? { error, routeFault: true } : { error };

/** Airtel's response codes in words a merchant understands: collections (DP008…) and disbursements (DP009…). */
const FAILURE_REASONS: Readonly<Record<string, string>> = {
  DP00800001002: 'The subscriber entered a wrong Airtel Money PIN.',
  DP00800001003: 'The subscriber has reached an Airtel Money transaction limit.',
  DP00800001004: 'The amount is below the smallest Airtel Money allows.',
  DP00800001005: 'The subscriber did not enter their PIN.',
  DP00800001007: "The subscriber's Airtel Money balance is not enough.",
  DP00800001008: 'The payment was refused (the subscriber declined it, or Airtel Money refused it).',
  DP00800001009: 'Airtel Money declined the payment.',
  DP00800001010: 'This number may not pay by Airtel Money (not registered, or barred).',
  DP00800001024: 'The subscriber did not approve the payment in time.',
  DP00800001029: 'The payment request expired before the subscriber approved it.',
  DP00900001003: 'The payment exceeds an Airtel Money limit.',
  DP00900001004: 'Airtel Money does not take this amount.',
  DP00900001007: "The merchant's Airtel Money disbursement balance is not enough.",
  DP00900001010: 'This number may not receive Airtel Money (not registered, or barred).',
  DP00900001011: 'Airtel Money does not permit this payment to this number.',
  DP00900001012: 'This is not a valid Airtel Money number.',
};
/** Codes that say the transaction is still being processed (ambiguous, in process): ask the enquiry later. */
export const OPEN_CODES: ReadonlySet<string> = new Set([
  'DP00800001000',
  'DP00800001006',
  'DP00900001000',
  'DP00900001006',
]);
/** Codes of an enquiry that found no transaction under the id. */
export const NOT_FOUND_CODES: ReadonlySet<string> = new Set(['DP00800001025', 'DP00900001015']);

/**
 * Airtel's refusal of a refund it has made already (HTTP 400, "Transaction already refunded"): it refunds a
 * collection once and whole, so the refund asked for is done.
 */
const ALREADY_REFUNDED = /\balready\s+(?:been\s+)?(?:refunded|reversed)\b/i;
export const saysAlreadyRefunded = (answer: OperatorAnswer): boolean =>
  [field(nested(answer.body, 'status'), 'message'), field(nested(answer.body, 'data', 'transaction'), 'message')].some(
    (message) => message !== undefined && ALREADY_REFUNDED.test(message),
  );

export const airtelFailure = (code: string | undefined, message?: string): string =>
  (code && FAILURE_REASONS[code]) ??
  `Airtel Money refused the transaction${code || message ? ` (${[code, message].filter(Boolean).join(': ')})` : ''}.`;

/**
 * Whether a callback's `hash` is Base64(HMAC-SHA256(key, `transactionJson`)): the compact JSON of its
 * `transaction` object as received, its keys in the order they came.
 */
export function callbackHashMatches(key: string, transactionJson: string, hash: unknown): boolean {
  if (typeof hash !== 'string' || hash.length > 200) return false;
  const expected = createHmac('sha256', key).update(transactionJson).digest();
  const given = Buffer.from(hash, 'base64');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * Our transaction id at Airtel: derived from our ids (a retry repeats it), `C` for a collection and `D` for a
 * disbursement.
 */
export const transactionId = (kind: 'C' | 'D', clientId: string, reference: string): string =>
  `${kind}${createHash('sha256').update(`${clientId}:${kind}:${reference}`).digest('hex').slice(0, 23)}`;

/** Airtel's `reference`: 4 to 64 letters, digits and spaces. */
export const referenceText = (text: string): string => {
  const cleaned = text
    .replace(/[^A-Za-z0-9 ]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 64);
  return cleaned.length >= 4 ? cleaned : 'Payment';
};

export type Answer = {
  success: boolean;
  code: string | undefined;
  message: string | undefined;
  state: string | undefined;
  airtelMoneyId: string | undefined;
};

/** What an Airtel answer says, read whatever arrived: `status` (success, response code) and `data.transaction`. */
export function readAnswer(answer: OperatorAnswer): Answer {
  const status = nested(answer.body, 'status');
  const transaction = nested(answer.body, 'data', 'transaction');
  return {
    success: field(status, 'success') === 'true',
    code: field(status, 'response_code') ?? field(status, 'code'),
    message: field(transaction, 'message') ?? field(status, 'message'),
    state: field(transaction, 'status'),
    airtelMoneyId: field(transaction, 'airtel_money_id'),
  };
}

export type Enquiry = { found: false } | ({ found: true } & Answer);
