import { proxyActivities } from '@temporalio/workflow';
import type { createRetentionActivities } from '../activities/retention';
import type { EventRetentionInput } from '../contracts/sweeps';
import { RETRY_POLICIES } from '../contracts/retry-policies';

const { deleteExpiredEvents, deleteExpiredDuplicateCheckKeys } = proxyActivities<
  ReturnType<typeof createRetentionActivities>
>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  // The next scheduled run repeats the work anyway; a few quick retries cover a blip.
  retry: RETRY_POLICIES.scheduled,
});

/** Run by a Temporal Schedule: drops events past retention (with their deliveries) and expired duplicate-check keys. */
export async function eventRetention(
  input: EventRetentionInput,
): Promise<{ events: number; duplicateCheckKeys: number }> {
  const events = await deleteExpiredEvents(input);
  const duplicateCheckKeys = await deleteExpiredDuplicateCheckKeys();
  return { events, duplicateCheckKeys };
}
