/**
 * The composition: the process's dependencies, and the HTTP app that serves the REST API and the
 * web console, two interfaces over the same use cases (src/services), under one request pipeline
 * (telemetry, content negotiation, body and query reading, the request policy, authentication,
 * errors). Bun (src/server.ts), Deno (src/server.deno.ts) and the tests serve or call this app.
 */
import { Elysia } from 'elysia';
import type { Config } from './config';
import { createSql } from './db';
import { withRequestScope } from './db/tenancy';
import { apiErrorResponse, apiRoutes, isNonJsonApiPage } from './api';
import { consoleErrorResponse, consoleRoutes, isConsolePath } from './console';
import { apiAuthentication } from './http/auth';
import type { AppDeps } from './http/context';
import { queryObject } from './http/filters';
import {
  assertAcceptsJson,
  assertQueryIsUtf8,
  bodyOptionsFor,
  createMethodIndex,
  createRouteIndex,
  routeBody,
} from './http/request';
import { requestPolicyPlugin } from './http/request-policy';
import { requestTelemetryPlugin } from './http/request-telemetry';
import { requestUrlPlugin } from './http/request-url';
import { responseHeadersPlugin } from './http/response-headers';
import { logger } from './log';
import type { NetworkAdapter } from './network/adapter';
import { createNetworks } from './network/connections';
import { startApiTelemetry, type ApiTelemetry } from './telemetry/api';
import { createLazyClient } from './temporal/connection';
import { launcherFromConfig } from './temporal/launcher';

/** What a process hands `createApp`: the networks are built from the configuration when not given. */
type AppInputs = Omit<AppDeps, 'networks'> & { networks?: NetworkAdapter };

/**
 * The dependencies of an API process (Bun or Deno): a database pool, its telemetry (traced queries
 * and Temporal calls when tracing is on), a lazily connected Temporal client, the launcher.
 */
export function createAppDeps(config: Config): AppInputs & { telemetry: ApiTelemetry } {
  const sql = createSql(config.databaseUrl, config.databasePoolSize, { taskQueue: config.temporal.taskQueue });
  const telemetry = startApiTelemetry(config.telemetry, sql);
  const temporal = createLazyClient(config.temporal, telemetry.clientInterceptors);
  return {
    config,
    sql,
    temporal,
    launcher: launcherFromConfig(temporal, config, (message, fields) => logger.warn(message, fields)),
    telemetry,
  };
}

const UNREAD_BODY = Object.freeze({});

/** The whole HTTP app, without `.listen()`. */
export function createApp(given: AppInputs) {
  const deps: AppDeps = { ...given, networks: given.networks ?? createNetworks(given.config, given.sql) };
  let routes: () => readonly { method: string; path: string }[] = () => [];
  const allowedMethods = createMethodIndex(() => routes());
  const declared = createRouteIndex(() => routes());
  let handle: (request: Request) => Promise<Response> = () => Promise.reject(new Error('app not built yet'));
  const app = new Elysia()
    // Each request in a scope of its own, in which its admission names its organization: from then
    // on its statements run inside the tenant boundary (src/db/tenancy.ts).
    .wrap(
      ((handler: (request: Request) => Promise<Response>) => (request: Request) =>
        withRequestScope(() => handler(request), deps.config.temporal.taskQueue)) as unknown as Parameters<
        Elysia['wrap']
      >[0],
    )
    .use(requestTelemetryPlugin(deps.config, () => routes()))
    .use(responseHeadersPlugin())
    .onRequest(({ request }) => {
      // The console and the docs page are HTML and /metrics is Prometheus text: the JSON-only Accept rule skips them.
      if (!isConsolePath(request) && !isNonJsonApiPage(request)) assertAcceptsJson(request);
      assertQueryIsUtf8(request);
    })
    // Elysia's own parser would read any body in full before a route runs, whatever its size: a
    // route that declares a `body` gets it from routeBody (counted as it streams, 413 past
    // the limit, strict UTF-8, JSON depth, nested form keys), then Elysia validates it against the
    // declaration; every other route never reads one.
    .onParse({ as: 'global' }, async ({ request, route }) =>
      declared.takesBody(request.method, route)
        ? await routeBody(request, bodyOptionsFor(request.method, route))
        : UNREAD_BODY,
    )
    // A route that declares a `query` validates the query string as a flat object (the last value of
    // a repeated key wins; text PostgreSQL cannot store is a 400), not as Elysia parses it.
    .onTransform({ as: 'global' }, (context) => {
      if (declared.readsQuery(context.request.method, context.route))
        context.query = queryObject(new URL(context.request.url).searchParams);
    })
    .use(requestPolicyPlugin(deps, (request) => handle(request)))
    .use(apiAuthentication(deps.sql))
    .onError(({ code, error, request }) =>
      isConsolePath(request)
        ? consoleErrorResponse(code, error, request, allowedMethods)
        : apiErrorResponse(code, error, request, allowedMethods),
    )
    .use(apiRoutes(deps, () => routes().filter((route) => !isConsolePath(route.path))))
    .use(consoleRoutes(deps))
    // Registered last, so outermost: a request without a URL the pipeline can read is a 400 before any of it runs.
    .use(requestUrlPlugin());
  routes = () => app.routes;
  handle = (request) => app.handle(request);
  return app;
}
