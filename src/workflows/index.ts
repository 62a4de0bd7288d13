export { eventDispatch, eventDispatchStatusQuery } from './event-dispatch';
export { outboxSweep } from './outbox-sweep';
export { webhookDelivery, webhookDeliveryStatusQuery } from './webhook-delivery';
export { eventRetention } from './event-retention';
