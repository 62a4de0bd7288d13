export { eventDispatch, eventDispatchStatusQuery } from './event-dispatch';
export { outboxSweep } from './outbox-sweep';
export { collectionRequest } from './collection-request';
export { subscription } from './subscription';
export { sandboxPayment } from './sandbox-payment';
export { webhookDelivery, webhookDeliveryStatusQuery } from './webhook-delivery';
export { eventRetention } from './event-retention';
export { incomingCollection } from './incoming-collection';
