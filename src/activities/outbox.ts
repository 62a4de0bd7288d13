/**
 * The outbox sweep's activities: start the workflows of rows committed whose start never came
 * (the process died, or Temporal was down, between the commit and the start), every kind of
 * services/platform/outbox.ts through the launcher's start of that kind. A row whose start fails for a
 * reason of its own is set aside (services/platform/sweeps.ts), the others still start.
 */
import { log } from '@temporalio/activity';
import type { Sql } from '../db';
import { OUTBOX, startUnlaunched, type OutboxKind } from '../services/platform/outbox';
import type { Launcher } from '../services/platform/ports';
import type { OutboxSweepInput } from '../contracts/sweeps';

type OutboxActivityDeps = { sql: Sql; launcher: Launcher };

export function createOutboxActivities({ sql, launcher }: OutboxActivityDeps) {
  async function sweep(kinds: readonly OutboxKind[], { graceSeconds, batchSize }: OutboxSweepInput): Promise<number> {
    let started = 0;
    for (const kind of kinds) {
      const count = await startUnlaunched(sql, kind, {
        graceSeconds,
        batchSize,
        start: (row) => launcher.startOutboxRows(kind, [row]),
        onSetAside: (row, error) =>
          log.error(`outbox sweep set a ${OUTBOX[kind].noun} aside`, { kind, id: row.id, error: String(error) }),
      });
      if (count > 0) log.info('outbox sweep started workflows', { kind, started: count });
      started += count;
    }
    // The pool that sends every webhook delivery: a dispatcher stopped from outside runs again.
    const dispatchers = await launcher.ensureWebhookDispatchers();
    if (dispatchers > 0) log.info('outbox sweep started webhook dispatchers', { dispatchers });
    return started;
  }

  return {
    /** Every kind of the outbox, one after another. */
    async startUnlaunchedRows(input: OutboxSweepInput): Promise<number> {
      return await sweep(Object.keys(OUTBOX) as OutboxKind[], input);
    },
  };
}
