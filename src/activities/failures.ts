import { ApplicationFailure } from '@temporalio/common';
import { isDatabaseUnavailable } from '../db';
import { PERMANENT_DATABASE_ERROR } from '../workflows/shared';

/**
 * SQLSTATE classes no retry can fix: 22 data exception (numeric overflow, invalid text), 23
 * integrity constraint violation (a check, a foreign key), 42 syntax error or access rule
 * violation. Connection trouble (class 08 and friends) is transient and stays retryable.
 */
export function isPermanentDatabaseError(error: unknown): boolean {
  if (isDatabaseUnavailable(error)) return false;
  const code = String((error as { code?: unknown } | null)?.code ?? '');
  return /^(22|23|42)[0-9A-Z]{3}$/.test(code);
}

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
