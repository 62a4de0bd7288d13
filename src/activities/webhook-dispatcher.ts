/**
 * A dispatcher of the webhook delivery pool (docs/architecture.md, Webhook delivery): a long-running
 * activity that sends the due delivery rows of every webhook, from PostgreSQL (the queue,
 * services/webhooks/webhook-queue.ts). A fixed number of them run (`WEBHOOK_DISPATCHERS`, each kept going by
 * its workflow, workflows/webhook-dispatcher.ts), whatever the number of webhooks or events: no
 * event and no delivery costs a workflow step.
 *
 * Each keeps at most `window` POSTs in flight, each finishing on its own; a freed slot is filled by
 * the next claim at once. Claims share the pool by organization, then by webhook, and claim only
 * what can start now: each webhook, receiver (origin) and organization within its share whichever
 * dispatcher holds its rows, a receiver that hangs probed one POST at a time
 * (`claimDueAcrossWebhooks`, docs/architecture.md, How the pool shares itself). Each attempt is made and logged as
 * activities/webhook-attempt.ts makes it: at most one POST per logged attempt, nothing lost across
 * a killed worker (a claimed row's lease lapses and the next claim logs that attempt unknown).
 *
 * Besides sending, the dispatcher handles what it meets: a 410 ends
 * the webhook (retired by the attempt's own statement) and its pending deliveries are cancelled; a
 * webhook failing every attempt for `WEBHOOK_DISABLE_AFTER_HOURS` is disabled (and its merchant
 * told), its pending deliveries cancelled. Deletion and disabling by the merchant cancel in their
 * own transaction (services/webhooks/webhooks.ts, services/webhooks/webhook-recovery.ts).
 *
 * New rows wake it at once (LISTEN `webhook_deliveries`); with nothing to claim it looks again at
 * the soonest retry it scheduled or within a second. It returns after a few minutes, so that its
 * workflow's history stays short, or when cancelled, after the POSTs in flight finish.
 */
import type { WebhookId } from '../domain/ids';
import { Context, log } from '@temporalio/activity';
import type { RetrySchedule } from '../domain/webhook-schedule';
import type { AttemptOutcome } from '../domain/webhooks';
import {
  cancelPending,
  claimDueAcrossWebhooks,
  releaseClaims,
  type ClaimedDelivery,
} from '../services/webhooks/webhook-queue';
import { deliverySecrets, type DeliverySecrets } from '../services/webhooks/webhook-secrets';
import { readWebhook, type LiveWebhook } from '../services/webhooks/webhooks';
import { disableIfFailing } from '../services/webhooks/webhook-recovery';
import type { DispatcherInput, DispatcherResult } from '../contracts/webhook-dispatcher';
import { inTraceOf } from '../telemetry/trace-context';
import { LEASE_MS, attemptClaimed, every, trackInFlight, type WebhookActivityDeps } from './webhook-attempt';
import type { TransportSettings } from '../outbound/merchant-http';
import type { Wakeups } from './webhook-wakeups';

/** How often the activity heartbeats (its heartbeat timeout is a few times this). */
const HEARTBEAT_MS = 2_000;
/**
 * With nothing to claim, the dispatcher looks again this often even without a notification (a lapsed lease, another
 * dispatcher's retry coming due).
 */
const POLL_MS = 1_000;
/** A run lasts at most this long; its workflow runs the next one. */
const RUN_MS = 5 * 60_000;
/**
 * After a wake-up with POSTs still in flight, the dispatcher lets others finish for this long
 * before it claims again: one claim fills several slots, instead of one claim per POST.
 */
const CLAIM_GATHER_MS = 5;
/** How often, at most, a webhook that keeps failing is checked for disabling. */
const DISABLE_CHECK_MS = 10_000;
/** A webhook and its organization's secrets as the rows of one claim send them (`claim`: that claim's number). */
type Target = { webhook: LiveWebhook; secrets: DeliverySecrets; claim: number };

/** One run of a dispatcher: its window in flight, what it read of each webhook, and what came of its attempts. */
class DispatchRun {
  readonly inFlight = new Map<number, Promise<void>>();
  readonly counts: DispatcherResult = { delivered: 0, failed: 0, gone: 0, attempts: 0 };
  readonly targets = new Map<number, Promise<Target | null>>();
  /**
   * Claims made so far: a webhook is read again for the rows of each new claim (an updated target, a rotated secret or
   * credentials count at once).
   */
  claims = 0;
  /** When each webhook that failed was last checked for disabling. */
  readonly checkedAt = new Map<number, number>();
  /** The soonest retry this run scheduled and has not reached yet: it looks again then, not at its next poll. */
  soonestRetry: number | null = null;
  failure: unknown = null;

  constructor(
    readonly deps: WebhookActivityDeps,
    readonly transport: TransportSettings,
    readonly schedule: RetrySchedule,
  ) {}

  /**
   * The webhook as the rows of the current claim send it, read once per claim, or null when it takes
   * deliveries no more (its pending rows are then cancelled).
   */
  target(webhookId: WebhookId): Promise<Target | null> {
    const claim = this.claims;
    const known = this.targets.get(webhookId);
    const reading = known ?? this.read(webhookId, claim);
    if (known === undefined) this.targets.set(webhookId, reading);
    return reading.then((target) =>
      target === null || target.claim === claim ? target : this.reread(webhookId, claim),
    );
  }

