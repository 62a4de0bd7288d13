/**
 * OpenTelemetry tracing for the API and the worker: a tracer provider exporting over OTLP/HTTP
 * (JSON bodies, batched) when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. Without it nothing is
 * registered and no span is ever made: `startTracing` returns null and every helper of
 * `./trace-context` is a direct call.
 *
 * Also here: the Temporal client interceptors that carry the context into `workflow.start`. The
 * span of each PostgreSQL query is made in src/db/tracing.ts.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ClientInterceptors } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client/index.js';
import type { TelemetrySettings } from '../config';
import { setTracingActive } from './trace-context';

export type Tracing = {
  /** `service.name` and the rest, for the worker's workflow-span sink. */
  resource: Resource;
  /** The batch processor every span of the process goes through (the worker's sink feeds it too). */
  spanProcessor: SpanProcessor;
  forceFlush(): Promise<void>;
  /** Exports what is pending, then unregisters everything (tests start and stop tracing in one process). */
  shutdown(): Promise<void>;
};

/**
 * Registers the process-wide tracer provider when an endpoint is configured; null (and nothing registered) otherwise.
 */
export function startTracing(
  settings: Pick<TelemetrySettings, 'otlpEndpoint' | 'serviceName'>,
  defaultServiceName: string,
): Tracing | null {
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

/**
 * Client interceptors for a Temporal client: `workflow.start` and signals carry the active trace (none when tracing is
 * off).
 */
export function temporalClientInterceptors(tracing: Tracing | null): ClientInterceptors | undefined {
  return tracing ? { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } : undefined;
}
