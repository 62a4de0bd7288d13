/**
 * The worker's telemetry, set up before anything talks to Temporal: the SDK Runtime (its logger,
 * and the SDK core's forwarded logs, writing the service's JSON lines; its Prometheus exporter for
 * the SDK's own worker metrics),
 * tracing with the SDK's OpenTelemetry interceptors and workflow-span sink, and the worker's
 * metrics port.
 *
 * The worker's `/metrics` (WORKER_METRICS_PORT) serves the service's registry followed by the
 * Temporal SDK's worker metrics (`temporal_*`). The SDK's exporter listens on a loopback port of
 * its own, chosen at start, which `/metrics` reads at each scrape: Prometheus has one target per
 * worker, and the SDK's port is never exposed.
 */
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { ClientInterceptors } from '@temporalio/client';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  makeWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry/lib/worker/index.js';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import { DefaultLogger, Runtime, type InjectedSinks, type WorkerInterceptors } from '@temporalio/worker';
import { bearerAllowed } from '../auth/keys';
import type { TelemetrySettings } from '../config';
import type { Sql } from '../db';
import { logger, sdkLogFunction } from '../log';
import { METRICS_CONTENT_TYPE, collectProcessMetrics, metricsText, setOutboxSource } from './metrics';
import { outboxBacklog } from '../services/platform/outbox';
import { instrumentPostgres } from '../db/tracing';
import { startTracing, temporalClientInterceptors, type Tracing } from './tracing';

const DEFAULT_WORKER_SERVICE_NAME = 'collections-worker';

/** The workflow interceptor modules every workflow bundle includes (the worker's and scripts/bundle-workflows.ts's). */
export const WORKFLOW_INTERCEPTOR_MODULES = [fileURLToPath(new URL('./workflow-interceptors.ts', import.meta.url))];

const SDK_SCRAPE_TIMEOUT_MS = 2000;

type WorkerTelemetry = {
  tracing: Tracing | null;
  /** For the worker's own Temporal client (activities start workflows with it). */
  clientInterceptors: ClientInterceptors | undefined;
  /** Activity interceptors (tracing only); the workflow modules are added by the caller when it bundles. */
  activityInterceptors: NonNullable<WorkerInterceptors['activity']>;
  sinks: InjectedSinks<OpenTelemetrySinks>;
  /** The port `/metrics` listens on, null when off. */
  metricsPort: number | null;
  shutdown(): Promise<void>;
};

function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The SDK exporter's text, or a comment saying why it is missing (the service's own metrics still go out). */
async function sdkMetricsText(sdkPort: number | null): Promise<string> {
  if (sdkPort === null) return '';
  try {
    const response = await fetch(`http://127.0.0.1:${sdkPort}/metrics`, {
      signal: AbortSignal.timeout(SDK_SCRAPE_TIMEOUT_MS),
    });
    if (!response.ok) return `# Temporal SDK metrics unavailable: HTTP ${response.status}\n`;
    return await response.text();
  } catch (error) {
    return `# Temporal SDK metrics unavailable: ${error instanceof Error ? error.message : String(error)}\n`;
  }
}

function serveMetrics(settings: TelemetrySettings, sdkPort: number | null): Promise<Server> {
  const server = createHttpServer((request, response) => {
    if (request.method !== 'GET' || (request.url ?? '/').split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: the worker serves GET /metrics only\n');
      return;
    }
    if (!bearerAllowed(request.headers.authorization, settings.metricsToken)) {
      response
        .writeHead(401, { 'Content-Type': 'text/plain', 'WWW-Authenticate': 'Bearer' })
        .end('unauthorized: send Authorization: Bearer <METRICS_TOKEN>\n');
      return;
    }
    Promise.all([metricsText('worker'), sdkMetricsText(sdkPort)]).then(
      ([own, sdk]) => response.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE }).end(`${own}\n${sdk}`),
      (error: unknown) => {
        logger.error('metrics scrape failed', { error });
        response.writeHead(500, { 'Content-Type': 'text/plain' }).end('metrics scrape failed\n');
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.workerMetricsPort, settings.workerMetricsHost, () => resolve(server));
  });
}

/** Sets up the worker's telemetry; call it first, before any connection to Temporal (the Runtime is installed once). */
export async function startWorkerTelemetry(settings: TelemetrySettings, sql: Sql): Promise<WorkerTelemetry> {
  const metricsOn = settings.metrics && settings.workerMetricsPort > 0;
  const sdkPort = metricsOn ? await freeLoopbackPort() : null;
  Runtime.install({
    logger: new DefaultLogger('INFO', sdkLogFunction),
    telemetryOptions: {
      // The SDK core's own warnings and errors too, as the same JSON lines (the default filter: core WARN, other
      // ERROR).
      logging: { forward: {} },
      ...(sdkPort !== null ? { metrics: { prometheus: { bindAddress: `127.0.0.1:${sdkPort}` } } } : {}),
    },
  });

  const tracing = startTracing(settings, DEFAULT_WORKER_SERVICE_NAME);
  const uninstrumentPostgres = tracing ? instrumentPostgres(sql) : () => {};

  let server: Server | null = null;
  if (metricsOn) {
    collectProcessMetrics('worker');
    setOutboxSource(() => outboxBacklog(sql));
    // A port already taken costs the metrics, not the payments: the worker runs on and says so.
    server = await serveMetrics(settings, sdkPort).catch((error: unknown) => {
      logger.error('worker metrics port unavailable; running without /metrics', {
        port: settings.workerMetricsPort,
        error,
      });
      return null;
    });
  }

  return {
    tracing,
    clientInterceptors: temporalClientInterceptors(tracing),
    activityInterceptors: tracing
      ? [
          (ctx) => ({
            inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
            outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
          }),
        ]
      : [],
    // Registered even with tracing off: a workflow started by a traced API still exports its spans
    // here, and an unregistered sink would be an error per workflow task.
    sinks: {
      exporter: tracing ? makeWorkflowExporter(tracing.spanProcessor, tracing.resource) : { export: { fn: () => {} } },
    },
    metricsPort: server ? (server.address() as AddressInfo).port : null,
    async shutdown() {
      setOutboxSource(null);
      if (server) {
        const closed = new Promise<void>((resolve) => server?.close(() => resolve()));
        server.closeAllConnections(); // a scraper's keep-alive connection would hold close() open
        await closed;
      }
      uninstrumentPostgres();
      await tracing?.shutdown();
    },
  };
}
