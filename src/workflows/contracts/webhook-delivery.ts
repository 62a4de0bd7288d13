/**
 * The webhook delivery workflow's contract (`webhook-delivery-<event>-<webhook>`): its ids, input, status and result.
 * Safe to import from workflow code and from clients alike: no I/O, no Node built-ins.
 */
import type { RetrySchedule } from '../../domain/webhook-schedule';
import type { DeliveryId, EventId, OrganizationId, WebhookId } from '../../domain/ids';

export const webhookDeliveryWorkflowId = (eventId: EventId, webhookId: WebhookId): string => `webhook-delivery-${eventId}-${webhookId}`;

/** A redelivery the merchant asked for: a fresh workflow, named after its delivery row. */
export const webhookRedeliveryWorkflowId = (eventId: EventId, webhookId: WebhookId, deliveryId: DeliveryId): string =>
  `${webhookDeliveryWorkflowId(eventId, webhookId)}-redelivery-${deliveryId}`;

export type WebhookDeliveryInput = {
  eventId: EventId;
  webhookId: WebhookId;
  organizationId: OrganizationId;
  eventType: string;
  /** Set for a redelivery (its row exists before the workflow); null for the first delivery. */
  deliveryId: DeliveryId | null;
  schedule: RetrySchedule;
};

export type WebhookDeliveryOutcome = 'delivered' | 'failed' | 'gone' | 'cancelled';

export type WebhookDeliveryStatus = {
  state: 'sending' | 'waiting' | WebhookDeliveryOutcome;
  deliveryId: DeliveryId | null;
  attempts: number;
  lastStatusCode: number | null;
  nextAttemptAt: string | null;
};

export type WebhookDeliveryResult = { deliveryId: DeliveryId | null; outcome: WebhookDeliveryOutcome; attempts: number };
