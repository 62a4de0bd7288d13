/**
 * One attempt of one claimed delivery row, as the pool's dispatchers make it
 * (activities/webhook-dispatcher.ts): POSTed, then logged with the row's next schedule in one statement.
 *
 * At most once per attempt: the row was leased before its POST and its attempt is logged after. A
 * sender that died between the two (its worker was killed) left a lease that lapsed; the next
 * claim of the row says so (`lapsed`), and that attempt is logged as failed with an unknown
 * outcome, without sending it again, and the next one scheduled.
 */
import type { DeliveryId } from '../domain/ids';
import { log } from '@temporalio/activity';
import type { Queryable } from '../db';
import { WEBHOOK_TIMEOUT_MS, attemptOutcome, type AttemptOutcome } from '../domain/webhooks';
import { retryDelayMs, totalAttempts, type RetrySchedule } from '../domain/webhook-schedule';
import type { Sql } from '../db';
import type { Launcher } from '../services/platform/ports';
import type { ClaimedDelivery } from '../services/webhooks/webhook-queue';
import { finishDelivery, logAttempt } from '../services/webhooks/webhook-deliveries';
import type { DeliverySecrets } from '../services/webhooks/webhook-secrets';
import type { LiveWebhook } from '../services/webhooks/webhooks';
import { recordWebhookAttempt } from '../telemetry/metrics';
import { postDelivery, type TransportSettings } from '../outbound/merchant-http';

/** What the webhook activities (the dispatcher, the earlier actor's sender) are built with. */
export type WebhookActivityDeps = {
  sql: Sql;
  launcher: Launcher;
  sandbox: boolean;
  webhooks: RetrySchedule & {
    caFile: string | undefined;
    disableAfterHours: number;
    concurrency: number;
    dispatchWindow: number;
    dispatchQueue: string | null;
    receiverConcurrency: number;
    organizationConcurrency: number;
  };
};

/** A claimed row stays its sender's this long: more than a POST's timeout and its logging. */
export const LEASE_MS = 3 * WEBHOOK_TIMEOUT_MS;

const UNKNOWN_OUTCOME = [
  'The sender stopped during this attempt (its worker ended), so whether the receiver got it is unknown;',
  'it was not sent again.',
].join(' ');

/** Runs `task` at most once per `everyMs` (a sender's heartbeat, its checks). */
export const every = (everyMs: number, task: () => Promise<void> | void) => {
  let last = 0;
  return async () => {
    if (Date.now() - last < everyMs) return;
    last = Date.now();
    await task();
  };
};

/**
 * Keeps `attempt` among the POSTs in flight until it settles; its error, the first of a run, is
 * kept for the run to end with.
 */
export function trackInFlight(
  inFlight: Map<number, Promise<void>>,
  deliveryId: DeliveryId,
  attempt: Promise<void>,
  onError: (error: unknown) => void,
): void {
  inFlight.set(
    deliveryId,
    attempt.catch(onError).finally(() => inFlight.delete(deliveryId)),
  );
}

/** What came of an attempt: its outcome as logged, whether the delivery is final, and when the next attempt is due. */
type AttemptMade = { outcome: AttemptOutcome; final: boolean; nextAttemptAt: Date | null };

export async function attemptClaimed(
  sql: Queryable,
  transport: TransportSettings,
  schedule: RetrySchedule,
  target: { webhook: LiveWebhook; secrets: DeliverySecrets },
  item: ClaimedDelivery,
): Promise<AttemptMade> {
  const total = totalAttempts(schedule);
  const { webhook, secrets } = target;
  if (item.attempt > total) {
    // Its attempts were all made (the schedule was shortened since): it failed.
    await finishDelivery(sql, item.deliveryId, 'failed');
    return { outcome: 'failed', final: true, nextAttemptAt: null };
  }
  const final = (outcome: AttemptOutcome) => outcome !== 'failed' || item.attempt >= total;
  const nextAttemptAt = (outcome: AttemptOutcome) =>
    final(outcome) ? null : new Date(Date.now() + retryDelayMs(schedule, item.attempt + 1, Math.random()));
  if (item.lapsed) {
    const next = nextAttemptAt('failed');
    await logAttempt(sql, {
      deliveryId: item.deliveryId,
      webhookId: webhook.id,
      attempt: item.attempt,
      startedAt: new Date(),
      durationMs: 0,
      outcome: 'failed',
      statusCode: null,
      error: UNKNOWN_OUTCOME,
      responseExcerpt: null,
      final: final('failed'),
      nextAttemptAt: next,
    });
    return { outcome: 'failed', final: final('failed'), nextAttemptAt: next };
  }
  const sent = await postDelivery(webhook, item.event, secrets, transport);
  const outcome = attemptOutcome(sent.statusCode);
  const next = nextAttemptAt(outcome);
  // No status at all (a timeout, a refused or broken connection) is the receiver's fault: enough of them in a row and
  // it is probed.
  const receiver = sent.statusCode === null ? 'fault' : 'answered';
  const recorded = await logAttempt(sql, {
    deliveryId: item.deliveryId,
    webhookId: webhook.id,
    attempt: item.attempt,
    ...sent,
    outcome,
    final: final(outcome),
    nextAttemptAt: next,
    receiver,
  });
  recordWebhookAttempt({
    outcome: recorded.outcome,
    attempt: item.attempt,
    eventCreatedAt: item.event.created,
    redelivery: item.redelivery,
  });
  log.info('webhook attempt', {
    webhookId: webhook.id,
    deliveryId: item.deliveryId,
    attempt: item.attempt,
    outcome: recorded.outcome,
    statusCode: recorded.statusCode,
  });
  return {
    outcome: recorded.outcome,
    final: final(recorded.outcome),
    nextAttemptAt: recorded.outcome === 'failed' ? next : null,
  };
}
