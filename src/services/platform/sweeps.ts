/**
 * One bad row never stops a sweep (docs/architecture.md#events-and-the-outbox): a row a sweep cannot process is set
 * aside in `sweep_failures` with its error, later runs skip it, and the sweep goes on with the rest. An operator lists
 * them (`npm run admin -- sweeps failures`) and, once the cause is fixed, puts one back (`sweeps retry`). A failure of
 * the system itself (PostgreSQL or Temporal unreachable) is not the row's fault: it stops the run, and the next
 * scheduled run tries again. Sweeps run over every organization's rows: their statements are not tenant queries
 * (services/platform/queries.ts).
 */
import type { Queryable, Sql } from '../../db';
import { isDatabaseUnavailable } from '../../db';

/** Which sweep, over which table: `outbox-<kind>` for each outbox table (services/platform/outbox.ts), and these. */
export const OTHER_SWEEP_KINDS = ['retention-event', 'retention-duplicate-key', 'retention-audit-event'] as const;
export type SweepKind = `outbox-${string}` | (typeof OTHER_SWEEP_KINDS)[number];

type SweepFailure = {
  kind: SweepKind;
  rowId: number;
  error: string;
  attempts: number;
  firstFailedAt: Date;
  lastFailedAt: Date;
};

/**
 * gRPC codes of a Temporal server that is down, overloaded or slow: DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNAVAILABLE.
 */
const TRANSIENT_GRPC_CODES = new Set([4, 8, 14]);

/** True when `error` says the system is unavailable rather than that the row is bad. */
function isTransientError(error: unknown): boolean {
  if (isDatabaseUnavailable(error)) return true;
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'number' && TRANSIENT_GRPC_CODES.has(code)) return true;
    current = current.cause;
  }
  return false;
}

const describe = (error: unknown): string =>
  (error instanceof Error ? `${error.name}: ${error.message}` : String(error)).slice(0, 2000);

export async function setAside(sql: Queryable, kind: SweepKind, rowId: number, error: unknown): Promise<void> {
  await sql`
    insert into sweep_failures (kind, row_id, error) values (${kind}, ${rowId}, ${describe(error)})
    on conflict (kind, row_id) do update
      set error = excluded.error, attempts = sweep_failures.attempts + 1, last_failed_at = now()`;
}

/** `and not exists (...)`: a sweep's query leaves out the rows set aside for it (`column` is the row's id). */
export function notSetAside(sql: Queryable, kind: SweepKind, column: string) {
  return sql`
    and not exists (select 1 from sweep_failures f where f.kind = ${kind} and f.row_id = ${sql.unsafe(column)})`;
}

type SweepResult = { processed: number; setAside: number };

/**
 * Processes each row on its own; a row whose processing fails is set aside with its error and the
 * others go on. A transient failure (the system is down) is rethrown: the run stops, nothing is
 * blamed on the row.
 */
export async function sweepEach<T extends { id: number }>(
  sql: Sql,
  kind: SweepKind,
  rows: readonly T[],
  process: (row: T) => Promise<unknown>,
  onSetAside: (row: T, error: unknown) => void = () => {},
): Promise<SweepResult> {
  const result: SweepResult = { processed: 0, setAside: 0 };
  for (const row of rows) {
    try {
      await process(row);
      result.processed += 1;
    } catch (error) {
      if (isTransientError(error)) throw error;
      await setAside(sql, kind, row.id, error);
      onSetAside(row, error);
      result.setAside += 1;
    }
  }
  return result;
}

/**
 * Deletes rows in batches (`deleteBatch` deletes the given ids, `nextBatch` picks the next ids not
 * set aside). When a whole batch fails, its rows are deleted one by one, so only the row that
 * cannot be deleted is set aside. Returns how many rows went.
 */
export async function deleteInBatches(
  sql: Sql,
  kind: SweepKind,
  batchSize: number,
  nextBatch: (limit: number) => Promise<number[]>,
  deleteBatch: (ids: number[]) => Promise<number>,
  onProgress: (deleted: number) => void = () => {},
): Promise<{ deleted: number; setAside: number }> {
  let deleted = 0;
  let setAsideCount = 0;
  for (;;) {
    const ids = await nextBatch(batchSize);
    if (ids.length === 0) break;
    try {
      deleted += await deleteBatch(ids);
    } catch (error) {
      if (isTransientError(error)) throw error;
      const one = await sweepEach(
        sql,
        kind,
        ids.map((id) => ({ id })),
        async ({ id }) => {
          deleted += await deleteBatch([id]);
        },
      );
      setAsideCount += one.setAside;
    }
    onProgress(deleted);
    if (ids.length < batchSize) break;
  }
  return { deleted, setAside: setAsideCount };
}

export async function listSweepFailures(sql: Queryable): Promise<SweepFailure[]> {
  return await sql<SweepFailure[]>`
    select kind, row_id as "rowId", error, attempts, first_failed_at as "firstFailedAt",
      last_failed_at as "lastFailedAt"
    from sweep_failures order by last_failed_at desc, kind, row_id`;
}

/** Puts a set-aside row back: the next run of its sweep tries it again. Returns whether one was set aside. */
export async function retrySweepRow(sql: Queryable, kind: SweepKind, rowId: number): Promise<boolean> {
  const rows = await sql`delete from sweep_failures where kind = ${kind} and row_id = ${rowId} returning row_id`;
  return rows.length > 0;
}
