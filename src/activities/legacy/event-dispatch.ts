/**
 * The activities of `eventDispatch` (src/workflows/legacy/event-dispatch.ts), the workflow each
 * event recorded before migration 008 had: its webhooks and their schedule, and the event marked
 * dispatched.
 */
import type { EventId, WebhookId } from '../../domain/ids';
import type { Sql } from '../../db';
import type { RetrySchedule } from '../../domain/webhook-schedule';
import { markEventDispatched } from '../../services/events';
import { webhooksListeningTo } from '../../services/webhooks';

type WebhookDeliveryPlan = { webhookIds: WebhookId[]; schedule: RetrySchedule };

export function createEventDispatchActivities({ sql, schedule }: { sql: Sql; schedule: RetrySchedule }) {
  return {
    /** Idempotent: only the first call sets the time. */
    async markEventDispatched(eventId: EventId): Promise<void> {
      await markEventDispatched(sql, eventId);
    },

    /**
     * The organization's live webhooks for the event's type that existed when it happened (a hook
     * fires for future events only), and the retry schedule their deliveries follow.
     */
    async planWebhookDeliveries(eventId: EventId): Promise<WebhookDeliveryPlan> {
      return { webhookIds: await webhooksListeningTo(sql, eventId), schedule };
    },
  };
}
