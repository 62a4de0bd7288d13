/**
 * The query shapes every resource shares: one page of a list with the count of all it holds, the
 * `_after`/`_before` time filters, and the tenant scope of a read by id (another organization's
 * row is never loaded; whether it exists decides 403 or 404, docs/api.md#api-behaviour-worth-knowing).
 */
import type { Fragment } from 'postgres';
import type { Queryable } from '../db';
import { acrossOrganizations } from '../db/tenancy';
import { ForbiddenError, NotFoundError } from '../domain/errors';

/**
 * `and <column> >= after and <column> <= before` for the `<name>_after` / `<name>_before` filters
 * that were given (both inclusive), as one SQL fragment.
 */
export function timeRange(sql: Queryable, column: string, after: Date | undefined, before: Date | undefined) {
  const name = sql.unsafe(column);
  return sql`${after !== undefined ? sql`and ${name} >= ${after}` : sql``} ${before !== undefined ? sql`and ${name} <= ${before}` : sql``}`;
}

export type PageWindow = { limit: number; offset: number };
export type ListPage<T> = { count: number; rows: T[] };

/**
 * One page of a list and the count of everything its filters hold, side by side: every list of
 * the service is this query. `where` carries the filters, the organization's scope among them.
 */
export async function listPage<T extends object>(
  sql: Queryable,
  query: { columns: Fragment; from: Fragment; where: Fragment; orderBy: Fragment },
  page: PageWindow,
): Promise<ListPage<T>> {
  const [[total], rows] = await Promise.all([
    sql<{ count: number }[]>`select count(*)::int as count from ${query.from} ${query.where}`,
    sql<T[]>`select ${query.columns} from ${query.from} ${query.where} ${query.orderBy} limit ${page.limit} offset ${page.offset}`,
  ]);
  return { count: total?.count ?? 0, rows: rows as unknown as T[] };
}

/**
 * A row an organization asked for by id and could not read as its own (the caller looked with the
 * organization in its query): 404 when no row has that id (among those `visible` admits), 403 when
 * another organization's has.
 */
async function notOwned(sql: Queryable, table: string, id: number, visible?: Fragment): Promise<never> {
  // Another organization's row is outside the caller's tenant boundary: whether it exists is asked across organizations.
  const [found] = await acrossOrganizations(sql, (outside) => outside<{ id: number }[]>`select id from ${outside(table)} where id = ${id} ${visible ?? outside``}`);
  throw found ? new ForbiddenError() : new NotFoundError();
}

/** The row `find` loads within the organization's scope, or 403/404 by `notOwned`. */
export async function ownRow<T>(sql: Queryable, table: string, id: number, find: () => Promise<T | undefined>, visible?: Fragment): Promise<T> {
  return (await find()) ?? (await notOwned(sql, table, id, visible));
}


