/**
 * The exactly-once checker (docs/testing.md#exactly-once): operations on every connector, both
 * roads of a two-road network, each with a random schedule of operator timings, callbacks, paybill
 * look-alikes, outages and worker kills drawn from a seed, through the service's HTTP API against
 * the simulators; then the operators' ledgers are compared with the service's (test/money/ledger.ts),
 * and a debit no protocol reveals must be found by reconciliation with the operator's statement
 * (test/money/statement.ts).
 * `npm test` runs a quick set with a fixed seed; `npm run check:money` the long run
 * (MONEY_SCHEDULES, default 2000 there), which writes its report to bench/results/exactly-once-<date>.md.
 *   MONEY_SEED      the seed (printed; default 2070, a new one each long run)
 *   MONEY_SCHEDULES how many schedules (default 40: every network and kind twice)
 *   MONEY_ONLY      schedule indexes (`7` or `4,16`): replays them alone (no batch-wide outage or kill)
 *   MONEY_BATCH     schedules run at once (default 40)
 *   MONEY_DEADLINE_SECONDS  how long one operation may take to be final
 *   MONEY_REPORT    1: write the report under bench/results
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers';
import { reportOf } from './report';
import { runChecker } from './run';
import { startWorld, type World } from './world';

// The quick set's seed finds the six faults the checker was built for on the code they were found in;
// the long run (MONEY_REPORT=1) draws a new seed each time unless told one.
const SEED = Number(process.env.MONEY_SEED ?? (process.env.MONEY_REPORT === '1' ? Date.now() % 1_000_000_007 : 2070));
const SCHEDULES = Number(process.env.MONEY_SCHEDULES ?? 40);
const ONLY = process.env.MONEY_ONLY;
const BATCH = Number(process.env.MONEY_BATCH ?? 40);
const INDEXES =
  ONLY === undefined ? Array.from({ length: SCHEDULES }, (_, index) => index) : ONLY.split(',').map(Number);

let world: World;

beforeAll(async () => {
  world = await startWorld();
}, 120_000);

afterAll(async () => {
  await world?.stop();
});

test(
  `${INDEXES.length} schedules (seed ${SEED}) move money exactly once`,
  async () => {
    const deadlineMs = Number(process.env.MONEY_DEADLINE_SECONDS ?? (world.windowSeconds === null ? 120 : 80)) * 1000;
    process.stdout.write(
      `exactly-once: seed ${SEED}, ${INDEXES.length} schedules, operator timeout ${world.timeoutMs} ms\n`,
    );
    const result = await runChecker(world, {
      seed: SEED,
      indexes: INDEXES,
      batchSize: BATCH,
      deadlineMs,
      log: (line) => process.stdout.write(`exactly-once: ${line}\n`),
    });
    const report = reportOf(result, { timeoutMs: world.timeoutMs, windowSeconds: world.windowSeconds });
    process.stdout.write(report);
    if (process.env.MONEY_REPORT === '1')
      writeFileSync(join(ROOT, 'bench/results', `exactly-once-${new Date().toISOString().slice(0, 10)}.md`), report);
    expect(result.findings.map((finding) => `${finding.index} ${finding.text}`)).toEqual([]);
  },
  Math.ceil(INDEXES.length / BATCH) * 600_000 + 60_000,
);
