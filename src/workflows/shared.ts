/**
 * Names shared by workflows and the code that starts them. Safe to import from workflow code and
 * from clients alike: no I/O, no Node built-ins.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Custom search attributes, registered with the server at start (scripts/infra.mjs, compose). */
export const searchAttributes = {
  organizationId: defineSearchAttributeKey('OrganizationId', SearchAttributeType.KEYWORD),
  eventType: defineSearchAttributeKey('EventType', SearchAttributeType.KEYWORD),
} as const;

export const eventDispatchWorkflowId = (eventId: number): string => `event-${eventId}`;
export const outboxSweepScheduleId = (taskQueue: string): string => `outbox-sweep-${taskQueue}`;

export type EventDispatchInput = { eventId: number; organizationId: number; type: string };
export type EventDispatchStatus = 'dispatching' | 'dispatched';
export type OutboxSweepInput = { graceSeconds: number; batchSize: number };
