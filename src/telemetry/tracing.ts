/**
 * OpenTelemetry tracing for the API and the worker: a tracer provider exporting over OTLP/HTTP
 * (JSON bodies, batched) when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. Without it nothing is
 * registered and no span is ever made: `startTracing` returns null and every helper of
 * `./trace-context` is a direct call.
 *
 * Also here: the Temporal client interceptors that carry the context into `workflow.start`, and
 * one span per PostgreSQL query.
 */
import { SpanKind, context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ClientInterceptors } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client/index.js';
import type { TelemetrySettings } from '../config';
import type { Sql } from '../db';
import { TRACER_NAME, recordSpanError, setTracingActive, tracingActive } from './trace-context';

export type Tracing = {
  /** `service.name` and the rest, for the worker's workflow-span sink. */
  resource: Resource;
  /** The batch processor every span of the process goes through (the worker's sink feeds it too). */
  spanProcessor: SpanProcessor;
  forceFlush(): Promise<void>;
  /** Exports what is pending, then unregisters everything (tests start and stop tracing in one process). */
  shutdown(): Promise<void>;
};

/** Registers the process-wide tracer provider when an endpoint is configured; null (and nothing registered) otherwise. */
export function startTracing(settings: Pick<TelemetrySettings, 'otlpEndpoint' | 'serviceName'>, defaultServiceName: string): Tracing | null {
  if (settings.otlpEndpoint === undefined) return null;
  const resource = new Resource({ 'service.name': settings.serviceName ?? defaultServiceName });
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter({ url: `${settings.otlpEndpoint}/v1/traces` }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  provider.register({ contextManager, propagator: new W3CTraceContextPropagator() });
  setTracingActive(true);
  return {
    resource,
    spanProcessor,
    forceFlush: () => provider.forceFlush(),
    async shutdown() {
      setTracingActive(false);
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** Client interceptors for a Temporal client: `workflow.start` and signals carry the active trace (none when tracing is off). */
export function temporalClientInterceptors(tracing: Tracing | null): ClientInterceptors | undefined {
  return tracing ? { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } : undefined;
}

// PostgreSQL: postgres.js has no hooks around a query, so the one method every query goes through
// when it starts (`Query.prototype.handle`, on the class of the queries `sql` makes) is wrapped
// while tracing is on. Parameters are never recorded; the statement is cut to its first characters.

export const DB_STATEMENT_MAX_LENGTH = 1000;

type PostgresQuery = Promise<unknown> & { strings: readonly string[]; string?: string; executed: boolean; handle(): Promise<void> };

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
  Promise.prototype.then.call(query, () => end(), (error: unknown) => end(error ?? 'query failed'));
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
