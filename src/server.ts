/** The API process (Bun): serves the app on PORT until SIGINT/SIGTERM. */
import { createApp, createAppDeps } from './app';
import { loadConfig } from './config';
import { logger } from './log';
import { surviveWritesOnClosedConnections } from './db';
import { jsonResponse } from './http/request';

surviveWritesOnClosedConnections(logger.warn);
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

// Elysia's `listen` passes these options to Bun.serve over its own defaults, among them
// `development: NODE_ENV !== 'production'`: development mode (Bun's error page, with the working
// directory, stack frames and source lines) only when API_DEVELOPMENT_MODE=true.
const app = createApp(deps).listen({
  port: config.port,
  hostname: '0.0.0.0',
  development: config.developmentMode,
  error: serverError,
});
logger.info('API listening', { port: app.server?.port, taskQueue: config.temporal.taskQueue });

let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info('API stopping', { signal });
  await app.stop();
  await Promise.allSettled([sql.end({ timeout: 5 }), temporal.connection.close(), telemetry.shutdown()]);
  process.exit(0);
}
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
