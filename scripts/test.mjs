// `npm test`: installs what is missing, starts its own Temporal dev server (in memory, headless)
// and its own PostgreSQL database, then runs every test file with Bun's runner. Prints a closing
// line `N passed, N failed` and exits non-zero on any failure.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  ROOT, binPath, ensureComposePlugin, ensureDependencies, ensureTemporalCli, freePort, say, startTemporalDevServer, stopChildren,
} from './infra.mjs';

const DATA = join(ROOT, '.test-data');
const children = [];

function testDatabaseUrl() {
  if (process.env.TEST_DATABASE_URL) return process.env.TEST_DATABASE_URL;
  const base = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  base.pathname = '/collections_test';
  return base.toString();
}

function countResults(junitFile) {
  if (!existsSync(junitFile)) return null;
  const xml = readFileSync(junitFile, 'utf8');
  const suite = /<testsuites\b[^>]*>/.exec(xml)?.[0] ?? '';
  const attribute = (name) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(suite)?.[1] ?? 0);
  const tests = attribute('tests');
  const failed = attribute('failures') + attribute('errors');
  const skipped = attribute('skipped');
  return { passed: tests - failed - skipped, failed, skipped };
}

async function main() {
  rmSync(DATA, { recursive: true, force: true });
  mkdirSync(DATA, { recursive: true });
  ensureDependencies();
  const cli = ensureTemporalCli();
  // Another process may take a free port between our choice and the server's bind: try again.
  let temporalPort;
  for (let attempt = 1; ; attempt += 1) {
    temporalPort = await freePort();
    say(`starting a Temporal dev server for the tests on 127.0.0.1:${temporalPort}`);
    try {
      await startTemporalDevServer(children, cli, { port: temporalPort, headless: true, logFile: join(DATA, 'temporal.log') });
      break;
    } catch (error) {
      if (attempt === 3) throw error;
      say(`${error.message}; trying other ports`);
    }
  }

  const databaseUrl = testDatabaseUrl();
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
    TEMPORAL_CLI: cli,
    TEST_DATA_DIR: DATA,
    SANDBOX: 'true',
    NODE_ENV: 'test',
  };
  let dockerConfig = null;
  try {
    dockerConfig = ensureComposePlugin();
  } catch (error) {
    say(`docker compose is not available, so the compose-file check is skipped: ${error.message}`);
  }
  if (dockerConfig) env.DOCKER_CONFIG = dockerConfig;
  else if (dockerConfig === null) delete env.DOCKER_CONFIG;
  say('preparing a fresh test database');
  const drop = new URL(databaseUrl);
  const name = drop.pathname.slice(1);
  drop.pathname = '/postgres';
  spawnSync('psql', [drop.toString(), '-qc', `drop database if exists "${name}" with (force)`], { stdio: 'inherit' });
  const migrated = spawnSync(binPath('bun'), ['src/admin.ts', 'migrate'], { cwd: ROOT, env, stdio: 'inherit' });
  if (migrated.status !== 0) throw new Error('migrations failed');

  say('bundling workflow code once for the test workers');
  const bundled = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/bundle-workflows.ts', join(DATA, 'workflow-bundle.js')], {
    cwd: ROOT, env, stdio: 'inherit',
  });
  if (bundled.status !== 0) throw new Error('workflow bundling failed');
  env.WORKFLOW_BUNDLE_PATH = join(DATA, 'workflow-bundle.js');

  const junitFile = join(DATA, 'junit.xml');
  const testArgs = ['test', '--timeout', '120000', '--reporter=junit', `--reporter-outfile=${junitFile}`, ...process.argv.slice(2)];
  const code = await new Promise((resolve) => {
    const runner = spawn(binPath('bun'), testArgs, { cwd: ROOT, env, stdio: 'inherit' });
    runner.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0)));
  });
  const counts = countResults(junitFile);
  await stopChildren(children);
  if (counts === null) {
    process.stdout.write('0 passed, 1 failed\n');
    process.exit(code === 0 ? 1 : code);
  }
  process.stdout.write(`${counts.passed} passed, ${counts.failed} failed${counts.skipped ? `, ${counts.skipped} skipped` : ''}\n`);
  process.exit(code !== 0 || counts.failed > 0 ? 1 : 0);
}

process.on('SIGINT', () => void stopChildren(children).then(() => process.exit(130)));
main().catch(async (error) => {
  process.stderr.write(`[collections] ${error instanceof Error ? error.stack : String(error)}\n`);
  await stopChildren(children);
  process.stdout.write('0 passed, 1 failed\n');
  process.exit(1);
});
