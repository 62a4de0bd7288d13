/**
 * What every API request records, whichever route serves it: its duration in
 * `http_request_duration_seconds` (route template, method, status) and, while tracing is on, a
 * server span `METHOD /route/:template` that continues the caller's `traceparent` and is active
 * while the route runs, so the queries, the workflow starts and the logs of the request join it.
 *
 * It wraps the app's whole handler (Elysia's `wrap`, as @elysiajs/opentelemetry does): hooks run
 * inside the request, but only a wrapper can make a span active around all of it. A request
 * re-entered without its `/api/vN` prefix (src/http/request-policy.ts) is measured once, as the
 * route it reaches.
 */
import { Elysia } from 'elysia';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type TextMapGetter,
} from '@opentelemetry/api';
import type { Config } from '../config';
import { observeHttpRequest } from '../telemetry/metrics';
import { TRACER_NAME, recordSpanError, tracingActive } from '../telemetry/trace-context';
import { isVersionReentry } from './versions';

type Route = { method: string; path: string };
type Handler = (request: Request) => Response | Promise<Response>;

/** The label of a request that reached no route: paths themselves never become labels. */
export const UNMATCHED_ROUTE = 'unmatched';
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** The method as a label: the standard ones, anything else `OTHER`. */
const methodLabel = (method: string) => (METHODS.has(method) ? method : 'OTHER');
const VERSION_PREFIX = /^\/api\/v\d+(?=\/|$)/i;

/**
 * The route template a request reaches (`/api/collections/:id`), from the app's own routes: static
 * routes win over parameterised ones, as in Elysia's router; a path under `/api/vN/` is the route
 * without the prefix.
 */
export function createRouteTemplates(routes: () => readonly Route[]) {
  let compiled: { method: string; path: string; pattern: RegExp; parameters: number }[] | undefined;
  return (method: string, pathname: string): string => {
    compiled ??= routes()
      .map((route) => ({
        method: route.method.toUpperCase(),
        path: route.path,
        pattern: new RegExp(
          `^${route.path
            .replace(/\/+$/, '')
            .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
            .replace(/:[^/]+/g, '[^/]+')}/?$`,
        ),
        parameters: (route.path.match(/:/g) ?? []).length,
      }))
      .sort((a, b) => a.parameters - b.parameters);
    const path = pathname.replace(VERSION_PREFIX, '/api');
    const matching = compiled.filter((route) => route.pattern.test(path));
    const wanted = method === 'HEAD' ? ['HEAD', 'GET'] : [method];
    return (matching.find((route) => wanted.includes(route.method)) ?? matching[0])?.path ?? UNMATCHED_ROUTE;
  };
}

const headerGetter: TextMapGetter<Headers> = {
  get: (headers, key) => headers.get(key) ?? undefined,
  keys: (headers) => [...headers.keys()],
};

async function traced(request: Request, name: string, route: string, handle: Handler): Promise<Response> {
  const parent = propagation.extract(ROOT_CONTEXT, request.headers, headerGetter);
  const span = trace
    .getTracer(TRACER_NAME)
    .startSpan(
      name,
      { kind: SpanKind.SERVER, attributes: { 'http.method': request.method, 'http.route': route } },
      parent,
    );
  try {
    const response = await context.with(trace.setSpan(parent, span), () => handle(request));
    span.setAttribute('http.status_code', response.status);
    if (response.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${response.status}` });
    return response;
  } catch (error) {
    recordSpanError(span, error);
    throw error;
  } finally {
    span.end();
  }
}

export const requestTelemetryPlugin = (config: Config, routes: () => readonly Route[]) => {
  const routeOf = createRouteTemplates(routes);
  const metrics = config.telemetry.metrics;

  async function observe(request: Request, handle: Handler): Promise<Response> {
    const tracing = tracingActive();
    if ((!metrics && !tracing) || isVersionReentry(request)) return await handle(request);
    const started = performance.now();
    const route = routeOf(request.method, new URL(request.url).pathname);
    let status = 500;
    try {
      const response = tracing
        ? await traced(request, `${request.method} ${route}`, route, handle)
        : await handle(request);
      status = response.status;
      return response;
    } finally {
      if (metrics)
        observeHttpRequest(
          { route, method: methodLabel(request.method), status },
          (performance.now() - started) / 1000,
        );
    }
  }

  // Elysia calls the wrapper with its handler and the request, then calls what it returns with the request.
  const wrapper = (handle: Handler) => (request: Request) => observe(request, handle);
  return new Elysia({ name: 'request-telemetry' }).wrap(wrapper as unknown as Parameters<Elysia['wrap']>[0]);
};
