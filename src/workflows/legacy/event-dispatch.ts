import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ParentClosePolicy, WorkflowIdReusePolicy, defineQuery, patched, proxyActivities, setHandler, startChild,
} from '@temporalio/workflow';
import type { LegacyActivities } from '../../activities/legacy';
import { webhookDelivery } from './webhook-delivery';
import { type EventDispatchInput, type EventDispatchStatus } from '../contracts/legacy';
import { webhookDeliveryWorkflowId } from '../contracts/webhook-delivery';
import { searchAttributes } from '../contracts/search-attributes';
import { RETRY_POLICIES } from '../contracts/retry-policies';

const { markEventDispatched } = proxyActivities<LegacyActivities>({
  startToCloseTimeout: '30 seconds',
  // PostgreSQL may be down for a while; keep trying with growing waits rather than lose the event.
  retry: RETRY_POLICIES.untilDone,
});

const { planWebhookDeliveries } = proxyActivities<LegacyActivities>({
  startToCloseTimeout: '30 seconds',
  // As above: only PostgreSQL can fail here, and the event must still reach its webhooks.
  retry: RETRY_POLICIES.untilDone,
});

/** Dispatches recorded before webhook delivery existed replay without it (test/histories). */
const WEBHOOK_FAN_OUT_PATCH = 'webhook-fan-out';

export const eventDispatchStatusQuery = defineQuery<EventDispatchStatus>('status');

/**
 * One delivery workflow per live webhook of the organization for this event type. They outlive
 * this workflow (ABANDON): their retries take hours, the dispatch is done once they have started.
 */
async function startWebhookDeliveries(event: EventDispatchInput): Promise<void> {
  const plan = await planWebhookDeliveries(event.eventId);
  await Promise.all(
    plan.webhookIds.map(async (webhookId) => {
      try {
        await startChild(webhookDelivery, {
          workflowId: webhookDeliveryWorkflowId(event.eventId, webhookId),
          args: [{ eventId: event.eventId, webhookId, organizationId: event.organizationId, eventType: event.type, deliveryId: null, schedule: plan.schedule }],
          parentClosePolicy: ParentClosePolicy.ABANDON,
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          typedSearchAttributes: [
            { key: searchAttributes.organizationId, value: String(event.organizationId) },
            { key: searchAttributes.eventType, value: event.type },
            { key: searchAttributes.eventId, value: String(event.eventId) },
            { key: searchAttributes.webhookId, value: String(webhookId) },
          ],
          memo: { organizationId: event.organizationId, eventType: event.type, eventId: event.eventId, webhookId },
        });
      } catch (error) {
        // Already started for this event and webhook: one delivery each, never two.
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      }
    }),
  );
}

/**
 * One per event recorded before migration 008 (`event-<id>`): starts its webhook deliveries, then
 * marks it dispatched. Events recorded since carry their delivery rows from their own transaction
 * and need no workflow of their own (docs/architecture.md#events-and-the-outbox); the outbox sweep still starts this one for older
 * events never dispatched.
 */
export async function eventDispatch(input: EventDispatchInput): Promise<void> {
  let status: EventDispatchStatus = 'dispatching';
  setHandler(eventDispatchStatusQuery, () => status);
  if (patched(WEBHOOK_FAN_OUT_PATCH)) await startWebhookDeliveries(input);
  await markEventDispatched(input.eventId);
  status = 'dispatched';
}
