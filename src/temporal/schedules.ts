import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptionsStartWorkflowAction } from '@temporalio/client';
import type { eventRetention } from '../workflows/event-retention';
import type { outboxSweepV2 } from '../workflows/outbox-sweep';
import { eventRetentionScheduleId, outboxSweepScheduleId, type EventRetentionInput, type OutboxSweepInput } from '../workflows/contracts/sweeps';

type Workflow = typeof outboxSweepV2 | typeof eventRetention;

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
export async function ensureOutboxSweepSchedule(client: Client, settings: OutboxSweepSettings): Promise<void> {
  const input: OutboxSweepInput = { graceSeconds: settings.graceSeconds, batchSize: settings.batchSize ?? 500 };
  await ensureIntervalSchedule<typeof outboxSweepV2>(client, outboxSweepScheduleId(settings.taskQueue), settings.intervalSeconds, {
    type: 'startWorkflow',
    workflowType: 'outboxSweepV2',
    taskQueue: settings.taskQueue,
    args: [input],
    workflowExecutionTimeout: '10 minutes',
  });
}

type EventRetentionSettings = { taskQueue: string; intervalSeconds: number; retentionDays: number; auditRetentionDays: number; batchSize?: number };

/** Creates the event-retention Schedule for a task queue, or brings an existing one to these settings. */
export async function ensureEventRetentionSchedule(client: Client, settings: EventRetentionSettings): Promise<void> {
  const input: EventRetentionInput = { retentionDays: settings.retentionDays, batchSize: settings.batchSize ?? 1000, auditRetentionDays: settings.auditRetentionDays };
  await ensureIntervalSchedule<typeof eventRetention>(client, eventRetentionScheduleId(settings.taskQueue), settings.intervalSeconds, {
    type: 'startWorkflow',
    workflowType: 'eventRetention',
    taskQueue: settings.taskQueue,
    args: [input],
    workflowExecutionTimeout: '1 hour',
  });
}
