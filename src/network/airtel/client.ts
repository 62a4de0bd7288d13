/**
 * Airtel Money connector (Airtel Africa Open API) for the Airtel networks of the countries it is
 * configured for (AIRTEL_COUNTRIES), each call naming its country and currency (X-Country,
 * X-Currency): USSD push collections (`/merchant/v1/payments/`), disbursements with the PIN
 * encrypted under Airtel's RSA key (`/standard/v2/disbursements/`), refunds of a collection
 * (reversals) and user enquiries (names). Each collection and disbursement carries a transaction id
 * derived from our ids, so a retry repeats it and a subscriber is never prompted twice for one
 * attempt. Airtel's callback is a hint: the workflow then asks the transaction enquiry and believes
 * only that (TS paid, TF failed, TIP and TA still open). Its codes, ids and the reading of its answers are
 * ./protocol.ts.
 */
import { constants, createPublicKey, publicEncrypt } from 'node:crypto';
import {
  NOT_FOUND_CODES,
  OPEN_CODES,
  airtelFailure,
  airtelRefusal,
  readAnswer,
  referenceText,
  saysAlreadyRefunded,
  transactionId,
  type Answer,
  type Enquiry,
} from './protocol';
import type { AirtelCountry, AirtelSettings } from './settings';
import { nationalNumberOf, type Network } from '../../domain/networks';
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
  nested,
  wholeAmount,
  type OperatorAnswer,
  type TokenCache,
} from '../operator-http';

/** How long Airtel's PIN encryption key is kept before it is fetched again. */
const PIN_KEY_LIFETIME_MS = 3_600_000;

/** What the calls of one connector share: its settings, its token and the PIN encrypted per country. */
type AirtelContext = {
  settings: AirtelSettings;
  tokens: TokenCache;
  pinKeys: Map<string, { encrypted: Promise<string>; until: number }>;
};

async function fetchToken(context: AirtelContext) {
  const { settings } = context;
  const answer = await callOperator({
    method: 'POST',
    url: `${settings.baseUrl}/auth/oauth2/token`,
    json: { client_id: settings.clientId, client_secret: settings.clientSecret, grant_type: 'client_credentials' },
  });
  const token = field(answer.body, 'access_token');
  if (answer.status !== 200 || token === undefined)
    throw new Error(`Airtel Money token refused: HTTP ${answer.status}`);
  return { value: token, expiresAt: Date.now() + Number(field(answer.body, 'expires_in') ?? 180) * 1000 };
}

const call = (
  context: AirtelContext,
  country: AirtelCountry,
  request: { method: 'GET' | 'POST'; path: string; json?: unknown },
) =>
  callWithToken(context.tokens, {
    method: request.method,
    url: `${context.settings.baseUrl}${request.path}`,
    json: request.json,
    headers: { 'X-Country': country.country, 'X-Currency': country.currency },
  });

const unexpected = (what: string, answer: OperatorAnswer) =>
  new Error(`Airtel Money ${what}: HTTP ${answer.status} ${readAnswer(answer).code ?? ''}`.trim());

/** The country settings a call on `network` in `currency` goes under, or why Airtel may not move it. */
function countryOf(context: AirtelContext, network: Network, currency: string): AirtelCountry | string {
  const country = context.settings.countries.find((served) => served.country === network.country);
  if (!country) return `${network.name} is not served by this deployment's Airtel Money connection.`;
  return country.currency === currency
    ? country
    : `Airtel Money in ${country.country} moves ${country.currency} here, not ${currency}.`;
}

/** Airtel's own record of a transaction of ours (`path` is its enquiry). */
async function enquire(context: AirtelContext, country: AirtelCountry, path: string): Promise<Enquiry> {
  const answer = await call(context, country, { method: 'GET', path });
  if (answer.status === 404) return { found: false };
  if (answer.status !== 200) throw unexpected('enquiry', answer);
  const read = readAnswer(answer);
  if (read.code !== undefined && NOT_FOUND_CODES.has(read.code)) return { found: false };
  if (read.state === undefined) throw unexpected('enquiry without a transaction status', answer);
  return { found: true, ...read };
}

