import { Elysia } from 'elysia';
import { collectionRequestRoutes } from './collection-requests';
import { collectionRoutes } from './collections';
import { networkCallbackRoutes } from './network-callbacks';
import { billRoutes, inBillsEnvelope } from './bills';
import { contactRoutes } from './contacts';
import type { AppDeps } from './context';
import { eventRoutes } from './events';
import { healthRoutes } from './health';
import { webhookRoutes } from './webhooks';
import { apiAuthentication } from './auth';
import { queryObject } from './filters';
import { assertAcceptsJson, assertQueryIsUtf8, createMethodIndex, createRouteIndex, errorResponse, parseRequestBody } from './http';
import { documentationRoutes, isDocumentationPage } from './openapi';
import { requestPolicyPlugin } from './request-policy';

const UNREAD_BODY = Object.freeze({});

/** The whole HTTP API, without `.listen()`: Bun, Deno and tests all serve or call this app. */
export function createApp(deps: AppDeps) {
  let routes: () => readonly { method: string; path: string }[] = () => [];
  const allowedMethods = createMethodIndex(() => routes());
  const declared = createRouteIndex(() => routes());
  let handle: (request: Request) => Promise<Response> = () => Promise.reject(new Error('app not built yet'));
  const app = new Elysia()
    .onRequest(({ request }) => {
      if (!isDocumentationPage(request)) assertAcceptsJson(request);
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
    .onError(({ code, error, request }) => inBillsEnvelope(request, errorResponse(code, error, request, allowedMethods)))
    .use(healthRoutes(deps))
    .use(contactRoutes(deps))
    .use(eventRoutes(deps))
    .use(collectionRequestRoutes(deps))
    .use(collectionRoutes(deps))
    .use(networkCallbackRoutes(deps))
    .use(webhookRoutes(deps))
    .use(billRoutes(deps))
    .use(documentationRoutes(deps.config, () => routes()));
  routes = () => app.routes;
  handle = (request) => app.handle(request);
  return app;
}
export type App = ReturnType<typeof createApp>;
