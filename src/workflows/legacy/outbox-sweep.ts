import { patched, proxyActivities } from '@temporalio/workflow';
import type { createActivities } from '../../activities';
import type { OutboxSweepInput } from '../contracts/sweeps';
import { RETRY_POLICIES } from '../contracts/retry-policies';

const { dispatchPendingEvents, startPendingRequests, startPendingDeliveries, startPendingMoneyOut } = proxyActivities<ReturnType<typeof createActivities>>({
  startToCloseTimeout: '2 minutes',
  retry: RETRY_POLICIES.scheduled,
});

/**
 * The outbox sweep's earlier shape (one activity per area, each behind the patch that added it),
 * for sweeps started before `outboxSweepV2` (test/histories/outbox-sweep*.json).
 */
export async function outboxSweep(input: OutboxSweepInput): Promise<number> {
  let started = 0;
  if (patched('sweep-collection-requests')) started += await startPendingRequests(input);
  if (patched('sweep-webhook-deliveries')) started += await startPendingDeliveries(input);
  if (patched('sweep-money-out')) started += await startPendingMoneyOut(input);
  return started + (await dispatchPendingEvents(input));
}
