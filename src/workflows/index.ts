/**
 * The workflows the worker runs (what it bundles): the current types, and the earlier ones kept for
 * executions in flight (legacy/).
 */
export { eventDispatch, eventDispatchStatusQuery } from './legacy/event-dispatch';
export { sandboxPayment } from './legacy/sandbox-payment';
export { outboxSweep } from './legacy/outbox-sweep';
export { outboxSweepV2 } from './outbox-sweep';
export { collectionRequest } from './legacy/collection-request-lean';
export { collectionRequestV3 } from './collection-request';
export { subscription } from './subscription';
export { webhookDelivery, webhookDeliveryStatusQuery } from './legacy/webhook-delivery';
export { webhook } from './legacy/webhook-actor';
export { webhookV2 } from './webhook';
export { eventRetention } from './event-retention';
export { incomingCollection } from './legacy/incoming-collection-lean';
export { incomingCollectionV3 } from './incoming-collection';
export { payment, reversal } from './payment';
export { paymentBatch } from './payment-batch';
