/**
 * Every Prometheus instrument of the service (prom-client). The API serves its registry on
 * `GET /metrics`, the worker its own on its metrics port (with the Temporal SDK's worker metrics
 * appended, src/telemetry/worker.ts); an instrument is in the registry of the process that
 * records it (both, for steps either may take). Instruments are process-wide, like the logger:
 * the code that does the work records it with one call of the functions below.
 *
 * Names follow Prometheus conventions: `_total` counters, `_seconds` durations, labels with a
 * small fixed set of values (never ids, amounts or paths).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { FINAL_STATUSES } from '../domain/collection-requests';
import { WEBHOOK_ATTEMPTS } from '../domain/webhook-schedule';

type MetricsProcess = 'api' | 'worker';
const registries: Record<MetricsProcess, Registry> = { api: new Registry(), worker: new Registry() };
const API = [registries.api];
const WORKER = [registries.worker];
const BOTH = [registries.api, registries.worker];
export const METRICS_CONTENT_TYPE = registries.api.contentType;

let processMetricsStarted = false;
/** CPU, memory, event loop and GC figures of this process (`process_*`, `nodejs_*`), once per process. */
export function collectProcessMetrics(owner: MetricsProcess): void {
  if (processMetricsStarted) return;
  processMetricsStarted = true;
  collectDefaultMetrics({ register: registries[owner] });
}

// API (recorded by src/http/request-telemetry.ts and src/http/request-policy.ts).

/** Every API request, by route template (`/api/collections/:id`, `unmatched` for no route), method and status. */
const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'API requests by route template, method and response status, from arrival to response.',
  labelNames: ['route', 'method', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: API,
});

const requestsThrottled = new Counter({
  name: 'requests_throttled_total',
  help: 'Requests answered 429 because their organization was past its limit, by kind (read or write).',
  labelNames: ['kind'] as const,
  registers: API,
});

const callbacksThrottled = new Counter({
  name: 'operator_callbacks_throttled_total',
  help: [
    'Operator callbacks answered 429, by network and the limit they passed',
    "(its source address's, or the operator's).",
  ].join(' '),
  labelNames: ['network', 'limit'] as const,
  registers: API,
});

const duplicateRequests = new Counter({
  name: 'duplicate_requests_total',
  help: 'Writes answered 409 because their Duplicate-Check-Key was already claimed.',
  registers: API,
});

export function observeHttpRequest(labels: { route: string; method: string; status: number }, seconds: number): void {
  httpRequestDuration.observe({ route: labels.route, method: labels.method, status: String(labels.status) }, seconds);
}

export function countThrottledRequest(kind: 'read' | 'write'): void {
  requestsThrottled.inc({ kind });
}

export function countThrottledCallback(network: string, limit: 'address' | 'operator'): void {
  callbacksThrottled.inc({ network, limit });
}

export function countDuplicateRequest(): void {
  duplicateRequests.inc();
}

// Collections, requests, payments, wallets.

/**
 * Recorded after the commit that gives a request its final status (the request's activities, the credit of its
 * collection).
 */
const collectionRequestsFinal = new Counter({
  name: 'collection_requests_final_total',
  help: 'Collection requests that reached a final status, by that status (successful, failed, expired, cancelled...).',
  labelNames: ['status'] as const,
  registers: BOTH,
});

type MatchOutcome = 'prompt_reference' | 'single_organization' | 'unassigned' | 'claimed';

/**
 * Recorded after the commit of an incoming collection's matching (activities/collections.ts) and of a claim
 * (`claimed`).
 */
const collectionsMatched = new Counter({
  name: 'collections_matched_total',
  help: [
    'Incoming collections by how they were matched:',
    'prompt_reference, single_organization, unassigned, or claimed later.',
  ].join(' '),
  labelNames: ['outcome'] as const,
  registers: BOTH,
});

/** Recorded by the verification activity (`verifyCollection`) when the merchant's URL was asked. */
const verificationAnswers = new Counter({
  name: 'verification_answers_total',
  help: [
    'Verification URL calls by outcome:',
    "accept or reject (the merchant's answer), default (no usable answer in time).",
  ].join(' '),
  labelNames: ['outcome'] as const,
  registers: WORKER,
});

