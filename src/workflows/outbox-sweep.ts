import { patched, proxyActivities } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { OutboxSweepInput } from './shared';

const { dispatchPendingEvents, startPendingRequests } = proxyActivities<ReturnType<typeof createActivities>>({
  startToCloseTimeout: '2 minutes',
  // The next scheduled sweep repeats the work anyway; a few quick retries cover a blip.
  retry: { maximumAttempts: 3 },
});

/**
 * Run by a Temporal Schedule: starts the workflows of events and collection requests whose
 * starter died between the database commit and the start.
 */
export async function outboxSweep(input: OutboxSweepInput): Promise<number> {
  let started = 0;
  if (patched('sweep-collection-requests')) started += await startPendingRequests(input);
  return started + (await dispatchPendingEvents(input));
}
