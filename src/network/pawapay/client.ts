/**
 * pawaPay connector (Merchant API v2) for the networks of the providers the merchant's pawaPay
 * account is enabled for (PAWAPAY_PROVIDERS) that no direct connector serves: deposits
 * (collections), payouts (payments) and refunds (reversals).
 *
 * Each deposit, payout and refund carries an id we choose (a UUID v4), stored with its operation
 * before the call: a retried activity sends the same id, and pawaPay answers DUPLICATE_IGNORED
 * instead of prompting or paying twice; an id pawaPay never received (NOT_FOUND) is sent again under
 * the same id; a refund whose deposit pawaPay finds refunded in full already
 * (DEPOSIT_ALREADY_REFUNDED) is done, the customer having the money back. pawaPay's callbacks are
 * hints (./callbacks.ts): money moves only on pawaPay's own record (`GET /v2/deposits/{id}`,
 * `/payouts/{id}`, `/refunds/{id}`) answering COMPLETED with the amount, currency and number we asked
 * for; IN_RECONCILIATION waits. A collection is credited under its depositId, which a refund names,
 * and which is pawaPay's one record of the payment.
 */
import { randomUUID } from 'node:crypto';
import { compareDecimal } from '../../domain/money';
import type { Network } from '../../domain/networks';
import type {
  JournaledOperation,
  PaymentPrompt,
  Payout,
  PayoutResult,
  PromptResult,
  PromptStatus,
  ReportedPaymentStatus,
  Recorded,
  TakenPrompt,
} from '../adapter';
import { callOperator, field, msisdnOf, nested, type OperatorAnswer } from '../operator-http';
import { pawapayFailure, pawapayRefusal, refundedAlready, refundUnderWay } from './failures';
import type { PawapaySettings } from './settings';

/**
 * pawaPay's answers to a token it does not take: the deployment's configuration, not the request, is wrong (thrown,
 * never a refusal).
 */
const AUTHENTICATION_CODES: ReadonlySet<string> = new Set([
  'NO_AUTHENTICATION',
  'AUTHENTICATION_ERROR',
  'AUTHORISATION_ERROR',
]);

/** The three kinds of money movement pawaPay keeps, each under its own id field and path. */
export const MOVEMENTS = {
  deposit: { path: '/v2/deposits', idField: 'depositId', party: 'payer' },
  payout: { path: '/v2/payouts', idField: 'payoutId', party: 'recipient' },
  refund: { path: '/v2/refunds', idField: 'refundId', party: null },
} as const;
export type Movement = keyof typeof MOVEMENTS;

/** How an amount is sent for a provider: a string with its decimals at most (none for TZS). */
type AmountFormat = (provider: string, currency: string, amount: string) => string;

type PawapayDeps = { formatAmount: AmountFormat };

/** What came of sending a movement (see `send`). */
type Sent = 'taken' | 'refunded' | { error: string; routeFault?: true };

/** pawaPay's record of one deposit, payout or refund, as its status query gave it. */
type Found =
  | { found: false }
  | {
      found: true;
      status: string;
      amount: string;
      currency: string;
      phoneNumber: string | undefined;
      providerTransactionId: string | undefined;
      failureCode: string | undefined;
      failureMessage: string | undefined;
    };

/**
 * What the subscriber reads on the prompt (`customerMessage`, 4 to 22 characters): the request's
 * reference in letters, digits and spaces, or "Payment" when nothing of it is left.
 */
export function customerMessage(reference: string): string {
  const kept = reference
    .replace(/[^A-Za-z0-9 ]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 22)
    .trim();
  return kept.length >= 4 ? kept : 'Payment';
}

/**
 * What a connector's calls share, built once by `createPawapayConnector`: its settings and how it writes an amount.
 */
type PawapayContext = { settings: PawapaySettings; formatAmount: AmountFormat };

const providerOf = (context: PawapayContext, network: Network) =>
  context.settings.providers.find((provider) => provider.network === network.name)!;

const call = (context: PawapayContext, method: 'GET' | 'POST', path: string, json?: unknown): Promise<OperatorAnswer> =>
  callOperator({
    method,
    url: `${context.settings.baseUrl}${path}`,
    headers: { Authorization: `Bearer ${context.settings.apiToken}` },
    json,
  });

const unexpected = (what: string, answer: OperatorAnswer) => {
  const code = field(nested(answer.body, 'failureReason'), 'failureCode') ?? '';
  return new Error(`pawaPay ${what}: HTTP ${answer.status} ${code.trim()}`);
};

/**
 * Sends a deposit, payout or refund under `id`: `taken` when pawaPay took it (ACCEPTED, ENQUEUED) or
 * had it already (DUPLICATE_IGNORED), or a refund finds another refund of its deposit under way (its
 * status then tells); `refunded` when a refund finds its deposit refunded in full already (the money
 * is back with the customer); its refusal in a merchant's words when REJECTED (nothing happened).
 * Anything else (no answer, 5xx, 401, 429) throws: the activity retries under the same id.
 */
