/**
 * What several workflows share: the permanent database failure type, and the operators' hint signal.
 * Safe to import from workflow code and from clients alike: no I/O, no Node built-ins.
 */
import { defineSignal } from '@temporalio/workflow';

/**
 * The failure type a workflow sees when an activity hit a database error that no retry can fix
 * (activities/failures.ts).
 */
export const PERMANENT_DATABASE_ERROR = 'PermanentDatabaseError';

/**
 * An operator's callback about an operation of this workflow (a prompt, a payout, a reported
 * payment): a hint that wakes it to ask the operator's status query, never believed alone.
 * `reference` is our reference of the operation (a prompt's reference, a payout's).
 */
export type NetworkHint = { reference: string };

export const networkHintSignal = defineSignal<[NetworkHint]>('networkHint');
