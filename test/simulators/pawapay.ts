/**
 * A contract simulator of pawaPay's Merchant API v2 on loopback, written from pawaPay's public
 * documentation (docs.pawapay.io/v2): deposits, payouts and refunds initiated with the merchant's
 * UUIDv4 id (`ACCEPTED`, `REJECTED` with a `failureReason`, or `DUPLICATE_IGNORED` for an id seen
 * before, with no second PIN prompt), their status (`{status: "FOUND", data}` or
 * `{status: "NOT_FOUND"}`), the callback with the final object POSTed to the merchant's URL per
 * operation, signed as pawaPay signs them (RFC 9421: `Content-Digest` sha-512, `Signature-Date`,
 * `Signature-Input` label `sig-pp` over "@method" "@authority" "@path" "signature-date"
 * "content-digest" "content-type", ecdsa-p256-sha256 with a DER signature like pawaPay's own
 * example) under a P-256 key made at start and served at `/v2/public-key/http`, the active
 * configuration (`/v2/active-conf`) with each provider's currencies, limits, decimals and status,
 * and the providers' availability (`/v2/availability`): per country, each provider's status per
 * operation type. A provider's operation set CLOSED rejects new payments of that type with
 * PROVIDER_TEMPORARILY_UNAVAILABLE; a DELAYED one holds payouts and refunds in ENQUEUED until it is
 * OPERATIONAL again (deposits are taken as usual).
 * Amounts, currencies, providers and numbers are checked as pawaPay checks them, with its failure
 * codes. It plays pawaPay for the network tests and `npm run start:networks`: subscribers are
 * scripted per number (MSISDN), payments can be held in reconciliation and released, and callbacks
 * suppressed, replayed or forged on request.
 */
