/**
 * One OpenTelemetry client span per PostgreSQL query, while tracing is on (telemetry/tracing.ts).
 */
import { SpanKind, trace } from '@opentelemetry/api';
import { TRACER_NAME, recordSpanError, tracingActive } from '../telemetry/trace-context';
import type { Sql } from './index';

// PostgreSQL: postgres.js has no hooks around a query, so the one method every query goes through
// when it starts (`Query.prototype.handle`, on the class of the queries `sql` makes) is wrapped
// while tracing is on. Parameters are never recorded; the statement is cut to its first characters.

const DB_STATEMENT_MAX_LENGTH = 1000;

type PostgresQuery = Promise<unknown> & {
  strings: readonly string[];
  string?: string;
  executed: boolean;
  handle(): Promise<void>;
};

const instrumented = new WeakSet<object>();

function operationOf(query: PostgresQuery): string {
  return /^\s*([a-z]+)/i.exec(query.strings[0] ?? '')?.[1]?.toUpperCase() ?? 'QUERY';
}

function traceQuery(query: PostgresQuery, database: string): void {
  const operation = operationOf(query);
  const span = trace.getTracer(TRACER_NAME).startSpan(`${operation} ${database}`, {
    kind: SpanKind.CLIENT,
    attributes: { 'db.system': 'postgresql', 'db.name': database, 'db.operation': operation },
  });
  const end = (error?: unknown) => {
    span.setAttribute('db.statement', (query.string ?? query.strings.join('?')).slice(0, DB_STATEMENT_MAX_LENGTH));
    if (error !== undefined) {
      recordSpanError(span, error);
    }
    span.end();
  };
  // Promise's own `then`: the query's `then` would start it again.
  Promise.prototype.then.call(
    query,
    () => end(),
    (error: unknown) => end(error ?? 'query failed'),
  );
}

/**
 * One client span per query run through `sql` (and its transactions), child of the active span.
 * Returns the undo. Only call it with tracing on: the wrapped method checks nothing else.
 */
export function instrumentPostgres(sql: Sql): () => void {
  const probe = sql`select 1` as unknown as PostgresQuery; // never awaited, so never sent
  const prototype = Object.getPrototypeOf(probe) as PostgresQuery;
  if (instrumented.has(prototype)) return () => {};
  const database = String(sql.options.database ?? 'postgres');
  const originalHandle = prototype.handle;
  prototype.handle = function handle(this: PostgresQuery) {
    if (!this.executed && tracingActive()) traceQuery(this, database);
    return originalHandle.call(this);
  };
  instrumented.add(prototype);
  return () => {
    prototype.handle = originalHandle;
    instrumented.delete(prototype);
  };
}
