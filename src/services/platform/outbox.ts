/**
 * The outbox: every kind of record whose commit starts a workflow. The use case writes the row (a
 * request, a payment, a reversal, a payment batch) in its transaction and hands it to the launcher's
 * `afterCommit`; a row whose workflow did not start (the process died, Temporal was down) still has
 * `workflow_started_at` null, and the outbox sweep starts it after a grace period. One entry per
 * kind here is read by all three: the launcher (which must start each kind: its table of starts is
 * typed by this one), the sweep and the backlog gauge. The sweep and the gauge read every
 * organization's rows: not tenant queries (services/platform/queries.ts).
 */
import type { Fragment } from 'postgres';
import type { Queryable, Sql } from '../../db';
import type { CollectionRequestRow } from '../../domain/collection-requests';
import { movementNoun, movementOfOutbox, type MovementOutboxKind } from '../../domain/money-movements';
import { REQUEST_COLUMNS } from '../collections/request-reads';
import type { OutboxKind, OutboxRow, OutboxRows } from './ports';
import type { OutboxBacklog } from '../../telemetry/metrics';
import { OTHER_SWEEP_KINDS, notSetAside, sweepEach, type SweepKind } from './sweeps';

type OutboxTable = {
  /** The table of its rows, each with `created` and `workflow_started_at`. */
  table: string;
  /** The row as its workflow's start needs it, as the sweep selects it. */
  columns: string;
  /** Which rows still want a workflow besides `workflow_started_at is null` (SQL, a constant). */
  pending?: string;
  /** Under which kind the sweep sets a row aside. */
  sweepKind: SweepKind;
  /** What a row is, for logs. */
  noun: string;
};

/** An entry, with the type of its rows (the launcher's start of the kind takes them). */
const entry = <Row extends { id: number }>(table: OutboxTable) => table as OutboxTable & { readonly row?: Row };

export type { OutboxKind, OutboxRow, PaymentBatchToStart, PaymentToStart, ReversalToStart } from './ports';

/**
 * The entries of the money movements' outbox kinds (src/domain/money-movements.ts), one each (the
 * type asks for every kind): the table and columns here, the sweep kind (`outbox-payment-batch`) and
 * the noun from the movement.
 */
function movementEntries(
  tables: Record<MovementOutboxKind, Pick<OutboxTable, 'table' | 'columns'>>,
): Record<MovementOutboxKind, OutboxTable> {
  return Object.fromEntries(
    Object.entries(tables).map(([kind, table]) => {
      const movement = movementOfOutbox(kind as MovementOutboxKind);
      return [kind, { ...table, sweepKind: `outbox-${movement.replaceAll('_', '-')}`, noun: movementNoun(movement) }];
    }),
  ) as Record<MovementOutboxKind, OutboxTable>;
}

export const OUTBOX: { [K in OutboxKind]: OutboxTable & { readonly row?: OutboxRows[K] } } = {
  requests: entry<CollectionRequestRow>({
    table: 'collection_requests',
    columns: REQUEST_COLUMNS,
    sweepKind: 'outbox-request',
    noun: 'collection request',
  }),
  ...movementEntries({
    payments: { table: 'payments', columns: 'id, organization_id as "organizationId", start_date as "startDate"' },
    reversals: { table: 'reversals', columns: 'id, organization_id as "organizationId"' },
    paymentBatches: { table: 'payment_batches', columns: 'id, organization_id as "organizationId"' },
  }),
};

/** Every kind a sweep sets rows aside under (what `sweeps retry --kind` takes). */
export const SWEEP_KINDS: readonly SweepKind[] = [
  ...Object.values(OUTBOX).map((table) => table.sweepKind),
  ...OTHER_SWEEP_KINDS,
];

const pendingRows = (sql: Queryable, table: OutboxTable): Fragment =>
  sql`workflow_started_at is null ${table.pending ? sql`and ${sql.unsafe(table.pending)}` : sql``}`;

/**
 * The outbox sweep's part for one kind: rows committed more than `graceSeconds` ago whose workflow
 * never started are started through `start` and marked; a row that cannot be started for a reason
 * of its own is set aside and reported, the others still start. Returns how many started.
 */
export async function startUnlaunched<K extends OutboxKind>(
  sql: Sql,
  kind: K,
  options: {
    graceSeconds: number;
    batchSize: number;
    start: (row: OutboxRow<K>) => Promise<boolean>;
    onSetAside: (row: OutboxRow<K>, error: unknown) => void;
  },
): Promise<number> {
  const table: OutboxTable = OUTBOX[kind];
  const rows = await sql<OutboxRow<K>[]>`
    select ${sql.unsafe(table.columns)} from ${sql(table.table)}
    where ${pendingRows(sql, table)} and created < now() - ${options.graceSeconds}::int * interval '1 second'
      ${notSetAside(sql, table.sweepKind, `${table.table}.id`)}
    order by created limit ${options.batchSize}`;
  let started = 0;
  await sweepEach(
    sql,
    table.sweepKind,
    rows,
    async (row) => {
      if (await options.start(row)) started += 1;
      await sql`
        update ${sql(table.table)} set workflow_started_at = coalesce(workflow_started_at, now())
        where id = ${row.id}`;
    },
    options.onSetAside,
  );
  return started;
}

/**
 * Rows of each outbox table waiting for their workflow, and the age of the oldest (the
 * `outbox_backlog` gauges). One query; the partial indexes on each table's pending rows keep it cheap.
 */
export async function outboxBacklog(sql: Queryable): Promise<OutboxBacklog[]> {
  const waiting = (from: string, where: Fragment) => sql`
    select ${from}::text as kind, count(*)::int as count,
      coalesce(extract(epoch from now() - min(created)), 0)::float8 as "oldestAgeSeconds"
    from ${sql(from)} where ${where}`;
  const parts = Object.values(OUTBOX).map((table) => waiting(table.table, pendingRows(sql, table)));
  return await sql<OutboxBacklog[]>`${parts.reduce((union, part) => sql`${union} union all ${part}`)}`;
}
