import type { DeliveryId } from '../../domain/ids';
import { defineQuery, patched, proxyActivities, setHandler, sleep, workflowInfo } from '@temporalio/workflow';
import type { LegacyActivities } from '../../activities/legacy';
import { retryDelayMs, totalAttempts } from '../../domain/webhook-schedule';
import type { WebhookDeliveryInput, WebhookDeliveryOutcome, WebhookDeliveryResult, WebhookDeliveryStatus } from '../contracts/webhook-delivery';
import { RETRY_POLICIES } from '../contracts/retry-policies';

const { openWebhookDelivery, finishWebhookDelivery } = proxyActivities<LegacyActivities>({
  startToCloseTimeout: '30 seconds',
  // Only PostgreSQL can fail here; keep trying with growing waits rather than lose the delivery.
  retry: RETRY_POLICIES.untilDone,
});

const { attemptWebhookDelivery, sendWebhookAttempt } = proxyActivities<LegacyActivities>({
  // The 5 s receiver timeout plus the database work around it.
  startToCloseTimeout: '20 seconds',
  // A receiver's failure is a result, not an error; this retries only our side (database, crash),
  // and the activity is idempotent per (delivery, attempt), so a retry never logs an attempt twice.
  retry: RETRY_POLICIES.untilDone,
});

export const webhookDeliveryStatusQuery = defineQuery<WebhookDeliveryStatus>('status');

/**
 * Deliveries started before one activity did a whole attempt (open the row, attempt, close the
 * row) replay the three-activity path (test/histories).
 */
const ONE_ACTIVITY_PER_ATTEMPT_PATCH = 'webhook-one-activity-per-attempt';

/** The wait before `attempt` (from the second on), shown by the status query while it runs. */
async function waitBeforeAttempt(input: WebhookDeliveryInput, status: WebhookDeliveryStatus, attempt: number): Promise<void> {
  // Math.random is the workflow's seeded one: a replay waits exactly as the first run did.
  const waitMs = retryDelayMs(input.schedule, attempt, Math.random());
  status.state = 'waiting';
  status.nextAttemptAt = new Date(Date.now() + waitMs).toISOString();
  await sleep(waitMs);
}

/** The delivery's log row: keyed by this workflow's id, so opening it again finds the same row. */
const deliveryRow = (input: WebhookDeliveryInput) => ({
  workflowId: workflowInfo().workflowId,
  deliveryId: input.deliveryId,
  organizationId: input.organizationId,
  webhookId: input.webhookId,
  eventId: input.eventId,
  redelivery: input.deliveryId !== null,
});

async function deliverWithOneActivityPerAttempt(input: WebhookDeliveryInput, status: WebhookDeliveryStatus): Promise<WebhookDeliveryResult> {
  const open = deliveryRow(input);
  const total = totalAttempts(input.schedule);
  let deliveryId: DeliveryId | null = null;
  let outcome: WebhookDeliveryOutcome = 'failed';
  for (let attempt = 1; attempt <= total; attempt += 1) {
    if (attempt > 1) await waitBeforeAttempt(input, status, attempt);
    status.state = 'sending';
    status.nextAttemptAt = null;
    const result: Awaited<ReturnType<LegacyActivities['sendWebhookAttempt']>> = await sendWebhookAttempt({ open, deliveryId, attempt, last: attempt === total });
    if (result.deliveryId === null) {
      status.state = 'cancelled';
      return { deliveryId: null, outcome: 'cancelled', attempts: 0 };
    }
    deliveryId = result.deliveryId;
    status.deliveryId = deliveryId;
    if (result.outcome !== 'cancelled') status.attempts = attempt;
    status.lastStatusCode = result.statusCode;
    if (result.outcome !== 'failed') {
      outcome = result.outcome;
      break;
    }
  }
  status.state = outcome;
  return { deliveryId, outcome, attempts: status.attempts };
}

/**
 * One delivery of one event to one webhook (`webhook-delivery-<event>-<webhook>`): up to 10
 * attempts, the waits between them on the configured schedule with jitter, timed by this
 * workflow, so a worker crash resumes at the attempt reached. Any 2xx ends it delivered; 410
 * ends it with the webhook deleted; a deleted webhook or event ends it cancelled.
 */
export async function webhookDelivery(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  const status: WebhookDeliveryStatus = { state: 'sending', deliveryId: input.deliveryId, attempts: 0, lastStatusCode: null, nextAttemptAt: null };
  setHandler(webhookDeliveryStatusQuery, () => status);
  if (patched(ONE_ACTIVITY_PER_ATTEMPT_PATCH)) return await deliverWithOneActivityPerAttempt(input, status);

  const deliveryId = await openWebhookDelivery(deliveryRow(input));
  if (deliveryId === null) {
    status.state = 'cancelled';
    return { deliveryId: null, outcome: 'cancelled', attempts: 0 };
  }
  status.deliveryId = deliveryId;

  let outcome: WebhookDeliveryOutcome = 'failed';
  for (let attempt = 1; attempt <= totalAttempts(input.schedule); attempt += 1) {
    if (attempt > 1) await waitBeforeAttempt(input, status, attempt);
    status.state = 'sending';
    status.nextAttemptAt = null;
    const result = await attemptWebhookDelivery({ deliveryId, attempt });
    if (result.outcome !== 'cancelled') status.attempts = attempt;
    status.lastStatusCode = result.statusCode;
    if (result.outcome !== 'failed') {
      outcome = result.outcome;
      break;
    }
  }
  await finishWebhookDelivery({ deliveryId, status: outcome });
  status.state = outcome;
  return { deliveryId, outcome, attempts: status.attempts };
}
