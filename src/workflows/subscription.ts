import { continueAsNew, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { createCollectionRequestActivities } from '../activities/collection-requests';
import { nextOccurrence, type Frequency, type Subscription } from '../domain/subscriptions';
import { subscriptionStateQuery, type SubscriptionInput, type SubscriptionState } from '../contracts/subscription';
import { RETRY_POLICIES } from '../contracts/retry-policies';

const { createSubscriptionOccurrence } = proxyActivities<ReturnType<typeof createCollectionRequestActivities>>({
  startToCloseTimeout: '1 minute',
  // Creating an occurrence is idempotent (unique per occurrence time): retry until it is there.
  retry: RETRY_POLICIES.untilDone,
});

// Keeps the history short for long subscriptions (minutely for a year).
const OCCURRENCES_PER_RUN = 500;

/**
 * A recurring request (`subscription-<id>`): the request that carries `subscription_settings` is
 * the first occurrence; each later occurrence up to `end_date` becomes a new request of its own.
 */
export async function subscription(input: SubscriptionInput, resumeAfter?: string): Promise<SubscriptionState> {
  const rule: Subscription = {
    startDate: new Date(input.startDate),
    endDate: new Date(input.endDate),
    frequency: input.frequency as Frequency,
    ...(input.weekdays ? { weekdays: input.weekdays } : {}),
    ...(input.months ? { months: input.months } : {}),
  };
  let last = new Date(resumeAfter ?? input.startDate);
  let next = nextOccurrence(rule, last);
  const state: SubscriptionState = {
    created: 0,
    lastOccurrence: resumeAfter ?? null,
    nextOccurrence: next?.toISOString() ?? null,
  };
  setHandler(subscriptionStateQuery, () => ({ ...state }));
  while (next !== null) {
    if (state.created >= OCCURRENCES_PER_RUN) await continueAsNew<typeof subscription>(input, last.toISOString());
    const wait = next.getTime() - Date.now();
    if (wait > 0) await sleep(wait);
    await createSubscriptionOccurrence({ requestId: input.requestId, occurrenceAt: next.toISOString() });
    state.created += 1;
    last = next;
    state.lastOccurrence = last.toISOString();
    next = nextOccurrence(rule, last);
    state.nextOccurrence = next?.toISOString() ?? null;
  }
  return { ...state };
}
