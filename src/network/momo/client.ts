/**
 * MTN MoMo Open API connector, one per market (`MomoSettings`: MTN Uganda in UGX, MTN Ghana in GHS,
 * MTN Rwanda in RWF), each with its own credentials and tokens: request to pay (collection), transfers
 * (disbursement, for payments and reversals), account holder look-ups. Each call that may move
 * money carries an `X-Reference-Id` derived from our ids, so a retried activity repeats the same
 * reference and MoMo refuses a second one (409 RESOURCE_ALREADY_EXIST, which means "already
 * sent"). MoMo's callback is a hint: the workflow then asks `GET .../{referenceId}` and believes
 * only that, checking amount, number and currency against what we asked for.
 */
import { createHash } from 'node:crypto';
import type { MomoProduct, MomoSettings } from './settings';
import { compareDecimal } from '../../domain/money';
import type {
  JournaledOperation,
  NameLookup,
  PaymentPrompt,
  Payout,
  PayoutResult,
  PromptResult,
  PromptStatus,
  ReportedPaymentStatus,
  TakenPrompt,
} from '../adapter';
import {
  callOperator,
  callWithToken,
  createTokenCache,
  field,
  msisdnOf,
  nested,
  OperatorRefusedError,
  wholeAmount,
  type OperatorAnswer,
  type TokenCache,
} from '../operator-http';

/** MoMo's failure reasons in words a merchant understands (its ErrorReason codes). */
const FAILURE_REASONS: Readonly<Record<string, string>> = {
  APPROVAL_REJECTED: 'The subscriber declined the payment.',
  TRANSACTION_CANCELED: 'The subscriber cancelled the payment.',
  EXPIRED: 'The subscriber did not approve the payment in time.',
  NOT_ENOUGH_FUNDS: "The subscriber's MoMo balance is not enough.",
  PAYER_NOT_FOUND: 'This number has no MTN MoMo account.',
  PAYEE_NOT_FOUND: 'This number has no MTN MoMo account.',
  PAYER_LIMIT_REACHED: 'The subscriber has reached a MoMo transaction limit.',
  PAYEE_NOT_ALLOWED_TO_RECEIVE: 'This MoMo account may not receive money.',
  NOT_ALLOWED: 'MTN MoMo did not allow this transaction.',
  INVALID_CURRENCY: 'MTN MoMo does not take this currency here.',
  SERVICE_UNAVAILABLE: 'MTN MoMo was unavailable.',
  INTERNAL_PROCESSING_ERROR: 'MTN MoMo could not process the transaction.',
  COULD_NOT_PERFORM_TRANSACTION: 'MTN MoMo could not perform the transaction.',
};
export const momoFailure = (reason: string | undefined): string =>
  (reason && FAILURE_REASONS[reason]) ?? `MTN MoMo refused the transaction${reason ? ` (${reason})` : ''}.`;

/** MoMo's reasons that are its own trouble, not the subscriber's: another route may carry the same transaction. */
const ROUTE_REASONS: ReadonlySet<string> = new Set(['SERVICE_UNAVAILABLE', 'INTERNAL_PROCESSING_ERROR']);

/**
 * A refusal or failure in a merchant's words, marked as the route's fault when it is MoMo's own, or,
 * for a transfer, NOT_ENOUGH_FUNDS: the payer of a transfer is our disbursement account (its float).
 */
function momoRefusal(reason: string | undefined, transfer: boolean): { error: string; routeFault?: true } {
  if (transfer && reason === 'NOT_ENOUGH_FUNDS')
    return {
      error: 'Our MTN MoMo disbursement account does not hold enough for this; nothing was sent.',
      routeFault: true,
    };
  return reason !== undefined && ROUTE_REASONS.has(reason)
    ? { error: momoFailure(reason), routeFault: true }
    : { error: momoFailure(reason) };
}

/**
 * A version-4 UUID derived from `seed`: MoMo wants X-Reference-Id to be one, and a retry must
 * repeat it, so it comes from a hash of our ids with the version and variant bits set.
 */
