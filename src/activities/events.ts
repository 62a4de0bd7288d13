import { log } from '@temporalio/activity';
import type { Sql } from '../db';
import { markEventDispatched, undispatchedEvents } from '../services/events';
import { sweepEach } from '../services/sweeps';
import type { Launcher } from '../temporal/launcher';
import type { OutboxSweepInput } from '../workflows/contracts/sweeps';

export type EventActivityDeps = { sql: Sql; launcher: Launcher };

/** Activities of the event dispatch of events recorded before migration 008 (their deliveries were not recorded with them). */
export function createEventActivities({ sql, launcher }: EventActivityDeps) {
  return {
    /** Idempotent: only the first call sets the time. */
    async markEventDispatched(eventId: number): Promise<void> {
      await markEventDispatched(sql, eventId);
    },

    /**
     * The outbox sweep's part for such events never dispatched: each gets its eventDispatch
     * workflow. An event whose start fails for a reason of its own is set aside (sweeps.ts).
     */
    async dispatchPendingEvents(input: OutboxSweepInput): Promise<number> {
      const pending = await undispatchedEvents(sql, input);
      let started = 0;
      const result = await sweepEach(sql, 'outbox-event', pending, async (event) => {
        if (await launcher.startEventDispatch(event)) started += 1;
      }, (event, error) => log.error('outbox sweep set an event aside', { eventId: event.id, error: String(error) }));
      if (started > 0 || result.setAside > 0) log.info('outbox sweep started event dispatches', { started, setAside: result.setAside, pending: pending.length });
      return started;
    },
  };
}
