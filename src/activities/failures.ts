import { ApplicationFailure } from '@temporalio/common';
import { isPermanentDatabaseError } from '../db';
import { PERMANENT_DATABASE_ERROR } from '../contracts/common';

type Activity = (...args: never[]) => Promise<unknown>;

/**
 * Wraps every activity so a permanent database error fails it non-retryably, with the PostgreSQL
 * error as its cause: the workflow then moves to a clear final state instead of retrying forever.
 */
export function failingPermanently<T extends Record<string, Activity>>(activities: T): T {
  const wrapped: Record<string, Activity> = {};
  for (const [name, activity] of Object.entries(activities)) {
    wrapped[name] = async (...args: never[]) => {
      try {
        return await activity(...args);
      } catch (error) {
        if (!isPermanentDatabaseError(error)) throw error;
        throw ApplicationFailure.create({
          message: `${name}: ${(error as Error).message}`,
          type: PERMANENT_DATABASE_ERROR,
          nonRetryable: true,
          cause: error as Error,
        });
      }
    };
  }
  return wrapped as T;
}
