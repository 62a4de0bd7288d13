import type { PaymentBatchId, PaymentId } from '../domain/ids';
import type { Sql } from '../db';
import { completePaymentBatch, reserveBatchChunk } from '../services/payments/payment-batch-steps';
import { recordPaymentState, recordWalletMovement } from '../telemetry/metrics';
import type { Launcher } from '../services/platform/ports';

type PaymentBatchActivityDeps = { sql: Sql; launcher: Launcher };

export function createPaymentBatchActivities({ sql }: PaymentBatchActivityDeps) {
  return {
    /** A local activity: a chunk of the batch's rows made payments (their amounts reserved); the ids to send. */
    async reserveBatchChunkStep({
      batchId,
      chunk,
      size,
    }: {
      batchId: PaymentBatchId;
      chunk: number;
      size: number;
    }): Promise<{ paymentIds: PaymentId[]; last: boolean }> {
      const reserved = await reserveBatchChunk(sql, batchId, chunk, size);
      for (const { state, currency, amount } of reserved.created) {
        recordPaymentState(state);
        recordWalletMovement({ type: 'mobile_payment', direction: 'debit', currency, amount });
      }
      return { paymentIds: reserved.paymentIds, last: reserved.last };
    },

    /** A local activity: the batch `completed`, with its `payment_batch.completed` event recorded. */
    async completeBatchStep({ batchId }: { batchId: PaymentBatchId }): Promise<void> {
      await completePaymentBatch(sql, batchId);
    },
  };
}
