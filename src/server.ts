/** The API process (Bun): serves the app on PORT until SIGINT/SIGTERM. */
import { startDraining } from './api/health';
import { createApp, createAppDeps } from './app';
import { loadConfig } from './config';
import { logger } from './log';
import { surviveDriverFaults } from './db';
import { jsonResponse } from './http/request';

surviveDriverFaults(logger.warn);
const config = loadConfig();
const deps = createAppDeps(config);
const { sql, temporal, telemetry } = deps;
/**
 * What Bun answers when an error escapes the app's own handling (src/http/request.ts answers every
 * error a route or hook throws): the API's error body, never a stack. The error is logged here.
 */
function serverError(error: Error): Response {
  logger.error('unhandled server error', { error });
  return jsonResponse(
    500,
    { detail: 'A server error occurred.' },
    { 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' },
  );
}

/**
 * Every request is answered within API_REQUEST_TIMEOUT_SECONDS: past it, 503 with Retry-After and
 * the same advice as for a database out of reach (look up a write before repeating it), while the
 * work goes on to its end (a query may still commit). On several hosts a node cut from PostgreSQL
 * would otherwise hold a merchant's request until its TCP connection gave up, minutes later
 * (docs/operations.md, Several hosts).
 */
function withDeadline(answer: Promise<Response> | Response, request: Request): Promise<Response> | Response {
  if (answer instanceof Response) return answer;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<Response>((resolve) => {
    timer = setTimeout(() => {
      logger.warn('request not answered in time', {
        method: request.method,
        path: new URL(request.url).pathname,
        timeoutSeconds: config.requestTimeoutSeconds,
      });
      resolve(
        jsonResponse(
          503,
          { detail: 'The service is temporarily unavailable. Try again shortly.' },
          { 'Retry-After': '5' },
        ),
      );
    }, config.requestTimeoutSeconds * 1000);
  });
  answer.catch(() => {});
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}

// Elysia's `listen` passes these options to Bun.serve over its own defaults, among them
// `development: NODE_ENV !== 'production'`: development mode (Bun's error page, with the working
// directory, stack frames and source lines) only when API_DEVELOPMENT_MODE=true.
const app = createApp(deps)
  // Around every route (Elysia's higher-order functions apply to Bun's native routes too).
  .wrap(
    (handle, request) =>
      (...args: unknown[]) =>
        withDeadline((handle as unknown as (...args: unknown[]) => Promise<Response> | Response)(...args), request),
  )
  .listen({
    port: config.port,
    hostname: '0.0.0.0',
    development: config.developmentMode,
    error: serverError,
  });
logger.info('API listening', { port: app.server?.port, taskQueue: config.temporal.taskQueue });

let stopping = false;
/**
 * SIGTERM: readiness fails at once (the load balancer takes the node out), requests are still
 * served for API_DRAIN_SECONDS, then the port closes once the requests in flight are answered.
 */
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info('API stopping', { signal, drainSeconds: config.drainSeconds });
  startDraining();
  await new Promise((resolve) => setTimeout(resolve, config.drainSeconds * 1000));
  await app.stop();
  await Promise.allSettled([sql.end({ timeout: 5 }), temporal.connection.close(), telemetry.shutdown()]);
  process.exit(0);
}
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
