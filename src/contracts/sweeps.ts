/**
 * The sweeps' contract: the outbox sweep and event retention Schedules, and their inputs.
 * Safe to import from workflow code and from clients alike: no I/O, no Node built-ins.
 */

export const outboxSweepScheduleId = (taskQueue: string): string => `outbox-sweep-${taskQueue}`;

export type OutboxSweepInput = { graceSeconds: number; batchSize: number };

export const eventRetentionScheduleId = (taskQueue: string): string => `event-retention-${taskQueue}`;

/**
 * `auditRetentionDays`: the audit trail's retention (at least `retentionDays`); the events' activity
 * deletes older audit entries too. Absent in the input of Schedules made before the audit trail.
 */
export type EventRetentionInput = { retentionDays: number; batchSize: number; auditRetentionDays?: number };
