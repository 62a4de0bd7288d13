import { proxyActivities } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { OutboxSweepInput } from '../contracts/sweeps';
import { RETRY_POLICIES } from '../contracts/retry-policies';

const { startUnlaunchedRows } = proxyActivities<ReturnType<typeof createActivities>>({
  startToCloseTimeout: '2 minutes',
  retry: RETRY_POLICIES.scheduled,
});

/**
 * Run by a Temporal Schedule: hands to their workflows the rows whose committing process died
 * between the commit and the start, every kind of the outbox (services/platform/outbox.ts: requests,
 * webhook deliveries, payments, reversals, payment batches), and starts any dispatcher of the
 * webhook delivery pool that is not running.
 */
export async function outboxSweep(input: OutboxSweepInput): Promise<number> {
  return await startUnlaunchedRows(input);
}
