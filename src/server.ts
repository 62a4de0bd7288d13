/** The API process (Bun): serves the app on PORT until SIGINT/SIGTERM. */
import { createApp } from './api/app';
import { loadConfig } from './config';
import { createSql } from './db';
import { logger } from './log';
import { startApiTelemetry } from './telemetry/api';
import { createLazyClient } from './temporal/connection';
import { createEventDispatcher } from './temporal/events';

const config = loadConfig();
const sql = createSql(config.databaseUrl, config.databasePoolSize);
const telemetry = startApiTelemetry(config.telemetry, sql);
const temporal = createLazyClient(config.temporal, telemetry.clientInterceptors);
const dispatchEvents = createEventDispatcher(temporal, config.temporal.taskQueue, (error, eventId) =>
  logger.warn('event dispatch deferred to the outbox sweep', { eventId, error }),
);
const app = createApp({ config, sql, temporal, dispatchEvents }).listen({ port: config.port, hostname: '0.0.0.0' });
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
