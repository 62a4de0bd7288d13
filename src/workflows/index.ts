export { eventDispatch, eventDispatchStatusQuery } from './legacy/event-dispatch';
export { sandboxPayment } from './legacy/sandbox-payment';
export { outboxSweep } from './outbox-sweep';
export { collectionRequest } from './collection-request';
export { subscription } from './subscription';
export { webhookDelivery, webhookDeliveryStatusQuery } from './webhook-delivery';
export { eventRetention } from './event-retention';
export { incomingCollection } from './incoming-collection';
export { payment, reversal } from './payment';
