import type { Client } from '@temporalio/client';
import { log } from '@temporalio/activity';
import type { Sql } from '../db';
import { startEventDispatch } from '../temporal/events';
import type { OutboxSweepInput } from '../workflows/shared';

export type EventActivityDeps = { sql: Sql; client: Client; taskQueue: string };

export function createEventActivities({ sql, client, taskQueue }: EventActivityDeps) {
  return {
    /** Idempotent: only the first call sets the time. */
    async markEventDispatched(eventId: number): Promise<void> {
      await sql`update events set dispatched_at = now() where id = ${eventId} and dispatched_at is null`;
    },

    /** The outbox sweep: events older than the grace period and still undispatched get their workflow. */
    async dispatchPendingEvents({ graceSeconds, batchSize }: OutboxSweepInput): Promise<number> {
      const pending = await sql<{ id: number; organizationId: number; type: string }[]>`
        select id, organization_id as "organizationId", type from events
        where dispatched_at is null and created < now() - ${graceSeconds}::int * interval '1 second'
        order by created limit ${batchSize}`;
      let started = 0;
      for (const event of pending) {
        if (await startEventDispatch(client, taskQueue, { eventId: event.id, organizationId: event.organizationId, type: event.type })) {
          started += 1;
        }
      }
      if (started > 0) log.info('outbox sweep started event dispatches', { started, pending: pending.length });
      return started;
    },
  };
}
