/**
 * Bulk payouts: a batch of payments uploaded together (JSON, or CSV of the same columns), checked
 * row by row with the single payment's rules before anything is written, then sent by its workflow
 * (`payment-batch-<id>`), a bounded number at a time.
 *
 * The reservation rule is row by row (migration 015): each row's amount is taken out of its wallet
 * when the batch creates the row's payment, in chunks of rows, each chunk one transaction; a row is
 * never paid twice (the chunk takes its rows' locks, and a row's payment is set once). At upload the
 * batch is refused when a wallet does not hold the sum of its rows; a row whose wallet no longer
 * holds its amount when its turn comes ends `failed` and the batch goes on.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import { RefusedError, fieldErrors, type FieldErrors } from '../../domain/errors';
import type { OrganizationId, PaymentBatchId, PaymentId } from '../../domain/ids';
import {
  BATCH_STATES,
  MAX_BATCH_ROWS,
  serializePaymentBatch,
  type BatchLineRow,
  type BatchTally,
  type PaymentBatchResource,
  type PaymentBatchRow,
} from '../../domain/payment-batches';
import { checkFields, choiceMessage, filterDate } from '../../domain/input';
import { compareDecimal, groupedAmount, sumAmounts } from '../../domain/money';
import type { Actor, ServiceDeps } from '../platform/deps';
import { writeOnce, type DuplicateCheck } from '../collections/duplicate-checks';
import type { RecordedEvent } from '../webhooks/events';
import { recordEvent } from '../webhooks/events';
import type { PaymentRow } from '../../domain/money-out';
import { InsufficientFundsError, PaymentCreate, checkPayment, createPaymentIn, type NewPayment } from './payments';
import { tenantScope, timeRange, type ListPage, type PageWindow } from '../platform/queries';
import { activeWallets } from '../wallets/wallets';

const BATCH_COLUMNS =
  `id, organization_id as "organizationId", state, row_count as "rowCount", author, completed_at ` +
  `as "completedAt", created, modified`;

/** A row of a batch: the fields of `POST /api/payments` but `start_date` (a batch is sent at once). */
const PaymentBatchLine = v.omit(PaymentCreate, ['start_date']);

export const PaymentBatchCreate = v.object(
  {
    payments: v.pipe(
      v.array(
        v.record(v.string(), v.unknown(), 'Each payment is an object of its fields.'),
        'A list of payments is required.',
      ),
      v.minLength(1, 'A batch holds at least one payment.'),
      v.maxLength(MAX_BATCH_ROWS, `A batch holds at most ${MAX_BATCH_ROWS} payments.`),
      v.description(
        'The payments, each with the fields of `POST /api/payments` but `start_date` (a batch is sent at once): ' +
          '`phonenumber`, `amount`, `currency`, ' +
          '`description`, and optionally `payment_type`, `metadata`, `first_name`, `last_name`, `account`, ' +
          '`callback_url`, `send_sms_message`. Every ' +
          "row is checked before anything is written; a row's errors are keyed `payments[<index>].<field>` (index " +
          'from 0).',
      ),
    ),
  },
  'This field is required.',
);
export type PaymentBatchInput = v.InferOutput<typeof PaymentBatchCreate>;

export const PaymentBatchFilters = v.object({
  state: v.optional(v.picklist(BATCH_STATES, choiceMessage)),
  created_after: filterDate,
  created_before: filterDate,
});
type PaymentBatchFilterValues = v.InferOutput<typeof PaymentBatchFilters>;

/** A row's values as the batch stores them until its payment is created. */
type LineFields = Omit<NewPayment, 'organizationId' | 'author' | 'startDate'>;

/** What a wallet must hold for a batch: the sum of its rows, beside what it holds. */
type BatchFunding = {
  accountId: number;
  currency: string;
  rows: number;
  amount: string;
  balance: string;
  enough: boolean;
};

/** A batch checked as a whole: each row's values or errors, the errors keyed for the API, and each wallet's funding. */
export type BatchCheck = {
  lines: { fields: LineFields | null; errors: FieldErrors }[];
  errors: FieldErrors;
  funding: BatchFunding[];
};

/** The organization's active wallets of each currency the rows name, read once per currency. */
async function walletsByCurrency(
  sql: Queryable,
  organizationId: OrganizationId,
  rows: readonly Record<string, unknown>[],
) {
  const currencies = new Set(
    rows.map((row) =>
      String(row.currency ?? '')
        .trim()
        .toUpperCase(),
    ),
  );
  const entries = await Promise.all(
    [...currencies].map(async (currency) => [currency, await activeWallets(sql, organizationId, currency)] as const),
  );
  return new Map(entries);
}

/**
 * Checks every row of a batch with the single payment's rules (`PaymentBatchLine`, then
 * `checkPayment`), and what each wallet must hold against what it holds: nothing is written.
 * The API refuses a batch with any error; the console's preview shows them row by row.
 */
export async function checkPaymentBatch(
  { sql, config, networks }: Pick<ServiceDeps, 'sql' | 'config' | 'networks'>,
  organizationId: OrganizationId,
  rows: readonly Record<string, unknown>[],
): Promise<BatchCheck> {
  const wallets = await walletsByCurrency(sql, organizationId, rows);
  const now = new Date();
  const errors: FieldErrors = {};
  const lines = rows.map((row, index) => {
    const parsed = checkFields(PaymentBatchLine, row);
    const checked = parsed.success
      ? checkPayment(
          { config, networks },
          { ...parsed.output, start_date: null },
          wallets.get(parsed.output.currency) ?? [],
          now,
        )
      : { errors: parsed.errors, fields: null };
    for (const [field, messages] of Object.entries(checked.errors)) errors[`payments[${index}].${field}`] = messages;
    if (checked.fields === null) return { fields: null, errors: checked.errors };
    const { startDate: _sentAtOnce, ...fields } = checked.fields;
    return { fields, errors: checked.errors };
  });
  return {
    lines,
    errors,
    funding: await fundingOf(
      sql,
      organizationId,
      lines.flatMap((line) => (line.fields === null ? [] : [line.fields])),
    ),
  };
}

