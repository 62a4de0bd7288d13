import { defineQuery, proxyActivities, setHandler } from '@temporalio/workflow';
import type { createEventActivities } from '../activities/events';
import type { EventDispatchInput, EventDispatchStatus } from './shared';

const { markEventDispatched } = proxyActivities<ReturnType<typeof createEventActivities>>({
  startToCloseTimeout: '30 seconds',
  // PostgreSQL may be down for a while; keep trying with growing waits rather than lose the event.
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export const eventDispatchStatusQuery = defineQuery<EventDispatchStatus>('status');

/** One per recorded event (`event-<id>`): hands the event on, then marks it dispatched. */
export async function eventDispatch(input: EventDispatchInput): Promise<void> {
  let status: EventDispatchStatus = 'dispatching';
  setHandler(eventDispatchStatusQuery, () => status);
  await markEventDispatched(input.eventId);
  status = 'dispatched';
}
