import { heartbeat, log } from '@temporalio/activity';
import type { Sql } from '../db';
import { deleteExpiredDuplicateCheckKeys } from '../services/duplicate-checks';
import { deleteExpiredEvents } from '../services/events';
import type { EventRetentionInput } from '../workflows/contracts/sweeps';

export type RetentionActivityDeps = { sql: Sql };

/** Keys per delete statement when the retention workflow gives no batch size (it calls this activity without input). */
const DUPLICATE_KEY_BATCH = 1000;

export function createRetentionActivities({ sql }: RetentionActivityDeps) {
  return {
    /** Deletes events older than the retention (with their deliveries and attempt logs), in batches, heartbeating. */
    async deleteExpiredEvents(input: EventRetentionInput): Promise<number> {
      const { deleted, setAside } = await deleteExpiredEvents(sql, input, (count) => heartbeat(count));
      if (deleted > 0 || setAside > 0) log.info('event retention deleted events', { deleted, setAside, retentionDays: input.retentionDays });
      return deleted;
    },

    /** Deletes `Duplicate-Check-Key` claims past their lifetime (api.md 7: 24 hours), in batches. */
    async deleteExpiredDuplicateCheckKeys(input?: { batchSize?: number }): Promise<number> {
      const { deleted, setAside } = await deleteExpiredDuplicateCheckKeys(sql, input?.batchSize ?? DUPLICATE_KEY_BATCH, (count) => heartbeat(count));
      if (deleted > 0 || setAside > 0) log.info('retention deleted expired Duplicate-Check-Keys', { deleted, setAside });
      return deleted;
    },
  };
}
