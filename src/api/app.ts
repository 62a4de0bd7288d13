import { Elysia } from 'elysia';
import { collectionRequestRoutes } from './collection-requests';
import { collectionRoutes } from './collections';
import { networkCallbackRoutes } from './network-callbacks';
import { operatorCallbackRoutes } from './operator-callbacks';
import { billRoutes, inBillsEnvelope } from './bills';
import { contactRoutes } from './contacts';
import type { AppDeps, AppInputs } from '../http/context';
import { eventRoutes } from './events';
import { healthRoutes } from './health';
import { isMetricsPage, metricsRoutes } from './metrics';
import { requestTelemetryPlugin } from '../http/request-telemetry';
import { webhookRoutes } from './webhooks';
import { paymentRoutes } from './payments';
import { reversalRoutes } from './reversals';
import { accountRoutes, transactionRoutes } from './wallets';
import { catalogRoutes } from './catalog';
import { apiAuthentication } from '../http/auth';
import { queryObject } from '../http/filters';
import { assertAcceptsJson, assertQueryIsUtf8, createMethodIndex, createRouteIndex, errorResponse, parseRequestBody } from '../http/request';
import { documentationRoutes, isDocumentationPage } from './openapi';
import { requestPolicyPlugin } from '../http/request-policy';
import { consoleErrorResponse, consoleRoutes, isConsolePath } from '../console';
import { createNetworks } from '../network/connections';

const UNREAD_BODY = Object.freeze({});

/** The whole HTTP API, without `.listen()`: Bun, Deno and tests all serve or call this app. */
export function createApp(given: AppInputs) {
  const deps: AppDeps = { ...given, networks: given.networks ?? createNetworks(given.config, given.sql, given.launcher) };
  let routes: () => readonly { method: string; path: string }[] = () => [];
  const allowedMethods = createMethodIndex(() => routes());
  const declared = createRouteIndex(() => routes());
  let handle: (request: Request) => Promise<Response> = () => Promise.reject(new Error('app not built yet'));
  const app = new Elysia()
    .use(requestTelemetryPlugin(deps.config, () => routes()))
    .onRequest(({ request }) => {
      // The docs page and the console are HTML and /metrics is Prometheus text: the JSON-only Accept rule skips them.
      if (!isDocumentationPage(request) && !isConsolePath(request) && !isMetricsPage(request)) assertAcceptsJson(request);
      assertQueryIsUtf8(request);
    })
    // Elysia's own parser would read any body in full before a route runs, whatever its size: a
    // route that declares a `body` gets it from parseRequestBody (counted as it streams, 413 past
    // the limit, strict UTF-8, JSON depth, nested form keys), then Elysia validates it against the
    // declaration; every other route never reads one.
    .onParse({ as: 'global' }, async ({ request, route }) =>
      declared.takesBody(request.method, route) ? await parseRequestBody(request) : UNREAD_BODY)
    // A route that declares a `query` validates the query string as a flat object (the last value of
    // a repeated key wins; text PostgreSQL cannot store is a 400), not as Elysia parses it.
    .onTransform({ as: 'global' }, (context) => {
      if (declared.readsQuery(context.request.method, context.route)) context.query = queryObject(new URL(context.request.url).searchParams);
    })
    .use(requestPolicyPlugin(deps, (request) => handle(request)))
    .use(apiAuthentication(deps.sql))
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
    .use(operatorCallbackRoutes(deps))
    .use(webhookRoutes(deps))
    .use(billRoutes(deps))
    .use(paymentRoutes(deps))
    .use(reversalRoutes(deps))
    .use(accountRoutes(deps))
    .use(transactionRoutes(deps))
    .use(catalogRoutes(deps))
    .use(documentationRoutes(deps.config, () => routes()))
    .use(consoleRoutes(deps));
  routes = () => app.routes;
  handle = (request) => app.handle(request);
  return app;
}
export type App = ReturnType<typeof createApp>;
