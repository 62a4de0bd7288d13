import { Elysia } from 'elysia';
import { contactRoutes } from './contacts';
import type { AppDeps } from './context';
import { eventRoutes } from './events';
import { healthRoutes } from './health';
import { webhookRoutes } from './webhooks';
import { assertAcceptsJson, createMethodIndex, errorResponse } from './http';

/** The whole HTTP API, without `.listen()`: Bun, Deno and tests all serve or call this app. */
export function createApp(deps: AppDeps) {
  let routes: () => readonly { method: string; path: string }[] = () => [];
  const allowedMethods = createMethodIndex(() => routes());
  const app = new Elysia()
    .onRequest(({ request }) => {
      assertAcceptsJson(request);
    })
    .onError(({ code, error, request }) => errorResponse(code, error, request, allowedMethods))
    .use(healthRoutes(deps))
    .use(contactRoutes(deps))
    .use(eventRoutes(deps))
    .use(webhookRoutes(deps));
  routes = () => app.routes;
  return app;
}
export type App = ReturnType<typeof createApp>;
