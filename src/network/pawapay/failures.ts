/**
 * pawaPay's failure codes (Merchant API v2, https://docs.pawapay.io/v2/docs/failure_codes) in words
 * a merchant understands. A code arrives as `failureReason.failureCode` (with a `failureMessage` meant
 * for developers) in two places: a REJECTED answer to a deposit, payout or refund request (nothing
 * was accepted) and a FAILED transaction in a callback or a status query (final: no money moved).
 * `DUPLICATE_IGNORED` is no failure: it answers a request whose id pawaPay already holds, whose own
 * status then decides. Nor is `DEPOSIT_ALREADY_REFUNDED` (v1 `ALREADY_REFUNDED`) for a refund: the
 * deposit's money is back with the customer, which is what the refund asked (`refundedAlready`). The v1
 * names pawaPay's sandbox and older accounts still show are read too.
 */

/**
 * What a code means for the next step. `refuse`: nothing moved, and the same request would fail the
 * same way (the number, the amount, the account's set-up). `retry-later`: nothing moved, and the
 * same payment may go through later (the network is down, our pawaPay wallet is short, the customer
 * has another payment pending). `check-status`: pawaPay could not tell; only the status query says
 * whether money moved.
 */
type FailureAdvice = 'refuse' | 'retry-later' | 'check-status';

type Failure = { words: string; advice: FailureAdvice; detailed?: true };

const refuse = (words: string, detailed?: true): Failure => ({
  words,
  advice: 'refuse',
  ...(detailed ? { detailed } : {}),
});
const later = (words: string): Failure => ({ words, advice: 'retry-later' });

const NOT_ON_NETWORK = 'This number has no mobile money account on the chosen network.';
const WALLET_LIMIT =
  'The mobile money wallet has reached a limit (balance or number of transactions) and cannot take this now.';
const PENDING_ELSEWHERE = 'The customer already has another payment waiting for approval; try again in a few minutes.';
const CREDENTIALS = 'pawaPay refused our credentials; nothing was sent.';
const MALFORMED = 'pawaPay refused the request as malformed; nothing was sent.';
const NETWORK_DOWN = 'The mobile network is unavailable at pawaPay right now; nothing was sent, try again later.';
const OUR_WALLET_SHORT = 'Our pawaPay wallet does not hold enough for this; nothing was sent.';
const NO_REASON = 'The mobile network refused the transaction without giving a reason.';
const notEnabled = (what: string) => `${what} through this network are not enabled on our pawaPay account.`;

/** Every documented v2 code (transaction failures first, then the technical ones), and the v1 names. */
const FAILURES: Readonly<Record<string, Failure>> = {
  // Deposits: the customer's side.
  PAYER_NOT_FOUND: refuse(NOT_ON_NETWORK),
  PAYMENT_NOT_APPROVED: refuse(
    'The customer did not approve the payment (declined it, or did not enter the PIN in time).',
  ),
  INSUFFICIENT_BALANCE: refuse("The customer's mobile money balance is not enough."),
  PAYER_LIMIT_REACHED: refuse('The customer has reached a mobile money transaction limit.'),
  PAYMENT_IN_PROGRESS: later(PENDING_ELSEWHERE),
  // Payouts and refunds: the recipient's side, and ours.
  RECIPIENT_NOT_FOUND: refuse(NOT_ON_NETWORK),
  RECIPIENT_LIMIT_REACHED: refuse(WALLET_LIMIT),
  WALLET_LIMIT_REACHED: refuse(WALLET_LIMIT),
  MANUALLY_CANCELLED: refuse('The payment was cancelled at pawaPay before it was sent.'),
  PAWAPAY_WALLET_OUT_OF_FUNDS: later(OUR_WALLET_SHORT),
  // Refunds.
  DEPOSIT_ALREADY_REFUNDED: refuse('This payment has already been refunded in full.'),
  AMOUNT_TOO_LARGE: refuse('The refund is larger than what is left to refund of the payment.'),
  REFUND_IN_PROGRESS: later('Another refund of this payment is still in progress.'),
  NOT_FOUND: refuse('pawaPay has no record of the payment this refers to.'),
  INVALID_STATE: refuse(
    'The payment this refers to is not in a state that allows it (a refund needs a completed payment).',
  ),
  // Any operation.
  UNSPECIFIED_FAILURE: later(NO_REASON),
  UNKNOWN_ERROR: {
    words: 'pawaPay could not say whether the transaction went through; its status will tell.',
    advice: 'check-status',
  },
  PROVIDER_TEMPORARILY_UNAVAILABLE: later(NETWORK_DOWN),
  AMOUNT_OUT_OF_BOUNDS: refuse("The amount is outside this network's limits for this operation."),
  INVALID_AMOUNT: refuse('This network does not take that many decimals in the amount.'),
  INVALID_PHONE_NUMBER: refuse('The phone number is not a valid number for this network.'),
  INVALID_CURRENCY: refuse('This network does not take this currency.'),
  INVALID_PROVIDER: refuse('pawaPay does not offer this network for this operation.'),
  INVALID_COUNTRY: refuse('pawaPay does not offer this country for this operation.'),
  DEPOSITS_NOT_ALLOWED: refuse(notEnabled('Collections')),
  PAYOUTS_NOT_ALLOWED: refuse(notEnabled('Payouts')),
  REFUNDS_NOT_ALLOWED: refuse(notEnabled('Refunds')),
  REMITTANCES_NOT_ALLOWED: refuse(notEnabled('Remittances')),
  NO_AUTHENTICATION: refuse(CREDENTIALS),
  AUTHENTICATION_ERROR: refuse(CREDENTIALS),
  AUTHORISATION_ERROR: refuse(CREDENTIALS),
  HTTP_SIGNATURE_ERROR: refuse('pawaPay could not verify our request signature; nothing was sent.'),
  INVALID_INPUT: refuse(MALFORMED, true),
  MISSING_PARAMETER: refuse(MALFORMED, true),
  UNSUPPORTED_PARAMETER: refuse(MALFORMED, true),
  INVALID_PARAMETER: refuse(MALFORMED, true),
  DUPLICATE_METADATA_FIELD: refuse(MALFORMED, true),
  // v1 names.
  OTHER_ERROR: later(NO_REASON),
  TRANSACTION_ALREADY_IN_PROCESS: later(PENDING_ELSEWHERE),
  RECIPIENT_NOT_ALLOWED_TO_RECEIVE: refuse('This mobile money account may not receive money right now.'),
  BALANCE_INSUFFICIENT: later(OUR_WALLET_SHORT),
  CORRESPONDENT_TEMPORARILY_UNAVAILABLE: later(NETWORK_DOWN),
  AMOUNT_TOO_SMALL: refuse("The amount is below this network's minimum for this operation."),
  INVALID_PAYER_FORMAT: refuse('The phone number is not a valid number for this network.'),
  INVALID_RECIPIENT_FORMAT: refuse('The phone number is not a valid number for this network.'),
  INVALID_CORRESPONDENT: refuse('pawaPay does not offer this network for this operation.'),
  PARAMETER_INVALID: refuse(MALFORMED, true),
  DEPOSIT_NOT_FOUND: refuse('pawaPay has no record of the payment this refers to.'),
  DEPOSIT_NOT_COMPLETED: refuse('The payment this refers to has not completed, so it cannot be refunded.'),
  ALREADY_REFUNDED: refuse('This payment has already been refunded in full.'),
  IN_PROGRESS: later('Another refund of this payment is still in progress.'),
};

