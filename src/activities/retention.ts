import { heartbeat, log } from '@temporalio/activity';
import type { Sql } from '../db';
import { deleteInBatches, notSetAside } from '../services/sweeps';
import type { EventRetentionInput } from '../workflows/contracts/sweeps';

export type RetentionActivityDeps = { sql: Sql };

/** Keys per delete statement when the retention workflow gives no batch size (it calls this activity without input). */
const DUPLICATE_KEY_BATCH = 1000;

export function createRetentionActivities({ sql }: RetentionActivityDeps) {
  return {
    /**
     * Deletes events older than the retention, in batches so no transaction holds many locks.
     * Their webhook deliveries and attempt logs go with them (foreign keys cascade). An event that
     * cannot be deleted is set aside (sweeps.ts) and the others still go.
     */
    async deleteExpiredEvents({ retentionDays, batchSize }: EventRetentionInput): Promise<number> {
      const { deleted, setAside } = await deleteInBatches(
        sql, 'retention-event', batchSize,
        async (limit) => (await sql<{ id: number }[]>`
          select id from events where created < now() - ${retentionDays}::int * interval '1 day'
            ${notSetAside(sql, 'retention-event', 'events.id')}
          order by id limit ${limit}`).map((row) => row.id),
        async (ids) => (await sql`delete from events where id in ${sql(ids)} returning id`).length,
        (count) => heartbeat(count),
      );
      if (deleted > 0 || setAside > 0) log.info('event retention deleted events', { deleted, setAside, retentionDays });
      return deleted;
    },

    /** Deletes `Duplicate-Check-Key` claims past their lifetime (api.md 7: 24 hours), in batches. */
    async deleteExpiredDuplicateCheckKeys(input?: { batchSize?: number }): Promise<number> {
      const { deleted, setAside } = await deleteInBatches(
        sql, 'retention-duplicate-key', input?.batchSize ?? DUPLICATE_KEY_BATCH,
        async (limit) => (await sql<{ id: number }[]>`
          select id from duplicate_check_keys where expires_at <= now()
            ${notSetAside(sql, 'retention-duplicate-key', 'duplicate_check_keys.id')}
          order by expires_at limit ${limit}`).map((row) => row.id),
        async (ids) => (await sql`delete from duplicate_check_keys where id in ${sql(ids)} and expires_at <= now() returning id`).length,
        (count) => heartbeat(count),
      );
      if (deleted > 0 || setAside > 0) log.info('retention deleted expired Duplicate-Check-Keys', { deleted, setAside });
      return deleted;
    },
  };
}
