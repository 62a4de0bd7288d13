import { heartbeat, log } from '@temporalio/activity';
import type { Sql } from '../db';
import { deleteExpiredAuditEvents } from '../services/merchants/audit';
import { deleteExpiredDuplicateCheckKeys } from '../services/collections/duplicate-checks';
import { deleteExpiredEvents } from '../services/webhooks/events';
import type { EventRetentionInput } from '../contracts/sweeps';

export type RetentionActivityDeps = { sql: Sql };

/** Keys per delete statement when the retention workflow gives no batch size (it calls this activity without input). */
const DUPLICATE_KEY_BATCH = 1000;

export function createRetentionActivities({ sql }: RetentionActivityDeps) {
  return {
    /**
     * Deletes events older than the retention (with their deliveries and attempt logs), then audit
     * entries older than theirs, in batches, heartbeating. (The audit entries go in this activity, not
     * a new one, so the workflow's recorded histories still replay.) Returns the events deleted.
     */
    async deleteExpiredEvents(input: EventRetentionInput): Promise<number> {
      const { deleted, setAside } = await deleteExpiredEvents(sql, input, (count) => heartbeat(count));
      if (deleted > 0 || setAside > 0)
        log.info('event retention deleted events', { deleted, setAside, retentionDays: input.retentionDays });
      if (input.auditRetentionDays !== undefined) {
        const retentionDays = Math.max(input.auditRetentionDays, input.retentionDays);
        const audit = await deleteExpiredAuditEvents(sql, { retentionDays, batchSize: input.batchSize }, (count) =>
          heartbeat(count),
        );
        if (audit.deleted > 0 || audit.setAside > 0)
          log.info('retention deleted audit entries', { ...audit, retentionDays });
      }
      return deleted;
    },

    /**
     * Deletes `Duplicate-Check-Key` claims past their lifetime (24 hours: docs/api.md#throttling-duplicates-versions),
     * in batches.
     */
    async deleteExpiredDuplicateCheckKeys(input?: { batchSize?: number }): Promise<number> {
      const { deleted, setAside } = await deleteExpiredDuplicateCheckKeys(
        sql,
        input?.batchSize ?? DUPLICATE_KEY_BATCH,
        (count) => heartbeat(count),
      );
      if (deleted > 0 || setAside > 0)
        log.info('retention deleted expired Duplicate-Check-Keys', { deleted, setAside });
      return deleted;
    },
  };
}
