/** The worker process (Node 20 by default; also runs on Bun): workflows and activities. */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities, senderActivities } from './activities';
import { loadConfig, type Config } from './config';
import { createSql, surviveDriverFaults } from './db';
import { logger } from './log';
import { createConnectors, createNetworks } from './network/connections';
import { watchAvailability } from './network/availability';
import { configuredRoutes } from './network/registry';
import { createRouteHealth, routeViews } from './services/networks/route-health';
import { countRouteOutcome, setRouteStateSource } from './telemetry/metrics';
import { WORKFLOW_INTERCEPTOR_MODULES, startWorkerTelemetry } from './telemetry/worker';
import { createLazyClient } from './temporal/connection';
import { launcherFromConfig } from './temporal/launcher';
import type { Launcher } from './services/platform/ports';
import { keepSchedules } from './temporal/schedules';
import {
  StoppedBeforeStart,
  allOf,
  runUntilShutdown,
  untilTemporalAnswers,
  withReleases,
} from './temporal/worker-lifecycle';
import { webhookSenderTaskQueue } from './contracts/webhook-dispatcher';

type WorkerTelemetry = Awaited<ReturnType<typeof startWorkerTelemetry>>;

type Activities = ReturnType<typeof createActivities>;

/** The worker's options: its workflows (a prebuilt bundle or src/workflows), activities and interceptors. */
function workerOptions(
  config: Config,
  connection: NativeConnection,
  activities: Activities,
  telemetry: WorkerTelemetry,
): WorkerOptions {
  // A prebuilt bundle was made with the interceptor modules (scripts/bundle-workflows.ts).
  const workflowSource: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> = config.workflowBundlePath
    ? { workflowBundle: { codePath: config.workflowBundlePath } }
    : { workflowsPath: fileURLToPath(new URL('./workflows/index.ts', import.meta.url)) };
  return {
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    ...workflowSource,
    interceptors: {
      activity: telemetry.activityInterceptors,
      ...(config.workflowBundlePath ? {} : { workflowModules: WORKFLOW_INTERCEPTOR_MODULES }),
    },
    sinks: telemetry.sinks,
    activities,
    // A bounded sticky cache keeps memory flat under load; an evicted workflow is replayed when it wakes.
    maxCachedWorkflows: config.worker.maxCachedWorkflows,
  };
}

/**
 * The webhook senders' worker: activities only (the dispatch pool's, and earlier actors' senders),
 * on their own task queue and slots, so that receivers that hang never take the slots of prompts
 * and payouts (docs/architecture.md, Webhook delivery).
 */
function senderOptions(
  config: Config,
  connection: NativeConnection,
  activities: Activities,
  telemetry: WorkerTelemetry,
): WorkerOptions {
  return {
    connection,
    namespace: config.temporal.namespace,
    taskQueue: webhookSenderTaskQueue(config.temporal.taskQueue),
    activities: senderActivities(activities),
    interceptors: { activity: telemetry.activityInterceptors },
    maxConcurrentActivityTaskExecutions: config.webhooks.senders,
  };
}

/**
 * Opens what the worker needs, runs it until it shuts down, then releases everything in the
 * reverse order (src/temporal/worker-lifecycle.ts): the worker stops before its connection
 * closes, and the error that ended the run is the one that reaches the log.
 */
async function runWorker(): Promise<void> {
  surviveDriverFaults(logger.warn);
  const config = loadConfig();
  await withReleases(async (hold) => {
    const sql = createSql(config.databaseUrl, config.databasePoolSize, { taskQueue: config.temporal.taskQueue });
    hold('the PostgreSQL pool', () => sql.end({ timeout: 5 }));
    // First: the SDK's Runtime (logger, metrics exporter) is installed once, before any connection.
    const telemetry = await startWorkerTelemetry(config.telemetry, sql);
    hold('telemetry', () => telemetry.shutdown());
    // Temporal unreachable at the start (a partition, a server restarting) is waited out, not a crash.
    const connection = await untilTemporalAnswers("the worker's connection", () =>
      NativeConnection.connect({ address: config.temporal.address }),
    );
    hold("the worker's Temporal connection", () => connection.close());
    // The client (launches, Schedules) connects on first use, and its calls are retried where they are made.
    const client = createLazyClient(config.temporal, telemetry.clientInterceptors);
    hold("the Temporal client's connection", () => client.connection.close());
    const launcher = launcherFromConfig(client, config, (message, fields) => logger.warn(message, fields));
    const connectors = createConnectors(config, sql);
    const health = createRouteHealth(sql, { scope: config.routesScope, onOutcome: countRouteOutcome });
    // The routes' state gauge, read from the shared table at each scrape.
    setRouteStateSource(() => routeViews(sql, configuredRoutes(config), config.routesScope));
    hold("the routes' state gauge", async () => setRouteStateSource(null));
    hold("the routes' outcome counts", () => health.flush().finally(() => health.stop()));
    const network = createNetworks(config, sql, connectors, health);
    const stopWatching = watchAvailability(connectors, health, (message, fields) => logger.warn(message, fields));
    hold("the aggregators' availability reads", async () => stopWatching());
    const activities = createActivities({ sql, launcher, sandbox: config.sandbox, webhooks: config.webhooks, network });
    const worker = await untilTemporalAnswers('the worker', () =>
      Worker.create(workerOptions(config, connection, activities, telemetry)),
    );
    const senders = await untilTemporalAnswers("the senders' worker", () =>
      Worker.create(senderOptions(config, connection, activities, telemetry)),
    );
    await runUntilShutdown(allOf([worker, senders]), hold, (stop) => {
      // What each operator needs done at the worker's start (Daraja: the paybill's URLs registered); never stops the
      // worker.
      for (const connector of connectors) void connector.atWorkerStart?.();
      void startWebhookPool(launcher);
      // The Schedules are set up beside the running worker: a server slow to answer them must not
      // keep the worker from its task queue, nor stop it.
      return keepSchedules(client, config, stop);
    });
  });
}

/**
 * The webhook delivery pool at the worker's start: its dispatchers started where one is not running.
 * A failure does not stop the worker: the outbox sweep starts the dispatchers again.
 */
async function startWebhookPool(launcher: Launcher): Promise<void> {
  try {
    const started = await launcher.ensureWebhookDispatchers();
    if (started > 0) logger.info('webhook dispatchers started', { started });
  } catch (error) {
    logger.warn('webhook dispatch pool not ensured at start; the outbox sweep starts its dispatchers', { error });
  }
}

runWorker().catch((error: unknown) => {
  if (error instanceof StoppedBeforeStart) {
    logger.info('worker stopped before it ran', { reason: error.message });
    process.exit(0);
  }
  logger.error('worker failed', { error });
  process.exit(1);
});
