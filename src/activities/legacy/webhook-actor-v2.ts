/**
 * The activities of the per-webhook actor (`webhookV2`, src/workflows/legacy/webhook-actor-v2.ts):
 * its sender, and the cancelling of what was pending when its webhook went.
 *
 * The sender of one webhook's deliveries: the long-running activity its actor (`webhook-<id>`, an
 * earlier shape, handed over to the dispatch pool: activities/webhook-dispatcher.ts) keeps going
 * while deliveries are due. It drains the delivery rows in PostgreSQL (the queue,
 * services/webhook-queue.ts) through a sliding window: at most `concurrency` POSTs in flight, each
 * finishing on its own, a freed slot taken by the next due row at once, so one slow receiver answer
 * delays only itself. Rows are claimed a few at a time under a lease and every attempt is logged
 * with its next schedule in one statement, so the actor holds nothing but a wake-up: its memory,
 * history and continue-as-new input stay bounded whatever the backlog.
 * Each attempt as activities/webhook-attempt.ts makes it: at most once per attempt.
 */
import type { WebhookId } from '../../domain/ids';
import { Context } from '@temporalio/activity';
import type { AttemptOutcome } from '../../domain/webhooks';
import { totalAttempts } from '../../domain/webhook-schedule';
import { cancelPending, claimDue, holdWebhook, letGo, releaseClaims, type ClaimedDelivery } from '../../services/webhook-queue';
import { deliverySecrets, readWebhook, type DeliverySecrets, type LiveWebhook } from '../../services/webhooks';
import { disableIfFailing } from '../../services/webhook-recovery';
import type { WebhookEnd, SenderInput, SenderResult } from '../../workflows/contracts/webhook';
import type { WebhookSending } from '../webhook-sending';
import { LEASE_MS, attemptClaimed, every, trackInFlight, type WebhookActivityDeps } from '../webhook-attempt';
import type { TransportSettings } from '../../outbound/merchant-http';
import type { Wakeups } from '../webhook-wakeups';

/** The webhook is marked held this far ahead, renewed (with the activity's heartbeat) every `HOLD_EVERY_MS`. */
const HOLD_MS = 10_000;
const HOLD_EVERY_MS = 2_000;
/** With nothing due, the sender looks again this often even without a notification (a retry coming due, a lapsed lease). */
const POLL_MS = 1_000;
/** With nothing due for this long, the sender lets the webhook go and its actor sleeps until the next due time or a wake-up. */
const LINGER_MS = 3_000;
/** A sender runs at most this long, then returns so its actor can continue as new when its history asks. */
const RUN_MS = 5 * 60_000;
/** After failures, how often the webhook's failing streak is checked for disabling. */
const DISABLE_CHECK_MS = 10_000;

type Counts = { delivered: number; failed: number; gone: number };

/** What one sender run keeps: the window in flight, the rows claimed and not yet sent, and why it stops. */
class SenderRun {
  readonly inFlight = new Map<number, Promise<void>>();
  buffer: ClaimedDelivery[] = [];
  readonly counts: Counts = { delivered: 0, failed: 0, gone: 0 };
  end: WebhookEnd | null = null;
  failure: unknown = null;
  failedSinceCheck = false;
  /** The soonest retry this run scheduled and has not reached yet: the sender looks again then, not at its next poll. */
  soonestRetry: number | null = null;
  webhook: LiveWebhook | null = null;
  secrets: DeliverySecrets | null = null;

  constructor(readonly deps: WebhookActivityDeps, readonly transport: TransportSettings, readonly input: SenderInput) {}

  get total(): number {
    return totalAttempts(this.input.schedule);
  }

  /** Reads the webhook (a deletion or disabling stops the run) and claims due rows up to twice the window. */
  async refill(): Promise<boolean> {
    const { sql } = this.deps;
    this.webhook = await readWebhook(sql, this.input.webhookId);
    if (this.webhook === null || this.webhook.deletedAt !== null || this.webhook.disabledAt !== null) {
      this.end = this.webhook?.disabledAt ? 'disabled' : 'deleted';
      return false;
    }
    this.secrets = await deliverySecrets(sql, this.webhook.organizationId);
    const wanted = 2 * this.input.concurrency - this.inFlight.size - this.buffer.length;
    const claimed = await claimDue(sql, this.input.webhookId, wanted, LEASE_MS);
    this.buffer.push(...claimed);
    return claimed.length === wanted;
  }

  /** Sends claimed rows while the window has room. */
  fill(): void {
    while (this.end === null && this.failure === null && this.buffer.length > 0 && this.inFlight.size < this.input.concurrency) {
      const item = this.buffer.shift() as ClaimedDelivery;
      trackInFlight(this.inFlight, item.deliveryId, this.attempt(item), (error) => { this.failure ??= error; });
    }
  }

