// `npm test`: installs what is missing, starts its own Temporal dev server (in memory, headless)
// and makes its own PostgreSQL database (on the configured server, or on an embedded one of this
// run: scripts/postgres.mjs), then runs every test file with Bun's runner (scripts/suite.mjs).
// Prints a closing line `N passed, N failed` and exits non-zero on any failure.
import { join } from 'node:path';
import {
  ROOT,
  ensureDependencies,
  ensureTemporalCli,
  startHeadlessDevServer,
  runScript,
  stopChildren,
} from './infra.mjs';
import { formatCounts, freshDataDir, runSuite, testDatabaseUrl, testPostgres } from './suite.mjs';

const DATA = join(ROOT, '.test-data');
const children = [];

async function main() {
  freshDataDir(DATA);
  ensureDependencies();
  const cli = ensureTemporalCli();
  const postgres = await testPostgres(children, DATA);
  const temporalPort = await startHeadlessDevServer(children, cli, {
    purpose: 'tests',
    logFile: join(DATA, 'temporal.log'),
  });

  const { code, counts } = await runSuite({
    databaseUrl: testDatabaseUrl(postgres.url),
    dataDir: DATA,
    cli,
    env: { TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}` },
    testArgs: process.argv.slice(2),
  });
  await stopChildren(children);
  if (counts === null) {
    process.stdout.write('0 passed, 1 failed\n');
    process.exit(code === 0 ? 1 : code);
  }
  process.stdout.write(`${formatCounts(counts)}\n`);
  process.exit(code !== 0 || counts.failed > 0 ? 1 : 0);
}

runScript(main, () => children, { failureLine: '0 passed, 1 failed' });
