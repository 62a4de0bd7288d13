/**
 * What several workflows share: the lean-core patch, the permanent database failure type, and the operators' hint signal.
 * Safe to import from workflow code and from clients alike: no I/O, no Node built-ins.
 */
import { defineSignal } from '@temporalio/workflow';

/**
 * The lean durable core (docs/architecture.md#the-actor-core): local activities for PostgreSQL steps, no
 * workflow per event. Executions started before it have no marker for this patch and replay their
 * first shape (workflows/legacy, test/histories).
 */
export const LEAN_CORE_PATCH = 'lean-core';

/** The failure type a workflow sees when an activity hit a database error that no retry can fix (activities/failures.ts). */
export const PERMANENT_DATABASE_ERROR = 'PermanentDatabaseError';

/**
 * An operator's callback about an operation of this workflow (a prompt, a payout, a reported
 * payment): a hint that wakes it to ask the operator's status query, never believed alone.
 * `reference` is our reference of the operation (a prompt's reference, a payout's).
 */
export type NetworkHint = { reference: string };

export const networkHintSignal = defineSignal<[NetworkHint]>('networkHint');
