import type { Sql } from '../db';
import { markEventDispatched } from '../services/events';
import type { OutboxSweepInput } from '../workflows/contracts/sweeps';

export type EventActivityDeps = { sql: Sql };

/**
 * Activities of the earlier types that handled events recorded before migration 008 (their
 * deliveries were not recorded with them): `eventDispatch`, and the last step of `outboxSweepV2`.
 */
export function createEventActivities({ sql }: EventActivityDeps) {
  return {
    /** Idempotent: only the first call sets the time. */
    async markEventDispatched(eventId: number): Promise<void> {
      await markEventDispatched(sql, eventId);
    },

    /**
     * The last step of a sweep of the earlier shape (`outboxSweepV2`) still in flight: it started an
     * `eventDispatch` for each event never dispatched. Migration 024 recorded those events' delivery
     * rows, which the current sweep hands to their webhooks' actors, and no event is recorded
     * undispatched since migration 008, so there is none left to start.
     */
    async dispatchPendingEvents(_input: OutboxSweepInput): Promise<number> {
      return 0;
    },
  };
}