/**
 * Whether a refund's failure code says its deposit was refunded in full already (by a refund pawaPay took under
 * another id, or while ours waited): the customer has the money back, so the refund is done, never a failure that gives
 * the amount back to the wallet.
 */
export const refundedAlready = (code: string | undefined): boolean =>
  code === 'DEPOSIT_ALREADY_REFUNDED' || code === 'ALREADY_REFUNDED';

/**
 * Whether a refund's rejection says another refund of its deposit is under way (not ours: pawaPay answers a repeat of
 * ours DUPLICATE_IGNORED). Whether that one gives the money back decides what ours must do, so it is asked again,
 * never refused.
 */
export const refundUnderWay = (code: string | undefined): boolean =>
  code === 'REFUND_IN_PROGRESS' || code === 'IN_PROGRESS';

/**
 * pawaPay's own message, kept short: shown only where our words say too little (a malformed request, an unknown code).
 */
const said = (message: string | undefined): string => {
  const text = message?.replace(/\s+/g, ' ').trim() ?? '';
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
};

/** A failure code (and pawaPay's `failureMessage`) in a merchant's words. */
export function pawapayFailure(code?: string, message?: string): string {
  const known = code ? FAILURES[code] : undefined;
  const detail = said(message);
  if (known === undefined) {
    const shown = code ? ` (${code}${detail ? `: ${detail}` : ''})` : detail ? ` (${detail})` : '';
    return `pawaPay refused the transaction${shown}.`;
  }
  return known.detailed && detail ? `${known.words} (pawaPay: ${detail})` : known.words;
}

/**
 * Whether to refuse, retry later or ask the status, for a code. An unknown code refuses (REJECTED and
 * FAILED are both final); no code at all asks the status, since nothing then says what happened.
 */
export function pawapayFailureAdvice(code?: string): FailureAdvice {
  if (!code) return 'check-status';
  return FAILURES[code]?.advice ?? 'refuse';
}

/**
 * The codes that are pawaPay's or the network's trouble at pawaPay, not the subscriber's: another route may carry the
 * same transaction.
 */
const ROUTE_FAULTS: ReadonlySet<string> = new Set([
  'PROVIDER_TEMPORARILY_UNAVAILABLE',
  'PAWAPAY_WALLET_OUT_OF_FUNDS',
  'BALANCE_INSUFFICIENT',
  'CORRESPONDENT_TEMPORARILY_UNAVAILABLE',
]);

/** A failure in a merchant's words, marked as the route's fault when it is (see ROUTE_FAULTS). */
export function pawapayRefusal(code?: string, message?: string): { error: string; routeFault?: true } {
  const error = pawapayFailure(code, message);
  return code !== undefined && ROUTE_FAULTS.has(code) ? { error, routeFault: true } : { error };
}
