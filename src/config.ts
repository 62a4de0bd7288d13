import { randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { booleanString, integerString } from './config-values';
// The connectors' settings types, where the configuration's readers look for them.
export type {
  AirtelCountry,
  AirtelSettings,
  MomoProduct,
  MomoSettings,
  MpesaSettings,
  VodacomMarket,
  VodacomSettings,
} from './network/registry';
import {
  CONNECTOR_VARIABLES,
  operatorsCallingBack,
  readConnectorSettings,
  type ConnectorSettings,
} from './network/registry';
import { WEBHOOK_ATTEMPTS } from './domain/webhook-schedule';

const DURATION_UNITS_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
/** Comma-separated waits such as `10s,1m,2h` (units ms, s, m, h), as milliseconds. */
const durationList = (count: number) =>
  v.pipe(
    v.string(),
    v.transform((value) => value.split(',').map((part) => part.trim())),
    v.check(
      (parts) => parts.every((part) => /^\d+(ms|s|m|h)$/.test(part)),
      'must be durations like 10s, 5m or 2h, comma separated',
    ),
    v.length(count, `must list exactly ${count} waits`),
    v.transform((parts) =>
      parts.map((part) => {
        const [, amount = '0', unit = 'ms'] = /^(\d+)(ms|s|m|h)$/.exec(part) ?? [];
        return Number(amount) * DURATION_UNITS_MS[unit as keyof typeof DURATION_UNITS_MS];
      }),
    ),
  );
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
  // Bun's development mode renders an uncaught error as a page with its stack and source lines: only when asked for.
  API_DEVELOPMENT_MODE: v.optional(booleanString, 'false'),
  // A request not answered in this time gets 503 with Retry-After (src/server.ts): a database that
  // stopped answering (a partition, a freeze) never holds a merchant longer. Below the load balancer's timeout.
  API_REQUEST_TIMEOUT_SECONDS: v.optional(integerString(1), '15'),
  // After SIGTERM: readiness fails at once and requests are still served this long, so the load
  // balancer stops sending before the port closes. At least its check interval times its fall count.
  API_DRAIN_SECONDS: v.optional(integerString(0), '5'),
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
  // Deliveries of one webhook in flight at once (each on its own connection when the receiver closes them).
  WEBHOOK_CONCURRENCY: v.optional(v.pipe(integerString(1), v.maxValue(256)), '16'),
  // Deliveries to one receiver (a target's origin: scheme, host, port) in flight at once, all webhooks together: also
  // the connections a worker keeps to it, so no delivery waits for a connection (docs/architecture.md, How the pool
  // shares itself).
  WEBHOOK_RECEIVER_CONCURRENCY: v.optional(v.pipe(integerString(1), v.maxValue(1024)), '32'),
  // Deliveries of one organization in flight at once, all its webhooks together: one merchant's many webhooks take no
  // more.
  WEBHOOK_ORGANIZATION_CONCURRENCY: v.optional(v.pipe(integerString(1), v.maxValue(4096)), '64'),
  // Webhook senders one worker process runs at once, on their own task queue (the pool's dispatchers, and earlier
  // actors' senders).
  WEBHOOK_SENDERS: v.optional(integerString(1), '200'),
  // The webhook delivery pool: how many dispatchers send every webhook's deliveries, and the POSTs each keeps in
  // flight.
  WEBHOOK_DISPATCHERS: v.optional(v.pipe(integerString(1), v.maxValue(64)), '2'),
  WEBHOOK_DISPATCH_WINDOW: v.optional(v.pipe(integerString(1), v.maxValue(4096)), '128'),
  // Which webhooks the pool sends: every one in the database, or those made through this deployment's task queue.
  WEBHOOK_DISPATCH_SCOPE: v.optional(v.picklist(['all', 'task-queue']), 'all'),
  // Whose routes' health a process keeps and reads: the whole service's, or this deployment's task queue's
  // (the test suite, whose files run side by side on one database, each taking routes down on its own).
  NETWORK_ROUTES_SCOPE: v.optional(v.picklist(['all', 'task-queue']), 'all'),
  // A webhook whose target has failed every attempt for this many hours is disabled (5 days).
  WEBHOOK_DISABLE_AFTER_HOURS: v.optional(integerString(1), '120'),
  // Events are kept at least 30 days (docs/api.md#events): a shorter retention is refused.
  EVENT_RETENTION_DAYS: v.optional(integerString(30), '30'),
  // The audit trail is kept at least as long as events (checked below); by default a year, or the events' retention
  // when longer.
  AUDIT_RETENTION_DAYS: v.optional(integerString(30)),
  RETENTION_SWEEP: v.optional(booleanString, 'true'),
  RETENTION_SWEEP_INTERVAL_SECONDS: v.optional(integerString(1), '3600'),
  // The web console links each collection request to its workflow in the Temporal Web UI.
  TEMPORAL_UI_URL: v.optional(v.pipe(v.string(), v.url()), 'http://localhost:8233'),
  // Behind a proxy that appends the client's address to X-Forwarded-For, the console's sign-in
  // throttle counts per that address; otherwise per the connection's address.
  TRUST_PROXY: v.optional(booleanString, 'false'),
  // The key the console signs its sign-in form's CSRF tokens with; the same in every API process.
  CONSOLE_SECRET: v.optional(
    v.pipe(v.string(), v.minLength(32, 'must be at least 32 characters (for example: openssl rand -base64 32)')),
  ),
  // OpenTelemetry's standard variables: traces go out over OTLP/HTTP only when an endpoint is set.
  OTEL_EXPORTER_OTLP_ENDPOINT: v.optional(
    v.pipe(v.string(), v.url(), v.regex(/^https?:\/\//, 'must be an http:// or https:// URL')),
  ),
  OTEL_SERVICE_NAME: v.optional(v.pipe(v.string(), v.minLength(1))),
  METRICS: v.optional(booleanString, 'true'),
  WORKER_METRICS_PORT: v.optional(v.pipe(integerString(0), v.maxValue(65535)), '9464'),
  // The worker's /metrics listens on loopback unless told otherwise (a container network: 0.0.0.0).
  WORKER_METRICS_HOST: v.optional(v.pipe(v.string(), v.minLength(1)), '127.0.0.1'),
  // When set, both /metrics endpoints want `Authorization: Bearer <token>` (as Prometheus sends it); required outside
  // sandbox mode.
  METRICS_TOKEN: v.optional(
    v.pipe(v.string(), v.minLength(16, 'must be at least 16 characters'), v.regex(/^\S+$/, 'must not contain spaces')),
  ),
  // The operators' connectors declare their own variables (src/network/<operator>/settings.ts).
  ...CONNECTOR_VARIABLES,
  // How often a real operator is asked about a prompt, a payout or a reported payment it has not called back about.
  NETWORK_STATUS_POLL_SECONDS: v.optional(integerString(1), '20'),
  // How long a call to an operator's API waits for its answer (docs/going-live.md#in-doubt-is-not-refused).
  OPERATOR_TIMEOUT_MS: v.optional(integerString(100), '20000'),
  // Overrides every connector's declared in-flight window (tests and drills shorten it; unset in production).
  OPERATOR_IN_FLIGHT_WINDOW_SECONDS: v.optional(integerString(1)),
});

export type Config = ConnectorSettings & {
  port: number;
  /** Bun.serve's `development` (src/server.ts): false unless API_DEVELOPMENT_MODE=true. */
  developmentMode: boolean;
  /** src/server.ts: the longest a request is worked on before 503, and the drain after SIGTERM. */
  requestTimeoutSeconds: number;
  drainSeconds: number;
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
  payouts: {
    sandboxDelaySeconds: number;
    statusPollSeconds: number;
    statusTimeoutSeconds: number;
    batchConcurrency: number;
  };
  collections: { verificationTimeoutSeconds: number };
  /** Default limits per organization and window; the admin CLI overrides them per organization. */
  throttle: { reads: number; writes: number; windowSeconds: number };
  /** Requests to the operator callback routes per window (a minute), per source address and per operator. */
  operatorCallbacks: { perAddress: number; perOperator: number; windowSeconds: number };
  duplicateCheckTtlSeconds: number;
  /** `{bills_url}` (docs/api.md#bill-payments) as the OpenAPI document shows it; unset = the API's own base URL. */
  billsBaseUrl: string | undefined;
  /** Whose routes' health this process keeps (migration 029): '' for the whole service, or the task queue's name. */
  routesScope: string;
  webhooks: {
    retryDelaysMs: number[];
    jitter: number;
    caFile: string | undefined;
    disableAfterHours: number;
    concurrency: number;
    senders: number;
    dispatchers: number;
    dispatchWindow: number;
    /** In flight per receiver (origin) and per organization: how the delivery pool shares itself. */
    receiverConcurrency: number;
    organizationConcurrency: number;
    /** The task queue whose webhooks the pool sends (WEBHOOK_DISPATCH_SCOPE=task-queue), or null for every webhook. */
    dispatchQueue: string | null;
  };
  /** `days` of events, `auditDays` of the audit trail (at least `days`). */
  retention: { days: number; auditDays: number; sweepEnabled: boolean; sweepIntervalSeconds: number };
  /** `secret` signs the sign-in form's CSRF tokens (never logged or shown). */
  console: { temporalUiUrl: string; trustProxy: boolean; secret: string };
  telemetry: TelemetrySettings;
  // The real operators' connectors' settings (`ConnectorSettings`: mpesa, momoMarkets, airtel, vodacom, ...): off when
  // null or empty (their networks are then the sandbox's, in sandbox mode only).
  /** How often a real operator is asked about what it has not called back about. */
  networkStatusPollSeconds: number;
  /** Calls to the operators: how long an answer is waited for; the in-flight window every connector takes if set. */
  operators: { timeoutMs: number; inFlightWindowSeconds: number | null };
};

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

/** Rules that bind several variables together. */
function crossChecks(c: Parsed, connectors: ConnectorSettings, problems: string[]): void {
  // The operators call back at PUBLIC_BASE_URL: a connector whose operator calls back needs it.
  const callingBack = operatorsCallingBack(connectors);
  if (callingBack.length > 0 && c.PUBLIC_BASE_URL === undefined) {
    problems.push(
      `PUBLIC_BASE_URL: required when a network connector whose operator calls back is on (${callingBack.join(', ')})`,
    );
  }
  // Trusting an extra CA for outgoing deliveries is for local receivers in sandbox mode only.
  if (c.WEBHOOK_CA_FILE !== undefined && !c.SANDBOX) problems.push('WEBHOOK_CA_FILE: only allowed when SANDBOX=true');
  // Absolute links (list pages) and the networks' callback URLs are built from it, never from a request's Host header.
  if (c.PUBLIC_BASE_URL === undefined && !c.SANDBOX) problems.push('PUBLIC_BASE_URL: required when SANDBOX=false');
  // Both /metrics endpoints show business totals (money moved per currency, across every merchant): never open outside
  // the sandbox.
  if (c.METRICS && c.METRICS_TOKEN === undefined && !c.SANDBOX) {
    problems.push(
      [
        'METRICS_TOKEN: required when SANDBOX=false and METRICS=true',
        '(both /metrics endpoints show business totals; set a token of 16+ characters, or METRICS=false)',
      ].join(' '),
    );
  }
  // Every API process must accept the sign-in forms the others issued: one key, set by the operator.
  if (c.CONSOLE_SECRET === undefined && !c.SANDBOX) problems.push('CONSOLE_SECRET: required when SANDBOX=false');
  // What a change did is readable at least as long as the events it caused.
  if (c.AUDIT_RETENTION_DAYS !== undefined && c.AUDIT_RETENTION_DAYS < c.EVENT_RETENTION_DAYS)
    problems.push(`AUDIT_RETENTION_DAYS: must be at least EVENT_RETENTION_DAYS (${c.EVENT_RETENTION_DAYS})`);
}

/**
 * Sandbox mode without CONSOLE_SECRET: a random key of this process (never a fixed one, which
 * anyone could read here and sign with). A sign-in form loaded before a restart, or from another
 * process, is then refused once and shown again with a fresh token.
 */
const sandboxConsoleSecret = (): string => randomBytes(32).toString('base64url');

/** The webhook delivery settings, from the checked variables. */
const webhookSettings = (c: v.InferOutput<typeof ConfigSchema>): Config['webhooks'] => ({
  retryDelaysMs: c.WEBHOOK_RETRY_SCHEDULE,
  jitter: c.WEBHOOK_RETRY_JITTER,
  caFile: c.WEBHOOK_CA_FILE,
  disableAfterHours: c.WEBHOOK_DISABLE_AFTER_HOURS,
  concurrency: c.WEBHOOK_CONCURRENCY,
  senders: c.WEBHOOK_SENDERS,
  receiverConcurrency: c.WEBHOOK_RECEIVER_CONCURRENCY,
  organizationConcurrency: c.WEBHOOK_ORGANIZATION_CONCURRENCY,
  dispatchers: c.WEBHOOK_DISPATCHERS,
  dispatchWindow: c.WEBHOOK_DISPATCH_WINDOW,
  dispatchQueue: c.WEBHOOK_DISPATCH_SCOPE === 'task-queue' ? c.TASK_QUEUE : null,
});

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const defined = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const result = v.safeParse(ConfigSchema, defined);
  if (!result.success) {
    const problems = result.issues.map((issue) => `${v.getDotPath(issue) ?? '?'}: ${issue.message}`);
    throw new Error(`Invalid configuration: ${problems.join('; ')}`);
  }
  const c = result.output;
  const problems: string[] = [];
  const connectors = readConnectorSettings(c, problems);
  crossChecks(c, connectors, problems);
  if (problems.length > 0) throw new Error(`Invalid configuration: ${problems.join('; ')}`);
  return {
    port: c.PORT,
    developmentMode: c.API_DEVELOPMENT_MODE,
    requestTimeoutSeconds: c.API_REQUEST_TIMEOUT_SECONDS,
    drainSeconds: c.API_DRAIN_SECONDS,
    databaseUrl: c.DATABASE_URL,
    databasePoolSize: c.DATABASE_POOL_SIZE,
    temporal: { address: c.TEMPORAL_ADDRESS, namespace: c.TEMPORAL_NAMESPACE, taskQueue: c.TASK_QUEUE },
    publicBaseUrl: c.PUBLIC_BASE_URL?.replace(/\/+$/, ''),
    sandbox: c.SANDBOX,
    pageSizeMax: c.PAGE_SIZE_MAX,
    outbox: {
      sweepEnabled: c.OUTBOX_SWEEP,
      sweepIntervalSeconds: c.OUTBOX_SWEEP_INTERVAL_SECONDS,
      graceSeconds: c.OUTBOX_GRACE_SECONDS,
    },
    workflowBundlePath: c.WORKFLOW_BUNDLE_PATH,
    worker: { maxCachedWorkflows: c.WORKER_MAX_CACHED_WORKFLOWS },
    collectionRequests: {
      sandboxPaymentDelaySeconds: c.SANDBOX_PAYMENT_DELAY_SECONDS,
      failedPromptRetrySeconds: c.FAILED_PROMPT_RETRY_SECONDS,
    },
    collections: { verificationTimeoutSeconds: c.VERIFICATION_TIMEOUT_SECONDS },
    payouts: {
      sandboxDelaySeconds: c.SANDBOX_PAYOUT_DELAY_SECONDS,
      statusPollSeconds: c.PAYOUT_STATUS_POLL_SECONDS,
      statusTimeoutSeconds: c.PAYOUT_STATUS_TIMEOUT_SECONDS,
      batchConcurrency: c.PAYMENT_BATCH_CONCURRENCY,
    },
    throttle: { reads: c.THROTTLE_READS, writes: c.THROTTLE_WRITES, windowSeconds: c.THROTTLE_WINDOW_SECONDS },
    operatorCallbacks: {
      perAddress: c.OPERATOR_CALLBACK_LIMIT_PER_ADDRESS,
      perOperator: c.OPERATOR_CALLBACK_LIMIT_PER_OPERATOR,
      windowSeconds: 60,
    },
    duplicateCheckTtlSeconds: c.DUPLICATE_CHECK_TTL_SECONDS,
    billsBaseUrl: c.BILLS_BASE_URL?.replace(/\/+$/, ''),
    routesScope: c.NETWORK_ROUTES_SCOPE === 'task-queue' ? c.TASK_QUEUE : '',
    webhooks: webhookSettings(c),
    retention: {
      days: c.EVENT_RETENTION_DAYS,
      auditDays: c.AUDIT_RETENTION_DAYS ?? Math.max(DEFAULT_AUDIT_RETENTION_DAYS, c.EVENT_RETENTION_DAYS),
      sweepEnabled: c.RETENTION_SWEEP,
      sweepIntervalSeconds: c.RETENTION_SWEEP_INTERVAL_SECONDS,
    },
    console: {
      temporalUiUrl: c.TEMPORAL_UI_URL.replace(/\/+$/, ''),
      trustProxy: c.TRUST_PROXY,
      secret: c.CONSOLE_SECRET ?? sandboxConsoleSecret(),
    },
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
    operators: {
      timeoutMs: c.OPERATOR_TIMEOUT_MS,
      inFlightWindowSeconds: c.OPERATOR_IN_FLIGHT_WINDOW_SECONDS ?? null,
    },
  };
}