import { createHash, createSign, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { SIMULATOR_HOST, serveWithOutages, type LateAnswer, type OutageMode } from './outage';
import { createScheduler } from './scheduler';

export type PawapayKind = 'deposit' | 'payout' | 'refund';
export type PawapayOperation = 'DEPOSIT' | 'PAYOUT' | 'REFUND';
export type PawapayOperationStatus = 'OPERATIONAL' | 'DELAYED' | 'CLOSED';
export type PawapayStatus = 'ACCEPTED' | 'ENQUEUED' | 'PROCESSING' | 'IN_RECONCILIATION' | 'COMPLETED' | 'FAILED';
export type PawapayFailure = { failureCode: string; failureMessage: string };

/** A provider pawaPay offers: its country (ISO alpha-3), calling code, national number length, currencies and limits. */
export type PawapayProviderSpec = {
  provider: string;
  country: string;
  prefix: string;
  nationalDigits: number;
  displayName: string;
  decimalsInAmount: 'NONE' | 'TWO_PLACES';
  currencies: { currency: string; displayName: string; minAmount: string; maxAmount: string }[];
};

export type PawapaySubscriber = {
  /** What the payer does with a deposit's PIN prompt: pays, declines, lacks the funds, has no wallet, is over a limit, never answers, or the payment lands in reconciliation. */
  deposit: 'pays' | 'declines' | 'insufficient' | 'unknown' | 'limit' | 'ignores' | 'reconciles';
  /** What happens to a payout or refund to this number. */
  payout: 'receives' | 'unknown' | 'limit' | 'fails' | 'ignores' | 'reconciles';
  /** The callback at the final status: sent once, not at all, or twice. */
  callback: 'once' | 'none' | 'twice';
  /** A failure code to report instead of the outcome's own. */
  failureCode?: string;
  decideAfterMs?: number;
  /** How a reconciliation ends (default COMPLETED) and after how long; without a delay it waits for `release`. */
  reconcilesTo?: 'COMPLETED' | 'FAILED';
  reconcileAfterMs?: number;
};

export type PawapaySimulatorOptions = {
  apiToken: string;
  /** Providers enabled on the account (default: every provider in PAWAPAY_PROVIDERS). */
  providers?: string[];
  /** The service's public base: callbacks go to `<base>/network/pawapay/{deposits,payouts,refunds}`. */
  callbackBase?: string;
  /** Whether callbacks are signed (the dashboard's "signed callbacks"); default true. */
  signedCallbacks?: boolean;
  companyName?: string;
  port?: number;
  decisionDelayMs?: number;
  callbackDelayMs?: number;
  defaultSubscriber?: Partial<PawapaySubscriber>;
};

export type PawapayTransaction = {
  kind: PawapayKind;
  id: string;
  status: PawapayStatus;
  amount: string;
  currency: string;
  country: string;
  provider: string;
  phoneNumber: string;
  customerMessage: string;
  clientReferenceId: string | null;
  metadata: Record<string, unknown> | null;
  created: string;
  providerTransactionId: string | null;
  failureReason: PawapayFailure | null;
  depositId: string | null;
  submissions: number;
};
export type PawapaySentCallback = {
  kind: PawapayKind;
  url: string;
  body: string;
  headers: Record<string, string>;
  status: number | null;
};
export type PawapayRelease = 'COMPLETED' | 'FAILED' | PawapayFailure;
export type PawapayForgery = { sign?: boolean; tamper?: boolean; wrongKey?: boolean };

export type PawapaySimulator = {
  url: string;
  token: string;
  /** The id and PEM of the key that signs callbacks, as `/v2/public-key/http` serves them. */
  keyId: string;
  publicKeyPem: string;
  stop(): Promise<void>;
  setSubscriber(phoneNumber: string, behaviour: Partial<PawapaySubscriber>): void;
  setCallbackBase(url: string | null): void;
  /** A provider's status for one operation type, as active-conf and availability show it (the effects: see above). */
  setOperationStatus(provider: string, operation: PawapayOperation, status: PawapayOperationStatus): void;
  /** The same, for a provider enabled on the account only: throws for any other (a typo must not pass unnoticed). */
  setAvailability(provider: string, operationType: PawapayOperation, status: PawapayOperationStatus): void;
  /** Takes the whole API down or brings it back: see outage.ts. */
  outage(mode: OutageMode): Promise<void>;
  /** Answers the next matching calls out of time: processed before or after the answer, answered late or 500. */
  late(rule: LateAnswer): void;
  /** How many calls its gateway answered with its system error (an outage's or a late rule's). */
  systemErrors(): number;
  clearLate(): void;
  /** Resolves once every late call has been processed and answered. */
  settled(): Promise<void>;
  deposits(): PawapayTransaction[];
  payouts(): PawapayTransaction[];
  refunds(): PawapayTransaction[];
  /** PIN prompts sent for a deposit id: 1 once accepted, never more. */
  promptsOf(depositId: string): number;
  /** Sends the payment (known or still to come) to IN_RECONCILIATION instead of its final status, until `release`. */
  holdInReconciliation(id: string): void;
  /** Ends a held payment; false when it is not in reconciliation (then it only stops being held). */
  release(id: string, outcome: PawapayRelease): boolean;
  suppressCallbacks(suppressed: boolean): void;
  /** Sends a callback of any body to the kind's URL: signed or not, tampered after signing, or signed with a key pawaPay does not serve. */
  sendCallback(kind: PawapayKind, body: unknown, forgery?: PawapayForgery): Promise<PawapaySentCallback>;
  /** Sends a callback sent before again, byte for byte with its old headers. */
  replayCallback(index: number): Promise<PawapaySentCallback>;
  callbacks(): PawapaySentCallback[];
  calls(): { api: string; method: string; status: number; at: number }[];
};

/** Providers the simulator knows, with limits like a new pawaPay account's (configurable per account). */
export const PAWAPAY_PROVIDERS: readonly PawapayProviderSpec[] = [
  {
    provider: 'TIGO_TZA',
    country: 'TZA',
    prefix: '255',
    nationalDigits: 9,
    displayName: 'Tigo',
    decimalsInAmount: 'NONE',
    currencies: [{ currency: 'TZS', displayName: 'TSh', minAmount: '100', maxAmount: '5000000' }],
  },
  {
    provider: 'HALOTEL_TZA',
    country: 'TZA',
    prefix: '255',
    nationalDigits: 9,
    displayName: 'Halotel',
    decimalsInAmount: 'NONE',
    currencies: [{ currency: 'TZS', displayName: 'TSh', minAmount: '100', maxAmount: '5000000' }],
  },
  {
    provider: 'VODAFONE_GHA',
    country: 'GHA',
    prefix: '233',
    nationalDigits: 9,
    displayName: 'Vodafone',
    decimalsInAmount: 'TWO_PLACES',
    currencies: [{ currency: 'GHS', displayName: '₵', minAmount: '1', maxAmount: '10000' }],
  },
  {
    provider: 'AIRTELTIGO_GHA',
    country: 'GHA',
    prefix: '233',
    nationalDigits: 9,
    displayName: 'AirtelTigo',
    decimalsInAmount: 'TWO_PLACES',
    currencies: [{ currency: 'GHS', displayName: '₵', minAmount: '1', maxAmount: '10000' }],
  },
  {
    provider: 'ORANGE_COD',
    country: 'COD',
    prefix: '243',
    nationalDigits: 9,
    displayName: 'Orange',
    decimalsInAmount: 'TWO_PLACES',
    currencies: [
      { currency: 'CDF', displayName: 'FC', minAmount: '100', maxAmount: '5000000' },
      { currency: 'USD', displayName: '$', minAmount: '1', maxAmount: '2500' },
    ],
  },
  {
    provider: 'MTN_MOMO_UGA',
    country: 'UGA',
    prefix: '256',
    nationalDigits: 9,
    displayName: 'MTN',
    decimalsInAmount: 'NONE',
    currencies: [{ currency: 'UGX', displayName: 'USh', minAmount: '500', maxAmount: '5000000' }],
  },
  // The providers of the networks a direct connector also serves: pawaPay is their second route.
  {
    provider: 'AIRTEL_OAPI_UGA',
    country: 'UGA',
    prefix: '256',
    nationalDigits: 9,
    displayName: 'Airtel',
    decimalsInAmount: 'NONE',
    currencies: [{ currency: 'UGX', displayName: 'USh', minAmount: '500', maxAmount: '5000000' }],
  },
  {
    provider: 'MPESA_KEN',
    country: 'KEN',
    prefix: '254',
    nationalDigits: 9,
    displayName: 'M-Pesa',
    decimalsInAmount: 'NONE',
    currencies: [{ currency: 'KES', displayName: 'KSh', minAmount: '1', maxAmount: '250000' }],
  },
  {
    provider: 'VODACOM_TZA',
    country: 'TZA',
    prefix: '255',
    nationalDigits: 9,
    displayName: 'Vodacom',
    decimalsInAmount: 'NONE',
    currencies: [{ currency: 'TZS', displayName: 'TSh', minAmount: '100', maxAmount: '5000000' }],
  },
  {
    provider: 'AIRTEL_TZA',
    country: 'TZA',
    prefix: '255',
    nationalDigits: 9,
    displayName: 'Airtel',
    decimalsInAmount: 'NONE',
    currencies: [{ currency: 'TZS', displayName: 'TSh', minAmount: '100', maxAmount: '5000000' }],
  },
  {
    provider: 'MTN_MOMO_GHA',
    country: 'GHA',
    prefix: '233',
    nationalDigits: 9,
    displayName: 'MTN',
    decimalsInAmount: 'TWO_PLACES',
    currencies: [{ currency: 'GHS', displayName: '₵', minAmount: '1', maxAmount: '10000' }],
  },
  {
    provider: 'MTN_MOMO_RWA',
    country: 'RWA',
    prefix: '250',
    nationalDigits: 9,
    displayName: 'MTN',
    decimalsInAmount: 'NONE',
    currencies: [{ currency: 'RWF', displayName: 'RF', minAmount: '100', maxAmount: '2000000' }],
  },
  {
    provider: 'AIRTEL_RWA',
    country: 'RWA',
    prefix: '250',
    nationalDigits: 9,
    displayName: 'Airtel',
    decimalsInAmount: 'NONE',
    currencies: [{ currency: 'RWF', displayName: 'RF', minAmount: '100', maxAmount: '2000000' }],
  },
  {
    provider: 'VODACOM_MPESA_COD',
    country: 'COD',
    prefix: '243',
    nationalDigits: 9,
    displayName: 'Vodacom',
    decimalsInAmount: 'TWO_PLACES',
    currencies: [
      { currency: 'CDF', displayName: 'FC', minAmount: '100', maxAmount: '5000000' },
      { currency: 'USD', displayName: '$', minAmount: '1', maxAmount: '2500' },
    ],
  },
  {
    provider: 'AIRTEL_COD',
    country: 'COD',
    prefix: '243',
    nationalDigits: 9,
    displayName: 'Airtel',
    decimalsInAmount: 'TWO_PLACES',
    currencies: [
      { currency: 'CDF', displayName: 'FC', minAmount: '100', maxAmount: '5000000' },
      { currency: 'USD', displayName: '$', minAmount: '1', maxAmount: '2500' },
    ],
  },
];
const COUNTRY_NAMES: Readonly<Record<string, { en: string; fr: string }>> = {
  TZA: { en: 'Tanzania', fr: 'Tanzanie' },
  GHA: { en: 'Ghana', fr: 'Ghana' },
  COD: { en: 'DR Congo', fr: 'RD Congo' },
  UGA: { en: 'Uganda', fr: 'Ouganda' },
  KEN: { en: 'Kenya', fr: 'Kenya' },
  RWA: { en: 'Rwanda', fr: 'Rwanda' },
};
const OPERATIONS: readonly PawapayOperation[] = ['DEPOSIT', 'PAYOUT', 'REFUND'];

type KindSpec = {
  idField: string;
  party: 'payer' | 'recipient';
  operation: PawapayOperation;
  path: string;
  fields: readonly string[];
};
const KINDS: Record<PawapayKind, KindSpec> = {
  deposit: {
    idField: 'depositId',
    party: 'payer',
    operation: 'DEPOSIT',
    path: 'deposits',
    fields: [
      'depositId',
      'amount',
      'currency',
      'payer',
      'preAuthorisationCode',
      'clientReferenceId',
      'customerMessage',
      'metadata',
      'successfulUrl',
      'failedUrl',
    ],
  },
  payout: {
    idField: 'payoutId',
    party: 'recipient',
    operation: 'PAYOUT',
    path: 'payouts',
    fields: ['payoutId', 'amount', 'currency', 'recipient', 'clientReferenceId', 'customerMessage', 'metadata'],
  },
  refund: {
    idField: 'refundId',
    party: 'recipient',
    operation: 'REFUND',
    path: 'refunds',
    fields: ['refundId', 'depositId', 'amount', 'currency', 'clientReferenceId', 'customerMessage', 'metadata'],
  },
};
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
/** pawaPay's amount format: no leading zeros (one only, below 1), no bare point, no sign. */
const AMOUNT = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
const MAX_BODY_BYTES = 1_048_576;
const KEY_ID = 'HTTP_EC_P256_KEY:1';
const CALLBACK_CONTENT_TYPE = 'application/json; charset=UTF-8';
const COVERED = ['@method', '@authority', '@path', 'signature-date', 'content-digest', 'content-type'] as const;
const FINAL: readonly PawapayStatus[] = ['COMPLETED', 'FAILED'];
const FAILURES: Readonly<Record<string, { code: string; message: string }>> = {
  declines: { code: 'PAYMENT_NOT_APPROVED', message: 'The customer did not authorise the payment.' },
  insufficient: {
    code: 'INSUFFICIENT_BALANCE',
    message: 'The customer does not have enough funds to complete the payment.',
  },
  payerUnknown: {
    code: 'PAYER_NOT_FOUND',
    message: 'The phone number does not belong to a mobile money wallet of the provider.',
  },
  recipientUnknown: {
    code: 'RECIPIENT_NOT_FOUND',
    message: 'The phone number does not belong to a mobile money wallet of the provider.',
  },
  limit: { code: 'WALLET_LIMIT_REACHED', message: 'The customer has reached a limit of their mobile money wallet.' },
  fails: { code: 'UNSPECIFIED_FAILURE', message: 'The provider reported a failure without a reason.' },
};

type Refusal = { http: number; failure: PawapayFailure };
const refusal = (http: number, failureCode: string, failureMessage: string): Refusal => ({
  http,
  failure: { failureCode, failureMessage },
});
const isRefusal = (value: unknown): value is Refusal =>
  typeof value === 'object' && value !== null && 'http' in value && 'failure' in value;
const failureBody = (failureCode: string, failureMessage: string) => ({
  failureReason: { failureCode, failureMessage },
});

/** An amount in hundredths, for amounts of at most two decimals. */
function hundredths(amount: string): bigint {
  const [whole = '0', fraction = ''] = amount.split('.');
  return BigInt(whole) * 100n + BigInt(`${fraction}00`.slice(0, 2));
}
const twoPlaces = (value: bigint) => `${value / 100n}.${String(value % 100n).padStart(2, '0')}`;
/** pawaPay's timestamps: UTC to the second. */
const timestamp = () => `${new Date().toISOString().slice(0, 19)}Z`;
const parsedOrNull = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
};
const record = (value: unknown): Record<string, unknown> | null =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;

