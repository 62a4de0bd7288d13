import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { outboxSweep } from '../workflows/outbox-sweep';
import { outboxSweepScheduleId, type OutboxSweepInput } from '../workflows/shared';

export type OutboxSweepSettings = { taskQueue: string; intervalSeconds: number; graceSeconds: number; batchSize?: number };

/** Creates the outbox-sweep Schedule for a task queue, or brings an existing one to these settings. */
export async function ensureOutboxSweepSchedule(client: Client, settings: OutboxSweepSettings): Promise<void> {
  const scheduleId = outboxSweepScheduleId(settings.taskQueue);
  const input: OutboxSweepInput = { graceSeconds: settings.graceSeconds, batchSize: settings.batchSize ?? 500 };
  const spec = { intervals: [{ every: `${settings.intervalSeconds}s` as const }] };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: 'outboxSweep',
    taskQueue: settings.taskQueue,
    args: [input] as [OutboxSweepInput],
    workflowExecutionTimeout: '10 minutes' as const,
  };
  // A slow sweep is not doubled up; the next one picks up whatever is left.
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' as const };
  try {
    await client.schedule.create<typeof outboxSweep>({ scheduleId, spec, action, policies });
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
