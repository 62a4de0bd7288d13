import postgres from 'postgres';
import { withTenantBoundary } from './tenancy';

export type Sql = postgres.Sql;
/** What a helper takes when it may run inside `sql.begin` as well as outside it. */
export type Queryable = postgres.ISql | postgres.Sql | postgres.TransactionSql;

/** Runs `work` in a transaction: the caller's when `sql` is one, else a new one. */
export async function inTransaction<T>(sql: Queryable, work: (tx: Queryable) => Promise<T>): Promise<T> {
  return 'begin' in sql ? ((await sql.begin(work)) as T) : await work(sql);
}

/**
 * How long PostgreSQL keeps a session idle inside a transaction before it ends it. Our transactions never wait on
 * anything but their own statements, so a transaction idle this long belongs to a client that vanished: a process
 * killed or a connection given up during a partition, whose end the server never heard. Its row locks would
 * otherwise hold every later writer of those rows (a wallet, a request) until the server's TCP gave up, hours on.
 */
export const IDLE_TRANSACTION_TIMEOUT_MS = 60_000;

/**
 * The process's pool, with the tenant boundary (src/db/tenancy.ts): statements of a request that
 * named its organization run as the tenant role, scoped to it. Each session is opened with its
 * limits (`idleTransactionMs`) and with TCP keepalives on the server's side, so that PostgreSQL
 * ends within about a minute a session whose client is gone, and with it any lock it held (the
 * migration lock is held outside a transaction).
 */
export function createSql(
  databaseUrl: string,
  max = 10,
  {
    taskQueue,
    idleTransactionMs = IDLE_TRANSACTION_TIMEOUT_MS,
  }: { taskQueue?: string; idleTransactionMs?: number } = {},
): Sql {
  return withTenantBoundary(
    postgres(databaseUrl, {
      max,
      connection: {
        idle_in_transaction_session_timeout: String(idleTransactionMs),
        tcp_keepalives_idle: '30',
        tcp_keepalives_interval: '10',
        tcp_keepalives_count: '3',
        // The deployment whose pool sends the webhooks this process makes (migration 026, WEBHOOK_DISPATCH_SCOPE).
        ...(taskQueue === undefined ? {} : { 'collections.task_queue': taskQueue }),
      } as Record<string, string>,
      onnotice: () => {},
      // bigint ids and counts come back as JS numbers: ids stay far below 2^53.
      types: {
        bigint: {
          to: 20,
          from: [20],
          serialize: (value: number) => value.toString(),
          parse: (value: string) => Number(value),
        },
      },
    }),
  );
}

/** postgres.js's own codes for a connection it could not open or lost. */
const CONNECTION_ERROR_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
]);

/**
 * True when `error` (or its cause) says PostgreSQL could not be reached or refused the connection:
 * the server is down or restarting, the database is not accepting connections, the connection
 * was terminated or there are too many. Nothing was decided by such an error, so the API answers
 * 503 and the caller may retry.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth += 1) {
    const code = String((current as { code?: unknown }).code ?? '');
    if (CONNECTION_ERROR_CODES.has(code)) return true;
    // SQLSTATE class 08 (connection exception), 57P01–57P03 (shutdown, cannot connect now), 53300 (too many
    // connections), and 55000 when a database has ALLOW_CONNECTIONS false.
    if (/^08/.test(code) || /^57P0[1-3]$/.test(code) || code === '53300') return true;
    if (code === '55000' && /not currently accepting connections/.test(current.message)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * SQLSTATE classes no retry can fix: 22 data exception (numeric overflow, invalid text), 23
 * integrity constraint violation (a check, a foreign key), 42 syntax error or access rule
 * violation. Connection trouble (class 08 and friends) is transient and stays retryable.
 */
export function isPermanentDatabaseError(error: unknown): boolean {
  if (isDatabaseUnavailable(error)) return false;
  const code = String((error as { code?: unknown } | null)?.code ?? '');
  return /^(22|23|42)[0-9A-Z]{3}$/.test(code);
}

/**
 * postgres.js 3.4.x can write to a connection whose socket it has already dropped: a small write
 * is deferred with `setImmediate`, and when the server ends the connection first (an outage, a
 * terminated backend) the deferred write throws `TypeError: ... socket.write` from the timer,
 * where no caller can catch it (porsager/postgres#1066, #1154, #1208, fix proposed in #1176 and
 * #1209). The fault test's PostgreSQL outage crashed the API with it. The connection has by then
 * been closed and the pool opens a new one for the next query, so the process may live on.
 */
export function isWriteOnClosedConnection(error: unknown): boolean {
  if (!(error instanceof TypeError) || !/socket\.write|reading 'write'/.test(error.message)) return false;
  return (
    /nextWrite/.test(error.stack ?? '') && /postgres[\\/](cjs[\\/])?src[\\/]connection\.js/.test(error.stack ?? '')
  );
}

/**
 * postgres.js 3.4.x asks every new connection for the array types (`fetch_types`) from a promise no caller holds
 * (porsager/postgres#1192, #1205, #1223): when that connection is lost before the answer, the query's rejection is
 * unhandled and the runtime ends the process. A partition healing under load ended the API with it. The connection is
 * closed by then and the pool opens another for the next statement (which asks again), so the process may live on.
 */
export function isArrayTypesQueryFailure(reason: unknown): boolean {
  const query = reason instanceof Error ? (reason as { query?: unknown }).query : undefined;
  return typeof query === 'string' && /select b\.oid, b\.typarray\s+from pg_catalog\.pg_type a\b/.test(query);
}

/**
 * Keeps the process alive through the driver's two faults above, each logged as a warning
 * (`isWriteOnClosedConnection`, `isArrayTypesQueryFailure`), and ends it, as the runtime would, on
 * any other uncaught exception or unhandled rejection. The API and the worker install it at start.
 */
export function surviveDriverFaults(warn: (message: string, fields: Record<string, unknown>) => void): void {
  const end = (what: string, error: unknown): never => {
    process.stderr.write(`${what}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  };
  process.on('uncaughtException', (error) => {
    if (!isWriteOnClosedConnection(error)) end('Uncaught exception', error);
    warn('PostgreSQL connection closed under a pending write; the pool reconnects', { error });
  });
  process.on('unhandledRejection', (reason) => {
    if (!isArrayTypesQueryFailure(reason)) end('Unhandled rejection', reason);
    warn('PostgreSQL connection lost while it asked for the array types; the pool reconnects', { error: reason });
  });
}

/** Whether PostgreSQL answers (readiness): one round trip. */
export async function ping(sql: Sql): Promise<void> {
  await sql`select 1`;
}