/** The request's metadata list (`[{orderId: "…"}, {customerId: "…", isPII: true}]`) as the object pawaPay answers with, or a refusal. */
function metadataOf(value: unknown): { metadata: Record<string, unknown> | null } | Refusal {
  if (value === undefined) return { metadata: null };
  if (!Array.isArray(value) || value.length > 10)
    return refusal(400, 'INVALID_PARAMETER', 'metadata must be a list of at most 10 fields.');
  const merged: Record<string, unknown> = {};
  for (const item of value) {
    const field = Object.entries(record(item) ?? {}).filter(([name]) => name !== 'isPII');
    if (field.length !== 1)
      return refusal(
        400,
        'INVALID_PARAMETER',
        'Each metadata item must hold exactly one field (and optionally isPII).',
      );
    const [name, content] = field[0]!;
    if (name in merged)
      return refusal(400, 'DUPLICATE_METADATA_FIELD', `The metadata field '${name}' is included more than once.`);
    merged[name] = content;
  }
  return { metadata: merged };
}

/** The optional fields every initiation shares, checked; a refusal for the first that is wrong. */
function commonFields(
  body: Record<string, unknown>,
  spec: KindSpec,
):
  | { customerMessage: string | null; clientReferenceId: string | null; metadata: Record<string, unknown> | null }
  | Refusal {
  const unsupported = Object.keys(body).find((name) => !spec.fields.includes(name));
  if (unsupported)
    return refusal(400, 'UNSUPPORTED_PARAMETER', `The parameter '${unsupported}' is not supported by this endpoint.`);
  const { customerMessage, clientReferenceId } = body;
  if (
    customerMessage !== undefined &&
    (typeof customerMessage !== 'string' || customerMessage.length < 4 || customerMessage.length > 22)
  ) {
    return refusal(400, 'INVALID_PARAMETER', 'customerMessage must be 4 to 22 characters long.');
  }
  if (
    clientReferenceId !== undefined &&
    (typeof clientReferenceId !== 'string' || clientReferenceId.length === 0 || clientReferenceId.length > 100)
  ) {
    return refusal(400, 'INVALID_PARAMETER', 'clientReferenceId must be a non-empty string.');
  }
  const preAuthorisationCode = body.preAuthorisationCode;
  if (
    preAuthorisationCode !== undefined &&
    (typeof preAuthorisationCode !== 'string' || preAuthorisationCode.length === 0 || preAuthorisationCode.length > 36)
  ) {
    return refusal(400, 'INVALID_PARAMETER', 'preAuthorisationCode must be 1 to 36 characters long.');
  }
  const metadata = metadataOf(body.metadata);
  if (isRefusal(metadata)) return metadata;
  return {
    customerMessage: typeof customerMessage === 'string' ? customerMessage : null,
    clientReferenceId: typeof clientReferenceId === 'string' ? clientReferenceId : null,
    metadata: metadata.metadata,
  };
}

