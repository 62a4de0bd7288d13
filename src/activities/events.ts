import type { Client } from '@temporalio/client';
import { log } from '@temporalio/activity';
import type { Sql } from '../db';
import { notSetAside, sweepEach } from '../services/sweeps';
import { startEventDispatch } from '../temporal/events';
import type { OutboxSweepInput } from '../workflows/shared';

export type EventActivityDeps = { sql: Sql; client: Client; taskQueue: string };

export function createEventActivities({ sql, client, taskQueue }: EventActivityDeps) {
  return {
    /** Idempotent: only the first call sets the time. */
    async markEventDispatched(eventId: number): Promise<void> {
      await sql`update events set dispatched_at = now() where id = ${eventId} and dispatched_at is null`;
    },

    /**
     * The outbox sweep: events older than the grace period and still undispatched get their
     * workflow. An event whose start fails for a reason of its own is set aside (sweeps.ts).
     */
    async dispatchPendingEvents({ graceSeconds, batchSize }: OutboxSweepInput): Promise<number> {
      const pending = await sql<{ id: number; organizationId: number; type: string }[]>`
        select id, organization_id as "organizationId", type from events
        where dispatched_at is null and created < now() - ${graceSeconds}::int * interval '1 second'
          ${notSetAside(sql, 'outbox-event', 'events.id')}
        order by created limit ${batchSize}`;
      let started = 0;
      const result = await sweepEach(sql, 'outbox-event', pending, async (event) => {
        if (await startEventDispatch(client, taskQueue, { eventId: event.id, organizationId: event.organizationId, type: event.type })) {
          started += 1;
        }
      }, (event, error) => log.error('outbox sweep set an event aside', { eventId: event.id, error: String(error) }));
      if (started > 0 || result.setAside > 0) log.info('outbox sweep started event dispatches', { started, setAside: result.setAside, pending: pending.length });
      return started;
    },
  };
}
