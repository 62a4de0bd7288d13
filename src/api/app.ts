import { Elysia } from 'elysia';
import { collectionRequestRoutes } from './collection-requests';
import { collectionRoutes } from './collections';
import { networkCallbackRoutes } from './network-callbacks';
import { billRoutes, inBillsEnvelope } from './bills';
import { contactRoutes } from './contacts';
import type { AppDeps } from './context';
import { eventRoutes } from './events';
import { healthRoutes } from './health';
import { isMetricsPage, metricsRoutes } from './metrics';
import { requestTelemetryPlugin } from './request-telemetry';
import { webhookRoutes } from './webhooks';
import { assertAcceptsJson, createMethodIndex, errorResponse } from './http';
import { documentationRoutes, isDocumentationPage } from './openapi';
import { requestPolicyPlugin } from './request-policy';

/** The whole HTTP API, without `.listen()`: Bun, Deno and tests all serve or call this app. */
export function createApp(deps: AppDeps) {
  let routes: () => readonly { method: string; path: string }[] = () => [];
  const allowedMethods = createMethodIndex(() => routes());
  let handle: (request: Request) => Promise<Response> = () => Promise.reject(new Error('app not built yet'));
  const app = new Elysia()
    .use(requestTelemetryPlugin(deps.config, () => routes()))
    .onRequest(({ request }) => {
      // The docs page is HTML and /metrics is Prometheus text: the JSON-only Accept rule skips them.
      if (!isDocumentationPage(request) && !isMetricsPage(request)) assertAcceptsJson(request);
    })
    .use(requestPolicyPlugin(deps, (request) => handle(request)))
    .onError(({ code, error, request }) => inBillsEnvelope(request, errorResponse(code, error, request, allowedMethods)))
    .use(healthRoutes(deps))
    .use(metricsRoutes(deps.config))
    .use(contactRoutes(deps))
    .use(eventRoutes(deps))
    .use(collectionRequestRoutes(deps))
    .use(collectionRoutes(deps))
    .use(networkCallbackRoutes(deps))
    .use(webhookRoutes(deps))
    .use(billRoutes(deps))
    .use(documentationRoutes(deps.config));
  routes = () => app.routes;
  handle = (request) => app.handle(request);
  return app;
}
export type App = ReturnType<typeof createApp>;
