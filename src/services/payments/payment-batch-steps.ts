/**
 * The steps of a payment batch's workflow (`payment-batch-<id>`): its rows' payments created a chunk at a time, then
 * the batch completed.
 *
 * The reservation rule is row by row (migration 015): each row's amount is taken out of its wallet
 * when the batch creates the row's payment, in chunks of rows, each chunk one transaction; a row is
 * never paid twice (the chunk takes its rows' locks, and a row's payment is set once). At upload the
 * batch is refused when a wallet does not hold the sum of its rows; a row whose wallet no longer
 * holds its amount when its turn comes ends `failed` and the batch goes on.
 */
import type { Sql } from '../../db';
import type { PaymentBatchId, PaymentId } from '../../domain/ids';
import type { PaymentBatchResource, PaymentBatchRow } from '../../domain/payment-batches';
import { recordEvent, type RecordedEvent } from '../webhooks/events';
import type { PaymentRow } from '../../domain/money-out';
import { InsufficientFundsError, createPaymentIn } from './payment-creation';
import { BATCH_COLUMNS, paymentBatchResources } from './payment-batch-reads';
import type { LineFields } from './payment-batch-creation';

/**
 * What a chunk of rows became: the payments to send (created now or by an earlier try), those created now, and the
 * events to deliver.
 */
type ReservedChunk = { paymentIds: PaymentId[]; created: PaymentRow[]; events: RecordedEvent[]; last: boolean };

/**
 * Creates the payments of rows `[chunk × size + 1, (chunk + 1) × size]` of a batch, each with the
 * debit of its amount, in one transaction that holds the rows' locks. A row created before (a
 * retried step) is returned, not created again; a row its wallet cannot pay any more ends
 * `failed` (its savepoint rolled back: nothing of it is written) and the others go on.
 */
export async function reserveBatchChunk(
  sql: Sql,
  batchId: PaymentBatchId,
  chunk: number,
  size: number,
): Promise<ReservedChunk> {
  return (await sql.begin(async (tx) => {
    // The batch's first step marks its workflow started (the outbox sweep leaves it alone from then on).
    const [batch] = await tx<PaymentBatchRow[]>`
      update payment_batches set workflow_started_at = coalesce(workflow_started_at, now())
      where id = ${batchId}
      returning ${tx.unsafe(BATCH_COLUMNS)}`;
    if (!batch) throw new Error(`payment batch ${batchId} does not exist`);
    const rows = await tx<{ id: number; state: string; paymentId: PaymentId | null; input: LineFields }[]>`
      select id, state, payment_id as "paymentId", input from payment_batch_rows
      where batch_id = ${batchId} and row_number between ${chunk * size + 1} and ${(chunk + 1) * size}
      order by row_number for update`;
    const events: RecordedEvent[] = [];
    const created: PaymentRow[] = [];
    const paymentIds: PaymentId[] = [];
    for (const row of rows) {
      if (row.state === 'pending') {
        const made = await tx
          .savepoint((savepoint) =>
            createPaymentIn(
              savepoint,
              { ...row.input, organizationId: batch.organizationId, author: batch.author!, startDate: null },
              { startedByBatch: true },
            ),
          )
          .catch((error: unknown) => {
            if (error instanceof InsufficientFundsError) return null;
            throw error;
          });
        const refusal = made
          ? null
          : `insufficient funds: the wallet no longer held ${row.input.amount} when this row's turn came`;
        await tx`
          update payment_batch_rows
          set state = ${made ? 'created' : 'failed'}, payment_id = ${made?.payment.id ?? null}, error = ${refusal}
          where id = ${row.id}`;
        if (made) {
          events.push(...made.events);
          created.push(made.payment);
          paymentIds.push(made.payment.id);
        }
      } else if (row.paymentId !== null) {
        paymentIds.push(row.paymentId);
      }
    }
    return { paymentIds, created, events, last: (chunk + 1) * size >= batch.rowCount };
  })) as ReservedChunk;
}

/**
 * Marks a batch `completed` once (its workflow saw every row final) with its
 * `payment_batch.completed` event, in one transaction; null when it was completed before.
 */
export async function completePaymentBatch(
  sql: Sql,
  batchId: PaymentBatchId,
): Promise<{ batch: PaymentBatchResource; events: RecordedEvent[] } | null> {
  return (await sql.begin(async (tx) => {
    const [row] = await tx<PaymentBatchRow[]>`
      update payment_batches set state = 'completed', completed_at = now(), modified = now()
      where id = ${batchId} and state = 'processing' returning ${tx.unsafe(BATCH_COLUMNS)}`;
    if (!row) return null;
    const [batch] = await paymentBatchResources(tx, [row]);
    const event = await recordEvent(tx, {
      organizationId: row.organizationId,
      type: 'payment_batch.completed',
      data: batch!,
      author: null,
    });
    return { batch: batch!, events: [event] };
  })) as { batch: PaymentBatchResource; events: RecordedEvent[] } | null;
}
