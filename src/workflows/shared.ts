/**
 * Names shared by workflows and the code that starts them. Safe to import from workflow code and
 * from clients alike: no I/O, no Node built-ins.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { RetrySchedule } from '../domain/webhook-schedule';

/** Custom search attributes, registered with the server at start (scripts/infra.mjs, compose). */
export const searchAttributes = {
  organizationId: defineSearchAttributeKey('OrganizationId', SearchAttributeType.KEYWORD),
  eventType: defineSearchAttributeKey('EventType', SearchAttributeType.KEYWORD),
  eventId: defineSearchAttributeKey('EventId', SearchAttributeType.KEYWORD),
  webhookId: defineSearchAttributeKey('WebhookId', SearchAttributeType.KEYWORD),
} as const;

export const eventDispatchWorkflowId = (eventId: number): string => `event-${eventId}`;
export const outboxSweepScheduleId = (taskQueue: string): string => `outbox-sweep-${taskQueue}`;

export type EventDispatchInput = { eventId: number; organizationId: number; type: string };
export type EventDispatchStatus = 'dispatching' | 'dispatched';
export type OutboxSweepInput = { graceSeconds: number; batchSize: number };

export const webhookDeliveryWorkflowId = (eventId: number, webhookId: number): string => `webhook-delivery-${eventId}-${webhookId}`;
/** A redelivery the merchant asked for: a fresh workflow, named after its delivery row. */
export const webhookRedeliveryWorkflowId = (eventId: number, webhookId: number, deliveryId: number): string =>
  `${webhookDeliveryWorkflowId(eventId, webhookId)}-redelivery-${deliveryId}`;
export const eventRetentionScheduleId = (taskQueue: string): string => `event-retention-${taskQueue}`;

export type WebhookDeliveryInput = {
  eventId: number;
  webhookId: number;
  organizationId: number;
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
export type EventRetentionInput = { retentionDays: number; batchSize: number };