async function send(
  context: PawapayContext,
  movement: Movement,
  id: string,
  body: Record<string, unknown>,
): Promise<Sent> {
  const { path, idField } = MOVEMENTS[movement];
  const answer = await call(context, 'POST', path, { [idField]: id, ...body });
  const status = field(answer.body, 'status');
  if (
    (answer.status === 200 || answer.status === 202) &&
    (status === 'ACCEPTED' || status === 'DUPLICATE_IGNORED' || status === 'ENQUEUED')
  )
    return 'taken';
  // REJECTED (HTTP 200, or 400/403 for a malformed or not-allowed request, with or without the status): nothing
  // happened.
  const reason = nested(answer.body, 'failureReason');
  const code = field(reason, 'failureCode');
  const refused =
    status === 'REJECTED' ||
    ((answer.status === 400 || answer.status === 403) && code !== undefined && !AUTHENTICATION_CODES.has(code));
  if (refused && answer.status < 500 && answer.status !== 401 && answer.status !== 429) {
    if (movement === 'refund' && refundedAlready(code)) return 'refunded';
    if (movement === 'refund' && refundUnderWay(code)) return 'taken';
    return pawapayRefusal(code, field(reason, 'failureMessage'));
  }
  throw unexpected(`${movement} not taken`, answer);
}

/** pawaPay's own record of a deposit, payout or refund. */
async function status(context: PawapayContext, movement: Movement, id: string): Promise<Found> {
  const answer = await call(context, 'GET', `${MOVEMENTS[movement].path}/${encodeURIComponent(id)}`);
  if (answer.status === 404 || (answer.status === 200 && field(answer.body, 'status') === 'NOT_FOUND'))
    return { found: false };
  const data = nested(answer.body, 'data');
  if (answer.status !== 200 || field(answer.body, 'status') !== 'FOUND' || typeof data !== 'object' || data === null)
    throw unexpected(`${movement} status`, answer);
  const party = MOVEMENTS[movement].party;
  const reason = nested(data, 'failureReason');
  return {
    found: true,
    status: field(data, 'status') ?? 'PROCESSING',
    amount: field(data, 'amount') ?? '',
    currency: field(data, 'currency') ?? '',
    phoneNumber: party ? field(nested(data, party, 'accountDetails'), 'phoneNumber') : undefined,
    providerTransactionId: field(data, 'providerTransactionId'),
    failureCode: field(reason, 'failureCode'),
    failureMessage: field(reason, 'failureMessage'),
  };
}

/**
 * Whether pawaPay's record is the movement we asked for: its amount, currency and (for a deposit or payout) number.
 */
const matches = (
  found: Extract<Found, { found: true }>,
  expected: { amount: string; currency: string; phoneNumber: string | null },
) =>
  /^\d+(\.\d+)?$/.test(found.amount) &&
  compareDecimal(found.amount, expected.amount) === 0 &&
  found.currency === expected.currency &&
  (expected.phoneNumber === null || found.phoneNumber === msisdnOf(expected.phoneNumber));

/**
 * The id pawaPay knows an operation by: the one the core recorded before its first send (`operatorIdFor`), handed
 * back on every call. None means the core never sent it here.
 */
function idOf(operation: { recorded?: Recorded }, reference: string): string {
  const id = operation.recorded?.operatorReference;
  if (!id) throw new Error(`pawaPay: no id recorded for ${reference}; it was never sent here.`);
  return id;
}

const depositBody = (context: PawapayContext, prompt: PaymentPrompt) => {
  const provider = providerOf(context, prompt.network).code;
  return {
    amount: context.formatAmount(provider, prompt.currency, prompt.amount),
    currency: prompt.currency,
    payer: { type: 'MMO', accountDetails: { phoneNumber: msisdnOf(prompt.phoneNumber), provider } },
    clientReferenceId: prompt.promptReference,
    customerMessage: customerMessage(prompt.reference),
  };
};

/** A payout's body (a payment), or a refund's (a reversal: the collection's depositId, its amount). */
const payoutBody = (context: PawapayContext, payout: Payout): Record<string, unknown> => {
  const provider = providerOf(context, payout.network).code;
  const amount = context.formatAmount(provider, payout.currency, payout.amount);
  if (payout.kind === 'reversal')
    return {
      depositId: payout.originalTransactionId,
      amount,
      currency: payout.currency,
      clientReferenceId: payout.reference,
    };
  return {
    amount,
    currency: payout.currency,
    recipient: { type: 'MMO', accountDetails: { phoneNumber: msisdnOf(payout.phoneNumber), provider } },
    clientReferenceId: payout.reference,
    customerMessage: customerMessage('Payment'),
  };
};

const movementOf = (payout: Payout): Movement => (payout.kind === 'reversal' ? 'refund' : 'payout');

async function requestPayment(context: PawapayContext, prompt: PaymentPrompt): Promise<PromptResult> {
  const depositId = idOf(prompt, prompt.promptReference);
  const sent = await send(context, 'deposit', depositId, depositBody(context, prompt));
  return typeof sent === 'string'
    ? { accepted: true, confirm: { operatorReference: depositId } }
    : { accepted: false, ...sent };
}

