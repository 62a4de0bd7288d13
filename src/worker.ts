/** The worker process (Node 20 by default; also runs on Bun): workflows and activities. */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from './activities';
import { loadConfig } from './config';
import { createSql, surviveWritesOnClosedConnections } from './db';
import { logger } from './log';
import { createSandboxNetwork } from './network/sandbox';
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
        network: createSandboxNetwork({
          sql, launcher, paymentDelaySeconds: config.collectionRequests.sandboxPaymentDelaySeconds, payoutDelaySeconds: config.payouts.sandboxDelaySeconds,
        }),
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
      });
    }
    // The SDK's runtime turns SIGINT/SIGTERM into a graceful shutdown of run().
    await worker.run();
  } finally {
    await connection.close();
    await client.connection.close();
    await telemetry.shutdown();
    await sql.end({ timeout: 5 });
  }
}

runWorker().catch((error: unknown) => {
  logger.error('worker failed', { error });
  process.exit(1);
});
