/**
 * What the rest of the code uses of tracing: the current trace and span ids for logs, attributes
 * on the active span, and client spans around outgoing HTTP calls. Only `@opentelemetry/api` is
 * loaded here; the SDK is set up by `./tracing` when an OTLP endpoint is configured. While tracing
 * is off every helper is one boolean test, then a direct call.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  isSpanContextValid,
  propagation,
  trace,
  type Attributes,
  type Span,
} from '@opentelemetry/api';

export const TRACER_NAME = 'collections';

/** Marks `span` as failed by `error`: the exception recorded on it, its status an error with the message. */
export function recordSpanError(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

let active = false;

/** Set by `startTracing` and its shutdown only. */
export function setTracingActive(on: boolean): void {
  active = on;
}

export function tracingActive(): boolean {
  return active;
}

/** `trace_id` and `span_id` of the active span, for log lines; null when tracing is off or no span is active. */
export function currentTraceIds(): { trace_id: string; span_id: string } | null {
  if (!active) return null;
  const spanContext = trace.getActiveSpan()?.spanContext();
  if (!spanContext || !isSpanContextValid(spanContext)) return null;
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}

/**
 * The W3C `traceparent` of the active span, to keep with what is recorded now and handled later by
 * another process (an event's webhook deliveries); null when tracing is off or no span is active.
 */
export function currentTraceparent(): string | null {
  if (!active || !trace.getActiveSpan()) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/**
 * Runs `run` inside the trace `traceparent` names (kept by `currentTraceparent`), so its spans and log lines join that
 * trace.
 */
export async function inTraceOf<T>(traceparent: string | null, run: () => Promise<T>): Promise<T> {
  if (!active || traceparent === null) return await run();
  return await context.with(propagation.extract(ROOT_CONTEXT, { traceparent }), run);
}

/** Adds attributes to the active span (the API request's span inside a route). */
export function annotateActiveSpan(attributes: Attributes): void {
  if (!active) return;
  trace.getActiveSpan()?.setAttributes(attributes);
}

/** What an outgoing HTTP call came to: a fetch `Response`, or a webhook attempt's status and error. */
type HttpResult = { status: number } | { statusCode: number | null; error: string | null };

/** The URL without its query string or credentials (a target's query may carry secrets). */
function spanUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return 'unparseable URL';
  }
}

/**
 * Runs `send` inside a client span named `name` (`POST webhook`), after writing the W3C
 * `traceparent` of that span into `request.headers` (the object `send` sends), so a receiver that
 * traces can join the trace. A status of 400 or more, or no answer, marks the span as an error.
 */
export async function withClientSpan<T extends HttpResult>(
  name: string,
  request: { method: string; url: string; headers: Record<string, string> },
  send: () => Promise<T>,
): Promise<T> {
  if (!active) return await send();
  const tracer = trace.getTracer(TRACER_NAME);
  const attributes: Attributes = { 'http.method': request.method, 'http.url': spanUrl(request.url) };
  return await tracer.startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    propagation.inject(context.active(), request.headers);
    try {
      const result = await send();
      const status = 'status' in result ? result.status : result.statusCode;
      if (status !== null) span.setAttribute('http.status_code', status);
      if (status === null || status >= 400) {
        const message = 'error' in result && result.error ? result.error : `HTTP ${status ?? 'no answer'}`;
        span.setStatus({ code: SpanStatusCode.ERROR, message });
      }
      return result;
    } catch (error) {
      recordSpanError(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** `fetch` inside a client span (see `withClientSpan`); `init.headers` must be a plain object. */
