import type { PaymentId } from '../domain/ids';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/common';
import {
  ChildWorkflowFailure,
  ParentClosePolicy,
  condition,
  continueAsNew,
  executeChild,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { createPaymentBatchActivities } from '../activities/payment-batches';
import { paymentWorkflowId } from '../contracts/money-out';
import {
  paymentBatchProgressQuery,
  type PaymentBatchInput,
  type PaymentBatchProgress,
} from '../contracts/payment-batch';
import { RETRY_POLICIES } from '../contracts/retry-policies';
import { searchAttributes } from '../contracts/search-attributes';
import type { payment } from './payment';

type Activities = ReturnType<typeof createPaymentBatchActivities>;

const { reserveBatchChunkStep, completeBatchStep } = proxyLocalActivities<Activities>({
  // One PostgreSQL transaction each (a chunk's payments with their debits; the batch's completion);
  // idempotent (a chunk's rows are created once), retried through outages.
  startToCloseTimeout: '2 minutes',
  retry: RETRY_POLICIES.untilDone,
});

/**
 * A batch of payments (`payment-batch-<id>`): creates its rows' payments a chunk at a time (each
 * row's amount reserved as its payment is created) and runs each payment's own workflow
 * (`payment-<id>`) as a child, at most `concurrency` at once, the next chunk created while the last
 * ones finish. When every row is final it marks the batch `completed` (its event). Past
 * `historyLimit` events it waits for what is in flight and continues as new from the next chunk.
 * Children are abandoned, never terminated, if the batch's run closes: a payment always finishes.
 */
export async function paymentBatch(input: PaymentBatchInput): Promise<PaymentBatchProgress> {
  const progress: PaymentBatchProgress = {
    nextChunk: input.nextChunk ?? 0,
    inFlight: 0,
    finished: input.finished ?? 0,
    completed: false,
  };
  setHandler(paymentBatchProgressQuery, () => ({ ...progress }));
  const queue: PaymentId[] = [];
  let last = false;

  const send = async (paymentId: PaymentId): Promise<void> => {
    try {
      await executeChild<typeof payment>('payment', {
        workflowId: paymentWorkflowId(paymentId),
        args: [{ paymentId, organizationId: input.organizationId, startAt: null, ...input.payment }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        // Never a second run for one payment, as the launcher starts single payments.
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        typedSearchAttributes: [{ key: searchAttributes.organizationId, value: String(input.organizationId) }],
        memo: { organizationId: input.organizationId, paymentId },
      });
    } catch (error) {
      // Its workflow exists already, or failed: the payment's row says what became of it.
      if (!(error instanceof WorkflowExecutionAlreadyStartedError || error instanceof ChildWorkflowFailure))
        throw error;
    }
  };

  for (;;) {
    if (queue.length === 0) {
      const tooLong = workflowInfo().historyLength > input.historyLimit;
      if (!last && !tooLong) {
        const chunk = await reserveBatchChunkStep({
          batchId: input.batchId,
          chunk: progress.nextChunk,
          size: input.chunkSize,
        });
        progress.nextChunk += 1;
        last = chunk.last;
        queue.push(...chunk.paymentIds);
        continue;
      }
      await condition(() => progress.inFlight === 0);
      if (last) break;
      await continueAsNew<typeof paymentBatch>({
        ...input,
        nextChunk: progress.nextChunk,
        finished: progress.finished,
      });
    }
    await condition(() => progress.inFlight < input.concurrency);
    const paymentId = queue.shift()!;
    progress.inFlight += 1;
    void send(paymentId).finally(() => {
      progress.inFlight -= 1;
      progress.finished += 1;
    });
  }
  await completeBatchStep({ batchId: input.batchId });
  progress.completed = true;
  return { ...progress };
}
