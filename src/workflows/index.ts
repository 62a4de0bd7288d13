/**
 * The workflows the worker runs (what it bundles): one version of each type. Each is started by the
 * launcher or a Schedule (registry.ts; the compiler holds that list to this one). A change to a
 * running workflow ships as a patch inside its type (docs/architecture.md#changing-a-workflow).
 */
export { outboxSweep } from './outbox-sweep';
export { collectionRequest } from './collection-request';
export { subscription } from './subscription';
export { webhookDispatcher } from './webhook-dispatcher';
export { eventRetention } from './event-retention';
export { incomingCollection } from './incoming-collection';
export { payment, reversal } from './payment';
export { paymentBatch } from './payment-batch';