const verificationDuration = new Histogram({
  name: 'verification_duration_seconds',
  help: 'Time the verification step took when the merchant was asked, by outcome.',
  labelNames: ['outcome'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: WORKER,
});

/**
 * Recorded after the commit of each payment state change: its creation (API), a cancel (API), the network's outcome
 * (activities/payments.ts).
 */
const payments = new Counter({
  name: 'payments_total',
  help: 'Payment (money out) state changes, by the state reached.',
  labelNames: ['state'] as const,
  registers: BOTH,
});

/**
 * Recorded after the commit of each transaction that changes a wallet's balance (credits of collections and claims;
 * payments and reversals).
 */
const walletMovements = new Counter({
  name: 'wallet_movements_total',
  help: 'Wallet transactions by type (mobile_collection, payment, reversal...) and direction (credit or debit).',
  labelNames: ['type', 'direction'] as const,
  registers: BOTH,
});

const walletMovementAmount = new Counter({
  name: 'wallet_movement_amount_total',
  help: [
    'Sum of wallet transaction amounts by currency and direction',
    '(a figure to watch, not an account: the ledger is PostgreSQL).',
  ].join(' '),
  labelNames: ['currency', 'direction'] as const,
  registers: BOTH,
});

export function recordCollectionRequestFinal(status: string): void {
  collectionRequestsFinal.inc({ status });
}

/**
 * The final request statuses among a committed transaction's events (a credit's `successful`, a reversal's `reversed`).
 */
export function recordFinalRequestStatuses(events: readonly { type: string; data: Record<string, unknown> }[]): void {
  for (const event of events) {
    const status = event.type === 'collectionrequest.status.changed' ? event.data.status : undefined;
    if (typeof status === 'string' && (FINAL_STATUSES as readonly string[]).includes(status))
      recordCollectionRequestFinal(status);
  }
}

export function recordCollectionMatch(outcome: MatchOutcome): void {
  collectionsMatched.inc({ outcome });
}

export function recordPaymentState(state: string): void {
  payments.inc({ state });
}

/** `amount`: the decimal string of the transaction, positive. */
export function recordWalletMovement(movement: {
  type: string;
  direction: 'credit' | 'debit';
  currency: string;
  amount: string;
}): void {
  walletMovements.inc({ type: movement.type, direction: movement.direction });
  walletMovementAmount.inc({ currency: movement.currency, direction: movement.direction }, Number(movement.amount));
}

type VerificationResult = { decision: string; decidedBy: string };

/**
 * Wraps the verification step: when the merchant was asked (`decidedBy` is not `not-asked`),
 * counts the outcome and observes how long the step took.
 */
export function measuredVerification<Input, Result extends VerificationResult>(
  verify: (input: Input) => Promise<Result>,
): (input: Input) => Promise<Result> {
  return async (input) => {
    const started = performance.now();
    const result = await verify(input);
    if (result.decidedBy !== 'not-asked') {
      const outcome = result.decidedBy === 'merchant' ? result.decision : 'default';
      verificationAnswers.inc({ outcome });
      verificationDuration.observe({ outcome }, (performance.now() - started) / 1000);
    }
    return result;
  };
}

// Webhooks (recorded by the delivery attempt, src/activities/webhooks.ts).

const webhookDeliveries = new Counter({
  name: 'webhook_deliveries_total',
  help: [
    'Webhook deliveries that reached a final outcome:',
    'delivered (2xx), gone (410, webhook retired), failed (every attempt failed).',
  ].join(' '),
  labelNames: ['outcome'] as const,
  registers: WORKER,
});

const webhookDeliveryAttempts = new Histogram({
  name: 'webhook_delivery_attempts',
  help: 'Attempts a webhook delivery took until its final outcome (1 to 10).',
  labelNames: ['outcome'] as const,
  buckets: Array.from({ length: WEBHOOK_ATTEMPTS }, (_, index) => index + 1),
  registers: WORKER,
});

const webhookTimeToDelivery = new Histogram({
  name: 'webhook_time_to_delivery_seconds',
  help: [
    'From the event to its webhook answered 2xx, first deliveries only',
    '(a redelivery is an operator replaying an old event).',
  ].join(' '),
  buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14_400, 57_600],
  registers: WORKER,
});

/**
 * One webhook attempt that was sent and logged. The delivery is final when it was delivered or
 * gone, or when the last of the attempts failed.
 */
export function recordWebhookAttempt(attempt: {
  outcome: 'delivered' | 'failed' | 'gone';
  attempt: number;
  eventCreatedAt: Date;
  redelivery: boolean;
}): void {
  const final = attempt.outcome !== 'failed' || attempt.attempt >= WEBHOOK_ATTEMPTS;
  if (!final) return;
  webhookDeliveries.inc({ outcome: attempt.outcome });
  webhookDeliveryAttempts.observe({ outcome: attempt.outcome }, attempt.attempt);
  if (attempt.outcome === 'delivered' && !attempt.redelivery) {
    webhookTimeToDelivery.observe(Math.max(0, (Date.now() - attempt.eventCreatedAt.getTime()) / 1000));
  }
}

