import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { TypedSearchAttributes, WorkflowIdReusePolicy } from '@temporalio/common';
import type { IncomingPayment } from '../services/collections';
import type { incomingCollection } from '../workflows/incoming-collection';
import { incomingCollectionWorkflowId, searchAttributes } from '../workflows/shared';

/**
 * The network entry point: every reported payment becomes one `collection-<network>-<remote id>`
 * workflow. The HTTP callback route and the sandbox network both come through here; a repeated
 * report of the same transaction starts nothing new.
 */
export async function reportIncomingPayment(
  client: Client,
  taskQueue: string,
  payment: IncomingPayment,
  verificationTimeoutSeconds: number,
): Promise<{ workflowId: string; duplicate: boolean }> {
  const workflowId = incomingCollectionWorkflowId(payment.network, payment.remoteTransactionId);
  try {
    await client.workflow.start<typeof incomingCollection>('incomingCollection', {
      workflowId,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      taskQueue,
      args: [{ payment, verificationTimeoutSeconds }],
      typedSearchAttributes: new TypedSearchAttributes([
        { key: searchAttributes.phoneNumber, value: payment.phoneNumber },
        { key: searchAttributes.currency, value: payment.currency },
      ]),
      memo: { network: payment.network, remoteTransactionId: payment.remoteTransactionId, amount: payment.amount },
    });
    return { workflowId, duplicate: false };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return { workflowId, duplicate: true };
    throw error;
  }
}
