import { proxyActivities } from '@temporalio/workflow';
import type { LegacyActivities } from '../../activities/legacy';
import type { OutboxSweepInput } from '../contracts/sweeps';
import { RETRY_POLICIES } from '../contracts/retry-policies';

const { dispatchPendingEvents, startUnlaunchedRows } = proxyActivities<LegacyActivities>({
  startToCloseTimeout: '2 minutes',
  retry: RETRY_POLICIES.scheduled,
});

/**
 * The outbox sweep's earlier shape: the outbox rows, then the dispatch of events recorded before
 * migration 008 (an activity that finds none since migration 024). Kept for runs started before
 * `outboxSweepV3` (test/histories/outbox-sweep-v2.json); the worker moves the Schedule to the new
 * type, and each run ends within the Schedule's 10-minute execution timeout.
 */
export async function outboxSweepV2(input: OutboxSweepInput): Promise<number> {
  return (await startUnlaunchedRows(input)) + (await dispatchPendingEvents(input));
}
