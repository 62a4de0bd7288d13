/**
 * The tenant boundary in PostgreSQL: row-level security (migrations/023_row_level_security.sql)
 * lets the role `collections_tenant` (no BYPASSRLS) see and write only the rows of the
 * organization named by the transaction's `app.organization_id`. Every statement an API request or
 * a console page runs once it knows its organization (a valid key, a signed-in session) goes
 * through that role with that organization set for its transaction, whatever code path issues it:
 * a query that forgot its organization predicate still reads nothing of another organization.
 *
 * How: the HTTP app runs each request inside `withRequestScope`, the admission names the
 * organization (`enterOrganization`), and the pool from createSql (src/db/index.ts) wraps each
 * statement issued while an organization is named in a transaction that first sets the role and
 * the organization, pipelined with the statement on one connection (one round trip; see
 * `scopedStatement`). Statements issued with no organization named (authentication itself, the
 * operators' callbacks, the worker, the sweeps, the admin commands) run as the connecting role,
 * which owns the tables and so is not subject to the policies; docs/architecture.md, "Tenant
 * boundary", lists which path runs how.
 */
import type { OrganizationId } from '../domain/ids';
import { AsyncLocalStorage } from 'node:async_hooks';
import type postgres from 'postgres';

/** The role tenant statements run as (created by migrations/023_row_level_security.sql). */
export const TENANT_ROLE = 'collections_tenant';

/**
 * The organization a request's statements are confined to, and the task queue of the process serving it (what its
 * webhooks are sent by: migration 026).
 */
type Scope = { organizationId: OrganizationId | null; taskQueue: string | null };
const scopes = new AsyncLocalStorage<Scope>();

/** Runs `run` (one HTTP request) with a scope that admission may name an organization in. */
export function withRequestScope<T>(run: () => T, taskQueue: string | null = null): T {
  return scopes.run({ organizationId: null, taskQueue }, run);
}

/**
 * Names the organization of the current request: every statement from here on in this request
 * runs as the tenant role, scoped to it. Outside a request scope (a test calling a service, the
 * worker) it does nothing.
 */
export function enterOrganization(organizationId: OrganizationId): void {
  const scope = scopes.getStore();
  if (scope) scope.organizationId = organizationId;
}

/** Runs `run` with every statement it issues scoped to `organizationId` (the tests of the boundary). */
export function asOrganization<T>(organizationId: OrganizationId, run: () => T): T {
  return scopes.run({ organizationId, taskQueue: null }, run);
}

/** The pool each tenant transaction was begun on (a statement across organizations runs there, outside it). */
const poolOfTransaction = new WeakMap<object, postgres.Sql>();

/**
 * Runs `run` as the connecting role, outside the boundary, for the few statements of a request
 * that must look across organizations by design: whether an id another organization holds exists
 * (403 rather than 404) and the claim of a collection no organization holds yet. Each use says
 * why. `sql` may be a tenant transaction: `run` then gets its pool (the statement runs outside it).
 */
export function acrossOrganizations<S extends object, T>(sql: S, run: (sql: S) => T): T {
  const outside = (poolOfTransaction.get(sql) as S | undefined) ?? sql;
  return scopes.run({ organizationId: null, taskQueue: scopes.getStore()?.taskQueue ?? null }, () => run(outside));
}

const scopedOrganization = (): OrganizationId | null => scopes.getStore()?.organizationId ?? null;

type AnySql = postgres.Sql | postgres.TransactionSql | postgres.ReservedSql;
type Pending = postgres.PendingQuery<postgres.Row[]>;
type TemplateArgs = [TemplateStringsArray, ...unknown[]];

/** The role, the organization and the request's task queue, local to the transaction `sql` is in. */
function setScope(sql: AnySql, organizationId: OrganizationId): Pending {
  const taskQueue = scopes.getStore()?.taskQueue ?? '';
  return sql`select set_config('role', ${TENANT_ROLE}, true),
    set_config('app.organization_id', ${String(organizationId)}, true),
    set_config('collections.task_queue', ${taskQueue}, true)`;
}

/**
 * One statement in a transaction of its own as the tenant: `begin`, the scope, the statement and
 * `commit` pipelined on a reserved connection (one round trip; `sql.begin` would take three). A
 * failed statement aborts the transaction, which `commit` then ends as a rollback.
 */
