/**
 * The retry policies of the workflows' activities: one per kind of call, each with its reason.
 * Safe to import from workflow code: no I/O, no Node built-ins.
 */
import type { RetryPolicy } from '@temporalio/common';

export const RETRY_POLICIES = {
  /**
   * Our own idempotent steps (PostgreSQL, and calls whose outside failures are answers: a
   * merchant's verification URL, a webhook receiver): retried with growing waits for as long as an
   * outage of ours lasts, because money, events and deliveries must not be dropped.
   */
  untilDone: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  /**
   * A call to the network that turns the network's own failures into a result after a few tries
   * (a refused prompt): the retries outlast only our side (database, a lost worker), so the waits
   * stay short and the prompt goes out soon after an outage.
   */
  promptCall: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
  /**
   * An operator's status query: a few quick tries, then the workflow's next poll asks again; an
   * operator that keeps failing must not hold a workflow past its deadline.
   */
  statusQuery: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    maximumAttempts: 4,
  },
  /**
   * Sending money (payouts, reversals): idempotent per payout reference, so a retry after a crash
   * mid-call pays nothing twice; a network that keeps failing is asked until it answers.
   */
  payout: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
  /** Work a Schedule repeats anyway (sweeps, retention): a few quick retries cover a blip. */
  scheduled: { maximumAttempts: 3 },
} as const satisfies Record<string, RetryPolicy>;
