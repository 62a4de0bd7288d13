// `npm run test:parity`: the production-parity lane. The suite's runner (scripts/suite.mjs) on the
// tests that drive workflows and workers, but against the Temporal server built from go.temporal.io/server on
// PostgreSQL, configured from temporal-compose.yml (scripts/temporal-server.mjs), and run twice:
// with every test worker on Node, then on Bun (TEST_WORKER_RUNTIME). Each run gets a fresh server
// and fresh databases, as `npm test` does. Prints each run's counts, then a closing line
// `N passed, N failed` over both, and exits non-zero on any failure.
// The lane runs the tests that drive workflows and workers (PARITY_TESTS, below): the API's own
// tests (validation, queries, the console) do not depend on the server or the worker's runtime,
// and running the whole suite twice more kept CI over its time budget. Arguments after `--` go to
// `bun test` instead; PARITY_RUNTIMES=node (or bun) runs one of the two. Both
// runs share one PostgreSQL server (scripts/postgres.mjs; an embedded one has its cluster in
// .test-data-parity/postgres), on which each recreates its databases.
import { join } from 'node:path';
import { ROOT, ensureDependencies, ensureTemporalCli, say, runScript, stopChildren } from './infra.mjs';
import { composeFile, composeServerVersion, ensureTemporalServer, startTemporalServer } from './temporal-server.mjs';
import { formatCounts, freshDataDir, runSuite, testDatabaseUrl, testPostgres } from './suite.mjs';

const DATA = join(ROOT, '.test-data-parity');
const RUNTIMES = (process.env.PARITY_RUNTIMES ?? 'node,bun')
  .split(',')
  .map((runtime) => runtime.trim())
  .filter(Boolean);
/** The PostgreSQL server of both runs (when embedded); each run's own processes are in `children`. */
const serverChildren = [];
/**
 * What the lane runs without arguments: the workflows and activities against the production server,
 * the end-to-end service test and the failover between two routes (a worker killed mid-call included).
 * Kept to about five minutes a runtime, so `.ci/run` stays within its 45 minutes with the server's
 * first build; the API, network and fault suites run in `npm test`.
 */
const PARITY_TESTS = ['test/workflows', 'test/activities', 'test/e2e/service.test.ts', 'test/networks/routes.test.ts'];
let children = [];

/** Another process may take one of the free ports before the server binds it: try again with others. */
async function startServerRetrying(cli, compose, options) {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startTemporalServer(children, cli, compose, options);
    } catch (error) {
      if (attempt === 3) throw error;
      say(`${error.message}; trying again with other ports`);
      await stopChildren(children);
    }
  }
}

async function runLane(runtime, { cli, compose, serverUrl }) {
  const dataDir = freshDataDir(join(DATA, runtime));
  // Its own databases, beside (never instead of) the ones `npm test` uses.
  const databaseUrl = testDatabaseUrl(serverUrl, '_parity');
  const started = Date.now();
  children = [];
  try {
    const server = await startServerRetrying(cli, compose, { databaseUrl, dataDir });
    say(`running the suite with the workers on ${runtime}`);
    const { code, counts } = await runSuite({
      databaseUrl,
      dataDir,
      cli,
      env: { TEMPORAL_ADDRESS: server.address, TEST_WORKER_RUNTIME: runtime },
      testArgs: process.argv.length > 2 ? process.argv.slice(2) : PARITY_TESTS,
    });
    return {
      runtime,
      code,
      counts: counts ?? { passed: 0, failed: 1, skipped: 0, failures: ['(the runner wrote no results)'] },
      seconds: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    await stopChildren(children);
  }
}

async function main() {
  for (const runtime of RUNTIMES)
    if (runtime !== 'node' && runtime !== 'bun') throw new Error(`PARITY_RUNTIMES: unknown runtime ${runtime}`);
  freshDataDir(DATA);
  ensureDependencies();
  const cli = ensureTemporalCli();
  const compose = composeFile();
  ensureTemporalServer(composeServerVersion(compose));
  const { url: serverUrl } = await testPostgres(serverChildren, DATA);
  const lanes = [];
  for (const runtime of RUNTIMES) lanes.push(await runLane(runtime, { cli, compose, serverUrl }));
  await stopChildren(serverChildren);
  const total = { passed: 0, failed: 0, skipped: 0, failures: [] };
  for (const lane of lanes) {
    say(`parity, workers on ${lane.runtime}: ${formatCounts({ ...lane.counts, failures: [] })} (${lane.seconds} s)`);
    total.passed += lane.counts.passed;
    total.failed += lane.counts.failed;
    total.skipped += lane.counts.skipped;
    total.failures.push(...lane.counts.failures.map((test) => `${test} (workers on ${lane.runtime})`));
  }
  process.stdout.write(`${formatCounts(total)}\n`);
  process.exit(lanes.some((lane) => lane.code !== 0) || total.failed > 0 ? 1 : 0);
}

// On Ctrl-C or a failure, the run's processes stop before the PostgreSQL server they use.
runScript(main, () => [...serverChildren, ...children], { failureLine: '0 passed, 1 failed' });
