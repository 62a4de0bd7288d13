export { eventDispatch, eventDispatchStatusQuery } from './event-dispatch';
export { outboxSweep } from './outbox-sweep';
export { collectionRequest } from './collection-request';
export { subscription } from './subscription';
export { sandboxPayment } from './sandbox-payment';