/** The amount checked against the provider's decimals and the operation's limits for the currency. */
function checkAmount(amount: string, spec: PawapayProviderSpec, currency: string): Refusal | null {
  const places = amount.split('.')[1]?.length ?? 0;
  const allowed = spec.decimalsInAmount === 'NONE' ? 0 : 2;
  if (places > allowed)
    return refusal(
      200,
      'INVALID_AMOUNT',
      `The provider ${spec.provider} only supports up to '${allowed}' decimal places in amount.`,
    );
  const limits = spec.currencies.find((entry) => entry.currency === currency)!;
  const value = hundredths(amount);
  if (value < hundredths(limits.minAmount) || value > hundredths(limits.maxAmount)) {
    return refusal(
      200,
      'AMOUNT_OUT_OF_BOUNDS',
      `The amount needs to be more than '${limits.minAmount}' and less than '${limits.maxAmount}' for provider '${spec.provider}'.`,
    );
  }
  return null;
}

/** ECDSA P-256 with SHA-256 over the signature base, DER-encoded as in pawaPay's examples. */
function ecdsaSign(key: KeyObject, base: string): string {
  return createSign('sha256').update(base).sign(key).toString('base64');
}

/** The RFC 9421 headers pawaPay puts on a callback to `url` with `body`. */
export function signCallback(url: string, body: string, key: KeyObject, keyId: string): Record<string, string> {
  const target = new URL(url);
  const created = Math.floor(Date.now() / 1000);
  const values: Record<(typeof COVERED)[number], string> = {
    '@method': 'POST',
    '@authority': target.host,
    '@path': target.pathname,
    'signature-date': new Date().toISOString(),
    'content-digest': `sha-512=:${createHash('sha512').update(body).digest('base64')}:`,
    'content-type': CALLBACK_CONTENT_TYPE,
  };
  const params = `(${COVERED.map((name) => `"${name}"`).join(' ')});alg="ecdsa-p256-sha256";keyid="${keyId}";created=${created};expires=${created + 60}`;
  const base = [...COVERED.map((name) => `"${name}": ${values[name]}`), `"@signature-params": ${params}`].join('\n');
  return {
    'Content-Type': CALLBACK_CONTENT_TYPE,
    'Content-Digest': values['content-digest'],
    'Signature-Date': values['signature-date'],
    'Signature-Input': `sig-pp=${params}`,
    Signature: `sig-pp=:${ecdsaSign(key, base)}:`,
  };
}

