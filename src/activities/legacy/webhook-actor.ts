/**
 * The activities of the webhook actor's first shape (`webhook`, src/workflows/legacy/webhook-actor.ts),
 * which held its queue in workflow state and had a batch of due deliveries attempted at a time.
 */
import type { DeliveryId, WebhookId } from '../../domain/ids';
import { log } from '@temporalio/activity';
import { retryDelayMs } from '../../domain/webhook-schedule';
import { attemptOutcome } from '../../domain/webhooks';
import { disableIfFailing } from '../../services/webhook-recovery';
import { deliverySecrets, finishDelivery, logAttempt, takeDeliveries } from '../../services/webhooks';
import { recordWebhookAttempt } from '../../telemetry/metrics';
import type { WebhookEnd } from '../../workflows/contracts/webhook';
import { postDelivery } from '../../outbound/merchant-http';
import type { WebhookActivityDeps } from '../webhooks';
import type { WebhookSending } from '../webhook-sending';

/** What an attempt came to. `cancelled`: the hook or the event is gone, nothing was sent. */
type Outcome = 'delivered' | 'failed' | 'gone' | 'cancelled';

/** What the actor's batch found out: each delivery's outcome, and, when the webhook no longer takes deliveries, why. */
type BatchResult = { outcomes: Record<number, Outcome>; webhookLive: boolean; end?: WebhookEnd };

type BatchAttempt = { deliveryId: DeliveryId; attempt: number; last: boolean };

/**
 * The webhook actor's attempts, all at once: the deliveries taken and read in one statement, the
 * organization's secrets once, then each POST and its log (the delivery closed with its final
 * attempt, the webhook retired by a 410) in one statement each. Idempotent per delivery and
 * attempt: an attempt logged before (the worker died after sending) is answered from the log and
 * not sent again. Answers each delivery's outcome, and whether the webhook still lives.
 */
async function attemptBatch(deps: WebhookActivityDeps, { transport }: WebhookSending, webhookId: WebhookId, attempts: readonly BatchAttempt[]): Promise<BatchResult> {
  const { sql } = deps;
  const { webhook, taken } = await takeDeliveries(sql, webhookId, attempts);
  const outcomes: Record<number, Outcome> = Object.fromEntries(attempts.map((item) => [item.deliveryId, 'cancelled']));
  const last = new Map(attempts.map((item) => [item.deliveryId, item.last]));
  if (webhook === null || webhook.deletedAt !== null || webhook.disabledAt !== null) {
    // Deleted or disabled meanwhile: nothing is sent, and what the actor held is closed cancelled.
    for (const item of attempts) await finishDelivery(sql, item.deliveryId, 'cancelled');
    return { outcomes, webhookLive: false, end: webhook?.disabledAt ? 'disabled' : 'deleted' };
  }
  const secrets = await deliverySecrets(sql, webhook.organizationId);
  await Promise.all(taken.map(async ({ deliveryId, attempt, redelivery, event, logged }) => {
    let recorded = logged;
    if (recorded === null) {
      const sent = await postDelivery(webhook, event, secrets, transport);
      const outcome = attemptOutcome(sent.statusCode);
      const final = outcome !== 'failed' || last.get(deliveryId) === true;
      // The row's next attempt, for the current actor once this one hands the webhook over.
      const nextAttemptAt = final ? null : new Date(Date.now() + retryDelayMs(deps.webhooks, attempt + 1, Math.random()));
      recorded = await logAttempt(sql, { deliveryId, webhookId: webhook.id, attempt, ...sent, outcome, final, nextAttemptAt });
      recordWebhookAttempt({ outcome: recorded.outcome, attempt, eventCreatedAt: event.created, redelivery });
    }
    log.info('webhook attempt', { webhookId, deliveryId, attempt, outcome: recorded.outcome, statusCode: recorded.statusCode });
    outcomes[deliveryId] = recorded.outcome;
  }));
  // A delivery whose event is gone (past the retention) is closed cancelled, unsent.
  for (const item of attempts) if (!taken.some((row) => row.deliveryId === item.deliveryId)) await finishDelivery(sql, item.deliveryId, 'cancelled');
  if (Object.values(outcomes).includes('gone')) return { outcomes, webhookLive: false, end: 'gone' };
  // A target failing every attempt for the configured period has its webhook disabled (services/webhook-recovery.ts).
  if (Object.values(outcomes).includes('failed') && await disableIfFailing(deps, webhookId, deps.webhooks.disableAfterHours)) {
    return { outcomes, webhookLive: false, end: 'disabled' };
  }
  return { outcomes, webhookLive: true };
}

export function createWebhookActorV1Activities(deps: WebhookActivityDeps, sending: WebhookSending) {
  return {
    /** The attempts of a webhook actor of the first shape (`attemptBatch`). */
    async attemptDeliveries({ webhookId, attempts }: { webhookId: WebhookId; attempts: BatchAttempt[] }): Promise<BatchResult> {
      return await attemptBatch(deps, sending, webhookId, attempts);
    },

    /** Deliveries an actor of the first shape held when its webhook went: closed `cancelled`, nothing sent. */
    async cancelDeliveries(deliveryIds: DeliveryId[]): Promise<void> {
      for (const deliveryId of deliveryIds) await finishDelivery(deps.sql, deliveryId, 'cancelled');
    },
  };
}
