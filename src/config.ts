import { createPublicKey, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as v from 'valibot';
import { CONNECTED_NETWORK, MOMO_MARKETS, MOMO_SANDBOX_ENVIRONMENT, VODACOM_MARKETS } from './domain/networks';
import { WEBHOOK_ATTEMPTS } from './domain/webhook-schedule';

const booleanString = v.pipe(
  v.picklist(['true', 'false', '1', '0']),
  v.transform((value) => value === 'true' || value === '1'),
);
const integerString = (min: number) =>
  v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number), v.minValue(min));

const DURATION_UNITS_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
/** Comma-separated waits such as `10s,1m,2h` (units ms, s, m, h), as milliseconds. */
const durationList = (count: number) =>
  v.pipe(
    v.string(),
    v.transform((value) => value.split(',').map((part) => part.trim())),
    v.check((parts) => parts.every((part) => /^\d+(ms|s|m|h)$/.test(part)), 'must be durations like 10s, 5m or 2h, comma separated'),
    v.length(count, `must list exactly ${count} waits`),
    v.transform((parts) =>
      parts.map((part) => {
        const [, amount = '0', unit = 'ms'] = /^(\d+)(ms|s|m|h)$/.exec(part) ?? [];
        return Number(amount) * DURATION_UNITS_MS[unit as keyof typeof DURATION_UNITS_MS];
      }),
    ),
  );
