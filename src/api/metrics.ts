/**
 * `GET /metrics`: the API process's Prometheus metrics (src/telemetry/metrics.ts), in the text
 * format; 404 when METRICS=false. It shows business totals, so with METRICS_TOKEN set it wants
 * `Authorization: Bearer <token>` (401 otherwise), as Prometheus scrapes with one; outside sandbox
 * mode the configuration does not load without the token, so it is never open there. It takes no
 * API key and is not throttled. It is text, so the JSON-only Accept rule (406) does not apply to it.
 */
import { Elysia } from 'elysia';
import type { Config } from '../config';
import { METRICS_CONTENT_TYPE, metricsText } from '../telemetry/metrics';
import { bearerAllowed } from '../auth/keys';
import { ApiError, notFound } from '../http/errors';

export const METRICS_PATH = '/metrics';

export function isMetricsPage(request: Request): boolean {
  const { pathname } = new URL(request.url);
  return pathname === METRICS_PATH || pathname === `${METRICS_PATH}/`;
}

export const metricsRoutes = (config: Config) =>
  new Elysia({ name: 'metrics' }).get(
    METRICS_PATH,
    async ({ request }) => {
      if (!config.telemetry.metrics) throw notFound();
      if (!bearerAllowed(request.headers.get('authorization'), config.telemetry.metricsToken)) {
        throw new ApiError(401, { detail: 'Invalid token.' }, { 'WWW-Authenticate': 'Bearer' });
      }
      return new Response(await metricsText('api'), { headers: { 'Content-Type': METRICS_CONTENT_TYPE } });
    },
    // An operator's endpoint in Prometheus text, not an API operation: not in the OpenAPI document.
    {
      detail: {
        hide: true,
        summary: [
          'Prometheus metrics of this API process (text format);',
          '404 when METRICS=false, 401 without METRICS_TOKEN when set',
        ].join(' '),
      },
    },
  );
