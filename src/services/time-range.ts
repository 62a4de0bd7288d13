import type { Sql } from '../db';

/**
 * `and <column> >= after and <column> <= before` for the `<name>_after` / `<name>_before` filters
 * that were given (both inclusive), as one SQL fragment.
 */
export function timeRange(sql: Sql, column: string, after: Date | undefined, before: Date | undefined) {
  const name = sql.unsafe(column);
  return sql`${after !== undefined ? sql`and ${name} >= ${after}` : sql``} ${before !== undefined ? sql`and ${name} <= ${before}` : sql``}`;
}
