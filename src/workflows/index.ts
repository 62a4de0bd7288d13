/**
 * The workflows the worker runs (what it bundles): the current types, and the earlier ones kept for
 * executions in flight (legacy/). Each export is either started by the launcher or a Schedule, or
 * an earlier type with its retirement rule (registry.ts; the compiler holds the two lists to this one).
 */
export * from './legacy';
export { outboxSweepV3 } from './outbox-sweep';
export { collectionRequestV3 } from './collection-request';
export { subscription } from './subscription';
export { webhookDispatcher } from './webhook-dispatcher';
export { eventRetention } from './event-retention';
export { incomingCollectionV3 } from './incoming-collection';
export { payment, reversal } from './payment';
export { paymentBatch } from './payment-batch';
