/**
 * The webhook delivery workflow's contract (`webhook-delivery-<event>-<webhook>`): its ids, input, status and result.
 * Safe to import from workflow code and from clients alike: no I/O, no Node built-ins.
 */
import type { RetrySchedule } from '../../domain/webhook-schedule';
import type { OrganizationId } from '../../domain/ids';

export const webhookDeliveryWorkflowId = (eventId: number, webhookId: number): string => `webhook-delivery-${eventId}-${webhookId}`;

/** A redelivery the merchant asked for: a fresh workflow, named after its delivery row. */
export const webhookRedeliveryWorkflowId = (eventId: number, webhookId: number, deliveryId: number): string =>
  `${webhookDeliveryWorkflowId(eventId, webhookId)}-redelivery-${deliveryId}`;

export type WebhookDeliveryInput = {
  eventId: number;
  webhookId: number;
  organizationId: OrganizationId;
  eventType: string;
  /** Set for a redelivery (its row exists before the workflow); null for the first delivery. */
  deliveryId: number | null;
  schedule: RetrySchedule;
};

export type WebhookDeliveryOutcome = 'delivered' | 'failed' | 'gone' | 'cancelled';

export type WebhookDeliveryStatus = {
  state: 'sending' | 'waiting' | WebhookDeliveryOutcome;
  deliveryId: number | null;
  attempts: number;
  lastStatusCode: number | null;
  nextAttemptAt: string | null;
};

export type WebhookDeliveryResult = { deliveryId: number | null; outcome: WebhookDeliveryOutcome; attempts: number };