/**
 * Sends a push or a disbursement; null when Airtel took it, else its refusal in a merchant's words.
 * A refusal of an id Airtel already has (a retry of a call that went through) is no refusal: the
 * enquiry then decides.
 */
async function submit(
  context: AirtelContext,
  country: AirtelCountry,
  path: string,
  enquiryPath: string,
  json: unknown,
): Promise<string | null> {
  const answer = await call(context, country, { method: 'POST', path, json });
  const read = readAnswer(answer);
  if (answer.status === 200 && (read.success || (read.code !== undefined && OPEN_CODES.has(read.code)))) return null;
  if (
    answer.status !== 200 &&
    (answer.status < 400 || answer.status >= 500 || answer.status === 401 || answer.status === 429)
  )
    throw unexpected(`${path} not taken`, answer);
  const known = await enquire(context, country, enquiryPath);
  return known.found ? null : airtelFailure(read.code, read.message);
}

const amountOf = (amount: string) => Number(wholeAmount(amount) ?? amount);
const msisdnOf = (e164: string) => nationalNumberOf(e164) ?? e164.replace(/^\+/, '');
const promptId = (context: AirtelContext, prompt: Pick<PaymentPrompt, 'promptReference'>) =>
  transactionId('C', context.settings.clientId, prompt.promptReference);
const payoutId = (context: AirtelContext, payout: Pick<Payout, 'reference'>) =>
  transactionId('D', context.settings.clientId, payout.reference);
const promptEnquiry = (id: string) => `/standard/v1/payments/${encodeURIComponent(id)}`;
const payoutEnquiry = (id: string) => `/standard/v2/disbursements/${encodeURIComponent(id)}?transactionType=B2C`;

const push = (context: AirtelContext, country: AirtelCountry, prompt: PaymentPrompt) => {
  const id = promptId(context, prompt);
  return submit(context, country, '/merchant/v1/payments/', promptEnquiry(id), {
    reference: referenceText(prompt.reference),
    subscriber: { country: country.country, currency: country.currency, msisdn: msisdnOf(prompt.phoneNumber) },
    transaction: { amount: amountOf(prompt.amount), country: country.country, currency: country.currency, id },
  });
};

/**
 * The merchant's PIN encrypted under Airtel's current public key (RSA, PKCS#1 v1.5, Base64), the key kept an hour.
 */
function encryptedPin(context: AirtelContext, country: AirtelCountry): Promise<string> {
  const { pinKeys } = context;
  const cached = pinKeys.get(country.country);
  if (cached && cached.until > Date.now()) return cached.encrypted;
  const encrypted = (async () => {
    const answer = await call(context, country, { method: 'GET', path: '/v1/rsa/encryption-keys' });
    const key = field(nested(answer.body, 'data'), 'key');
    if (answer.status !== 200 || key === undefined) throw unexpected('encryption key', answer);
    const publicKey = createPublicKey({ key: Buffer.from(key, 'base64'), format: 'der', type: 'spki' });
    return publicEncrypt(
      { key: publicKey, padding: constants.RSA_PKCS1_PADDING },
      Buffer.from(context.settings.pin),
    ).toString('base64');
  })();
  pinKeys.set(country.country, { encrypted, until: Date.now() + PIN_KEY_LIFETIME_MS });
  encrypted.catch(() => pinKeys.delete(country.country));
  return encrypted;
}

const disburse = async (context: AirtelContext, country: AirtelCountry, payout: Payout) => {
  const id = payoutId(context, payout);
  return await submit(context, country, '/standard/v2/disbursements/', payoutEnquiry(id), {
    payee: { msisdn: msisdnOf(payout.phoneNumber), wallet_type: 'NORMAL' },
    reference: referenceText(payout.kind === 'reversal' ? 'Payment returned' : 'Payment'),
    pin: await encryptedPin(context, country),
    transaction: { amount: amountOf(payout.amount), id, type: 'B2C' },
  });
};