const httpUrl = v.pipe(v.string(), v.url('must be a URL'), v.regex(/^https?:\/\//, 'must be an http:// or https:// URL'), v.transform((value) => value.replace(/\/+$/, '')));
const secret = v.pipe(v.string(), v.minLength(1));
const fraction = v.pipe(
  v.string(),
  v.regex(/^0(\.\d+)?$/, 'must be a fraction from 0 to 0.9'),
  v.transform(Number),
  v.maxValue(0.9, 'must be a fraction from 0 to 0.9'),
);

/** How long the audit trail is kept when AUDIT_RETENTION_DAYS is not set (longer when events are kept longer). */
const DEFAULT_AUDIT_RETENTION_DAYS = 365;

const ConfigSchema = v.object({
  PORT: v.optional(integerString(0), '8000'),
  DATABASE_URL: v.optional(v.pipe(v.string(), v.url()), 'postgres://postgres@127.0.0.1:5432/collections'),
  DATABASE_POOL_SIZE: v.optional(integerString(1), '10'),
  TEMPORAL_ADDRESS: v.optional(v.string(), '127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: v.optional(v.string(), 'default'),
  TASK_QUEUE: v.optional(v.pipe(v.string(), v.minLength(1)), 'collections'),
  PUBLIC_BASE_URL: v.optional(v.pipe(v.string(), v.url())),
  SANDBOX: v.optional(booleanString, 'true'),
  PAGE_SIZE_MAX: v.optional(integerString(1), '100'),
  OUTBOX_SWEEP_INTERVAL_SECONDS: v.optional(integerString(1), '60'),
  OUTBOX_GRACE_SECONDS: v.optional(integerString(0), '30'),
  OUTBOX_SWEEP: v.optional(booleanString, 'true'),
  WORKFLOW_BUNDLE_PATH: v.optional(v.string()),
  WORKER_MAX_CACHED_WORKFLOWS: v.optional(integerString(0), '1000'),
  SANDBOX_PAYMENT_DELAY_SECONDS: v.optional(integerString(0), '5'),
  SANDBOX_PAYOUT_DELAY_SECONDS: v.optional(integerString(0), '2'),
  // How often a payment or reversal the network has not confirmed is asked about, and for how long.
  PAYOUT_STATUS_POLL_SECONDS: v.optional(integerString(1), '10'),
  PAYOUT_STATUS_TIMEOUT_SECONDS: v.optional(integerString(1), '86400'),
  // How many payments of one batch are in flight at once (an operator's rate limits bound it).
  PAYMENT_BATCH_CONCURRENCY: v.optional(integerString(1), '20'),
  FAILED_PROMPT_RETRY_SECONDS: v.optional(integerString(1), '600'),
  // docs/api.md#collections: the merchant's verification URL has 60 seconds to answer.
  VERIFICATION_TIMEOUT_SECONDS: v.optional(integerString(1), '60'),
  THROTTLE_READS: v.optional(integerString(1), '30'),
  THROTTLE_WRITES: v.optional(integerString(1), '3000'),
  THROTTLE_WINDOW_SECONDS: v.optional(integerString(1), '60'),
  // The operator callback routes carry no credentials: requests per minute from one address, and
  // from all addresses together per operator (a real operator's callbacks come far below either).
  OPERATOR_CALLBACK_LIMIT_PER_ADDRESS: v.optional(integerString(1), '600'),
  OPERATOR_CALLBACK_LIMIT_PER_OPERATOR: v.optional(integerString(1), '6000'),
  DUPLICATE_CHECK_TTL_SECONDS: v.optional(integerString(1), '86400'),
  BILLS_BASE_URL: v.optional(v.pipe(v.string(), v.url())),
  // 10 attempts in total (docs/api.md#webhooks): the first at once, then one after each of these 9 waits.
  WEBHOOK_RETRY_SCHEDULE: v.optional(durationList(WEBHOOK_ATTEMPTS - 1), '10s,1m,5m,15m,30m,1h,2h,4h,8h'),
  WEBHOOK_RETRY_JITTER: v.optional(fraction, '0.2'),
  WEBHOOK_CA_FILE: v.optional(v.string()),
  // A webhook's actor continues as new past this many history events (its queue is the delivery rows).
  WEBHOOK_ACTOR_HISTORY_EVENTS: v.optional(integerString(50), '5000'),
  // Deliveries of one webhook in flight at once (each on its own connection when the receiver closes them).
  WEBHOOK_CONCURRENCY: v.optional(v.pipe(integerString(1), v.maxValue(256)), '16'),
  // Webhook senders one worker process runs at once, on their own task queue (the pool's dispatchers, and earlier actors' senders).
  WEBHOOK_SENDERS: v.optional(integerString(1), '200'),
  // The webhook delivery pool: how many dispatchers send every webhook's deliveries, and the POSTs each keeps in flight.
  WEBHOOK_DISPATCHERS: v.optional(v.pipe(integerString(1), v.maxValue(64)), '2'),
  WEBHOOK_DISPATCH_WINDOW: v.optional(v.pipe(integerString(1), v.maxValue(4096)), '128'),
  // Which webhooks the pool sends: every one in the database, or those made through this deployment's task queue.
  WEBHOOK_DISPATCH_SCOPE: v.optional(v.picklist(['all', 'task-queue']), 'all'),
  // A webhook whose target has failed every attempt for this many hours is disabled (5 days).
  WEBHOOK_DISABLE_AFTER_HOURS: v.optional(integerString(1), '120'),
  // Events are kept at least 30 days (docs/api.md#events): a shorter retention is refused.
  EVENT_RETENTION_DAYS: v.optional(integerString(30), '30'),
  // The audit trail is kept at least as long as events (checked below); by default a year, or the events' retention when longer.
  AUDIT_RETENTION_DAYS: v.optional(integerString(30)),
  RETENTION_SWEEP: v.optional(booleanString, 'true'),
  RETENTION_SWEEP_INTERVAL_SECONDS: v.optional(integerString(1), '3600'),
  // The web console links each collection request to its workflow in the Temporal Web UI.
  TEMPORAL_UI_URL: v.optional(v.pipe(v.string(), v.url()), 'http://localhost:8233'),
  // Behind a proxy that appends the client's address to X-Forwarded-For, the console's sign-in
  // throttle counts per that address; otherwise per the connection's address.
  TRUST_PROXY: v.optional(booleanString, 'false'),
  // The key the console signs its sign-in form's CSRF tokens with; the same in every API process.
  CONSOLE_SECRET: v.optional(v.pipe(v.string(), v.minLength(32, 'must be at least 32 characters (for example: openssl rand -base64 32)'))),
  // OpenTelemetry's standard variables: traces go out over OTLP/HTTP only when an endpoint is set.
  OTEL_EXPORTER_OTLP_ENDPOINT: v.optional(v.pipe(v.string(), v.url(), v.regex(/^https?:\/\//, 'must be an http:// or https:// URL'))),
  OTEL_SERVICE_NAME: v.optional(v.pipe(v.string(), v.minLength(1))),
  METRICS: v.optional(booleanString, 'true'),
  WORKER_METRICS_PORT: v.optional(v.pipe(integerString(0), v.maxValue(65535)), '9464'),
  // The worker's /metrics listens on loopback unless told otherwise (a container network: 0.0.0.0).
  WORKER_METRICS_HOST: v.optional(v.pipe(v.string(), v.minLength(1)), '127.0.0.1'),
  // When set, both /metrics endpoints want `Authorization: Bearer <token>` (as Prometheus sends it); required outside sandbox mode.
  METRICS_TOKEN: v.optional(v.pipe(v.string(), v.minLength(16, 'must be at least 16 characters'), v.regex(/^\S+$/, 'must not contain spaces'))),
  // M-Pesa Daraja (Safaricom, KES): on when MPESA_CONSUMER_KEY is set; then every MPESA_* value is required.
  MPESA_BASE_URL: v.optional(httpUrl, 'https://api.safaricom.co.ke'),
  MPESA_CONSUMER_KEY: v.optional(secret),
  MPESA_CONSUMER_SECRET: v.optional(secret),
  MPESA_SHORTCODE: v.optional(v.pipe(v.string(), v.regex(/^\d{5,9}$/, 'must be the 5 to 9 digits of a paybill or till number'))),
  MPESA_PASSKEY: v.optional(secret),
  MPESA_INITIATOR_NAME: v.optional(secret),
  MPESA_SECURITY_CREDENTIAL: v.optional(secret),
  // How long a merchant's verification URL has to answer a paybill validation: Safaricom waits about 8 s for ours.
  MPESA_VALIDATION_TIMEOUT_MS: v.optional(v.pipe(integerString(100), v.maxValue(5000, 'must be at most 5000 (Safaricom waits about 8 s for the whole answer)')), '3000'),
  MPESA_REGISTER_URLS: v.optional(booleanString, 'true'),
  // MTN MoMo, one market (MTN Uganda, UGX, unless the target environment names another market): on when
  // MTN_MOMO_COLLECTION_API_USER is set; then every MTN_MOMO_* value is required.
  MTN_MOMO_BASE_URL: v.optional(httpUrl, 'https://proxy.momoapi.mtn.com'),
  MTN_MOMO_TARGET_ENVIRONMENT: v.optional(v.pipe(v.string(), v.regex(/^[a-z0-9]+$/, 'must be a MoMo target environment such as mtnuganda or sandbox')), 'mtnuganda'),
  MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: v.optional(secret),
  MTN_MOMO_COLLECTION_API_USER: v.optional(secret),
  MTN_MOMO_COLLECTION_API_KEY: v.optional(secret),
  MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: v.optional(secret),
  MTN_MOMO_DISBURSEMENT_API_USER: v.optional(secret),
  MTN_MOMO_DISBURSEMENT_API_KEY: v.optional(secret),
  // Airtel Money (Airtel Africa Open API): on when AIRTEL_CLIENT_ID is set; then AIRTEL_CLIENT_SECRET, AIRTEL_COUNTRIES and AIRTEL_PIN are required.
  AIRTEL_BASE_URL: v.optional(httpUrl, 'https://openapi.airtel.africa'),
  AIRTEL_CLIENT_ID: v.optional(secret),
  AIRTEL_CLIENT_SECRET: v.optional(secret),
  AIRTEL_COUNTRIES: v.optional(v.pipe(v.string(), v.regex(/^\s*[A-Za-z]{2}(:[A-Za-z]{3})?\s*(,\s*[A-Za-z]{2}(:[A-Za-z]{3})?\s*)*$/, 'must be country codes such as UG,KE (a currency may follow a colon: CD:CDF)'))),
  AIRTEL_PIN: v.optional(v.pipe(v.string(), v.regex(/^\d{4,6}$/, 'must be the 4 to 6 digits of the disbursement PIN'))),
  // When set, a callback must carry `hash`: Base64(HMAC-SHA256(key, its transaction object)).
  AIRTEL_CALLBACK_KEY: v.optional(secret),
  // Vodacom M-Pesa (the M-Pesa OpenAPI): on when VODACOM_API_KEY is set; then VODACOM_PUBLIC_KEY,
  // VODACOM_SERVICE_PROVIDER_CODE and VODACOM_MARKETS are required. The base URL is the environment's root.
  VODACOM_BASE_URL: v.optional(httpUrl, 'https://openapi.m-pesa.com/openapi'),
  VODACOM_API_KEY: v.optional(secret),
  VODACOM_PUBLIC_KEY: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9+/=\s]+$/, 'must be the base64 public key from the portal'))),
  VODACOM_SERVICE_PROVIDER_CODE: v.optional(v.pipe(v.string(), v.regex(/^\d{4,10}$/, 'must be the digits of the service provider code (shortcode)'))),
  VODACOM_MARKETS: v.optional(v.pipe(v.string(), v.regex(/^\s*[A-Za-z]{3}(:[A-Za-z]{3})?\s*(,\s*[A-Za-z]{3}(:[A-Za-z]{3})?\s*)*$/, 'must be markets such as TZN,DRC (a currency may follow a colon: DRC:CDF)'))),
  VODACOM_ORIGIN: v.optional(v.pipe(v.string(), v.minLength(1)), '*'),
  // A new session is not usable at once (the portal's documentation): it is first used this long after it was issued.
  VODACOM_SESSION_ACTIVATION_SECONDS: v.optional(v.pipe(integerString(0), v.maxValue(300)), '30'),
  // How long a session lasts from its issue (the application's setting in the portal): its successor is asked for ahead of that.
  VODACOM_SESSION_LIFETIME_SECONDS: v.optional(v.pipe(integerString(1), v.maxValue(604_800)), '3600'),
  // More MTN MoMo markets, each with its own credentials: a JSON file (docs/configuration.md), read and checked at start.
  MTN_MOMO_MARKETS_FILE: v.optional(v.pipe(v.string(), v.minLength(1))),
  // How often a real operator is asked about a prompt, a payout or a reported payment it has not called back about.
  NETWORK_STATUS_POLL_SECONDS: v.optional(integerString(1), '20'),
});

export type Config = {
  port: number;
  databaseUrl: string;
  databasePoolSize: number;
  temporal: { address: string; namespace: string; taskQueue: string };
  publicBaseUrl: string | undefined;
  sandbox: boolean;
  pageSizeMax: number;
  outbox: { sweepEnabled: boolean; sweepIntervalSeconds: number; graceSeconds: number };
  workflowBundlePath: string | undefined;
  /** The worker's sticky cache of workflows (bounded so its memory stays flat under load). */
  worker: { maxCachedWorkflows: number };
  collectionRequests: { sandboxPaymentDelaySeconds: number; failedPromptRetrySeconds: number };
  /** Money out: the sandbox network's payout delay, and how a payout the network has not confirmed is followed. */
  payouts: { sandboxDelaySeconds: number; statusPollSeconds: number; statusTimeoutSeconds: number; batchConcurrency: number };
  collections: { verificationTimeoutSeconds: number };
  /** Default limits per organization and window; the admin CLI overrides them per organization. */
  throttle: { reads: number; writes: number; windowSeconds: number };
  /** Requests to the operator callback routes per window (a minute), per source address and per operator. */
  operatorCallbacks: { perAddress: number; perOperator: number; windowSeconds: number };
  duplicateCheckTtlSeconds: number;
  /** `{bills_url}` (docs/api.md#bill-payments) as the OpenAPI document shows it; unset = the API's own base URL. */
  billsBaseUrl: string | undefined;
  webhooks: { retryDelaysMs: number[]; jitter: number; caFile: string | undefined; actorHistoryEvents: number; disableAfterHours: number; concurrency: number; senders: number; dispatchers: number; dispatchWindow: number;
    /** The task queue whose webhooks the pool sends (WEBHOOK_DISPATCH_SCOPE=task-queue), or null for every webhook. */
    dispatchQueue: string | null };
  /** `days` of events, `auditDays` of the audit trail (at least `days`). */
  retention: { days: number; auditDays: number; sweepEnabled: boolean; sweepIntervalSeconds: number };
  /** `secret` signs the sign-in form's CSRF tokens (never logged or shown). */
  console: { temporalUiUrl: string; trustProxy: boolean; secret: string };
  telemetry: TelemetrySettings;
  /** The real operators' connectors; null when not configured (their networks are then the sandbox's, in sandbox mode only). */
  mpesa: MpesaSettings | null;
  /** The MTN MoMo markets (the single-market MTN_MOMO_* variables and MTN_MOMO_MARKETS_FILE), one network each. */
  momoMarkets: MomoSettings[];
  airtel: AirtelSettings | null;
  vodacom: VodacomSettings | null;
  /** How often a real operator is asked about what it has not called back about. */
  networkStatusPollSeconds: number;
};

/** Safaricom's M-Pesa Daraja API (docs/going-live.md). Secrets: never logged or shown. */
export type MpesaSettings = {
  baseUrl: string;
  consumerKey: string;
  consumerSecret: string;
  shortcode: string;
  passkey: string;
  initiatorName: string;
  securityCredential: string;
  validationTimeoutMs: number;
  registerUrlsAtStart: boolean;
};

export type MomoProduct = { subscriptionKey: string; apiUser: string; apiKey: string };
/**
 * One MTN MoMo market of the MoMo Open API (collection and disbursement products): the network it
 * serves and the currency it moves (`MOMO_MARKETS`). Secrets: never logged or shown.
 */
export type MomoSettings = {
  baseUrl: string; targetEnvironment: string; network: string; currency: string; collection: MomoProduct; disbursement: MomoProduct;
};

/**
 * The currencies Airtel Money moves in each country this service has Airtel networks in: the
 * first is the country's default, others are named in AIRTEL_COUNTRIES (`CD:CDF`).
 */
const AIRTEL_COUNTRY_CURRENCIES: Readonly<Record<string, readonly string[]>> = {
  UG: ['UGX'], KE: ['KES'], TZ: ['TZS'], RW: ['RWF'], CD: ['USD', 'CDF'],
};
/** A country an Airtel deployment serves, with the currency its calls name (X-Currency). */
export type AirtelCountry = { country: string; currency: string };
/** The Airtel Africa Open API (collections, disbursements, refunds, user enquiry). Secrets: never logged or shown. */
export type AirtelSettings = {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  countries: readonly AirtelCountry[];
  pin: string;
  /** The key Airtel signs its callbacks with (its portal's callback authentication); null: callbacks carry no hash. */
  callbackKey: string | null;
};

/** AIRTEL_COUNTRIES as countries and currencies; what is wrong with it goes to `problems`. */
function airtelCountriesOf(value: string, problems: string[]): AirtelCountry[] {
  const countries: AirtelCountry[] = [];
  for (const entry of value.split(',').map((part) => part.trim().toUpperCase())) {
    const [country = '', named] = entry.split(':');
    const currencies = AIRTEL_COUNTRY_CURRENCIES[country];
    if (!currencies) {
      problems.push(`AIRTEL_COUNTRIES: ${country} has no Airtel network this service knows (${Object.keys(AIRTEL_COUNTRY_CURRENCIES).join(', ')})`);
      continue;
    }
    const currency = named ?? currencies[0]!;
    if (!currencies.includes(currency)) problems.push(`AIRTEL_COUNTRIES: Airtel Money in ${country} moves ${currencies.join(' or ')}, not ${currency}`);
    else if (countries.some((known) => known.country === country)) problems.push(`AIRTEL_COUNTRIES: ${country} is named twice`);
    else countries.push({ country, currency });
  }
  return countries;
}

/** A Vodacom market of the M-Pesa OpenAPI: its code (`input_Country`), API context, network and the currency its calls move. */
export type VodacomMarket = { market: string; context: string; network: string; currency: string };
/** The M-Pesa OpenAPI (sessions, C2B, B2C, reversals, transaction status, beneficiary names). Secrets: never logged or shown. */
export type VodacomSettings = {
  /** The environment's root (`https://openapi.m-pesa.com/sandbox` or `.../openapi`); calls go to `<root>/ipg/v2/<context>/...`. */
  baseUrl: string;
  apiKey: string;
  /** The portal's public key (base64 DER), which encrypts the API key and every session id. */
  publicKey: string;
  serviceProviderCode: string;
  origin: string;
  markets: readonly VodacomMarket[];
  sessionActivationMs: number;
  /** How long a session lasts from its issue; always more than two activation delays. */
  sessionLifetimeMs: number;
};

/** VODACOM_MARKETS as markets with their currency; what is wrong with it goes to `problems`. */
function vodacomMarketsOf(value: string, problems: string[]): VodacomMarket[] {
  const markets: VodacomMarket[] = [];
  for (const entry of value.split(',').map((part) => part.trim().toUpperCase())) {
    const [code = '', named] = entry.split(':');
    const known = VODACOM_MARKETS.find((market) => market.market === code);
    if (!known) {
      problems.push(`VODACOM_MARKETS: ${code} is not a Vodacom market this service knows (${VODACOM_MARKETS.map((market) => market.market).join(', ')})`);
      continue;
    }
    const currencies: readonly string[] = known.currencies;
    const currency = named ?? currencies[0]!;
    if (!currencies.includes(currency)) problems.push(`VODACOM_MARKETS: Vodacom M-Pesa in ${code} moves ${currencies.join(' or ')}, not ${currency}`);
    else if (markets.some((served) => served.market === code)) problems.push(`VODACOM_MARKETS: ${code} is named twice`);
    else markets.push({ market: code, context: known.context, network: known.network, currency });
  }
  return markets;
}

/** Whether VODACOM_PUBLIC_KEY is an RSA public key (base64 DER, SubjectPublicKeyInfo) as the portal shows it. */
function vodacomKeyProblem(publicKey: string): string | null {
  try {
    const key = createPublicKey({ key: Buffer.from(publicKey.replace(/\s+/g, ''), 'base64'), format: 'der', type: 'spki' });
    return key.asymmetricKeyType === 'rsa' ? null : 'VODACOM_PUBLIC_KEY: must be an RSA public key';
  } catch {
    return 'VODACOM_PUBLIC_KEY: not a base64 DER public key (copy it from the portal as shown)';
  }
}

function vodacomOf(c: Parsed, problems: string[]): VodacomSettings | null {
  if (!connectorSettings('VODACOM_API_KEY', c, ['VODACOM_PUBLIC_KEY', 'VODACOM_SERVICE_PROVIDER_CODE', 'VODACOM_MARKETS'], problems)) return null;
  const publicKey = (c.VODACOM_PUBLIC_KEY ?? '').replace(/\s+/g, '');
  const keyProblem = publicKey === '' ? null : vodacomKeyProblem(publicKey);
  if (keyProblem !== null) problems.push(keyProblem);
  // A session must serve longer than its successor takes to become active, or calls would wait for sessions.
  if (c.VODACOM_SESSION_LIFETIME_SECONDS <= 2 * c.VODACOM_SESSION_ACTIVATION_SECONDS) {
    problems.push(`VODACOM_SESSION_LIFETIME_SECONDS: must be more than twice VODACOM_SESSION_ACTIVATION_SECONDS (${c.VODACOM_SESSION_ACTIVATION_SECONDS})`);
  }
  return {
    baseUrl: c.VODACOM_BASE_URL,
    apiKey: c.VODACOM_API_KEY!,
    publicKey,
    serviceProviderCode: c.VODACOM_SERVICE_PROVIDER_CODE ?? '',
    origin: c.VODACOM_ORIGIN,
    markets: vodacomMarketsOf(c.VODACOM_MARKETS ?? '', problems),
    sessionActivationMs: c.VODACOM_SESSION_ACTIVATION_SECONDS * 1000,
    sessionLifetimeMs: c.VODACOM_SESSION_LIFETIME_SECONDS * 1000,
  };
}

export type TelemetrySettings = {
  /** OTLP/HTTP base URL (`/v1/traces` is appended); unset = no tracing at all. */
  otlpEndpoint: string | undefined;
  /** `service.name` of the exported spans; unset = `collections-api` / `collections-worker`. */
  serviceName: string | undefined;
  /** Whether the Prometheus endpoints (`/metrics` of the API, the worker's metrics port) exist. */
  metrics: boolean;
  /** The worker's own metrics port; 0 = none. */
  workerMetricsPort: number;
  /** The address the worker's metrics port listens on (loopback by default). */
  workerMetricsHost: string;
  /** The bearer token both /metrics endpoints require; unset = none (sandbox mode only: crossChecks). */
  metricsToken: string | undefined;
};

/** Reads and validates the environment once; everything else receives the result. */
type Parsed = v.InferOutput<typeof ConfigSchema>;

const momoProduct = v.object({
  subscription_key: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')),
  api_user: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')),
  api_key: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')),
}, 'must be an object of subscription_key, api_user and api_key');
/** One market of MTN_MOMO_MARKETS_FILE. */
const MomoMarketEntry = v.object({
  target_environment: v.pipe(v.string('must be a string'), v.regex(/^[a-z0-9]+$/, 'must be a MoMo target environment such as mtnghana')),
  base_url: v.optional(httpUrl, 'https://proxy.momoapi.mtn.com'),
  currency: v.pipe(v.string('must be a string'), v.regex(/^[A-Z]{3}$/, 'must be a 3-letter currency code')),
  collection: momoProduct,
  disbursement: momoProduct,
}, 'must be an object');

/**
 * The network a MoMo market serves: its target environment's (`MOMO_MARKETS`), or for MoMo's
 * sandbox environment the market whose currency it names; a problem for any other pairing.
 */
function momoMarketNetwork(targetEnvironment: string, currency: string): { network: string; problem?: undefined } | { network?: undefined; problem: string } {
  const known = MOMO_MARKETS.find((market) => market.targetEnvironment === targetEnvironment);
  const byCurrency = MOMO_MARKETS.find((market) => market.currency === currency);
  const pairs = MOMO_MARKETS.map((market) => `${market.targetEnvironment} with ${market.currency}`).join(', ');
  if (known && known.currency === currency) return { network: known.network };
  if (targetEnvironment === MOMO_SANDBOX_ENVIRONMENT && byCurrency) return { network: byCurrency.network };
  if (known) return { problem: `target environment ${targetEnvironment} moves ${known.currency}, not ${currency}` };
  return { problem: `unknown target environment and currency pairing ${targetEnvironment} with ${currency} (known: ${pairs}, or ${MOMO_SANDBOX_ENVIRONMENT} with one of their currencies)` };
}

/** What MTN_MOMO_MARKETS_FILE holds: its markets, or the problems that make it unusable. */
function readMomoMarketsFile(path: string, problems: string[]): MomoSettings[] {
  const problem = (text: string) => problems.push(`MTN_MOMO_MARKETS_FILE: ${text}`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    problem(`cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    return [];
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    problem(`${path} is not valid JSON (${(error as Error).message})`);
    return [];
  }
  if (!Array.isArray(parsed)) {
    problem(`${path} must hold a JSON array of markets`);
    return [];
  }
  return parsed.flatMap((entry, index) => {
    const result = v.safeParse(MomoMarketEntry, entry);
    if (!result.success) {
      for (const issue of result.issues) problem(`market ${index + 1}: ${v.getDotPath(issue) ?? 'market'}: ${issue.received === 'undefined' ? 'missing' : issue.message}`);
      return [];
    }
    const { target_environment: targetEnvironment, base_url: baseUrl, currency, collection, disbursement } = result.output;
    const market = momoMarketNetwork(targetEnvironment, currency);
    if (market.problem !== undefined) {
      problem(`market ${index + 1}: ${market.problem}`);
      return [];
    }
    const product = (keys: typeof collection): MomoProduct => ({ subscriptionKey: keys.subscription_key, apiUser: keys.api_user, apiKey: keys.api_key });
    return [{ baseUrl, targetEnvironment, network: market.network, currency, collection: product(collection), disbursement: product(disbursement) }];
  });
}

/**
 * Every MTN MoMo market: the single-market MTN_MOMO_* variables (MTN Uganda unless their target
 * environment names another market) and those of MTN_MOMO_MARKETS_FILE; one market per network.
 */
function momoMarketsOf(c: Parsed, single: boolean, problems: string[]): MomoSettings[] {
  const markets: MomoSettings[] = [];
  if (single) {
    const named = MOMO_MARKETS.find((market) => market.targetEnvironment === c.MTN_MOMO_TARGET_ENVIRONMENT);
    markets.push({
      baseUrl: c.MTN_MOMO_BASE_URL,
      targetEnvironment: c.MTN_MOMO_TARGET_ENVIRONMENT,
      network: named?.network ?? CONNECTED_NETWORK.momo,
      currency: named?.currency ?? 'UGX',
      collection: { subscriptionKey: c.MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY!, apiUser: c.MTN_MOMO_COLLECTION_API_USER!, apiKey: c.MTN_MOMO_COLLECTION_API_KEY! },
      disbursement: { subscriptionKey: c.MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY!, apiUser: c.MTN_MOMO_DISBURSEMENT_API_USER!, apiKey: c.MTN_MOMO_DISBURSEMENT_API_KEY! },
    });
  }
  if (c.MTN_MOMO_MARKETS_FILE !== undefined) markets.push(...readMomoMarketsFile(c.MTN_MOMO_MARKETS_FILE, problems));
  const seen = new Map<string, string>();
  markets.forEach((market, index) => {
    const where = single && index === 0 ? 'the MTN_MOMO_* variables' : `market ${single ? index : index + 1} of MTN_MOMO_MARKETS_FILE`;
    const first = seen.get(market.network);
    if (first !== undefined) problems.push(`MTN_MOMO_MARKETS_FILE: duplicate market: ${market.network} (${market.currency}) is configured by ${first} and by ${where}`);
    else seen.set(market.network, where);
  });
  return markets;
}

/** The operators' connectors: each on when its switch variable is set, then with every variable it needs. */
function connectorsOf(c: Parsed, problems: string[]): Pick<Config, 'mpesa' | 'momoMarkets' | 'airtel' | 'vodacom'> {
  const mpesa = connectorSettings('MPESA_CONSUMER_KEY', c, ['MPESA_CONSUMER_SECRET', 'MPESA_SHORTCODE', 'MPESA_PASSKEY', 'MPESA_INITIATOR_NAME', 'MPESA_SECURITY_CREDENTIAL'], problems);
  const momo = connectorSettings('MTN_MOMO_COLLECTION_API_USER', c, [
    'MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY', 'MTN_MOMO_COLLECTION_API_KEY',
    'MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY', 'MTN_MOMO_DISBURSEMENT_API_USER', 'MTN_MOMO_DISBURSEMENT_API_KEY',
  ], problems);
  const airtel = connectorSettings('AIRTEL_CLIENT_ID', c, ['AIRTEL_CLIENT_SECRET', 'AIRTEL_COUNTRIES', 'AIRTEL_PIN'], problems);
  return {
    momoMarkets: momoMarketsOf(c, momo, problems),
    vodacom: vodacomOf(c, problems),
    mpesa: mpesa ? {
      baseUrl: c.MPESA_BASE_URL,
      consumerKey: c.MPESA_CONSUMER_KEY!,
      consumerSecret: c.MPESA_CONSUMER_SECRET!,
      shortcode: c.MPESA_SHORTCODE!,
      passkey: c.MPESA_PASSKEY!,
      initiatorName: c.MPESA_INITIATOR_NAME!,
      securityCredential: c.MPESA_SECURITY_CREDENTIAL!,
      validationTimeoutMs: c.MPESA_VALIDATION_TIMEOUT_MS,
      registerUrlsAtStart: c.MPESA_REGISTER_URLS,
    } : null,
    airtel: airtel ? {
      baseUrl: c.AIRTEL_BASE_URL,
      clientId: c.AIRTEL_CLIENT_ID!,
      clientSecret: c.AIRTEL_CLIENT_SECRET!,
      countries: airtelCountriesOf(c.AIRTEL_COUNTRIES ?? '', problems),
      pin: c.AIRTEL_PIN ?? '',
      callbackKey: c.AIRTEL_CALLBACK_KEY ?? null,
    } : null,
  };
}

/** Rules that bind several variables together. */
function crossChecks(c: Parsed, connectors: Pick<Config, 'mpesa' | 'momoMarkets' | 'airtel' | 'vodacom'>, problems: string[]): void {
  // The operators call back at PUBLIC_BASE_URL: a connector needs it (Vodacom's OpenAPI answers every call itself and calls nothing back).
  if ((connectors.mpesa || connectors.momoMarkets.length > 0 || connectors.airtel) && c.PUBLIC_BASE_URL === undefined) {
    problems.push('PUBLIC_BASE_URL: required when a network connector (MPESA_*, MTN_MOMO_*, AIRTEL_*) is on');
  }
  // Trusting an extra CA for outgoing deliveries is for local receivers in sandbox mode only.
  if (c.WEBHOOK_CA_FILE !== undefined && !c.SANDBOX) problems.push('WEBHOOK_CA_FILE: only allowed when SANDBOX=true');
  // Absolute links (list pages) and the networks' callback URLs are built from it, never from a request's Host header.
  if (c.PUBLIC_BASE_URL === undefined && !c.SANDBOX) problems.push('PUBLIC_BASE_URL: required when SANDBOX=false');
  // Both /metrics endpoints show business totals (money moved per currency, across every merchant): never open outside the sandbox.
  if (c.METRICS && c.METRICS_TOKEN === undefined && !c.SANDBOX) {
    problems.push('METRICS_TOKEN: required when SANDBOX=false and METRICS=true (both /metrics endpoints show business totals; set a token of 16+ characters, or METRICS=false)');
  }
  // Every API process must accept the sign-in forms the others issued: one key, set by the operator.
  if (c.CONSOLE_SECRET === undefined && !c.SANDBOX) problems.push('CONSOLE_SECRET: required when SANDBOX=false');
  // What a change did is readable at least as long as the events it caused.
  if (c.AUDIT_RETENTION_DAYS !== undefined && c.AUDIT_RETENTION_DAYS < c.EVENT_RETENTION_DAYS) problems.push(`AUDIT_RETENTION_DAYS: must be at least EVENT_RETENTION_DAYS (${c.EVENT_RETENTION_DAYS})`);
}

/**
 * Sandbox mode without CONSOLE_SECRET: a random key of this process (never a fixed one, which
 * anyone could read here and sign with). A sign-in form loaded before a restart, or from another
 * process, is then refused once and shown again with a fresh token.
 */
const sandboxConsoleSecret = (): string => randomBytes(32).toString('base64url');

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const defined = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const result = v.safeParse(ConfigSchema, defined);
  if (!result.success) {
    const problems = result.issues.map((issue) => `${v.getDotPath(issue) ?? '?'}: ${issue.message}`);
    throw new Error(`Invalid configuration: ${problems.join('; ')}`);
  }
  const c = result.output;
  const problems: string[] = [];
  const connectors = connectorsOf(c, problems);
  crossChecks(c, connectors, problems);
  if (problems.length > 0) throw new Error(`Invalid configuration: ${problems.join('; ')}`);
  return {
    port: c.PORT,
    databaseUrl: c.DATABASE_URL,
    databasePoolSize: c.DATABASE_POOL_SIZE,
    temporal: { address: c.TEMPORAL_ADDRESS, namespace: c.TEMPORAL_NAMESPACE, taskQueue: c.TASK_QUEUE },
    publicBaseUrl: c.PUBLIC_BASE_URL?.replace(/\/+$/, ''),
    sandbox: c.SANDBOX,
    pageSizeMax: c.PAGE_SIZE_MAX,
    outbox: { sweepEnabled: c.OUTBOX_SWEEP, sweepIntervalSeconds: c.OUTBOX_SWEEP_INTERVAL_SECONDS, graceSeconds: c.OUTBOX_GRACE_SECONDS },
    workflowBundlePath: c.WORKFLOW_BUNDLE_PATH,
    worker: { maxCachedWorkflows: c.WORKER_MAX_CACHED_WORKFLOWS },
    collectionRequests: { sandboxPaymentDelaySeconds: c.SANDBOX_PAYMENT_DELAY_SECONDS, failedPromptRetrySeconds: c.FAILED_PROMPT_RETRY_SECONDS },
    collections: { verificationTimeoutSeconds: c.VERIFICATION_TIMEOUT_SECONDS },
    payouts: {
      sandboxDelaySeconds: c.SANDBOX_PAYOUT_DELAY_SECONDS,
      statusPollSeconds: c.PAYOUT_STATUS_POLL_SECONDS,
      statusTimeoutSeconds: c.PAYOUT_STATUS_TIMEOUT_SECONDS,
      batchConcurrency: c.PAYMENT_BATCH_CONCURRENCY,
    },
    throttle: { reads: c.THROTTLE_READS, writes: c.THROTTLE_WRITES, windowSeconds: c.THROTTLE_WINDOW_SECONDS },
    operatorCallbacks: { perAddress: c.OPERATOR_CALLBACK_LIMIT_PER_ADDRESS, perOperator: c.OPERATOR_CALLBACK_LIMIT_PER_OPERATOR, windowSeconds: 60 },
    duplicateCheckTtlSeconds: c.DUPLICATE_CHECK_TTL_SECONDS,
    billsBaseUrl: c.BILLS_BASE_URL?.replace(/\/+$/, ''),
    webhooks: { retryDelaysMs: c.WEBHOOK_RETRY_SCHEDULE, jitter: c.WEBHOOK_RETRY_JITTER, caFile: c.WEBHOOK_CA_FILE, actorHistoryEvents: c.WEBHOOK_ACTOR_HISTORY_EVENTS,
      disableAfterHours: c.WEBHOOK_DISABLE_AFTER_HOURS, concurrency: c.WEBHOOK_CONCURRENCY, senders: c.WEBHOOK_SENDERS,
      dispatchers: c.WEBHOOK_DISPATCHERS, dispatchWindow: c.WEBHOOK_DISPATCH_WINDOW,
      dispatchQueue: c.WEBHOOK_DISPATCH_SCOPE === 'task-queue' ? c.TASK_QUEUE : null },
    retention: { days: c.EVENT_RETENTION_DAYS, auditDays: c.AUDIT_RETENTION_DAYS ?? Math.max(DEFAULT_AUDIT_RETENTION_DAYS, c.EVENT_RETENTION_DAYS), sweepEnabled: c.RETENTION_SWEEP, sweepIntervalSeconds: c.RETENTION_SWEEP_INTERVAL_SECONDS },
    console: { temporalUiUrl: c.TEMPORAL_UI_URL.replace(/\/+$/, ''), trustProxy: c.TRUST_PROXY, secret: c.CONSOLE_SECRET ?? sandboxConsoleSecret() },
    telemetry: {
      otlpEndpoint: c.OTEL_EXPORTER_OTLP_ENDPOINT?.replace(/\/+$/, ''),
      serviceName: c.OTEL_SERVICE_NAME,
      metrics: c.METRICS,
      workerMetricsPort: c.WORKER_METRICS_PORT,
      workerMetricsHost: c.WORKER_METRICS_HOST,
      metricsToken: c.METRICS_TOKEN,
    },
    ...connectors,
    networkStatusPollSeconds: c.NETWORK_STATUS_POLL_SECONDS,
  };
}

/** Whether a connector is on (its switch variable is set), and the problems of its other required variables. */
function connectorSettings(switchName: string, values: Record<string, unknown>, required: string[], problems: string[]): boolean {
  if (values[switchName] === undefined) return false;
  for (const name of required) if (values[name] === undefined) problems.push(`${name}: required when ${switchName} is set`);
  return true;
}
