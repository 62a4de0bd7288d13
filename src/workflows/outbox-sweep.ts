import { proxyActivities } from '@temporalio/workflow';
import type { createEventActivities } from '../activities/events';
import type { OutboxSweepInput } from './shared';

const { dispatchPendingEvents } = proxyActivities<ReturnType<typeof createEventActivities>>({
  startToCloseTimeout: '2 minutes',
  // The next scheduled sweep repeats the work anyway; a few quick retries cover a blip.
  retry: { maximumAttempts: 3 },
});

/** Run by a Temporal Schedule: starts the dispatch workflow of every event whose starter died. */
export async function outboxSweep(input: OutboxSweepInput): Promise<number> {
  return await dispatchPendingEvents(input);
}
