import { patched, proxyActivities } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { OutboxSweepInput } from './contracts/sweeps';
import { RETRY_POLICIES } from './contracts/retry-policies';

const { dispatchPendingEvents, startUnlaunchedRows, startPendingRequests, startPendingDeliveries, startPendingMoneyOut } = proxyActivities<ReturnType<typeof createActivities>>({
  startToCloseTimeout: '2 minutes',
  // The next scheduled sweep repeats the work anyway; a few quick retries cover a blip.
  retry: RETRY_POLICIES.scheduled,
});

/**
 * Run by a Temporal Schedule: starts the workflows whose starter died between the database commit
 * and the start: every kind of the outbox (services/outbox.ts: requests, webhook deliveries,
 * payments, reversals), and the dispatch of events recorded before deliveries were (legacy).
 */
export async function outboxSweep(input: OutboxSweepInput): Promise<number> {
  if (patched('sweep-outbox')) return (await startUnlaunchedRows(input)) + (await dispatchPendingEvents(input));
  // The earlier shapes, one activity per area (test/histories/outbox-sweep*.json), for sweeps started by older workers.
  let started = 0;
  if (patched('sweep-collection-requests')) started += await startPendingRequests(input);
  if (patched('sweep-webhook-deliveries')) started += await startPendingDeliveries(input);
  if (patched('sweep-money-out')) started += await startPendingMoneyOut(input);
  return started + (await dispatchPendingEvents(input));
}
