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
 * between the commit and the start, every kind of the outbox (services/outbox.ts: requests,
 * webhook deliveries, payments, reversals, payment batches), and wakes the actors of webhooks whose
 * due deliveries nobody sends. Nothing else: the events recorded before migration 008 that the
 * earlier shape (`outboxSweepV2`) still dispatched were handed to the delivery rows by
 * migration 024.
 */
export async function outboxSweep(input: OutboxSweepInput): Promise<number> {
  return await startUnlaunchedRows(input);
}
