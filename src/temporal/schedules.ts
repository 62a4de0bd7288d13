import type { StartableWorkflow } from '../workflows/registry';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ScheduleAlreadyRunning,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleOptionsStartWorkflowAction,
} from '@temporalio/client';
import type { Config } from '../config';
import { logger } from '../log';
import type { eventRetention } from '../workflows/event-retention';
import type { outboxSweep } from '../workflows/outbox-sweep';
import {
  eventRetentionScheduleId,
  outboxSweepScheduleId,
  type EventRetentionInput,
  type OutboxSweepInput,
} from '../contracts/sweeps';

type Workflow = typeof outboxSweep | typeof eventRetention;

/** Creates a Schedule that runs every `intervalSeconds`, or brings an existing one to these settings. */
async function ensureIntervalSchedule<W extends Workflow>(
  client: Client,
  scheduleId: string,
  intervalSeconds: number,
  action: ScheduleOptionsStartWorkflowAction<W>,
): Promise<void> {
  const spec = { intervals: [{ every: `${intervalSeconds}s` as const }] };
  // A slow run is not doubled up; the next one picks up whatever is left.
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' as const };
  try {
    await client.schedule.create<W>({ scheduleId, spec, action, policies });
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    await client.schedule.getHandle(scheduleId).update((previous) => ({
      ...previous,
      spec,
      action,
      policies: { ...previous.policies, ...policies },
    }));
  }
}

type OutboxSweepSettings = { taskQueue: string; intervalSeconds: number; graceSeconds: number; batchSize?: number };

/** Creates the outbox-sweep Schedule for a task queue, or brings an existing one to these settings. */
async function ensureOutboxSweepSchedule(client: Client, settings: OutboxSweepSettings): Promise<void> {
  const input: OutboxSweepInput = { graceSeconds: settings.graceSeconds, batchSize: settings.batchSize ?? 500 };
  await ensureIntervalSchedule<typeof outboxSweep>(
    client,
    outboxSweepScheduleId(settings.taskQueue),
    settings.intervalSeconds,
    {
      type: 'startWorkflow',
      workflowType: 'outboxSweep' satisfies StartableWorkflow,
      taskQueue: settings.taskQueue,
      args: [input],
      workflowExecutionTimeout: '10 minutes',
    },
  );
}

type EventRetentionSettings = {
  taskQueue: string;
  intervalSeconds: number;
  retentionDays: number;
  auditRetentionDays: number;
  batchSize?: number;
};

/** Creates the event-retention Schedule for a task queue, or brings an existing one to these settings. */
async function ensureEventRetentionSchedule(client: Client, settings: EventRetentionSettings): Promise<void> {
  const input: EventRetentionInput = {
    retentionDays: settings.retentionDays,
    batchSize: settings.batchSize ?? 1000,
    auditRetentionDays: settings.auditRetentionDays,
  };
  await ensureIntervalSchedule<typeof eventRetention>(
    client,
    eventRetentionScheduleId(settings.taskQueue),
    settings.intervalSeconds,
    {
      type: 'startWorkflow',
      workflowType: 'eventRetention' satisfies StartableWorkflow,
      taskQueue: settings.taskQueue,
      args: [input],
      workflowExecutionTimeout: '1 hour',
    },
  );
}

/** A Schedule the worker keeps, and how to create it or bring it to the configured settings. */
type KeptSchedule = { scheduleId: string; ensure: (client: Client) => Promise<void> };

/** The Schedules the configuration asks the worker to keep for its task queue. */
function configuredSchedules(config: Config): KeptSchedule[] {
  const { taskQueue } = config.temporal;
  const kept: KeptSchedule[] = [];
  if (config.outbox.sweepEnabled) {
    kept.push({
      scheduleId: outboxSweepScheduleId(taskQueue),
      ensure: (client) =>
        ensureOutboxSweepSchedule(client, {
          taskQueue,
          intervalSeconds: config.outbox.sweepIntervalSeconds,
          graceSeconds: config.outbox.graceSeconds,
        }),
    });
  }
  if (config.retention.sweepEnabled) {
    kept.push({
      scheduleId: eventRetentionScheduleId(taskQueue),
      ensure: (client) =>
        ensureEventRetentionSchedule(client, {
          taskQueue,
          intervalSeconds: config.retention.sweepIntervalSeconds,
          retentionDays: config.retention.days,
          auditRetentionDays: config.retention.auditDays,
        }),
    });
  }
  return kept;
}

/** How long one attempt at a Schedule (its create, or its describe and update) may take before it is abandoned. */
const SCHEDULE_ATTEMPT_TIMEOUT_MS = 10_000;
const FIRST_RETRY_DELAY_MS = 1_000;
const MAX_RETRY_DELAY_MS = 60_000;

/** Ensures one Schedule, retrying until it is in place or `stop` aborts; never rejects. */
async function keepSchedule(client: Client, { scheduleId, ensure }: KeptSchedule, stop: AbortSignal): Promise<void> {
  // Retried without limit: the worker serves its workflows without the Schedule meanwhile, and a
  // server still settling after a restart answers later; the delay doubles up to a minute.
  for (let attempt = 1, delayMs = FIRST_RETRY_DELAY_MS; !stop.aborted; attempt += 1) {
    const timeout = AbortSignal.timeout(SCHEDULE_ATTEMPT_TIMEOUT_MS);
    try {
      await client.withAbortSignal(AbortSignal.any([stop, timeout]), () => ensure(client));
      logger.info('Schedule in place', { scheduleId, attempt });
      return;
    } catch (cause) {
      if (stop.aborted) return;
      const error = timeout.aborted
        ? new Error(`Temporal did not answer within ${SCHEDULE_ATTEMPT_TIMEOUT_MS} ms`, { cause })
        : cause;
      logger.warn('Schedule not set up yet; the worker runs without it and tries again', {
        scheduleId,
        attempt,
        retryInMs: delayMs,
        error,
      });
    }
    await sleep(delayMs, undefined, { signal: stop }).catch(() => {});
    delayMs = Math.min(delayMs * 2, MAX_RETRY_DELAY_MS);
  }
}

/**
 * Creates the configured Schedules, or brings them to the configured settings, in the background:
 * each attempt is bounded, a failed one is logged as a warning and tried again. The returned
 * promise settles once every Schedule is in place or `stop` aborts (the worker shut down); it never rejects.
 */
export function keepSchedules(client: Client, config: Config, stop: AbortSignal): Promise<void> {
  return Promise.all(configuredSchedules(config).map((schedule) => keepSchedule(client, schedule, stop))).then(
    () => undefined,
  );
}
