import { TypedSearchAttributes, WorkflowIdReusePolicy } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import type { webhookDelivery } from '../workflows/webhook-delivery';
import { searchAttributes, webhookRedeliveryWorkflowId, type WebhookDeliveryInput } from '../workflows/shared';

/**
 * Starts a redelivery the merchant asked for: a fresh delivery workflow whose id is made from its
 * delivery row's id, with the search attributes of a first delivery (find it by event and webhook).
 */
export async function startWebhookRedelivery(client: Client, taskQueue: string, input: WebhookDeliveryInput & { deliveryId: number }): Promise<string> {
  const workflowId = webhookRedeliveryWorkflowId(input.eventId, input.webhookId, input.deliveryId);
  await client.workflow.start<typeof webhookDelivery>('webhookDelivery', {
    workflowId,
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    taskQueue,
    args: [input],
    typedSearchAttributes: new TypedSearchAttributes([
      { key: searchAttributes.organizationId, value: String(input.organizationId) },
      { key: searchAttributes.eventType, value: input.eventType },
      { key: searchAttributes.eventId, value: String(input.eventId) },
      { key: searchAttributes.webhookId, value: String(input.webhookId) },
    ]),
    memo: { organizationId: input.organizationId, eventType: input.eventType, eventId: input.eventId, webhookId: input.webhookId, redelivery: true },
  });
  return workflowId;
}
