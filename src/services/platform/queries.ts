/**
 * The query shapes every resource shares: the tenant scope of an organization's statements
 * (`tenantScope`: its predicate, its lists, its reads by id), one page of a list with the count of
 * all it holds, and the `_after`/`_before` time filters. Another organization's row is never
 * loaded; whether it exists decides 403 or 404 (docs/api.md#api-behaviour-worth-knowing).
 */
import type { Fragment } from 'postgres';
import type { Queryable } from '../../db';
import { acrossOrganizations } from '../../db/tenancy';
import { ForbiddenError, NotFoundError } from '../../domain/errors';
import type { OrganizationId } from '../../domain/ids';

/**
 * `and <column> >= after and <column> <= before` for the `<name>_after` / `<name>_before` filters
 * that were given (both inclusive), as one SQL fragment.
 */
export function timeRange(sql: Queryable, column: string, after: Date | undefined, before: Date | undefined) {
  const name = sql.unsafe(column);
  const from = after === undefined ? sql`` : sql`and ${name} >= ${after}`;
  const until = before === undefined ? sql`` : sql`and ${name} <= ${before}`;
  return sql`${from} ${until}`;
}

export type PageWindow = { limit: number; offset: number };
export type ListPage<T> = { count: number; rows: T[] };

/**
 * One page of a list and the count of everything its filters hold, side by side: every list of
 * the service is this query, through `tenantScope(...).listPage`, whose `where` starts with the
 * organization's predicate.
 */
async function listPage<T extends object>(
  sql: Queryable,
  query: { columns: Fragment; from: Fragment; where: Fragment; orderBy: Fragment },
  page: PageWindow,
): Promise<ListPage<T>> {
  const [[total], rows] = await Promise.all([
    sql<{ count: number }[]>`select count(*)::int as count from ${query.from} ${query.where}`,
    sql<T[]>`
      select ${query.columns} from ${query.from} ${query.where} ${query.orderBy}
      limit ${page.limit} offset ${page.offset}`,
  ]);
  return { count: total?.count ?? 0, rows: rows as unknown as T[] };
}

/**
 * A row an organization asked for by id and could not read as its own (its read had the
 * organization in its query): 404 when no row has that id (among those `visible` admits), 403 when
 * another organization's has.
 */
async function notOwned(sql: Queryable, table: string, id: number, visible?: Fragment): Promise<never> {
  // Another organization's row is outside the caller's tenant boundary: whether it exists is asked across
  // organizations.
  const [found] = await acrossOrganizations(
    sql,
    (outside) => outside<{ id: number }[]>`select id from ${outside(table)} where id = ${id} ${visible ?? outside``}`,
  );
  throw found ? new ForbiddenError() : new NotFoundError();
}

/**
 * A list of the organization's rows: `filters` (each `and ...`) follow its predicate, on the table `alias` names when
 * given.
 */
type ScopedList = { columns: Fragment; from: Fragment; alias?: string; filters?: Fragment; orderBy: Fragment };

/**
 * A read by id of the organization's row of `table`. `visible` hides rows from every caller (a
 * deleted webhook): the read and the 403/404 check both apply it. When the organization is a joined
 * table's, `through` gives the tables, the alias of the id's table (`row`) and of the owner's.
 */
type ScopedRow = {
  table: string;
  id: number;
  columns: Fragment;
  visible?: Fragment;
  through?: { from: Fragment; row: string; owner: string };
};

/**
 * The statements of one organization, as every tenant query is written: the caller's organization
 * goes in once, and each piece applies it.
 *
 * - `owned(alias?)`: the predicate `organization_id = <organization>` (of the table `alias` names),
 *   for a statement written by hand;
 * - `listPage`: a list whose `where` starts with that predicate, then the filters;
 * - `ownRow`: a read by id with the predicate in its query, or 403/404 by `notOwned`.
 *
 * Statements that run across organizations (the sweeps, operators' callbacks, the matching of an
 * incoming payment, authentication by a key's digest, the admin CLI's reports) do not use it, and
 * say so where they are written; the worker's reads of its own workflow's row by id (`findPayment`,
 * `findReversal`, ...) are not an organization's read either (no `Own` in their names).
 */
export function tenantScope(sql: Queryable, organizationId: OrganizationId) {
  const owned = (alias?: string): Fragment =>
    alias === undefined
      ? sql`organization_id = ${organizationId}`
      : sql`${sql.unsafe(alias)}.organization_id = ${organizationId}`;
  return {
    owned,
    listPage: async <T extends object>(query: ScopedList, page: PageWindow): Promise<ListPage<T>> =>
      await listPage<T>(
        sql,
        {
          columns: query.columns,
          from: query.from,
          where: sql`where ${owned(query.alias)} ${query.filters ?? sql``}`,
          orderBy: query.orderBy,
        },
        page,
      ),
    ownRow: async <T extends object>(query: ScopedRow): Promise<T> => {
      const { from, row, owner } = query.through ?? { from: sql(query.table), row: undefined, owner: undefined };
      const idColumn = row === undefined ? sql`id` : sql.unsafe(`${row}.id`);
      const [found] = await sql<T[]>`
        select ${query.columns} from ${from}
        where ${idColumn} = ${query.id} and ${owned(owner)} ${query.visible ?? sql``}`;
      return (found as T | undefined) ?? (await notOwned(sql, query.table, query.id, query.visible));
    },
  };
}
