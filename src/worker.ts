/** The worker process (Node 20 by default; also runs on Bun): workflows and activities. */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from './activities';
import { loadConfig, type Config } from './config';
import { createSql, surviveWritesOnClosedConnections, type Sql } from './db';
import { logger } from './log';
import { createConnectors, createNetworks } from './network/connections';
import { WORKFLOW_INTERCEPTOR_MODULES, startWorkerTelemetry } from './telemetry/worker';
import { connectClient } from './temporal/connection';
import { launcherFromConfig } from './temporal/launcher';
import { ensureEventRetentionSchedule, ensureOutboxSweepSchedule } from './temporal/schedules';

async function runWorker(): Promise<void> {
  surviveWritesOnClosedConnections(logger.warn);
  const config = loadConfig();
  const sql = createSql(config.databaseUrl, config.databasePoolSize);
  // First: the SDK's Runtime (logger, metrics exporter) is installed once, before any connection.
  const telemetry = await startWorkerTelemetry(config.telemetry, sql);
  const { address, namespace, taskQueue } = config.temporal;
  const connection = await NativeConnection.connect({ address });
  const client = await connectClient(config.temporal, telemetry.clientInterceptors);
  const launcher = launcherFromConfig(client, config, (message, fields) => logger.warn(message, fields));
  // A prebuilt bundle was made with the interceptor modules (scripts/bundle-workflows.ts).
  const workflowSource: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> = config.workflowBundlePath
    ? { workflowBundle: { codePath: config.workflowBundlePath } }
    : { workflowsPath: fileURLToPath(new URL('./workflows/index.ts', import.meta.url)) };
  try {
    const worker = await Worker.create({
      connection,
      namespace,
      taskQueue,
      ...workflowSource,
      interceptors: {
        activity: telemetry.activityInterceptors,
        ...(config.workflowBundlePath ? {} : { workflowModules: WORKFLOW_INTERCEPTOR_MODULES }),
      },
      sinks: telemetry.sinks,
      activities: createActivities({
        sql,
        launcher,
        sandbox: config.sandbox,
        webhooks: config.webhooks,
        network: createNetworks(config, sql, launcher),
      }),
      // A bounded sticky cache keeps memory flat under load; an evicted workflow is replayed when it wakes.
      maxCachedWorkflows: config.worker.maxCachedWorkflows,
    });
    if (config.outbox.sweepEnabled) {
      await ensureOutboxSweepSchedule(client, {
        taskQueue,
        intervalSeconds: config.outbox.sweepIntervalSeconds,
        graceSeconds: config.outbox.graceSeconds,
      });
    }
    if (config.retention.sweepEnabled) {
      await ensureEventRetentionSchedule(client, {
        taskQueue,
        intervalSeconds: config.retention.sweepIntervalSeconds,
        retentionDays: config.retention.days,
        auditRetentionDays: config.retention.auditDays,
      });
    }
    if (config.mpesa?.registerUrlsAtStart) void registerPaybillUrls(config, sql);
    // The SDK's runtime turns SIGINT/SIGTERM into a graceful shutdown of run().
    await worker.run();
  } finally {
    await connection.close();
    await client.connection.close();
    await telemetry.shutdown();
    await sql.end({ timeout: 5 });
  }
}

/**
 * Registers the paybill's validation and confirmation URLs with Daraja (idempotent; production
 * Daraja takes one registration, so a refusal of a repeat is only logged). It never stops the worker.
 */
async function registerPaybillUrls(config: Config, sql: Sql): Promise<void> {
  try {
    const outcome = await createConnectors(config, sql).daraja!.registerUrls();
    if (outcome.registered) logger.info('paybill URLs registered with Daraja', { detail: outcome.detail });
    else logger.warn('Daraja did not register the paybill URLs (a production shortcode takes one registration)', { detail: outcome.detail });
  } catch (error) {
    logger.warn('paybill URLs not registered: Daraja did not answer', { error });
  }
}

runWorker().catch((error: unknown) => {
  logger.error('worker failed', { error });
  process.exit(1);
});
