// The integration suite as `npm test` runs it, against whichever Temporal server the caller
// started: a fresh PostgreSQL database, the workflow code bundled once, then every test file with
// Bun's runner. `npm test` (scripts/test.mjs) runs it on the Temporal dev server; the
// production-parity lane (scripts/test-parity.mjs) on the Temporal server built from source.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { availableParallelism } from 'node:os';
import { ROOT, binPath, ensureChromium, ensureComposePlugin, ensureHaproxy, say } from './infra.mjs';
import { databaseName, dropDatabase, usePostgres } from './postgres.mjs';

/**
 * The PostgreSQL server of a test run (scripts/postgres.mjs, usePostgres): $TEST_DATABASE_URL or
 * $DATABASE_URL when set, else the server at the default address, else an embedded one whose
 * cluster is made afresh in the run's data folder (`<dataDir>/postgres`, emptied with it).
 */
export function testPostgres(children, dataDir) {
  return usePostgres(children, {
    configuredUrl: process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL,
    embedded: { dataDir: join(dataDir, 'postgres'), logFile: join(dataDir, 'postgres.log') },
  });
}

/**
 * The test database on `serverUrl`: $TEST_DATABASE_URL's own when that is the server, else
 * `collections_test_<checkout>`, named after this checkout's path so two checkouts (a CI clone
 * beside a working copy) never drop each other's database mid-run; `suffix` makes a sibling.
 */
export function testDatabaseUrl(serverUrl, suffix = '') {
  const url = new URL(serverUrl);
  if (serverUrl !== process.env.TEST_DATABASE_URL)
    url.pathname = `/collections_test_${createHash('sha1').update(ROOT).digest('hex').slice(0, 8)}`;
  url.pathname += suffix;
  return url.toString();
}

/** JUnit counts: tests that passed, failed (failures + errors) and were skipped. */
export function countResults(junitFile) {
  if (!existsSync(junitFile)) return null;
  const xml = readFileSync(junitFile, 'utf8');
  const suite = /<testsuites\b[^>]*>/.exec(xml)?.[0] ?? '';
  const attribute = (name) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(suite)?.[1] ?? 0);
  const tests = attribute('tests');
  const failed = attribute('failures') + attribute('errors');
  const skipped = attribute('skipped');
  return { passed: tests - failed - skipped, failed, skipped, failures: failedTests(xml) };
}

const XML_ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const unescapeXml = (text) => text.replace(/&(amp|lt|gt|quot|apos);/g, (_, name) => XML_ENTITIES[name]);