  /** One attempt of one row (activities/webhook-attempt.ts), tallied. */
  async attempt(item: ClaimedDelivery): Promise<void> {
    const made = await attemptClaimed(this.deps.sql, this.transport, this.input.schedule, { webhook: this.webhook as LiveWebhook, secrets: this.secrets as DeliverySecrets }, item);
    if (made.nextAttemptAt !== null) this.soonestRetry = Math.min(this.soonestRetry ?? Infinity, made.nextAttemptAt.getTime());
    this.tally(item, made.outcome);
  }

  tally(item: ClaimedDelivery, outcome: AttemptOutcome): void {
    if (outcome === 'failed') {
      this.failedSinceCheck = true;
      if (item.attempt >= this.total) this.counts.failed += 1;
      return;
    }
    this.counts[outcome] += 1;
    if (outcome === 'gone') this.end = 'gone';
  }

  /** A target failing every attempt for the configured period has its webhook disabled (services/webhook-recovery.ts). */
  async checkFailing(): Promise<void> {
    if (!this.failedSinceCheck) return;
    this.failedSinceCheck = false;
    if (await disableIfFailing(this.deps, this.input.webhookId, this.deps.webhooks.disableAfterHours)) this.end = 'disabled';
  }
}

/** The sender's wait for new rows: when it ends at the latest, and its end. */
type Wake = { deadline: number; done: Promise<void> };

/**
 * Drains the webhook's due deliveries until nothing has been due for a moment (`idle`, with when
 * the next is due), the webhook ends (`ended`), or the run is cancelled or has run its time (`paused`).
 */
async function sendDueDeliveries(deps: WebhookActivityDeps, transport: TransportSettings, wakeups: Wakeups, input: SenderInput): Promise<SenderResult> {
  const context = Context.current();
  const { sql } = deps;
  const run = new SenderRun(deps, transport, input);
  const notifications = wakeups.subscribe(input.webhookId);
  const hold = every(HOLD_EVERY_MS, async () => {
    await holdWebhook(sql, input.webhookId, HOLD_MS);
    context.heartbeat();
  });
  const checkFailing = every(DISABLE_CHECK_MS, () => run.checkFailing());
  const startedAt = Date.now();
  let drained = false;
  let idleSince = Date.now();
  let wake: Wake | null = null;
  try {
    for (;;) {
      const stopping = run.end !== null || run.failure !== null || context.cancellationSignal.aborted || Date.now() - startedAt > RUN_MS;
      await hold();
      if (!stopping && !drained && run.buffer.length <= input.concurrency / 2) drained = !(await run.refill());
      if (!stopping) run.fill();
      if (stopping && run.inFlight.size === 0) break;
      if (run.inFlight.size > 0 || run.buffer.length > 0) idleSince = Date.now();
      else if (drained && Date.now() - idleSince >= LINGER_MS) {
        const { dueNow, nextDueAt } = await letGo(sql, input.webhookId);
        if (!dueNow) return { state: 'idle', nextDueAt: nextDueAt?.toISOString() ?? null, ...run.counts };
        drained = false;
        continue;
      }
      // Wait for a slot to free, or, with nothing more due, for new rows (a notification), a retry coming due or the next poll.
      if (run.soonestRetry !== null && run.soonestRetry <= Date.now()) run.soonestRetry = null;
      if (drained) {
        const deadline = Math.min(Date.now() + POLL_MS, run.soonestRetry ?? Infinity);
        if (wake === null || deadline < wake.deadline) {
          const current: Wake = { deadline, done: notifications.wait(deadline - Date.now()).then(() => {
            drained = false;
            if (wake === current) wake = null;
          }) };
          wake = current;
        }
      }
      await Promise.race([...run.inFlight.values(), ...(wake ? [wake.done] : [])]);
      await checkFailing();
    }
    if (run.failure !== null) throw run.failure;
    if (run.end !== null) {
      // Its actor ends and cancels what is pending (cancelWebhookDeliveries); from now on a commit wakes the actor again.
      await letGo(sql, input.webhookId);
      return { state: 'ended', end: run.end, ...run.counts };
    }
    return { state: 'paused', ...run.counts };
  } finally {
    notifications.close();
    // Rows claimed and never sent are due again at once, for the next sender.
    await releaseClaims(sql, run.buffer.map((item) => item.deliveryId)).catch(() => {});
  }
}

export function createWebhookActorV2Activities(deps: WebhookActivityDeps, { transport, wakeups }: WebhookSending) {
  return {
    /** The actor's sender, on the senders' own task queue: drains its webhook's due deliveries (above). */
    async sendDueDeliveries(input: SenderInput): Promise<SenderResult> {
      return await sendDueDeliveries(deps, transport, wakeups, input);
    },

    /** The pending deliveries of a webhook that ended (gone, deleted or disabled): closed `cancelled`, nothing sent. How many. */
    async cancelWebhookDeliveries(webhookId: WebhookId): Promise<number> {
      return await cancelPending(deps.sql, webhookId);
    },
  };
}
