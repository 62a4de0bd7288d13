/**
 * Rows the sweeps set aside (services/platform/sweeps.ts): listed with their errors, and put back once their cause is
 * fixed.
 */
import { SWEEP_KINDS } from '../services/platform/outbox';
import { listSweepFailures, retrySweepRow, type SweepKind } from '../services/platform/sweeps';
import { UsageError, print, rowId, type Command } from './cli';

export const sweepCommands: Record<string, Command> = {
  'sweeps failures': {
    usage: 'sweeps failures [--json]',
    async run({ sql, values }) {
      const failures = await listSweepFailures(sql);
      print(
        values.json,
        { failures },
        failures.length === 0
          ? ['no rows set aside']
          : failures.map((failure) =>
              [
                `${failure.kind} ${failure.rowId}: ${failure.attempts} failed run(s),`,
                `last ${failure.lastFailedAt.toISOString()}: ${failure.error}`,
              ].join(' '),
            ),
      );
    },
  },
  'sweeps retry': {
    usage: `sweeps retry --kind ${SWEEP_KINDS.join('|')} --id ROW [--json]`,
    async run({ sql, values }) {
      const kind = values.kind ?? '';
      if (!(SWEEP_KINDS as readonly string[]).includes(kind))
        throw new UsageError(`--kind takes one of ${SWEEP_KINDS.join(', ')}`);
      const id = rowId(values.id, '--id takes the row id the failure names');
      const retried = await retrySweepRow(sql, kind as SweepKind, id);
      print(values.json, { kind, rowId: id, retried }, [
        retried ? `${kind} ${id}: back in the sweep; its next run tries it again` : `${kind} ${id} was not set aside`,
      ]);
    },
  },
};