export async function startPawapaySimulator(options: PawapaySimulatorOptions): Promise<PawapaySimulator> {
  const keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const publicKeyPem = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const enabled = new Set(options.providers ?? PAWAPAY_PROVIDERS.map((spec) => spec.provider));
  const operationStatus = new Map<string, PawapayOperationStatus>();
  const subscribers = new Map<string, Partial<PawapaySubscriber>>();
  const transactions: Record<PawapayKind, Map<string, PawapayTransaction>> = {
    deposit: new Map(),
    payout: new Map(),
    refund: new Map(),
  };
  const prompts = new Map<string, number>();
  const held = new Set<string>();
  const sent: PawapaySentCallback[] = [];
  const log: { api: string; method: string; status: number; at: number }[] = [];
  const companyName = options.companyName ?? 'Collections Sandbox';
  let callbackBase = options.callbackBase?.replace(/\/+$/, '') ?? null;
  let callbacksSuppressed = false;
  const { later, track, stop } = createScheduler();

  const specOf = (provider: string) => PAWAPAY_PROVIDERS.find((spec) => spec.provider === provider);
  const statusOf = (provider: string, operation: PawapayOperation) =>
    operationStatus.get(`${provider}:${operation}`) ?? 'OPERATIONAL';
  const behaviourOf = (phoneNumber: string): PawapaySubscriber => ({
    deposit: 'pays',
    payout: 'receives',
    callback: 'once',
    ...options.defaultSubscriber,
    ...subscribers.get(phoneNumber),
  });
  const callbackUrl = (kind: PawapayKind) =>
    callbackBase === null ? null : `${callbackBase}/network/pawapay/${KINDS[kind].path}`;
  const find = (id: string) =>
    transactions.deposit.get(id) ?? transactions.payout.get(id) ?? transactions.refund.get(id);

  /** The payment as its status check shows it; the callback leaves out clientReferenceId. */
  function view(transaction: PawapayTransaction, forCallback = false): Record<string, unknown> {
    const spec = KINDS[transaction.kind];
    return {
      [spec.idField]: transaction.id,
      status: transaction.status,
      amount: transaction.amount,
      currency: transaction.currency,
      country: transaction.country,
      [spec.party]: {
        type: 'MMO',
        accountDetails: { phoneNumber: transaction.phoneNumber, provider: transaction.provider },
      },
      customerMessage: transaction.customerMessage,
      ...(transaction.clientReferenceId !== null && !forCallback
        ? { clientReferenceId: transaction.clientReferenceId }
        : {}),
      created: transaction.created,
      ...(transaction.providerTransactionId !== null
        ? { providerTransactionId: transaction.providerTransactionId }
        : {}),
      ...(transaction.failureReason !== null ? { failureReason: transaction.failureReason } : {}),
      ...(transaction.metadata !== null ? { metadata: transaction.metadata } : {}),
    };
  }

  /** POSTs `body` with `headers` to the kind's callback URL, recording what was sent and what the merchant answered. */
  function deliver(
    kind: PawapayKind,
    url: string,
    body: string,
    headers: Record<string, string>,
  ): Promise<PawapaySentCallback> {
    const entry: PawapaySentCallback = { kind, url, body, headers, status: null };
    sent.push(entry);
    return track(
      fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) })
        .then(
          async (response) => {
            entry.status = response.status;
            await response.arrayBuffer();
          },
          () => undefined,
        )
        .then(() => entry),
    );
  }

  function callBack(transaction: PawapayTransaction): void {
    const url = callbackUrl(transaction.kind);
    if (url === null || callbacksSuppressed) return;
    const body = JSON.stringify(view(transaction, true));
    const headers =
      options.signedCallbacks === false
        ? { 'Content-Type': CALLBACK_CONTENT_TYPE }
        : signCallback(url, body, keys.privateKey, KEY_ID);
    void deliver(transaction.kind, url, body, headers);
  }

  /** The payment reaches its final status, and the merchant hears of it as its subscriber's callback setting says. */
  function settle(transaction: PawapayTransaction, outcome: PawapayRelease): void {
    held.delete(transaction.id);
    transaction.status = outcome === 'COMPLETED' ? 'COMPLETED' : 'FAILED';
    if (outcome === 'COMPLETED') transaction.providerTransactionId = randomUUID();
    else
      transaction.failureReason =
        outcome === 'FAILED' ? { failureCode: FAILURES.fails!.code, failureMessage: FAILURES.fails!.message } : outcome;
    const callback = behaviourOf(transaction.phoneNumber).callback;
    if (callback === 'none') return;
    later(options.callbackDelayMs ?? 50, () => {
      callBack(transaction);
      if (callback === 'twice') callBack(transaction);
    });
  }

  /** The final outcome a subscriber's behaviour gives a payment, or what happens instead (no answer, reconciliation). */
  function outcomeFor(
    transaction: PawapayTransaction,
    behaviour: PawapaySubscriber,
  ): PawapayRelease | 'ignores' | 'reconciles' {
    const choice = transaction.kind === 'deposit' ? behaviour.deposit : behaviour.payout;
    if (choice === 'ignores' || choice === 'reconciles') return choice;
    if (choice === 'pays' || choice === 'receives') return 'COMPLETED';
    const key = choice === 'unknown' ? (transaction.kind === 'deposit' ? 'payerUnknown' : 'recipientUnknown') : choice;
    const failure = FAILURES[key]!;
    return { failureCode: behaviour.failureCode ?? failure.code, failureMessage: failure.message };
  }

  /** The provider's answer for a payment in PROCESSING, after the subscriber's delay. */
  function decide(transaction: PawapayTransaction): void {
    const behaviour = behaviourOf(transaction.phoneNumber);
    later(0, () => {
      transaction.status = 'PROCESSING';
    });
    later(behaviour.decideAfterMs ?? options.decisionDelayMs ?? 300, () => {
      const outcome = outcomeFor(transaction, behaviour);
      if (transaction.status !== 'PROCESSING' || (outcome === 'ignores' && !held.has(transaction.id))) return;
      if (outcome !== 'reconciles' && outcome !== 'ignores' && !held.has(transaction.id))
        return settle(transaction, outcome);
      transaction.status = 'IN_RECONCILIATION';
      if (outcome !== 'reconciles' || behaviour.reconcileAfterMs === undefined) return;
      later(behaviour.reconcileAfterMs, () => {
        if (transaction.status !== 'IN_RECONCILIATION' || held.has(transaction.id)) return;
        const failure = {
          failureCode: behaviour.failureCode ?? FAILURES.fails!.code,
          failureMessage: FAILURES.fails!.message,
        };
        settle(transaction, behaviour.reconcilesTo === 'FAILED' ? failure : 'COMPLETED');
      });
    });
  }

  /** A payout or refund waits in ENQUEUED while the provider's payouts or refunds are DELAYED. */
  function start(transaction: PawapayTransaction): void {
    if (
      transaction.kind !== 'deposit' &&
      statusOf(transaction.provider, KINDS[transaction.kind].operation) === 'DELAYED'
    ) {
      transaction.status = 'ENQUEUED';
      return;
    }
    decide(transaction);
  }

  async function readJson(request: Request): Promise<Record<string, unknown> | Response> {
    const text = await request.text();
    if (text.length > MAX_BODY_BYTES)
      return Response.json(failureBody('INVALID_INPUT', 'The request is too large.'), { status: 400 });
    try {
      const body = record(JSON.parse(text));
      if (body !== null) return body;
    } catch {
      // Falls through to the refusal.
    }
    return Response.json(failureBody('INVALID_INPUT', 'We were unable to parse the payload of the request.'), {
      status: 400,
    });
  }

  /** Every /v2 call carries `Authorization: Bearer <token>`: none is 401 NO_AUTHENTICATION, a wrong one 403 AUTHENTICATION_ERROR. */
  function unauthorized(request: Request): Response | null {
    const header = request.headers.get('authorization');
    const token = /^Bearer\s+(\S+)$/i.exec(header ?? '')?.[1];
    if (token === undefined)
      return Response.json(failureBody('NO_AUTHENTICATION', 'We did not find the API token in the request headers.'), {
        status: 401,
      });
    if (token !== options.apiToken)
      return Response.json(
        failureBody('AUTHENTICATION_ERROR', 'The API token specified for authentication is not valid.'),
        { status: 403 },
      );
    return null;
  }

  const rejected = (kind: PawapayKind, id: string | null, refused: Refusal) =>
    Response.json(
      { ...(id === null ? {} : { [KINDS[kind].idField]: id }), status: 'REJECTED', failureReason: refused.failure },
      { status: refused.http },
    );

  /** The payer or recipient of a deposit or payout: its number and provider, checked against the account and the provider's country. */
  function partyOf(
    body: Record<string, unknown>,
    kind: PawapayKind,
  ): { phoneNumber: string; spec: PawapayProviderSpec } | Refusal {
    const spec = KINDS[kind];
    const party = record(body[spec.party]);
    const details = record(party?.accountDetails);
    if (
      party === null ||
      details === null ||
      typeof details.phoneNumber !== 'string' ||
      typeof details.provider !== 'string'
    ) {
      return refusal(
        400,
        'MISSING_PARAMETER',
        `${spec.party} must have type and accountDetails with phoneNumber and provider.`,
      );
    }
    if (party.type !== 'MMO') return refusal(400, 'INVALID_PARAMETER', `${spec.party}.type must be MMO.`);
    const provider = specOf(details.provider);
    if (provider === undefined)
      return refusal(200, 'INVALID_PROVIDER', `The provider '${details.provider}' is not valid for the request.`);
    if (!enabled.has(provider.provider))
      return refusal(
        403,
        `${spec.operation}S_NOT_ALLOWED`,
        `${spec.operation.toLowerCase()}s have not been enabled for provider '${provider.provider}' on your account.`,
      );
    if (statusOf(provider.provider, spec.operation) === 'CLOSED') {
      return refusal(
        200,
        'PROVIDER_TEMPORARILY_UNAVAILABLE',
        `The provider '${provider.provider}' is currently not able to process payments.`,
      );
    }
    const phoneNumber = details.phoneNumber;
    if (
      !/^\d+$/.test(phoneNumber) ||
      !phoneNumber.startsWith(provider.prefix) ||
      phoneNumber.length !== provider.prefix.length + provider.nationalDigits
    ) {
      return refusal(
        200,
        'INVALID_PHONE_NUMBER',
        `The phone number '${phoneNumber}' seems to be invalid for the provider '${provider.provider}'.`,
      );
    }
    return { phoneNumber, spec: provider };
  }

  /** The id of an initiation, or the refusal when it is missing or not a UUIDv4. */
  function idOf(body: Record<string, unknown>, kind: PawapayKind): string | Refusal {
    const id = body[KINDS[kind].idField];
    if (id === undefined) return refusal(400, 'MISSING_PARAMETER', `${KINDS[kind].idField} is required.`);
    if (typeof id !== 'string' || !UUID_V4.test(id))
      return refusal(400, 'INVALID_PARAMETER', `${KINDS[kind].idField} must be a UUIDv4.`);
    return id;
  }

  /** A deposit or payout request checked as pawaPay checks it, as the transaction it starts. */
  function transactionFrom(body: Record<string, unknown>, kind: PawapayKind, id: string): PawapayTransaction | Refusal {
    const common = commonFields(body, KINDS[kind]);
    if (isRefusal(common)) return common;
    const { amount, currency } = body;
    if (amount === undefined || currency === undefined)
      return refusal(400, 'MISSING_PARAMETER', 'amount and currency are required.');
    if (typeof amount !== 'string' || amount.length > 23 || !AMOUNT.test(amount))
      return refusal(400, 'INVALID_PARAMETER', `The amount '${String(amount)}' is not a valid amount.`);
    if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency))
      return refusal(400, 'INVALID_PARAMETER', 'currency must be an ISO 4217 code in upper case.');
    const party = partyOf(body, kind);
    if (isRefusal(party)) return party;
    if (!party.spec.currencies.some((entry) => entry.currency === currency)) {
      return refusal(
        200,
        'INVALID_CURRENCY',
        `The currency '${currency}' is not supported with provider '${party.spec.provider}'.`,
      );
    }
    const wrongAmount = checkAmount(amount, party.spec, currency);
    if (wrongAmount) return wrongAmount;
    return {
      kind,
      id,
      status: 'ACCEPTED',
      amount: twoPlaces(hundredths(amount)),
      currency,
      country: party.spec.country,
      provider: party.spec.provider,
      phoneNumber: party.phoneNumber,
      customerMessage: common.customerMessage ?? companyName.slice(0, 22),
      clientReferenceId: common.clientReferenceId,
      metadata: common.metadata,
      created: timestamp(),
      providerTransactionId: null,
      failureReason: null,
      depositId: null,
      submissions: 1,
    };
  }

  /** POST /v2/deposits and /v2/payouts: idempotent on the id, one PIN prompt per accepted deposit. */
  async function initiate(request: Request, kind: 'deposit' | 'payout'): Promise<Response> {
    const body = await readJson(request);
    if (body instanceof Response) return body;
    const id = idOf(body, kind);
    if (typeof id !== 'string') return rejected(kind, null, id);
    const existing = transactions[kind].get(id);
    if (existing) {
      existing.submissions += 1;
      return Response.json({ [KINDS[kind].idField]: id, status: 'DUPLICATE_IGNORED' });
    }
    const transaction = transactionFrom(body, kind, id);
    if (isRefusal(transaction)) return rejected(kind, id, transaction);
    transactions[kind].set(id, transaction);
    if (kind === 'deposit') prompts.set(id, (prompts.get(id) ?? 0) + 1);
    start(transaction);
    return Response.json({
      [KINDS[kind].idField]: id,
      status: 'ACCEPTED',
      ...(kind === 'deposit' ? { nextStep: 'FINAL_STATUS' } : {}),
      created: transaction.created,
    });
  }

  /** What is left to refund of a completed deposit, or why it cannot be refunded now. */
  function refundable(deposit: PawapayTransaction | undefined, depositId: string): bigint | Refusal {
    if (deposit === undefined) return refusal(400, 'INVALID_PARAMETER', `Deposit with ID #${depositId} not found.`);
    if (deposit.status !== 'COMPLETED')
      return refusal(400, 'INVALID_PARAMETER', `Deposit with ID #${depositId} is not COMPLETED (${deposit.status}).`);
    const refunds = [...transactions.refund.values()].filter((refund) => refund.depositId === depositId);
    if (refunds.some((refund) => !FINAL.includes(refund.status)))
      return refusal(200, 'REFUND_IN_PROGRESS', 'Another refund transaction is already in progress.');
    const done = refunds
      .filter((refund) => refund.status === 'COMPLETED')
      .reduce((sum, refund) => sum + hundredths(refund.amount), 0n);
    const left = hundredths(deposit.amount) - done;
    return left > 0n ? left : refusal(200, 'DEPOSIT_ALREADY_REFUNDED', 'Requested deposit has been already refunded.');
  }

  /** A refund request checked against its deposit: all of what is left by default, or an amount in the deposit's currency that fits. */
  function refundFrom(body: Record<string, unknown>, id: string): PawapayTransaction | Refusal {
    const common = commonFields(body, KINDS.refund);
    if (isRefusal(common)) return common;
    if (typeof body.depositId !== 'string') return refusal(400, 'MISSING_PARAMETER', 'depositId is required.');
    const deposit = transactions.deposit.get(body.depositId);
    const left = refundable(deposit, body.depositId);
    if (typeof left !== 'bigint') return left;
    const { amount, currency } = body;
    if (amount !== undefined && currency === undefined)
      return refusal(400, 'MISSING_PARAMETER', 'currency is required with amount.');
    if (amount !== undefined && (typeof amount !== 'string' || amount.length > 23 || !AMOUNT.test(amount)))
      return refusal(400, 'INVALID_PARAMETER', `The amount '${String(amount)}' is not a valid amount.`);
    if (currency !== undefined && currency !== deposit!.currency)
      return refusal(200, 'INVALID_CURRENCY', `The currency '${String(currency)}' is not the deposit's currency.`);
    const spec = specOf(deposit!.provider)!;
    if (typeof amount === 'string') {
      const wrongAmount = checkAmount(amount, spec, deposit!.currency);
      if (wrongAmount) return wrongAmount;
      if (hundredths(amount) > left)
        return refusal(200, 'AMOUNT_TOO_LARGE', `Amount should not be greater than ${twoPlaces(left)}.`);
    }
    return {
      ...deposit!,
      kind: 'refund',
      id,
      status: 'ACCEPTED',
      amount: typeof amount === 'string' ? twoPlaces(hundredths(amount)) : twoPlaces(left),
      customerMessage: common.customerMessage ?? deposit!.customerMessage,
      clientReferenceId: common.clientReferenceId,
      metadata: common.metadata,
      created: timestamp(),
      providerTransactionId: null,
      failureReason: null,
      depositId: deposit!.id,
      submissions: 1,
    };
  }

  /** POST /v2/refunds. */
  async function initiateRefund(request: Request): Promise<Response> {
    const body = await readJson(request);
    if (body instanceof Response) return body;
    const id = idOf(body, 'refund');
    if (typeof id !== 'string') return rejected('refund', null, id);
    const existing = transactions.refund.get(id);
    if (existing) {
      existing.submissions += 1;
      return Response.json({ refundId: id, status: 'DUPLICATE_IGNORED' });
    }
    const refund = refundFrom(body, id);
    if (isRefusal(refund)) return rejected('refund', id, refund);
    if (statusOf(refund.provider, 'REFUND') === 'CLOSED') {
      return rejected(
        'refund',
        id,
        refusal(
          200,
          'PROVIDER_TEMPORARILY_UNAVAILABLE',
          `The provider '${refund.provider}' is currently not able to process payments.`,
        ),
      );
    }
    transactions.refund.set(id, refund);
    start(refund);
    return Response.json({ refundId: id, status: 'ACCEPTED', created: refund.created });
  }

  /** GET /v2/{deposits,payouts,refunds}/{id}. */
  function check(kind: PawapayKind, id: string): Response {
    const transaction = transactions[kind].get(id);
    return Response.json(transaction ? { status: 'FOUND', data: view(transaction) } : { status: 'NOT_FOUND' });
  }

  /** POST /v2/{kind}/resend-callback/{id}: only for a payment in a final status. */
  function resend(kind: PawapayKind, id: string): Response {
    const transaction = transactions[kind].get(id);
    const idField = KINDS[kind].idField;
    if (!transaction)
      return Response.json({
        [idField]: id,
        status: 'REJECTED',
        failureReason: { failureCode: 'NOT_FOUND', failureMessage: `Payment with ID #${id} not found.` },
      });
    if (!FINAL.includes(transaction.status)) {
      return Response.json({
        [idField]: id,
        status: 'REJECTED',
        failureReason: {
          failureCode: 'INVALID_STATE',
          failureMessage: `Payment with ID #${id} is not in a final status.`,
        },
      });
    }
    later(0, () => callBack(transaction));
    return Response.json({ [idField]: id, status: 'ACCEPTED' });
  }

  /** POST /v2/payouts/fail-enqueued/{id}: an ENQUEUED payout fails as MANUALLY_CANCELLED. */
  function failEnqueued(id: string): Response {
    const payout = transactions.payout.get(id);
    if (payout?.status !== 'ENQUEUED') {
      const failureCode = payout ? 'INVALID_STATE' : 'NOT_FOUND';
      return Response.json({
        payoutId: id,
        status: 'REJECTED',
        failureReason: { failureCode, failureMessage: `Payout with ID #${id} is not ENQUEUED.` },
      });
    }
    later(0, () =>
      settle(payout, {
        failureCode: 'MANUALLY_CANCELLED',
        failureMessage: 'The payout was cancelled while it was enqueued.',
      }),
    );
    return Response.json({ payoutId: id, status: 'ACCEPTED' });
  }

  /** One provider's entry in the active configuration, with the operations asked for. */
  function providerConf(spec: PawapayProviderSpec, operations: PawapayOperation[]): Record<string, unknown> {
    const operation = (name: PawapayOperation, limits: PawapayProviderSpec['currencies'][number]) => ({
      ...(name === 'DEPOSIT' ? { authType: 'PROVIDER_AUTH', pinPrompt: 'AUTOMATIC', pinPromptRevivable: false } : {}),
      minAmount: limits.minAmount,
      maxAmount: limits.maxAmount,
      decimalsInAmount: spec.decimalsInAmount,
      status: statusOf(spec.provider, name),
      ...(callbackUrl(name.toLowerCase() as PawapayKind) === null
        ? {}
        : { callbackUrl: callbackUrl(name.toLowerCase() as PawapayKind) }),
    });
    return {
      provider: spec.provider,
      displayName: spec.displayName,
      logo: `https://static-content.pawapay.io/company_logos/${spec.displayName.toLowerCase()}.png`,
      nameDisplayedToCustomer: companyName,
      currencies: spec.currencies.map((limits) => ({
        currency: limits.currency,
        displayName: limits.displayName,
        operationTypes: Object.fromEntries(operations.map((name) => [name, operation(name, limits)])),
      })),
    };
  }

  /** GET /v2/active-conf[?country=&operationType=]: the account's countries and providers. */
  function activeConf(url: URL): Response {
    const country = url.searchParams.get('country');
    const wanted = url.searchParams.get('operationType');
    const operations = (['DEPOSIT', 'PAYOUT', 'REFUND'] as const).filter((name) => wanted === null || name === wanted);
    const specs = PAWAPAY_PROVIDERS.filter(
      (spec) => enabled.has(spec.provider) && (country === null || spec.country === country) && operations.length > 0,
    );
    const countries = [...new Set(specs.map((spec) => spec.country))].map((code) => ({
      country: code,
      displayName: COUNTRY_NAMES[code] ?? { en: code, fr: code },
      prefix: specs.find((spec) => spec.country === code)!.prefix,
      flag: `https://static-content.pawapay.io/country_flags/${code.toLowerCase()}.svg`,
      providers: specs.filter((spec) => spec.country === code).map((spec) => providerConf(spec, [...operations])),
    }));
    return Response.json({
      companyName,
      signatureConfiguration: { signedRequestsOnly: false, signedCallbacks: options.signedCallbacks !== false },
      countries,
    });
  }

  /**
   * GET /v2/availability[?country=&operationType=]: the enabled providers grouped by country, each
   * with its status per operation type (all three, or the one asked for).
   */
  function availability(url: URL): Response {
    const country = url.searchParams.get('country');
    const wanted = url.searchParams.get('operationType');
    if (wanted !== null && !(OPERATIONS as readonly string[]).includes(wanted)) {
      return Response.json(failureBody('INVALID_PARAMETER', `operationType must be one of ${OPERATIONS.join(', ')}.`), {
        status: 400,
      });
    }
    const operations = OPERATIONS.filter((name) => wanted === null || name === wanted);
    const specs = PAWAPAY_PROVIDERS.filter(
      (spec) => enabled.has(spec.provider) && (country === null || spec.country === country),
    );
    return Response.json(
      [...new Set(specs.map((spec) => spec.country))].map((code) => ({
        country: code,
        providers: specs
          .filter((spec) => spec.country === code)
          .map((spec) => ({
            provider: spec.provider,
            operationTypes: operations.map((operationType) => ({
              operationType,
              status: statusOf(spec.provider, operationType),
            })),
          })),
      })),
    );
  }

  /** A provider's operation opened, delayed or closed; payouts and refunds waiting in ENQUEUED go on once it is OPERATIONAL. */
  function setOperationStatus(provider: string, operation: PawapayOperation, status: PawapayOperationStatus): void {
    operationStatus.set(`${provider}:${operation}`, status);
    if (operation === 'DEPOSIT' || status !== 'OPERATIONAL') return;
    const kind = operation === 'PAYOUT' ? 'payout' : 'refund';
    for (const waiting of transactions[kind].values())
      if (waiting.provider === provider && waiting.status === 'ENQUEUED') decide(waiting);
  }

  /** Which API a request is for, and its handler. */
  function route(request: Request): { api: string; handle: () => Promise<Response> | Response } {
    const url = new URL(request.url);
    const path = url.pathname.replace(/\/+$/, '');
    const post = request.method === 'POST';
    const get = request.method === 'GET';
    const kindOf = (segment: string) =>
      (Object.keys(KINDS) as PawapayKind[]).find((kind) => KINDS[kind].path === segment);
    const byId = /^\/v2\/(deposits|payouts|refunds)\/([^/]+)$/.exec(path);
    const action = /^\/v2\/(deposits|payouts|refunds)\/(resend-callback|fail-enqueued)\/([^/]+)$/.exec(path);
    if (post && path === '/v2/deposits') return { api: 'deposit', handle: () => initiate(request, 'deposit') };
    if (post && path === '/v2/payouts') return { api: 'payout', handle: () => initiate(request, 'payout') };
    if (post && path === '/v2/refunds') return { api: 'refund', handle: () => initiateRefund(request) };
    if (get && byId)
      return {
        api: `${kindOf(byId[1]!)}-status`,
        handle: () => check(kindOf(byId[1]!)!, decodeURIComponent(byId[2]!)),
      };
    if (post && action?.[2] === 'resend-callback')
      return { api: 'resend-callback', handle: () => resend(kindOf(action[1]!)!, decodeURIComponent(action[3]!)) };
    if ((post || get) && action?.[1] === 'payouts' && action[2] === 'fail-enqueued')
      return { api: 'fail-enqueued', handle: () => failEnqueued(decodeURIComponent(action[3]!)) };
    if (get && path === '/v2/active-conf') return { api: 'active-conf', handle: () => activeConf(url) };
    if (get && path === '/v2/availability') return { api: 'availability', handle: () => availability(url) };
    if (get && path === '/v2/public-key/http')
      return { api: 'public-key', handle: () => Response.json([{ id: KEY_ID, key: publicKeyPem }]) };
    return {
      api: 'unknown',
      handle: () => Response.json(failureBody('NOT_FOUND', `No endpoint ${request.method} ${path}.`), { status: 404 }),
    };
  }

  let systemErrors = 0;
  const server = serveWithOutages({
    port: options.port,
    // pawaPay's answer to a call it failed on its side.
    systemError: () => {
      systemErrors += 1;
      return Response.json(
        failureBody('UNKNOWN_ERROR', "The request could not be processed because of a problem on pawaPay's side."),
        { status: 500 },
      );
    },
    async handle(request) {
      const { api, handle } = route(request);
      const response = unauthorized(request) ?? (await handle());
      log.push({ api, method: request.method, status: response.status, at: Date.now() });
      return response;
    },
  });

  /** A callback the test composes: signed by this key (or another one) or not, and altered after signing when asked. */
  function forge(kind: PawapayKind, body: unknown, forgery: PawapayForgery): Promise<PawapaySentCallback> {
    const url = callbackUrl(kind);
    if (url === null) throw new Error('No callback base is set: setCallbackBase first.');
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    const key = forgery.wrongKey ? generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey : keys.privateKey;
    const sign = forgery.sign ?? options.signedCallbacks !== false;
    const headers = sign ? signCallback(url, text, key, KEY_ID) : { 'Content-Type': CALLBACK_CONTENT_TYPE };
    if (!forgery.tamper) return deliver(kind, url, text, headers);
    const parsed = record(typeof body === 'string' ? parsedOrNull(body) : body);
    const altered =
      parsed && typeof parsed.status === 'string'
        ? JSON.stringify({ ...parsed, status: parsed.status === 'COMPLETED' ? 'FAILED' : 'COMPLETED' })
        : `${text} `;
    return deliver(kind, url, altered, headers);
  }

  const copies = (kind: PawapayKind) => [...transactions[kind].values()].map((transaction) => ({ ...transaction }));
  return {
    url: `http://${SIMULATOR_HOST}:${server.port}`,
    token: options.apiToken,
    keyId: KEY_ID,
    publicKeyPem,
    async stop() {
      await stop();
      await server.stop();
    },
    outage: (mode) => server.set(mode),
    late: (rule) => server.late(rule),
    systemErrors: () => systemErrors,
    clearLate: () => server.clearLate(),
    settled: () => server.settled(),
    setSubscriber(phoneNumber, behaviour) {
      subscribers.set(phoneNumber, { ...subscribers.get(phoneNumber), ...behaviour });
    },
    setCallbackBase(url) {
      callbackBase = url?.replace(/\/+$/, '') ?? null;
    },
    setOperationStatus,
    setAvailability(provider, operationType, status) {
      if (!enabled.has(provider))
        throw new Error(`${provider} is not enabled on this pawaPay account (${[...enabled].join(', ')})`);
      if (!OPERATIONS.includes(operationType)) throw new Error(`operationType must be one of ${OPERATIONS.join(', ')}`);
      if (!['OPERATIONAL', 'DELAYED', 'CLOSED'].includes(status))
        throw new Error('status must be OPERATIONAL, DELAYED or CLOSED');
      setOperationStatus(provider, operationType, status);
    },
    deposits: () => copies('deposit'),
    payouts: () => copies('payout'),
    refunds: () => copies('refund'),
    promptsOf: (depositId) => prompts.get(depositId) ?? 0,
    holdInReconciliation(id) {
      held.add(id);
    },
    release(id, outcome) {
      held.delete(id);
      const transaction = find(id);
      if (transaction?.status !== 'IN_RECONCILIATION') return false;
      settle(transaction, outcome);
      return true;
    },
    suppressCallbacks(suppressed) {
      callbacksSuppressed = suppressed;
    },
    sendCallback: (kind, body, forgery = {}) => forge(kind, body, forgery),
    replayCallback(index) {
      const earlier = sent[index];
      if (!earlier) throw new Error(`No callback #${index} was sent.`);
      return deliver(earlier.kind, earlier.url, earlier.body, { ...earlier.headers });
    },
    callbacks: () => sent.map((entry) => ({ ...entry, headers: { ...entry.headers } })),
    calls: () => [...log],
  };
}
