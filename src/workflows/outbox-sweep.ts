import { patched, proxyActivities } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { OutboxSweepInput } from './contracts/sweeps';

const { dispatchPendingEvents, startPendingRequests, startPendingDeliveries, startPendingMoneyOut } = proxyActivities<ReturnType<typeof createActivities>>({
  startToCloseTimeout: '2 minutes',
  // The next scheduled sweep repeats the work anyway; a few quick retries cover a blip.
  retry: { maximumAttempts: 3 },
});

/**
 * Run by a Temporal Schedule: starts the workflows whose starter died between the database commit
 * and the start: collection requests, webhook deliveries (recorded with their events), payments and
 * reversals, and the dispatch of events recorded before deliveries were (legacy).
 */
export async function outboxSweep(input: OutboxSweepInput): Promise<number> {
  let started = 0;
  if (patched('sweep-collection-requests')) started += await startPendingRequests(input);
  if (patched('sweep-webhook-deliveries')) started += await startPendingDeliveries(input);
  if (patched('sweep-money-out')) started += await startPendingMoneyOut(input);
  return started + (await dispatchPendingEvents(input));
}
