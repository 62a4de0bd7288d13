export { eventDispatch, eventDispatchStatusQuery } from './event-dispatch';
export { outboxSweep } from './outbox-sweep';