async function promptStatus(context: PawapayContext, prompt: TakenPrompt): Promise<PromptStatus> {
  // The depositId recorded for the prompt (the one the operator confirmed it under, when the journal holds none).
  const depositId = prompt.recorded?.operatorReference ?? prompt.operatorReference;
  const found = await status(context, 'deposit', depositId);
  if (!found.found) {
    // pawaPay never received it (the request was lost on the way): sent now, under the same id.
    const sent = await send(context, 'deposit', depositId, depositBody(context, prompt));
    return typeof sent === 'string' ? { status: 'pending' } : { status: 'failed', error: sent.error };
  }
  if (found.status === 'FAILED')
    return { status: 'failed', error: pawapayFailure(found.failureCode, found.failureMessage) };
  // ACCEPTED, PROCESSING, IN_RECONCILIATION (pawaPay settles it with the provider): asked again at the next poll.
  if (found.status !== 'COMPLETED') return { status: 'pending' };
  if (!matches(found, prompt))
    return {
      status: 'failed',
      error: "pawaPay's record of the payment does not match the request (amount, number or currency).",
    };
  return { status: 'paid', remoteTransactionId: depositId, paymentDate: new Date().toISOString() };
}

/**
 * Whether pawaPay holds a deposit, payout or refund under the id we recorded for it (none recorded: it was never
 * sent).
 */
async function lookup(context: PawapayContext, operation: JournaledOperation): Promise<'present' | 'absent'> {
  if (operation.operatorReference === null) return 'absent';
  const movement: Movement =
    operation.kind === 'prompt' ? 'deposit' : operation.kind === 'reversal' ? 'refund' : 'payout';
  return (await status(context, movement, operation.operatorReference)).found ? 'present' : 'absent';
}

async function sendMoney(context: PawapayContext, payout: Payout): Promise<PayoutResult> {
  const id = idOf(payout, payout.reference);
  const sent = await send(context, movementOf(payout), id, payoutBody(context, payout));
  // Taken, or (a refund) its deposit refunded already: the status query then tells which.
  return typeof sent === 'string'
    ? { status: 'pending', remoteTransactionId: null }
    : { status: 'rejected', ...sent, remoteTransactionId: null };
}

async function payoutStatus(context: PawapayContext, payout: Payout): Promise<PayoutResult> {
  const movement = movementOf(payout);
  const id = idOf(payout, payout.reference);
  const found = await status(context, movement, id);
  // A deposit refunded in full (by no refund of ours, or while ours waited): the customer has the money back.
  const refunded = { status: 'completed' as const, remoteTransactionId: payout.originalTransactionId ?? id };
  if (!found.found) {
    const sent = await send(context, movement, id, payoutBody(context, payout));
    if (sent === 'refunded') return refunded;
    return sent === 'taken'
      ? { status: 'pending', remoteTransactionId: null }
      : { status: 'rejected', ...sent, remoteTransactionId: null };
  }
  if (found.status === 'FAILED' && movement === 'refund' && refundedAlready(found.failureCode)) return refunded;
  // A payout that FAILED moved nothing: the payment's workflow returns the money to the wallet.
  if (found.status === 'FAILED')
    return {
      status: 'failed',
      ...pawapayRefusal(found.failureCode, found.failureMessage),
      remoteTransactionId: null,
    };
  if (found.status !== 'COMPLETED') return { status: 'pending', remoteTransactionId: null };
  const expected = {
    amount: payout.amount,
    currency: payout.currency,
    phoneNumber: movement === 'payout' ? payout.phoneNumber : null,
  };
  // A record under our id that is not the movement we asked for: nothing says ours went out.
  if (!matches(found, expected)) return { status: 'pending', remoteTransactionId: null };
  return { status: 'completed', remoteTransactionId: found.providerTransactionId ?? id };
}

export function createPawapayConnector(settings: PawapaySettings, { formatAmount }: PawapayDeps) {
  const context: PawapayContext = { settings, formatAmount };
  return {
    /**
     * A fresh UUID for each operation sent here (pawaPay refuses an id twice, even one it rejected): the core records
     * the first one chosen before the call and hands it back on every later call.
     */
    operatorIdFor: () => randomUUID(),

    requestPayment: (prompt: PaymentPrompt) => requestPayment(context, prompt),
    promptStatus: (prompt: TakenPrompt) => promptStatus(context, prompt),
    lookup: (operation: JournaledOperation) => lookup(context, operation),

    async reportedPaymentStatus(): Promise<ReportedPaymentStatus> {
      // pawaPay reports only the deposits we initiated; nothing else arrives by callback to confirm.
      return { status: 'refused', reason: 'pawaPay reports no payment it was not asked for.' };
    },

    sendMoney: (payout: Payout) => sendMoney(context, payout),
    payoutStatus: (payout: Payout) => payoutStatus(context, payout),
  };
}
