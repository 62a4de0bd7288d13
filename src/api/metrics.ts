/**
 * `GET /metrics`: the API process's Prometheus metrics (src/telemetry/metrics.ts), in the text
 * format, without a key; 404 when METRICS=false. It is text, so the JSON-only Accept rule
 * (406) does not apply to it, and it is neither authenticated nor throttled, like `/healthz`.
 */
import { Elysia } from 'elysia';
import type { Config } from '../config';
import { METRICS_CONTENT_TYPE, metricsText } from '../telemetry/metrics';
import { notFound } from './errors';

export const METRICS_PATH = '/metrics';

export function isMetricsPage(request: Request): boolean {
  const { pathname } = new URL(request.url);
  return pathname === METRICS_PATH || pathname === `${METRICS_PATH}/`;
}

export const metricsRoutes = (config: Config) =>
  new Elysia({ name: 'metrics' }).get(
    METRICS_PATH,
    async () => {
      if (!config.telemetry.metrics) throw notFound();
      return new Response(await metricsText('api'), { headers: { 'Content-Type': METRICS_CONTENT_TYPE } });
    },
    // An operator's endpoint in Prometheus text, not an API operation: not in the OpenAPI document.
    { detail: { hide: true, summary: 'Prometheus metrics of this API process (text format); 404 when METRICS=false' } },
  );