export function referenceUuid(seed: string): string {
  const bytes = createHash('sha256').update(seed).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

type MomoDeps = { callbackBaseUrl: string };

/** `1500.0000` → `1500`, `10.5000` → `10.5`: our four decimals without the zeros MoMo has no use for. */
const momoAmount = (amount: string): string => {
  const [, fraction = ''] = amount.split('.');
  const kept = fraction.replace(/0+$/, '');
  return kept === '' ? (wholeAmount(amount) ?? amount) : `${wholeAmount(amount.split('.')[0]!) ?? '0'}.${kept}`;
};

type ProductName = 'collection' | 'disbursement';
type Transaction = { path: 'requesttopay' | 'transfer'; product: ProductName; party: 'payer' | 'payee' };
const REQUEST_TO_PAY: Transaction = { path: 'requesttopay', product: 'collection', party: 'payer' };
const TRANSFER: Transaction = { path: 'transfer', product: 'disbursement', party: 'payee' };

export const MOMO_CALLBACK_PATH = '/network/momo';

/** What a market's calls share: its settings, where MoMo calls back, and its own tokens (one cache a product). */
type MomoContext = {
  settings: MomoSettings;
  callbackBaseUrl: string;
  products: Record<ProductName, MomoProduct>;
  tokens: Record<ProductName, TokenCache>;
};

// MoMo's sandbox environment takes EUR only; every other environment its country's currency.
const operatorCurrency = (context: MomoContext, currency: string) =>
  context.settings.targetEnvironment === 'sandbox' ? 'EUR' : currency;

async function fetchToken(context: MomoContext, product: ProductName) {
  const { apiUser, apiKey, subscriptionKey } = context.products[product];
  const answer = await callOperator({
    method: 'POST',
    url: `${context.settings.baseUrl}/${product}/token/`,
    headers: {
      Authorization: `Basic ${Buffer.from(`${apiUser}:${apiKey}`).toString('base64')}`,
      'Ocp-Apim-Subscription-Key': subscriptionKey,
    },
  });
  const token = field(answer.body, 'access_token');
  if (answer.status !== 200 || token === undefined)
    throw new Error(`MTN MoMo ${product} token refused: HTTP ${answer.status}`);
  return { value: token, expiresAt: Date.now() + Number(field(answer.body, 'expires_in') ?? 3600) * 1000 };
}

const call = (
  context: MomoContext,
  product: ProductName,
  request: { method: 'GET' | 'POST'; path: string; headers?: Record<string, string>; json?: unknown },
) =>
  callWithToken(context.tokens[product], {
    method: request.method,
    url: `${context.settings.baseUrl}/${product}${request.path}`,
    headers: {
      'Ocp-Apim-Subscription-Key': context.products[product].subscriptionKey,
      'X-Target-Environment': context.settings.targetEnvironment,
      ...request.headers,
    },
    json: request.json,
  });

const unexpected = (what: string, answer: OperatorAnswer) =>
  new Error(`MTN MoMo ${what}: HTTP ${answer.status} ${field(answer.body, 'code') ?? ''}`.trim());

/** Sends a request to pay or a transfer under `referenceId`; a 409 for it means MoMo has it already. */
async function send(
  context: MomoContext,
  kind: Transaction,
  referenceId: string,
  body: { amount: string; currency: string; externalId: string; msisdn: string; message: string },
): Promise<void> {
  const answer = await call(context, kind.product, {
    method: 'POST',
    path: `/v1_0/${kind.path}`,
    headers: {
      'X-Reference-Id': referenceId,
      'X-Callback-Url': `${context.callbackBaseUrl}${MOMO_CALLBACK_PATH}/${referenceId}`,
    },
    json: {
      // MoMo's amounts are strings, in the currency's minor units at most (the API's validation refuses more).
      amount: momoAmount(body.amount),
      currency: operatorCurrency(context, body.currency),
      externalId: body.externalId,
      [kind.party]: { partyIdType: 'MSISDN', partyId: body.msisdn },
      payerMessage: body.message.slice(0, 160),
      payeeNote: body.message.slice(0, 160),
    },
  });
  if (answer.status === 202 || answer.status === 409) return;
  if (answer.status >= 400 && answer.status < 500 && answer.status !== 401 && answer.status !== 429) {
    throw new OperatorRefusedError(field(answer.body, 'code') ?? '', answer);
  }
  throw unexpected(`${kind.path} not taken`, answer);
}

/**
 * Sends it; MoMo's refusal in a merchant's words (and whether it is MoMo's own trouble), or null when MoMo took it
 * (or had it already).
 */
async function refusalOf(
  context: MomoContext,
  kind: Transaction,
  referenceId: string,
  body: Parameters<typeof send>[3],
): Promise<{ error: string; routeFault?: true } | null> {
  try {
    await send(context, kind, referenceId, body);
    return null;
  } catch (error) {
    if (error instanceof OperatorRefusedError) return momoRefusal(error.message || undefined, kind === TRANSFER);
    throw error;
  }
}

type Status = {
  status: 'SUCCESSFUL' | 'FAILED' | 'PENDING' | 'NOT_FOUND';
  reason?: string;
  financialTransactionId?: string;
  matches: boolean;
};

/** MoMo's own record of a transaction, and whether it is the one we asked for (amount, number, currency). */
async function status(
  context: MomoContext,
  kind: Transaction,
  referenceId: string,
  expected: { amount: string; currency: string; msisdn: string },
): Promise<Status> {
  const answer = await call(context, kind.product, { method: 'GET', path: `/v1_0/${kind.path}/${referenceId}` });
  if (answer.status === 404) return { status: 'NOT_FOUND', matches: false };
  if (answer.status !== 200) throw unexpected(`${kind.path} status`, answer);
  const reported = answer.body;
  // Read whatever arrived: a body that is not an object (`null`, text) has no fields, and matches nothing.
  const party = nested(reported, kind.party);
  const amount = field(reported, 'amount') ?? '';
  const matches =
    /^\d+(\.\d+)?$/.test(amount) &&
    compareDecimal(amount, expected.amount) === 0 &&
    field(reported, 'currency') === operatorCurrency(context, expected.currency) &&
    field(party, 'partyId') === expected.msisdn;
  const state = field(reported, 'status');
  const known = state === 'SUCCESSFUL' || state === 'FAILED' || state === 'PENDING' ? state : 'PENDING';
  return {
    status: known,
    reason: field(reported, 'reason'),
    financialTransactionId: field(reported, 'financialTransactionId'),
    matches,
  };
}

const promptReferenceId = (context: MomoContext, prompt: Pick<PaymentPrompt, 'promptReference'>) =>
  referenceUuid(`${context.settings.collection.apiUser}:requesttopay:${prompt.promptReference}`);
const payoutReferenceId = (context: MomoContext, payout: Pick<Payout, 'reference'>) =>
  referenceUuid(`${context.settings.disbursement.apiUser}:transfer:${payout.reference}`);
const promptBody = (prompt: PaymentPrompt) => ({
  amount: prompt.amount,
  currency: prompt.currency,
  externalId: prompt.promptReference,
  msisdn: msisdnOf(prompt.phoneNumber),
  message: prompt.reference,
});
const payoutBody = (payout: Payout) => ({
  amount: payout.amount,
  currency: payout.currency,
  externalId: payout.reference,
  msisdn: msisdnOf(payout.phoneNumber),
  message: payout.kind === 'reversal' ? 'Payment returned' : 'Payment',
});

/**
 * Our X-Reference-Id, derived from our reference: recorded by the core before the call, so a callback that
 * outruns MoMo's answer finds its operation.
 */
const operatorIdFor = (context: MomoContext, { kind, reference }: { kind: string; reference: string }) =>
  kind === 'prompt'
    ? promptReferenceId(context, { promptReference: reference })
    : payoutReferenceId(context, { reference });

async function requestPayment(context: MomoContext, prompt: PaymentPrompt): Promise<PromptResult> {
  const referenceId = promptReferenceId(context, prompt);
  const refusal = await refusalOf(context, REQUEST_TO_PAY, referenceId, promptBody(prompt));
  return refusal === null
    ? { accepted: true, confirm: { operatorReference: referenceId } }
    : { accepted: false, ...refusal };
}

async function promptStatus(context: MomoContext, prompt: TakenPrompt): Promise<PromptStatus> {
  const referenceId = promptReferenceId(context, prompt);
  const found = await status(context, REQUEST_TO_PAY, referenceId, {
    amount: prompt.amount,
    currency: prompt.currency,
    msisdn: msisdnOf(prompt.phoneNumber),
  });
  if (found.status === 'NOT_FOUND') {
    // MoMo never took it (the request was lost before it arrived): send it now, under the same reference.
    const refusal = await refusalOf(context, REQUEST_TO_PAY, referenceId, promptBody(prompt));
    return refusal === null ? { status: 'pending' } : { status: 'failed', error: refusal.error };
  }
  if (found.status === 'PENDING') return { status: 'pending' };
  if (found.status === 'FAILED') return { status: 'failed', error: momoFailure(found.reason) };
  if (!found.matches)
    return {
      status: 'failed',
      error: "MTN MoMo's record of the payment does not match the request (amount, number or currency).",
    };
  // Credited under MoMo's own transaction id only (docs/architecture.md#one-receipt-one-credit): without one, asked
  // again at the next poll.
  if (!found.financialTransactionId) return { status: 'pending' };
  return {
    status: 'paid',
    remoteTransactionId: found.financialTransactionId,
    paymentDate: new Date().toISOString(),
  };
}

async function reportedPaymentStatus(): Promise<ReportedPaymentStatus> {
  // MoMo reports only the payments we asked for; nothing else arrives by callback to confirm.
  return { status: 'refused', reason: 'MTN MoMo reports no payment it was not asked for.' };
}

async function sendMoney(context: MomoContext, payout: Payout): Promise<PayoutResult> {
  const refusal = await refusalOf(context, TRANSFER, payoutReferenceId(context, payout), payoutBody(payout));
  return refusal === null
    ? { status: 'pending', remoteTransactionId: null }
    : { status: 'rejected', ...refusal, remoteTransactionId: null };
}

async function payoutStatus(context: MomoContext, payout: Payout): Promise<PayoutResult> {
  const referenceId = payoutReferenceId(context, payout);
  const found = await status(context, TRANSFER, referenceId, {
    amount: payout.amount,
    currency: payout.currency,
    msisdn: msisdnOf(payout.phoneNumber),
  });
  // MoMo never took it: send it now under the same reference (a duplicate would be refused).
  if (found.status === 'NOT_FOUND') return await sendMoney(context, payout);
  if (found.status === 'PENDING') return { status: 'pending', remoteTransactionId: null };
  if (found.status === 'FAILED')
    return { status: 'rejected', ...momoRefusal(found.reason, true), remoteTransactionId: null };
  if (!found.matches) {
    // A transfer under our reference that is not the one we asked for: nothing says ours went out.
    return { status: 'pending', remoteTransactionId: found.financialTransactionId ?? null };
  }
  return { status: 'completed', remoteTransactionId: found.financialTransactionId ?? referenceId };
}

/**
 * Whether MoMo holds a request to pay or transfer of ours (its GET by our X-Reference-Id): 404 means it never took
 * it.
 */
async function lookup(context: MomoContext, operation: JournaledOperation): Promise<'present' | 'absent'> {
  const kind = operation.kind === 'prompt' ? REQUEST_TO_PAY : TRANSFER;
  const referenceId =
    operation.kind === 'prompt'
      ? promptReferenceId(context, { promptReference: operation.reference })
      : payoutReferenceId(context, { reference: operation.reference });
  const answer = await call(context, kind.product, { method: 'GET', path: `/v1_0/${kind.path}/${referenceId}` });
  if (answer.status === 404) return 'absent';
  if (answer.status === 200) return 'present';
  throw unexpected(`${kind.path} look-up`, answer);
}

/** The registered name, when the number has an active MoMo account (`active`, then `basicuserinfo`). */
async function lookupName(context: MomoContext, phoneNumber: string): Promise<NameLookup | null> {
  const msisdn = msisdnOf(phoneNumber);
  const active = await call(context, 'collection', {
    method: 'GET',
    path: `/v1_0/accountholder/msisdn/${msisdn}/active`,
  });
  if (active.status === 404 || (active.status === 200 && field(active.body, 'result') !== 'true')) {
    return { nameOnNetwork: '', nationalId: null, nationalIdType: '', registered: false };
  }
  if (active.status !== 200) throw unexpected('account holder check', active);
  const info = await call(context, 'collection', {
    method: 'GET',
    path: `/v1_0/accountholder/msisdn/${msisdn}/basicuserinfo`,
  });
  if (info.status !== 200) return { nameOnNetwork: '', nationalId: null, nationalIdType: '', registered: true };
  const name =
    field(info.body, 'name') ??
    [field(info.body, 'given_name'), field(info.body, 'family_name')].filter(Boolean).join(' ');
  return { nameOnNetwork: name, nationalId: null, nationalIdType: '', registered: true };
}

export function createMomoConnector(settings: MomoSettings, { callbackBaseUrl }: MomoDeps) {
  const context: MomoContext = {
    settings,
    callbackBaseUrl,
    products: { collection: settings.collection, disbursement: settings.disbursement },
    tokens: {
      collection: createTokenCache(() => fetchToken(context, 'collection')),
      disbursement: createTokenCache(() => fetchToken(context, 'disbursement')),
    },
  };
  return {
    operatorIdFor: (operation: { kind: string; reference: string }) => operatorIdFor(context, operation),
    requestPayment: (prompt: PaymentPrompt) => requestPayment(context, prompt),
    promptStatus: (prompt: TakenPrompt) => promptStatus(context, prompt),
    reportedPaymentStatus,
    sendMoney: (payout: Payout) => sendMoney(context, payout),
    payoutStatus: (payout: Payout) => payoutStatus(context, payout),
    lookup: (operation: JournaledOperation) => lookup(context, operation),
    lookupName: (phoneNumber: string) => lookupName(context, phoneNumber),
  };
}
