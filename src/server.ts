/** The API process (Bun): serves the app on PORT until SIGINT/SIGTERM. */
import { createApp, createAppDeps } from './app';
import { loadConfig } from './config';
import { logger } from './log';
import { surviveWritesOnClosedConnections } from './db';

surviveWritesOnClosedConnections(logger.warn);
const config = loadConfig();
const deps = createAppDeps(config);
const { sql, temporal, telemetry } = deps;
const app = createApp(deps).listen({ port: config.port, hostname: '0.0.0.0' });
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
