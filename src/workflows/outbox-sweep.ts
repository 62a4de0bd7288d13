import { proxyActivities } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { OutboxSweepInput } from './contracts/sweeps';
import { RETRY_POLICIES } from './contracts/retry-policies';

const { dispatchPendingEvents, startUnlaunchedRows } = proxyActivities<ReturnType<typeof createActivities>>({
  startToCloseTimeout: '2 minutes',
  retry: RETRY_POLICIES.scheduled,
});

/**
 * Run by a Temporal Schedule: hands to their workflows the rows whose committing process died
 * between the commit and the start, every kind of the outbox (services/outbox.ts: requests,
 * webhook deliveries, payments, reversals), and the dispatch of events recorded before deliveries
 * were (legacy).
 */
export async function outboxSweepV2(input: OutboxSweepInput): Promise<number> {
  return (await startUnlaunchedRows(input)) + (await dispatchPendingEvents(input));
}