/** The tests a JUnit file reports failed, as `file:line name`: what a CI log's last lines must name. */
function failedTests(xml) {
  const failures = [];
  for (const [, attributes, body = ''] of xml.matchAll(/<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    if (!/<(failure|error)\b/.test(body)) continue;
    const attribute = (name) => new RegExp(`\\b${name}="([^"]*)"`).exec(attributes)?.[1] ?? '';
    failures.push(`${attribute('file')}:${attribute('line')} ${unescapeXml(attribute('name'))}`);
  }
  return failures;
}

/** The closing lines of a run: each failed test, then `N passed, N failed`. */
export const formatCounts = (counts) =>
  [
    ...(counts.failures ?? []).map((test) => `failed: ${test}`),
    `${counts.passed} passed, ${counts.failed} failed${counts.skipped ? `, ${counts.skipped} skipped` : ''}`,
  ].join('\n');

/** Empties (or makes) a run's data folder. */
export function freshDataDir(dataDir) {
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  return dataDir;
}

/**
 * Runs the suite once, writing its bundle and JUnit file into `dataDir`; `env` is added to the
 * tests' environment (it must name TEMPORAL_ADDRESS). Returns the runner's exit code and the JUnit
 * counts (null when the runner wrote none, which counts as a failure).
 */
export async function runSuite({ databaseUrl, dataDir, cli, env: laneEnv, testArgs = [] }) {
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    TEMPORAL_CLI: cli,
    TEST_DATA_DIR: dataDir,
    SANDBOX: 'true',
    NODE_ENV: 'test',
    // Test files share one database, each with its own worker and task queue: each file's webhook
    // delivery pool sends the webhooks its own processes made, with its own schedule and certificates.
    WEBHOOK_DISPATCH_SCOPE: 'task-queue',
    // Likewise the routes' health: a file that takes a network's route down takes it down for its own processes only.
    NETWORK_ROUTES_SCOPE: 'task-queue',
    ...laneEnv,
  };
  let dockerConfig = null;
  try {
    dockerConfig = ensureComposePlugin();
  } catch (error) {
    say(`docker compose is not available, so the compose-file check is skipped: ${error.message}`);
  }
  if (dockerConfig) env.DOCKER_CONFIG = dockerConfig;
  else if (dockerConfig === null) delete env.DOCKER_CONFIG;
  ensureChromium();
  ensureHaproxy();

  say(`preparing a fresh test database (${databaseName(databaseUrl)})`);
  await dropDatabase(databaseUrl);
  const migrated = spawnSync(binPath('bun'), ['src/admin.ts', 'migrate'], { cwd: ROOT, env, stdio: 'inherit' });
  if (migrated.status !== 0) throw new Error('migrations failed');

  say('bundling workflow code once for the test workers');
  const bundle = join(dataDir, 'workflow-bundle.js');
  const bundled = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/bundle-workflows.ts', bundle], {
    cwd: ROOT,
    env,
    stdio: 'inherit',
  });
  if (bundled.status !== 0) throw new Error('workflow bundling failed');
  env.WORKFLOW_BUNDLE_PATH = bundle;

  // Test files run side by side, one Bun process each, as many at once as the machine has cores ($TEST_PARALLEL
  // to choose; 1 runs them one after another): each file starts its own worker on its own task queue, and the
  // scopes above keep one file's webhooks and routes' health its own. The slowest files start first
  // (test/timings.json, their durations on a two-core machine). The files that watch whole tables run after
  // them, one at a time.
  const parallel = Number(process.env.TEST_PARALLEL ?? availableParallelism());
  const timings = join(ROOT, 'test/timings.json');
  const paths = testArgs.filter(isPath);
  const onlyAlone = paths.length > 0 && paths.every((path) => RUNS_ALONE.includes(path.replace(/^\.\//, '')));
  if (parallel <= 1 || onlyAlone) return await bunTest(env, join(dataDir, 'junit.xml'), testArgs);
  const sideBySide = await bunTest(env, join(dataDir, 'junit.xml'), [
    `--parallel=${parallel}`,
    ...(existsSync(timings) ? [`--timings=${timings}`] : []),
    ...RUNS_ALONE.map((file) => `--path-ignore-patterns=${file}`),
    ...testArgs,
  ]);
  const alone = runsAloneAmong(testArgs);
  if (alone.length === 0) return sideBySide;
  say(`running ${alone.join(', ')} alone`);
  const flags = testArgs.filter((arg) => !isPath(arg));
  const afterwards = await bunTest(env, join(dataDir, 'junit-alone.xml'), [...flags, ...alone]);
  const counts =
    sideBySide.counts && afterwards.counts
      ? {
          passed: sideBySide.counts.passed + afterwards.counts.passed,
          failed: sideBySide.counts.failed + afterwards.counts.failed,
          skipped: sideBySide.counts.skipped + afterwards.counts.skipped,
          failures: [...sideBySide.counts.failures, ...afterwards.counts.failures],
        }
      : null;
  return { code: sideBySide.code || afterwards.code, counts };
}

/**
 * Files that watch whole tables, not only their own organizations' rows: a refused request writes nothing anywhere,
 * a forged operator callback moves no money anywhere. Another file's writes would fall in their window, so they
 * run after the others, one at a time.
 */
const RUNS_ALONE = ['test/api/fuzz.test.ts', 'test/api/operator-callbacks-fuzz.test.ts'];

/** A file or folder of the project named on the command line (Bun's path filters), not a flag or its value. */
const isPath = (arg) => !arg.startsWith('-') && existsSync(join(ROOT, arg));

/** The files of RUNS_ALONE the run's arguments choose: all of them when no path is named. */
function runsAloneAmong(testArgs) {
  const paths = testArgs.filter(isPath).map((arg) => arg.replace(/^\.\//, '').replace(/\/$/, ''));
  if (paths.length === 0) return RUNS_ALONE;
  return RUNS_ALONE.filter((file) => paths.some((path) => file === path || file.startsWith(`${path}/`)));
}

/** One `bun test` run with its JUnit file: the runner's exit code and the counts. */
async function bunTest(env, junitFile, args) {
  const all = ['test', '--timeout', '120000', '--reporter=junit', `--reporter-outfile=${junitFile}`, ...args];
  const code = await new Promise((resolve) => {
    const runner = spawn(binPath('bun'), all, { cwd: ROOT, env, stdio: 'inherit' });
    runner.once('exit', (exitCode, signal) => {
      if (exitCode !== 0) say(`bun test ended with ${signal ? `signal ${signal}` : `exit code ${exitCode}`}`);
      resolve(exitCode ?? (signal ? 1 : 0));
    });
  });
  return { code, counts: countResults(junitFile) };
}
