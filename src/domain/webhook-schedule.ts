/**
 * The webhook retry schedule. Pure and free of Node built-ins: the delivery workflow imports it,
 * and gives it the workflow's deterministic `Math.random()` so replays wait the same.
 */

/** docs/api.md#webhooks: 10 attempts in total. */
export const WEBHOOK_ATTEMPTS = 10;

export type RetrySchedule = {
  /** Waits before attempts 2..10, in milliseconds (WEBHOOK_RETRY_SCHEDULE). */
  retryDelaysMs: number[];
  /** Each wait is spread over ±jitter of its length, so receivers that failed together do not retry together. */
  jitter: number;
};

/** The wait before attempt `attempt` (2..n), with jitter drawn from `random` (a number in [0, 1)). */
export function retryDelayMs(schedule: RetrySchedule, attempt: number, random: number): number {
  const base = schedule.retryDelaysMs[attempt - 2];
  if (base === undefined) throw new RangeError(`no wait is scheduled before attempt ${attempt}`);
  return Math.round(base * (1 - schedule.jitter + 2 * schedule.jitter * random));
}

export const totalAttempts = (schedule: RetrySchedule): number => schedule.retryDelaysMs.length + 1;