  private reread(webhookId: WebhookId, claim: number): Promise<Target | null> {
    const reading = this.read(webhookId, claim);
    this.targets.set(webhookId, reading);
    return reading;
  }

  private async read(webhookId: WebhookId, claim: number): Promise<Target | null> {
    const webhook = await readWebhook(this.deps.sql, webhookId);
    if (webhook === null || webhook.deletedAt !== null || webhook.disabledAt !== null) {
      this.targets.delete(webhookId);
      await cancelPending(this.deps.sql, webhookId);
      return null;
    }
    return { webhook, secrets: await deliverySecrets(this.deps.sql, webhook.organizationId), claim };
  }

  /**
   * Starts the attempts of claimed rows; a row of a webhook that ended meanwhile is given back (and cancelled with the
   * rest).
   */
  start(claimed: readonly ClaimedDelivery[]): void {
    for (const item of claimed)
      trackInFlight(this.inFlight, item.deliveryId, this.attempt(item), (error) => {
        this.failure ??= error;
      });
  }

  async attempt(item: ClaimedDelivery): Promise<void> {
    const target = await this.target(item.webhookId);
    if (target === null) {
      await releaseClaims(this.deps.sql, [item.deliveryId]);
      return;
    }
    // In the trace of the request or workflow that recorded the event: the POST's span and log line join it.
    const made = await inTraceOf(item.event.traceparent, () =>
      attemptClaimed(this.deps.sql, this.transport, this.schedule, target, item),
    );
    this.counts.attempts += 1;
    if (made.nextAttemptAt !== null)
      this.soonestRetry = Math.min(this.soonestRetry ?? Infinity, made.nextAttemptAt.getTime());
    await this.tally(item, made.outcome, made.final);
  }

  async tally(item: ClaimedDelivery, outcome: AttemptOutcome, final: boolean): Promise<void> {
    if (outcome === 'failed') {
      if (final) this.counts.failed += 1;
      await this.checkFailing(item.webhookId);
      return;
    }
    this.counts[outcome] += 1;
    if (outcome === 'gone') {
      // The attempt's own statement retired the webhook (services/webhooks/webhook-deliveries.ts, logAttempt): what it
      // still had pending is never sent.
      this.targets.delete(item.webhookId);
      await cancelPending(this.deps.sql, item.webhookId);
    }
  }

  /**
   * After a failed attempt, a target failing every attempt for the configured period has its webhook
   * disabled (services/webhooks/webhook-recovery.ts, with its pending deliveries cancelled): checked at once,
   * then at most every `DISABLE_CHECK_MS` for each webhook.
   */
  async checkFailing(webhookId: WebhookId): Promise<void> {
    const last = this.checkedAt.get(webhookId);
    if (last !== undefined && Date.now() - last < DISABLE_CHECK_MS) return;
    this.checkedAt.set(webhookId, Date.now());
    if (!(await disableIfFailing(this.deps, webhookId, this.deps.webhooks.disableAfterHours))) return;
    this.targets.delete(webhookId);
    log.info('webhook disabled: its target failed every attempt for the configured period', { webhookId });
  }
}

export async function dispatchDeliveries(
  deps: WebhookActivityDeps,
  transport: TransportSettings,
  wakeups: Wakeups,
  schedule: RetrySchedule,
  input: DispatcherInput,
): Promise<DispatcherResult> {
  const context = Context.current();
  const { sql, webhooks } = deps;
  const window = input.window ?? webhooks.dispatchWindow;
  const shares = {
    perWebhook: webhooks.concurrency,
    perReceiver: webhooks.receiverConcurrency,
    perOrganization: webhooks.organizationConcurrency,
  };
  const run = new DispatchRun(deps, transport, schedule);
  const notifications = wakeups.subscribeAll();
  const beat = every(HEARTBEAT_MS, () => context.heartbeat());
  const startedAt = Date.now();
  try {
    for (;;) {
      const stopping = run.failure !== null || context.cancellationSignal.aborted || Date.now() - startedAt > RUN_MS;
      await beat();
      let room = false;
      if (!stopping && run.inFlight.size < window) {
        const wanted = window - run.inFlight.size;
        notifications.take();
        const claimed = await claimDueAcrossWebhooks(sql, {
          limit: wanted,
          leaseMs: LEASE_MS,
          dispatchQueue: webhooks.dispatchQueue,
          shares,
        });
        if (claimed.length > 0) run.claims += 1;
        run.start(claimed);
        room = claimed.length < wanted;
      }
      if (stopping && run.inFlight.size === 0) break;
      // Wait for a slot to free; with room left and nothing more to claim, also for new rows, a retry coming due or the
      // next poll.
      if (run.soonestRetry !== null && run.soonestRetry <= Date.now()) run.soonestRetry = null;
      const waits: Promise<unknown>[] = [...run.inFlight.values()];
      if (room || stopping)
        waits.push(notifications.wait(Math.min(POLL_MS, (run.soonestRetry ?? Infinity) - Date.now())));
      await Promise.race(waits);
      if (!stopping && run.inFlight.size > 0) await new Promise((resolve) => setTimeout(resolve, CLAIM_GATHER_MS));
    }
    if (run.failure !== null) throw run.failure;
    return run.counts;
  } finally {
    notifications.close();
  }
}
