import { heartbeat, log } from '@temporalio/activity';
import type { Sql } from '../db';
import type { EventRetentionInput } from '../workflows/shared';

export type RetentionActivityDeps = { sql: Sql };

export function createRetentionActivities({ sql }: RetentionActivityDeps) {
  return {
    /**
     * Deletes events older than the retention, in batches so no transaction holds many locks.
     * Their webhook deliveries and attempt logs go with them (foreign keys cascade).
     */
    async deleteExpiredEvents({ retentionDays, batchSize }: EventRetentionInput): Promise<number> {
      let deleted = 0;
      for (;;) {
        const rows = await sql`
          delete from events where id in (
            select id from events where created < now() - ${retentionDays}::int * interval '1 day' order by id limit ${batchSize})
          returning id`;
        deleted += rows.length;
        heartbeat(deleted);
        if (rows.length < batchSize) break;
      }
      if (deleted > 0) log.info('event retention deleted events', { deleted, retentionDays });
      return deleted;
    },

    /**
     * Hook point for the duplicate-check keys of `Duplicate-Check-Key` (api.md 7, 24-hour lifetime):
     * their table does not exist yet. The issue that adds it deletes expired keys here; the
     * retention workflow already calls this activity, so that change needs no workflow change.
     */
    async deleteExpiredDuplicateCheckKeys(): Promise<number> {
      return 0;
    },
  };
}
