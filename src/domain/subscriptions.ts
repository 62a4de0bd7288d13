/**
 * Recurring collection requests (`subscription_settings`, docs/api.md#collection-requests): occurrences of `frequency`
 * anchored at `start_date`, up to and including `end_date`, optionally limited to `weekdays` and
 * `months`. Pure and deterministic, so the subscription workflow runs it directly.
 */
export const FREQUENCIES = ['yearly', 'monthly', 'weekly', 'daily', 'hourly', 'minutely'] as const;
export type Frequency = (typeof FREQUENCIES)[number];

/**
 * The bounds of a subscription a merchant creates (docs/api.md#collection-requests). Each occurrence
 * prompts the subscriber on their phone, so one subscription prompts at most once a day: `daily` is
 * the shortest frequency a merchant may choose, as card networks' and payment providers' recurring
 * billing stops at a day (weekdays and months only thin a frequency out). `hourly` and `minutely`
 * stay in the rule for the subscriptions created before the bound, which run to their end unless
 * cancelled. And a subscription holds at most MAX_SUBSCRIPTION_OCCURRENCES occurrences, its first
 * request included (daily for about 2 years and 9 months, weekly for 19 years, monthly for 83): a
 * longer schedule is refused, not cut, so a merchant never believes in occurrences that will not come.
 */
export const MERCHANT_FREQUENCIES = ['yearly', 'monthly', 'weekly', 'daily'] as const satisfies readonly Frequency[];
export const MAX_SUBSCRIPTION_OCCURRENCES = 1000;

export type Subscription = {
  startDate: Date;
  endDate: Date;
  frequency: Frequency;
  /** ISO weekdays, 1 = Monday … 7 = Sunday. */
  weekdays?: number[];
  /** 1 = January … 12 = December. */
  months?: number[];
};

const FIXED_STEP_MS: Partial<Record<Frequency, number>> = { minutely: 60_000, hourly: 3_600_000, daily: 86_400_000 };
const MAX_STEPS = 600_000;

const isoWeekday = (date: Date): number => ((date.getUTCDay() + 6) % 7) + 1;

function allowed(subscription: Subscription, date: Date): boolean {
  if (subscription.months?.length && !subscription.months.includes(date.getUTCMonth() + 1)) return false;
  if (subscription.weekdays?.length && !subscription.weekdays.includes(isoWeekday(date))) return false;
  return true;
}

/** The k-th candidate: same time of day; months clamp to their last day (31 Jan → 28/29 Feb). */
function candidate(subscription: Subscription, k: number): Date {
  const start = subscription.startDate;
  const fixed = FIXED_STEP_MS[subscription.frequency];
  // Weekly with chosen weekdays walks day by day; the weekday filter picks the days.
  const weekdayWalk = subscription.frequency === 'weekly' && subscription.weekdays?.length;
  if (fixed !== undefined || weekdayWalk) return new Date(start.getTime() + k * (fixed ?? 86_400_000));
  if (subscription.frequency === 'weekly') return new Date(start.getTime() + k * 7 * 86_400_000);
  const monthsAhead = subscription.frequency === 'monthly' ? k : 12 * k;
  const year = start.getUTCFullYear() + Math.floor((start.getUTCMonth() + monthsAhead) / 12);
  const month = (start.getUTCMonth() + monthsAhead) % 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(
      year,
      month,
      Math.min(start.getUTCDate(), lastDay),
      start.getUTCHours(),
      start.getUTCMinutes(),
      start.getUTCSeconds(),
    ),
  );
}

/** The first occurrence strictly after `after`, or null once past `end_date`. */
export function nextOccurrence(subscription: Subscription, after: Date): Date | null {
  const fixed = FIXED_STEP_MS[subscription.frequency];
  const elapsed = after.getTime() - subscription.startDate.getTime();
  let k = fixed !== undefined && elapsed > 0 ? Math.floor(elapsed / fixed) : 0;
  for (let steps = 0; steps < MAX_STEPS; steps += 1, k += 1) {
    const date = candidate(subscription, k);
    if (date.getTime() > subscription.endDate.getTime()) return null;
    if (date.getTime() > after.getTime() && allowed(subscription, date)) return date;
  }
  return null;
}

/** Every occurrence from `start_date` to `end_date` (inclusive), at most `limit`. */
export function occurrences(subscription: Subscription, limit = 1000): Date[] {
  const result: Date[] = [];
  let next = allowed(subscription, subscription.startDate)
    ? subscription.startDate
    : nextOccurrence(subscription, subscription.startDate);
  while (next !== null && result.length < limit) {
    result.push(next);
    next = nextOccurrence(subscription, next);
  }
  return result;
}

/**
 * Whether the schedule holds more occurrences than a subscription may (MAX_SUBSCRIPTION_OCCURRENCES):
 * the occurrences `occurrences` lists, counted in one walk over the candidates (they only grow).
 */
export function exceedsOccurrenceLimit(subscription: Subscription): boolean {
  let count = 0;
  for (let k = 0; k < MAX_STEPS; k += 1) {
    const date = candidate(subscription, k);
    if (date.getTime() > subscription.endDate.getTime()) return false;
    if (allowed(subscription, date)) count += 1;
    if (count > MAX_SUBSCRIPTION_OCCURRENCES) return true;
  }
  return false;
}
