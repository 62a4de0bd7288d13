/**
 * The API process's telemetry, set up by its entry (src/server.ts on Bun, src/server.deno.ts):
 * tracing when an OTLP endpoint is set (PostgreSQL query spans, the Temporal client's
 * interceptors), and the process figures of its `/metrics`. The request span and duration come
 * from the app itself (src/http/request-telemetry.ts).
 */
import type { ClientInterceptors } from '@temporalio/client';
import type { TelemetrySettings } from '../config';
import type { Sql } from '../db';
import { collectProcessMetrics } from './metrics';
import { instrumentPostgres } from '../db/tracing';
import { startTracing, temporalClientInterceptors, type Tracing } from './tracing';

const DEFAULT_API_SERVICE_NAME = 'collections-api';

export type ApiTelemetry = {
  tracing: Tracing | null;
  clientInterceptors: ClientInterceptors | undefined;
  shutdown(): Promise<void>;
};

export function startApiTelemetry(settings: TelemetrySettings, sql: Sql): ApiTelemetry {
  const tracing = startTracing(settings, DEFAULT_API_SERVICE_NAME);
  const uninstrumentPostgres = tracing ? instrumentPostgres(sql) : () => {};
  if (settings.metrics) collectProcessMetrics('api');
  return {
    tracing,
    clientInterceptors: temporalClientInterceptors(tracing),
    async shutdown() {
      uninstrumentPostgres();
      await tracing?.shutdown();
    },
  };
}