/**
 * A reversal: Airtel refunds the collection itself (its airtel_money_id); the answer is the result. Airtel's
 * refund takes no id of ours and has no enquiry, so a refund asked again (a retry after an answer that was lost, a
 * 5xx, or the status asked) is told by Airtel's answer to the repeat: "already refunded" is that refund, done.
 */
async function refund(context: AirtelContext, country: AirtelCountry, payout: Payout): Promise<PayoutResult> {
  if (!payout.originalTransactionId)
    return {
      status: 'rejected',
      error: 'The collection has no Airtel Money transaction id to refund.',
      remoteTransactionId: null,
    };
  const answer = await call(context, country, {
    method: 'POST',
    path: '/standard/v1/payments/refund',
    json: { transaction: { airtel_money_id: payout.originalTransactionId } },
  });
  const read = readAnswer(answer);
  if (answer.status === 200 && (read.success || read.state === 'SUCCESS' || read.state === 'TS')) {
    return { status: 'completed', remoteTransactionId: read.airtelMoneyId ?? payout.originalTransactionId };
  }
  if (answer.status === 200 && read.code !== undefined && OPEN_CODES.has(read.code))
    return { status: 'pending', remoteTransactionId: null };
  const answered = answer.status < 500 && answer.status !== 401 && answer.status !== 429;
  // Never a failure that gives the amount back: the subscriber has it already.
  if (answered && saysAlreadyRefunded(answer))
    return { status: 'completed', remoteTransactionId: payout.originalTransactionId };
  if (answer.status === 200 || (answer.status >= 400 && answered))
    return { status: 'rejected', error: airtelFailure(read.code, read.message), remoteTransactionId: null };
  throw unexpected('refund not taken', answer);
}

/** A disbursement as Airtel's enquiry shows it. */
function payoutResultOf(found: Answer, id: string): PayoutResult {
  if (found.state === 'TS') return { status: 'completed', remoteTransactionId: found.airtelMoneyId ?? id };
  if (found.state === 'TF' || found.state === 'TE')
    return {
      status: 'rejected',
      ...airtelRefusal(airtelFailure(found.code, found.message)),
      remoteTransactionId: null,
    };
  return { status: 'pending', remoteTransactionId: null };
}

/**
 * Our transaction id, derived from our reference: recorded by the core before the call (a callback may outrun it).
 */
const operatorIdFor = (context: AirtelContext, { kind, reference }: { kind: string; reference: string }) =>
  kind === 'prompt' ? promptId(context, { promptReference: reference }) : payoutId(context, { reference });

async function requestPayment(context: AirtelContext, prompt: PaymentPrompt): Promise<PromptResult> {
  const country = countryOf(context, prompt.network, prompt.currency);
  if (typeof country === 'string') return { accepted: false, error: country };
  const refusal = await push(context, country, prompt);
  return refusal === null
    ? { accepted: true, confirm: { operatorReference: promptId(context, prompt) } }
    : { accepted: false, error: refusal };
}

async function promptStatus(context: AirtelContext, prompt: TakenPrompt): Promise<PromptStatus> {
  const country = countryOf(context, prompt.network, prompt.currency);
  if (typeof country === 'string') return { status: 'failed', error: country };
  const found = await enquire(context, country, promptEnquiry(promptId(context, prompt)));
  if (!found.found) {
    // Airtel never took it (the push was lost on the way): send it now, under the same id.
    const refusal = await push(context, country, prompt);
    return refusal === null ? { status: 'pending' } : { status: 'failed', error: refusal };
  }
  // Credited under Airtel's own money id only (docs/architecture.md#one-receipt-one-credit): without one, asked
  // again at the next poll.
  if (found.state === 'TS')
    return found.airtelMoneyId
      ? { status: 'paid', remoteTransactionId: found.airtelMoneyId, paymentDate: new Date().toISOString() }
      : { status: 'pending' };
  if (found.state === 'TF' || found.state === 'TE')
    return { status: 'failed', error: airtelFailure(found.code, found.message) };
  return { status: 'pending' };
}

