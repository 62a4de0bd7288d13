/**
 * The earlier workflow types, kept only for executions in flight: each with its retirement rule in
 * `LEGACY_WORKFLOWS` (../registry.ts), its activities in src/activities/legacy/ (one file per type,
 * named as its workflow's file), its histories in test/histories. They import no current workflow
 * file, only contracts.
 */
export { eventDispatch, eventDispatchStatusQuery } from './event-dispatch';
export { outboxSweepV2 } from './outbox-sweep-v2';
export { collectionRequest } from './collection-request-lean';
export { webhookDelivery, webhookDeliveryStatusQuery } from './webhook-delivery';
export { webhook } from './webhook-actor';
export { webhookV2 } from './webhook-actor-v2';
export { incomingCollection } from './incoming-collection-lean';
