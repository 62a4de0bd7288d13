import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { TypedSearchAttributes, WorkflowIdReusePolicy } from '@temporalio/common';
import type { eventDispatch } from '../workflows/event-dispatch';
import { eventDispatchWorkflowId, searchAttributes, type EventDispatchInput } from '../workflows/shared';

/**
 * Starts the dispatch workflow of a recorded event. The id is derived from the event's, and a
 * second start of the same id is refused by Temporal, so racing starters (the API and the outbox
 * sweep) still give one workflow per event. Returns false when it already existed.
 */
export async function startEventDispatch(client: Client, taskQueue: string, event: EventDispatchInput): Promise<boolean> {
  try {
    await client.workflow.start<typeof eventDispatch>('eventDispatch', {
      workflowId: eventDispatchWorkflowId(event.eventId),
      // Never a second run for one event, even after the first has closed.
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      taskQueue,
      args: [event],
      typedSearchAttributes: new TypedSearchAttributes([
        { key: searchAttributes.organizationId, value: String(event.organizationId) },
        { key: searchAttributes.eventType, value: event.type },
        { key: searchAttributes.eventId, value: String(event.eventId) },
      ]),
      memo: { organizationId: event.organizationId, eventType: event.type },
    });
    return true;
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw error;
  }
}

export type EventDispatcher = (events: readonly { id: number; organizationId: number; type: string }[]) => Promise<void>;

/**
 * Hands committed events to Temporal. A failure here loses nothing: the row is committed and the
 * outbox sweep starts the workflow later, so the caller's request still succeeds.
 */
export function createEventDispatcher(client: Client, taskQueue: string, onError: (error: unknown, eventId: number) => void): EventDispatcher {
  return async (events) => {
    await Promise.all(
      events.map(async (event) => {
        try {
          await startEventDispatch(client, taskQueue, { eventId: event.id, organizationId: event.organizationId, type: event.type });
        } catch (error) {
          onError(error, event.id);
        }
      }),
    );
  };
}
