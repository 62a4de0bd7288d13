/**
 * The webhook actor's first shape (`webhook`), kept for runs started before the delivery rows became
 * the queue (migration 021): it held its queue in workflow state and sent a batch at a time. A run
 * replays as it ran; at its next turn after this code is deployed it hands the webhook over to the
 * next actor (`webhookV2`, workflows/legacy/webhook-actor-v2.ts) by continuing as new, its queue
 * already in the delivery rows. What it did: The deliveries recorded with each event reach it by signal-with-start after their commit
 * (and from the outbox sweep when the committing process died first). It attempts whatever is due,
 * several at once in one activity, each delivery on its own schedule of 10 attempts with jitter;
 * every attempt is logged in PostgreSQL by that activity. A 410 from the target deletes the webhook
 * and ends the actor, as do the webhook's deletion and its disabling (services/webhook-recovery.ts);
 * continue-as-new keeps its history bounded.
 */
import type { DeliveryId } from '../../domain/ids';
import { condition, continueAsNew, defineQuery, makeContinueAsNewFunc, patched, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { LegacyActivities } from '../../activities/legacy';
import { retryDelayMs, totalAttempts } from '../../domain/webhook-schedule';
import { RETRY_POLICIES } from '../contracts/retry-policies';
import type { LegacyWebhookActorInput, LegacyWebhookQueue, PendingAttempt } from '../contracts/legacy';
import {
  deliveriesQueuedSignal, webhookDeletedSignal, webhookDisabledSignal, type QueuedDelivery, type WebhookActorResult, type WebhookEnd,
} from '../contracts/webhook';
import type { webhookV2 } from './webhook-actor-v2';

const webhookQueueQuery = defineQuery<LegacyWebhookQueue>('queue');
/** The hand-over to the current shape. */
const continueAsCurrentActor = makeContinueAsNewFunc<typeof webhookV2>({ workflowType: 'webhookV2' });

const { attemptDeliveries, cancelDeliveries } = proxyActivities<LegacyActivities>({
  // Several deliveries at once, each with the 5 s receiver timeout, plus the database work around them.
  startToCloseTimeout: '30 seconds',
  // A receiver's failure is a result, not an error: this retries only our side (database, crash),
  // and every attempt is idempotent per (delivery, attempt), so a retry never sends or logs one twice.
  retry: RETRY_POLICIES.untilDone,
});

/** How many due deliveries one activity attempts together. */
const BATCH = 25;
/** History events after which the actor continues as new (its queue carried over), when the input names no limit. */
const HISTORY_LIMIT = 5_000;

export async function webhook(input: LegacyWebhookActorInput): Promise<WebhookActorResult> {
  const queue = new Map<DeliveryId, PendingAttempt>(input.queue.map((item) => [item.deliveryId, item]));
  const sending = new Map<DeliveryId, QueuedDelivery>();
  const counts = { delivered: 0, failed: 0, gone: 0, cancelled: 0 };
  /** Set when the actor is to end: by a signal, or by what an attempt found. */
  let ended: WebhookEnd | null = null;
  setHandler(deliveriesQueuedSignal, (deliveries) => {
    // A repeat (the outbox sweep after a slow start) changes nothing: a delivery is queued once.
    for (const delivery of deliveries) {
      if (!queue.has(delivery.deliveryId) && !sending.has(delivery.deliveryId)) queue.set(delivery.deliveryId, { ...delivery, attempt: 1, dueAt: Date.now() });
    }
  });
  setHandler(webhookDeletedSignal, () => {
    ended ??= 'deleted';
  });
  setHandler(webhookDisabledSignal, () => {
    ended ??= 'disabled';
  });
  setHandler(webhookQueueQuery, (): LegacyWebhookQueue => ({
    webhookId: input.webhookId,
    sending: [...sending.values()],
    waiting: [...queue.values()].sort((a, b) => a.dueAt - b.dueAt)
      .map(({ deliveryId, eventId, attempt, dueAt }) => ({ deliveryId, eventId, attempt, dueAt: new Date(dueAt).toISOString() })),
    ...counts,
  }));

  const total = totalAttempts(input.schedule);
  const due = () => [...queue.values()].filter((item) => item.dueAt <= Date.now());
  const nextDueIn = () => Math.min(...[...queue.values()].map((item) => item.dueAt)) - Date.now();

  /** Attempts a batch of due deliveries; a failure with attempts left waits for its next one. Returns whether the webhook still lives. */
  async function attempt(batch: PendingAttempt[]): Promise<boolean> {
    for (const item of batch) {
      queue.delete(item.deliveryId);
      sending.set(item.deliveryId, item);
    }
    const { outcomes, webhookLive, end } = await attemptDeliveries({
      webhookId: input.webhookId,
      attempts: batch.map((item) => ({ deliveryId: item.deliveryId, attempt: item.attempt, last: item.attempt === total })),
    });
    for (const item of batch) {
      sending.delete(item.deliveryId);
      const outcome = outcomes[item.deliveryId] ?? 'cancelled';
      if (outcome === 'failed' && item.attempt < total) {
        // Math.random is the workflow's seeded one: a replay waits exactly as the first run did.
        queue.set(item.deliveryId, { ...item, attempt: item.attempt + 1, dueAt: Date.now() + retryDelayMs(input.schedule, item.attempt + 1, Math.random()) });
      } else {
        counts[outcome] += 1;
      }
    }
    // `end` is absent from the results of activities recorded before it existed: then a webhook that is not live was gone or deleted.
    if (!webhookLive) ended ??= end ?? (counts.gone > 0 ? 'gone' : 'deleted');
    return webhookLive;
  }

  for (;;) {
    // Deployed with the delivery rows as the queue: the current actor goes on from them.
    if (patched('webhook-rows-queue')) {
      await continueAsCurrentActor({ webhookId: input.webhookId, organizationId: input.organizationId, schedule: input.schedule, historyLimit: input.historyLimit });
    }
    // Idle, the actor waits for a signal with no timer at all; otherwise until the soonest delivery is due.
    if (queue.size === 0) await condition(() => ended !== null || queue.size > 0);
    else await condition(() => ended !== null || due().length > 0, Math.max(1, nextDueIn()));
    if (ended !== null) break;
    const batch = due().slice(0, BATCH);
    if (batch.length > 0 && !(await attempt(batch))) break;
    if (workflowInfo().historyLength > (input.historyLimit ?? HISTORY_LIMIT) || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof webhook>({ ...input, queue: [...queue.values()] });
    }
  }
  // Gone, deleted or disabled: what is still queued will never be sent.
  const left = [...queue.keys()];
  if (left.length > 0) await cancelDeliveries(left);
  counts.cancelled += left.length;
  return { ended: ended ?? 'deleted', ...counts };
}
