/**
 * Contracts of the earlier workflow types kept only for executions in flight (workflows/legacy; their
 * retirement rules in workflows/registry.ts). Safe to import from workflow code and from clients
 * alike: no I/O, no Node built-ins.
 */
import type { RetrySchedule } from '../../domain/webhook-schedule';
import type { DeliveryId, EventId, OrganizationId, WebhookId } from '../../domain/ids';

export type EventDispatchInput = { eventId: EventId; organizationId: OrganizationId; type: string };

export type EventDispatchStatus = 'dispatching' | 'dispatched';

/** A delivery in the queue of a webhook actor of the first shape (`webhook`): the attempt it makes next, and when. */
export type PendingAttempt = { deliveryId: DeliveryId; eventId: EventId; attempt: number; dueAt: number };

/** The input of a webhook actor of the first shape, which carried its queue over a continue-as-new. */
export type LegacyWebhookActorInput = {
  webhookId: WebhookId;
  organizationId: OrganizationId;
  schedule: RetrySchedule;
  historyLimit?: number;
  queue: PendingAttempt[];
};

/** The queue query of a webhook actor of the first shape. */
export type LegacyWebhookQueue = {
  webhookId: WebhookId;
  sending: { deliveryId: DeliveryId; eventId: EventId }[];
  waiting: { deliveryId: DeliveryId; eventId: EventId; attempt: number; dueAt: string }[];
  delivered: number;
  failed: number;
  gone: number;
  cancelled: number;
};