/** Each wallet the rows are paid from: their sum and what it holds now. */
async function fundingOf(
  sql: Queryable,
  organizationId: OrganizationId,
  lines: readonly LineFields[],
): Promise<BatchFunding[]> {
  const byAccount = new Map<number, LineFields[]>();
  for (const line of lines) {
    const ofAccount = byAccount.get(line.accountId);
    if (ofAccount) ofAccount.push(line);
    else byAccount.set(line.accountId, [line]);
  }
  if (byAccount.size === 0) return [];
  const balances = await sql<{ id: number; currency: string; balance: string }[]>`
    select id, currency, balance::text as balance from accounts where ${tenantScope(sql, organizationId).owned()} and id
      in ${sql([...byAccount.keys()])} order by id`;
  return balances.map((wallet) => {
    const amount = sumAmounts(byAccount.get(wallet.id)!.map((line) => line.amount));
    return {
      accountId: wallet.id,
      currency: wallet.currency,
      rows: byAccount.get(wallet.id)!.length,
      amount,
      balance: wallet.balance,
      enough: compareDecimal(wallet.balance, amount) >= 0,
    };
  });
}

/** The wallets a batch's rows would overdraw, in the API's words (400 `insufficient funds: ...`). */
const shortfall = (funding: readonly BatchFunding[]): string | null => {
  const short = funding.filter((wallet) => !wallet.enough);
  if (short.length === 0) return null;
  return (
    `insufficient funds: ` +
    `${short
      .map(
        (wallet) =>
          `the ${wallet.currency} wallet ${wallet.accountId} holds ` +
          `${groupedAmount(wallet.balance)}; the batch's ${wallet.rows} rows from it add up to ` +
          `${groupedAmount(wallet.amount)}`,
      )
      .join('; ')}.`
  );
};

const INSERT_ROWS_AT_ONCE = 1000;

/**
 * Creates a batch as the REST route and the console both do: every row checked (400 with each
 * row's errors, or `insufficient funds` when a wallet does not hold the sum of its rows), the batch
 * and its rows written in one transaction with the Duplicate-Check-Key's claim (a re-upload with
 * the same key is a 409), and its workflow started after the commit.
 */
export async function createPaymentBatch(
  { sql, config, launcher, networks }: Pick<ServiceDeps, 'sql' | 'config' | 'launcher' | 'networks'>,
  creator: Actor,
  input: PaymentBatchInput,
  duplicateCheck: DuplicateCheck | null,
): Promise<PaymentBatchResource> {
  const checked = await checkPaymentBatch({ sql, config, networks }, creator.organizationId, input.payments);
  if (Object.keys(checked.errors).length > 0) throw fieldErrors(checked.errors);
  const short = shortfall(checked.funding);
  if (short !== null) throw new RefusedError(short);
  const batch = await writeOnce(
    sql,
    creator,
    duplicateCheck,
    async (tx) => {
      const [row] = await tx<PaymentBatchRow[]>`
      insert into payment_batches (organization_id, row_count, author) values
        (${creator.organizationId}, ${checked.lines.length}, ${creator.userId})
      returning ${tx.unsafe(BATCH_COLUMNS)}`;
      const lines = checked.lines.map(({ fields }, index) => ({
        batch_id: row!.id,
        row_number: index + 1,
        account_id: fields!.accountId,
        network: fields!.network,
        phone_number: fields!.phoneNumber,
        amount: fields!.amount,
        currency: fields!.currency,
        input: tx.json(fields as Parameters<typeof tx.json>[0]),
      }));
      for (let start = 0; start < lines.length; start += INSERT_ROWS_AT_ONCE) {
        await tx`insert into payment_batch_rows ${tx(lines.slice(start, start + INSERT_ROWS_AT_ONCE))}`;
      }
      return row!;
    },
    (row) => ({ type: 'payment_batch', id: row.id }),
  );
  await launcher.afterCommit({ paymentBatches: [{ id: batch.id, organizationId: batch.organizationId }] });
  const [resource] = await paymentBatchResources(sql, [batch]);
  return resource!;
}

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
      columns: sql`r.row_number as "rowNumber", r.phone_number as "phoneNumber", r.amount::text as amount, r.currency,
        r.input->>'description' as description,
      case when r.state = 'created' then p.state else r.state end as state, r.payment_id as "paymentId",
      p.remote_transaction_id as "remoteTransactionId", coalesce(r.error, p.last_error) as error`,
      from: sql`payment_batch_rows r join payment_batches b on b.id = r.batch_id left join payments p on p.id =
        r.payment_id`,
      alias: 'b',
      filters: sql`and r.batch_id = ${batch.id}`,
      orderBy: sql`order by r.row_number`,
    },
    page ?? { limit: MAX_BATCH_ROWS, offset: 0 },
  );
}

// ---------------------------------------------------------------------------------------------
// The batch's workflow steps

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
      update payment_batches set workflow_started_at = coalesce(workflow_started_at, now()) where id
        = ${batchId} returning ${tx.unsafe(BATCH_COLUMNS)}`;
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
        await tx`update payment_batch_rows set state = ${made ? 'created' : 'failed'}, payment_id
          = ${made?.payment.id ?? null},
                   error
                     = ${
                       made
                         ? null
                         : `insufficient funds: the wallet no longer held ${row.input.amount} when this row's turn came`
                     }
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
