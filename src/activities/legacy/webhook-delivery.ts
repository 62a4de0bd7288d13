/**
 * The activities of `webhookDelivery` (src/workflows/legacy/webhook-delivery.ts), the workflow of one
 * delivery of one event to one webhook: its log row opened and closed, and each attempt, first as
 * steps of their own, then as one activity per attempt.
 */
import type { DeliveryId } from '../../domain/ids';
import { log } from '@temporalio/activity';
import type { Sql } from '../../db';
import { attemptOutcome, type DeliveryStatus } from '../../domain/webhooks';
import { deliveryContext, deliverySecrets, findAttempt, finishDelivery, openDelivery, recordAttempt, type OpenDelivery } from '../../services/webhooks';
import { recordWebhookAttempt } from '../../telemetry/metrics';
import { postDelivery, type TransportSettings } from '../../outbound/merchant-http';
import type { WebhookSending } from '../webhook-sending';

/** What an attempt came to, as the workflow needs it. `cancelled`: the hook or the event is gone, nothing was sent. */
type AttemptResult = { outcome: 'delivered' | 'failed' | 'gone' | 'cancelled'; statusCode: number | null; detail: string | null };

/**
 * Attempt `attempt` of a delivery: signs and POSTs `{"hook", "data"}` and logs the result.
 * Idempotent per (delivery, attempt): when this attempt is already in the log (the worker died
 * after sending, before Temporal heard back), the logged result is returned and nothing is sent.
 */
export async function attemptDelivery(sql: Sql, transport: TransportSettings, deliveryId: DeliveryId, attempt: number): Promise<AttemptResult> {
  const logged = await findAttempt(sql, deliveryId, attempt);
  if (logged) return { outcome: logged.outcome, statusCode: logged.statusCode, detail: logged.error };
  const context = await deliveryContext(sql, deliveryId);
  if (!context) return { outcome: 'cancelled', statusCode: null, detail: 'the event no longer exists' };
  if (context.webhook.deletedAt !== null) return { outcome: 'cancelled', statusCode: null, detail: 'the webhook was deleted' };
  if (context.webhook.disabledAt !== null) return { outcome: 'cancelled', statusCode: null, detail: 'the webhook is disabled' };

  const { webhook, event } = context;
  const sent = await postDelivery(webhook, event, await deliverySecrets(sql, webhook.organizationId), transport);
  const recorded = await recordAttempt(sql, { deliveryId, webhookId: webhook.id, attempt, ...sent, outcome: attemptOutcome(sent.statusCode) });
  recordWebhookAttempt({ outcome: recorded.outcome, attempt, eventCreatedAt: event.created, redelivery: context.delivery.redelivery });
  return { outcome: recorded.outcome, statusCode: recorded.statusCode, detail: recorded.error };
}

export function createWebhookDeliveryActivities({ sql }: { sql: Sql }, { transport }: WebhookSending) {
  return {
    /** Idempotent: the row is keyed by the workflow id. */
    async openWebhookDelivery(input: OpenDelivery): Promise<DeliveryId | null> {
      return await openDelivery(sql, input);
    },

    /** Attempt `attempt` of a delivery (see `attemptDelivery`), logged. */
    async attemptWebhookDelivery({ deliveryId, attempt }: { deliveryId: DeliveryId; attempt: number }): Promise<AttemptResult> {
      const result = await attemptDelivery(sql, transport, deliveryId, attempt);
      log.info('webhook attempt', { deliveryId, attempt, ...result });
      return result;
    },

    async finishWebhookDelivery({ deliveryId, status }: { deliveryId: DeliveryId; status: Exclude<DeliveryStatus, 'pending'> }): Promise<void> {
      await finishDelivery(sql, deliveryId, status);
    },

    /**
     * One attempt as one activity: opens the delivery's log row on the first (idempotent: keyed by
     * the workflow id), makes and logs the attempt, and closes the row when the outcome is final
     * (anything but a failure with attempts left). A delivery that succeeds at once costs one
     * activity instead of three; every step is idempotent, so a retry redoes none of them twice.
     */
    async sendWebhookAttempt(input: { open: OpenDelivery; deliveryId: DeliveryId | null; attempt: number; last: boolean }): Promise<AttemptResult & { deliveryId: DeliveryId | null }> {
      const deliveryId = input.deliveryId ?? (await openDelivery(sql, input.open));
      if (deliveryId === null) return { deliveryId: null, outcome: 'cancelled', statusCode: null, detail: 'the event or the webhook no longer exists' };
      const result = await attemptDelivery(sql, transport, deliveryId, input.attempt);
      log.info('webhook attempt', { deliveryId, attempt: input.attempt, ...result });
      if (result.outcome !== 'failed' || input.last) await finishDelivery(sql, deliveryId, result.outcome);
      return { ...result, deliveryId };
    },
  };
}
