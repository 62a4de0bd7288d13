/**
 * Payment batches as they are read: their columns, batches as the API shows them (their rows counted by state and
 * currency), and within the organization the filtered list, a batch by id and a batch's rows.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import type { OrganizationId, PaymentBatchId } from '../../domain/ids';
import {
  BATCH_STATES,
  MAX_BATCH_ROWS,
  serializePaymentBatch,
  type BatchLineRow,
  type BatchTally,
  type PaymentBatchResource,
  type PaymentBatchRow,
} from '../../domain/payment-batches';
import { choiceMessage, filterDate } from '../../domain/input';
import { tenantScope, timeRange, type ListPage, type PageWindow } from '../platform/queries';

export const BATCH_COLUMNS = `id, organization_id as "organizationId", state, row_count as "rowCount", author,
  completed_at as "completedAt", created, modified`;

export const PaymentBatchFilters = v.object({
  state: v.optional(v.picklist(BATCH_STATES, choiceMessage)),
  created_after: filterDate,
  created_before: filterDate,
});
type PaymentBatchFilterValues = v.InferOutput<typeof PaymentBatchFilters>;

/** Batches as the API shows them: each with its rows counted by state and currency (one query for all). */
export async function paymentBatchResources(
  sql: Queryable,
  batches: readonly PaymentBatchRow[],
): Promise<PaymentBatchResource[]> {
  if (batches.length === 0) return [];
  const tallies = await sql<(BatchTally & { batchId: PaymentBatchId })[]>`
    select r.batch_id as "batchId", case when r.state = 'created' then p.state else r.state end as state, r.currency,
           count(*)::int as rows, sum(r.amount)::text as amount
    from payment_batch_rows r left join payments p on p.id = r.payment_id
    where r.batch_id in ${sql(batches.map((batch) => batch.id))}
    group by 1, 2, 3`;
  return batches.map((batch) =>
    serializePaymentBatch(
      batch,
      tallies.filter((tally) => tally.batchId === batch.id),
    ),
  );
}

/** The organization's batch `id` (403 when another organization's, 404 when none). */
export async function findOwnPaymentBatch(
  sql: Queryable,
  organizationId: OrganizationId,
  id: PaymentBatchId,
): Promise<PaymentBatchRow> {
  return await tenantScope(sql, organizationId).ownRow<PaymentBatchRow>({
    table: 'payment_batches',
    id,
    columns: sql.unsafe(BATCH_COLUMNS),
  });
}

/** One page of an organization's batches, newest first. */
export async function listPaymentBatches(
  sql: Sql,
  organizationId: OrganizationId,
  filters: PaymentBatchFilterValues,
  page: PageWindow,
): Promise<ListPage<PaymentBatchRow>> {
  return await tenantScope(sql, organizationId).listPage<PaymentBatchRow>(
    {
      columns: sql.unsafe(BATCH_COLUMNS),
      from: sql`payment_batches`,
      filters: sql`
      ${filters.state !== undefined ? sql`and state = ${filters.state}` : sql``}
      ${timeRange(sql, 'created', filters.created_after, filters.created_before)}`,
      orderBy: sql`order by created desc, id desc`,
    },
    page,
  );
}

/**
 * An organization's batch's rows in upload order with what became of each (a page of them, or all for the result CSV).
 */
export async function batchLines(
  sql: Queryable,
  batch: Pick<PaymentBatchRow, 'id' | 'organizationId'>,
  page: PageWindow | null = null,
): Promise<ListPage<BatchLineRow>> {
  return await tenantScope(sql, batch.organizationId).listPage<BatchLineRow>(
    {
      columns: sql`
        r.row_number as "rowNumber", r.phone_number as "phoneNumber", r.amount::text as amount, r.currency,
        r.input->>'description' as description,
        case when r.state = 'created' then p.state else r.state end as state, r.payment_id as "paymentId",
        p.remote_transaction_id as "remoteTransactionId", coalesce(r.error, p.last_error) as error`,
      from: sql`
        payment_batch_rows r join payment_batches b on b.id = r.batch_id
        left join payments p on p.id = r.payment_id`,
      alias: 'b',
      filters: sql`and r.batch_id = ${batch.id}`,
      orderBy: sql`order by r.row_number`,
    },
    page ?? { limit: MAX_BATCH_ROWS, offset: 0 },
  );
}