// Outbox (computed at scrape time, on the worker: outboxBacklog in src/services/platform/outbox.ts).

export type OutboxBacklog = { kind: string; count: number; oldestAgeSeconds: number };
let outboxSource: (() => Promise<OutboxBacklog[]>) | null = null;
let outboxScrape: Promise<OutboxBacklog[] | null> | null = null;

/** Sets the query the outbox gauges read at each scrape (the worker does; the API leaves them empty). */
export function setOutboxSource(source: (() => Promise<OutboxBacklog[]>) | null): void {
  outboxSource = source;
}

/** One query per scrape for both gauges; a failed query leaves them empty for that scrape. */
function scrapeOutbox(): Promise<OutboxBacklog[] | null> {
  if (!outboxSource) return Promise.resolve(null);
  outboxScrape ??= outboxSource()
    .catch(() => null)
    .finally(() => {
      outboxScrape = null;
    });
  return outboxScrape;
}

// Registered in WORKER's registry on creation; collected at each scrape.
new Gauge({
  name: 'outbox_backlog',
  help: [
    'Rows waiting for the process that should have handed them to Temporal',
    '(requests, deliveries, payments, reversals, batches whose workflow was not started).',
  ].join(' '),
  labelNames: ['kind'] as const,
  registers: WORKER,
  async collect() {
    this.reset();
    for (const row of (await scrapeOutbox()) ?? []) this.set({ kind: row.kind }, row.count);
  },
});

new Gauge({
  name: 'outbox_oldest_age_seconds',
  help: 'Age of the oldest row waiting in each outbox (0 when empty).',
  labelNames: ['kind'] as const,
  registers: WORKER,
  async collect() {
    this.reset();
    for (const row of (await scrapeOutbox()) ?? []) this.set({ kind: row.kind }, row.oldestAgeSeconds);
  },
});

// Network routes (recorded by the worker: each operation's outcome on the route that took it, and
// each route's state read at scrape time from the routes' health, src/services/networks/route-health.ts).

type RouteLabels = { network: string; route: string; operation: 'collect' | 'payout' };

const routeOperations = new Counter({
  name: 'network_route_operations_total',
  help: [
    "Operations sent through a network's route, by network, route, operation (collect, payout) and outcome:",
    'succeeded (the route answered, whatever the subscriber did)',
    'or faulted (a route fault: no answer, a refused connection, a 5xx, the operator busy).',
  ].join(' '),
  labelNames: ['network', 'route', 'operation', 'outcome'] as const,
  registers: WORKER,
});

export function countRouteOutcome(key: RouteLabels, outcome: 'succeeded' | 'faulted'): void {
  routeOperations.inc({ network: key.network, route: key.route, operation: key.operation, outcome });
}

/** The gauge's value of each route state. */
const ROUTE_STATE_VALUES = { up: 0, probing: 1, down: 2, paused: 3, closed: 4 } as const;
/** A route and its state, as the routes' health reads them (`routeViews`). */
type RouteStateReading = RouteLabels & { state: keyof typeof ROUTE_STATE_VALUES };
let routeStateSource: (() => Promise<readonly RouteStateReading[]>) | null = null;

/** Sets what the route state gauge reads at each scrape (the worker does; the API leaves it empty). */
export function setRouteStateSource(source: (() => Promise<readonly RouteStateReading[]>) | null): void {
  routeStateSource = source;
}

// Registered in WORKER's registry on creation; collected at each scrape (a failed read leaves it empty for that
// scrape).
new Gauge({
  name: 'network_route_state',
  help: [
    "Each route's state: 0 up, 1 probing (one operation tries it after its wait), 2 down (left after route faults),",
    '3 paused (by an operator), 4 closed (by its aggregator).',
  ].join(' '),
  labelNames: ['network', 'route', 'operation'] as const,
  registers: WORKER,
  async collect() {
    this.reset();
    const readings = routeStateSource ? await routeStateSource().catch(() => null) : null;
    for (const reading of readings ?? []) {
      this.set(
        { network: reading.network, route: reading.route, operation: reading.operation },
        ROUTE_STATE_VALUES[reading.state],
      );
    }
  },
});

/** A process's registry in Prometheus text format. */
export function metricsText(owner: MetricsProcess): Promise<string> {
  return registries[owner].metrics();
}
