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
import { assertAcceptsJson, assertQueryIsUtf8, createMethodIndex, errorResponse } from './http';
import { documentationRoutes, isDocumentationPage } from './openapi';
import { requestPolicyPlugin } from './request-policy';
import { consoleErrorResponse, consoleRoutes, isConsolePath } from '../console';

const UNREAD_BODY = Object.freeze({});

/** The whole HTTP API, without `.listen()`: Bun, Deno and tests all serve or call this app. */
export function createApp(deps: AppDeps) {
  let routes: () => readonly { method: string; path: string }[] = () => [];
  const allowedMethods = createMethodIndex(() => routes());
  let handle: (request: Request) => Promise<Response> = () => Promise.reject(new Error('app not built yet'));
  const app = new Elysia()
    .use(requestTelemetryPlugin(deps.config, () => routes()))
    .onRequest(({ request }) => {
      // The docs page and the console are HTML and /metrics is Prometheus text: the JSON-only Accept rule skips them.
      if (!isDocumentationPage(request) && !isConsolePath(request) && !isMetricsPage(request)) assertAcceptsJson(request);
      assertQueryIsUtf8(request);
    })
    // Elysia's own parser would read any body in full before a route runs, whatever its size; a
    // route that takes a body reads it itself with parseRequestBody (counted as it streams, 413
    // past the limit, strict UTF-8), and every other route never reads one.
    .onParse({ as: 'global' }, () => UNREAD_BODY)
    .use(requestPolicyPlugin(deps, (request) => handle(request)))
    .onError(({ code, error, request }) =>
      isConsolePath(request)
        ? consoleErrorResponse(code, error, request, allowedMethods)
        : inBillsEnvelope(request, errorResponse(code, error, request, allowedMethods)))
    .use(healthRoutes(deps))
    .use(metricsRoutes(deps.config))
    .use(contactRoutes(deps))
    .use(eventRoutes(deps))
    .use(collectionRequestRoutes(deps))
    .use(collectionRoutes(deps))
    .use(networkCallbackRoutes(deps))
    .use(webhookRoutes(deps))
    .use(billRoutes(deps))
    .use(documentationRoutes(deps.config))
    .use(consoleRoutes(deps));
  routes = () => app.routes;
  handle = (request) => app.handle(request);
  return app;
}
export type App = ReturnType<typeof createApp>;