async function scopedStatement(
  base: postgres.Sql,
  organizationId: OrganizationId,
  args: TemplateArgs,
  reserveTimeoutMs: number,
): Promise<unknown> {
  const connection = await reserveWithin(base, reserveTimeoutMs);
  try {
    const statement = connection(...(args as [TemplateStringsArray, ...postgres.ParameterOrFragment<never>[]]));
    const settled = await Promise.allSettled([
      connection`begin`,
      setScope(connection, organizationId),
      statement,
      connection`commit`,
    ]);
    // The first failure is the cause: after it, the rest only report the aborted transaction.
    const failed = settled.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    return (settled[2] as PromiseFulfilledResult<unknown>).value;
  } finally {
    connection.release();
  }
}

/**
 * How long a tenant statement waits for a connection of its own (`reserveWithin`): longer than the API's request
 * deadline, so only a reservation the driver lost reaches it, never one a busy pool is still to serve.
 */
const RESERVE_TIMEOUT_MS = 30_000;

/**
 * `base.reserve()`, bounded. postgres.js 3.4.x forgets a reservation whose new connection is lost while it asks
 * PostgreSQL for the array types (src/db/index.ts, isArrayTypesQueryFailure): that promise never settles, and the
 * request would hold its handler for good after a partition. Past `ms` the statement fails as a connection that could
 * not be opened (`CONNECT_TIMEOUT`: 503 to a merchant); a connection that comes after all is released at once.
 */
async function reserveWithin(base: postgres.Sql, ms: number): Promise<postgres.ReservedSql> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let late = false;
  const reserved = base.reserve().then((connection) => {
    if (late) connection.release();
    return connection;
  });
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      late = true;
      reject(Object.assign(new Error(`no PostgreSQL connection within ${ms} ms`), { code: 'CONNECT_TIMEOUT' }));
    }, ms);
  });
  try {
    return await Promise.race([reserved, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const isTemplateCall = (args: unknown[]): args is TemplateArgs =>
  Array.isArray(args[0]) && Array.isArray((args[0] as unknown as { raw?: unknown }).raw);

/**
 * The query `base` made, executed in the tenant's scope when awaited. It stays the query postgres.js
 * made, so it still works as a fragment inside another statement (fragments are never awaited).
 */
function deferredToScope(query: Pending, run: () => Promise<unknown>): Pending {
  let result: Promise<unknown> | undefined;
  const execute = () => (result ??= run());
  Object.assign(query, {
    // biome-ignore lint/suspicious/noThenProperty: a thenable on purpose, as postgres.js queries are
    then: (resolve?: (value: unknown) => unknown, reject?: (reason: unknown) => unknown) =>
      execute().then(resolve, reject),
    catch: (reject?: (reason: unknown) => unknown) => execute().catch(reject),
    finally: (done?: () => void) => execute().finally(done),
  });
  return query;
}

type BeginArgs =
  | [callback: (sql: postgres.TransactionSql) => unknown]
  | [options: string, callback: (sql: postgres.TransactionSql) => unknown];

/** `sql.begin` as the tenant: the scope is sent first, pipelined with the callback's statements. */
function scopedBegin(
  pool: postgres.Sql,
  base: postgres.Sql,
  organizationId: OrganizationId,
  args: BeginArgs,
): Promise<unknown> {
  const [options, callback] = args.length === 2 ? args : ['', args[0]];
  return base.begin(options, (tx) => {
    poolOfTransaction.set(tx, pool);
    void setScope(tx, organizationId).execute();
    return callback(tx);
  });
}

/**
 * `base` with the tenant boundary: statements and transactions started while a request has named
 * its organization run as the tenant role, scoped to it; all others run as `base` would.
 */
export function withTenantBoundary(
  base: postgres.Sql,
  { reserveTimeoutMs = RESERVE_TIMEOUT_MS }: { reserveTimeoutMs?: number } = {},
): postgres.Sql {
  const begin = (...args: BeginArgs) => {
    const organizationId = scopedOrganization();
    return organizationId === null
      ? base.begin(...(args as [string, (sql: postgres.TransactionSql) => unknown]))
      : scopedBegin(pool, base, organizationId, args);
  };
  const pool: postgres.Sql = new Proxy(base, {
    apply(target, thisArg, args: unknown[]) {
      const made = Reflect.apply(target, thisArg, args) as Pending;
      const organizationId = scopedOrganization();
      if (organizationId === null || !isTemplateCall(args)) return made;
      return deferredToScope(made, () => scopedStatement(base, organizationId, args, reserveTimeoutMs));
    },
    get(target, property, receiver) {
      return property === 'begin' ? begin : Reflect.get(target, property, receiver);
    },
  });
  return pool;
}