async function reportedPaymentStatus(): Promise<ReportedPaymentStatus> {
  // Airtel calls back only about the pushes we asked for; nothing else arrives to confirm.
  return { status: 'refused', reason: 'Airtel Money reports no payment it was not asked for.' };
}

async function sendMoney(context: AirtelContext, payout: Payout): Promise<PayoutResult> {
  const country = countryOf(context, payout.network, payout.currency);
  if (typeof country === 'string') return { status: 'rejected', error: country, remoteTransactionId: null };
  if (payout.kind === 'reversal') return await refund(context, country, payout);
  const refusal = await disburse(context, country, payout);
  return refusal === null
    ? { status: 'pending', remoteTransactionId: null }
    : { status: 'rejected', ...airtelRefusal(refusal), remoteTransactionId: null };
}

async function payoutStatus(context: AirtelContext, payout: Payout): Promise<PayoutResult> {
  const country = countryOf(context, payout.network, payout.currency);
  if (typeof country === 'string') return { status: 'rejected', error: country, remoteTransactionId: null };
  // A refund has no enquiry of its own: asking again is refunding again, which Airtel refuses as "already
  // refunded" once it made the refund (read as done by `refund`).
  if (payout.kind === 'reversal') return await refund(context, country, payout);
  const id = payoutId(context, payout);
  const found = await enquire(context, country, payoutEnquiry(id));
  if (found.found) return payoutResultOf(found, id);
  // Airtel never took it: send it now under the same id.
  const refusal = await disburse(context, country, payout);
  return refusal === null
    ? { status: 'pending', remoteTransactionId: null }
    : { status: 'rejected', ...airtelRefusal(refusal), remoteTransactionId: null };
}

/** Whether Airtel holds a push or disbursement of ours (its enquiry by our transaction id). */
async function lookup(context: AirtelContext, operation: JournaledOperation): Promise<'present' | 'absent'> {
  const country = context.settings.countries.find((served) => served.country === operation.network.country);
  if (!country || operation.kind === 'reversal') return 'present';
  const path =
    operation.kind === 'prompt'
      ? promptEnquiry(promptId(context, { promptReference: operation.reference }))
      : payoutEnquiry(payoutId(context, { reference: operation.reference }));
  return (await enquire(context, country, path)).found ? 'present' : 'absent';
}

/** The registered name on an Airtel Money number (user enquiry). */
async function lookupName(context: AirtelContext, phoneNumber: string, network: Network): Promise<NameLookup | null> {
  const country = context.settings.countries.find((served) => served.country === network.country);
  if (!country) return null;
  const answer = await call(context, country, {
    method: 'GET',
    path: `/standard/v1/users/${encodeURIComponent(msisdnOf(phoneNumber))}`,
  });
  const read = readAnswer(answer);
  const user = nested(answer.body, 'data');
  if (answer.status === 404 || (answer.status === 200 && (!read.success || user === undefined))) {
    return { nameOnNetwork: '', nationalId: null, nationalIdType: '', registered: false };
  }
  if (answer.status !== 200) throw unexpected('user enquiry', answer);
  const name = [field(user, 'first_name'), field(user, 'last_name')].filter(Boolean).join(' ');
  return { nameOnNetwork: name, nationalId: null, nationalIdType: '', registered: true };
}

export function createAirtelConnector(settings: AirtelSettings) {
  const context: AirtelContext = {
    settings,
    tokens: createTokenCache(() => fetchToken(context)),
    pinKeys: new Map(),
  };
  return {
    countries: settings.countries,
    operatorIdFor: (operation: { kind: string; reference: string }) => operatorIdFor(context, operation),
    requestPayment: (prompt: PaymentPrompt) => requestPayment(context, prompt),
    promptStatus: (prompt: TakenPrompt) => promptStatus(context, prompt),
    reportedPaymentStatus,
    sendMoney: (payout: Payout) => sendMoney(context, payout),
    payoutStatus: (payout: Payout) => payoutStatus(context, payout),
    lookup: (operation: JournaledOperation) => lookup(context, operation),
    lookupName: (phoneNumber: string, network: Network) => lookupName(context, phoneNumber, network),
  };
}
