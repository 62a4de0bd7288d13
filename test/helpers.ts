/**
 * Test harness: the real PostgreSQL database and Temporal server that `npm test` (or the parity
 * lane) started and passes in the environment, real worker processes (Node; Bun when
 * TEST_WORKER_RUNTIME=bun), and the app called through `app.handle`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { WORKER_NODE_ARGS } from '../scripts/infra.mjs';
import { createApp } from '../src/app';
import { loadConfig, type Config } from '../src/config';
import { createSql, type Sql } from '../src/db';
import { connectClient } from '../src/temporal/connection';
import { launcherFromConfig } from '../src/temporal/launcher';
import type { Launcher } from '../src/services/platform/ports';
import { createOrganization, fundWallet, type CreatedOrganization } from '../src/services/merchants/organizations';
import { setThrottleLimits, type ThrottleLimits } from '../src/services/platform/throttling';
import { checkResponsesOf } from './openapi-contract';

export const ROOT = join(import.meta.dir, '..');
export const BASE_URL = 'http://localhost';

/** The console's signing key of this test process (required by configurations with SANDBOX=false). */
const TEST_CONSOLE_SECRET = randomBytes(32).toString('base64url');

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({ CONSOLE_SECRET: TEST_CONSOLE_SECRET, ...process.env, ...overrides });
}

let sharedSql: Sql | undefined;
/** One pool for the whole test process. */
export function testSql(): Sql {
  sharedSql ??= createSql(testConfig().databaseUrl, 5);
  return sharedSql;
}

let sharedClient: Promise<Client> | undefined;
export function testClient(): Promise<Client> {
  sharedClient ??= connectClient(testConfig().temporal);
  return sharedClient;
}

/**
 * The tests' one allocator of phone numbers: every number it gives in a run is new, whatever the
 * prefix and whichever test process asks (each process takes blocks of numbers by creating their
 * files exclusively under the run's data folder), so no test meets another's requests,
 * collections or payments by number. `prefix` picks the network by its first digits (`+256772`
 * MTN Uganda, `+256701` Airtel Uganda, `+254711` Safaricom); the serial fills the rest of the 12
 * digits.
 */
const NUMBER_BLOCK = 10_000;
let numberBlocks: string | null = null;
let serial = { next: 0, end: 0 };

function reserveNumberBlock(): { next: number; end: number } {
  numberBlocks ??= join(process.env.TEST_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'test-numbers-')), 'number-blocks');
  mkdirSync(numberBlocks, { recursive: true });
  for (let block = 0; ; block += 1) {
    try {
      closeSync(openSync(join(numberBlocks, String(block)), 'wx'));
      return { next: block * NUMBER_BLOCK, end: (block + 1) * NUMBER_BLOCK };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}

export function uniqueNumber(prefix: string): string {
  if (serial.next === serial.end) serial = reserveNumberBlock();
  return `${prefix}${String(serial.next++).padStart(13 - prefix.length, '0')}`;
}

/** `uniqueNumber` with its prefix fixed: a file's source of fresh numbers of one network. */
export const numberSequence =
  (prefix: string): (() => string) =>
  () =>
    uniqueNumber(prefix);

export const uniqueTaskQueue = (name: string): string => `test-${name}-${randomUUID().slice(0, 8)}`;

/** The metrics token of the tests' apps outside sandbox mode, where the service wants one (src/config.ts). */
export const LIVE_METRICS_TOKEN = 'live-test-metrics-token';

export type TestApp = {
  app: ReturnType<typeof createApp>;
  config: Config;
  taskQueue: string;
  client: Client;
  launcher: Launcher;
};

/**
 * The real app against the test database; its events go to `taskQueue` (default: one with no
 * worker). `overrides` are environment variables (short windows and TTLs for tests). Every
 * response of its `handle` is checked against the OpenAPI document the app serves
 * (test/openapi-contract.ts): a response the document does not describe fails the test.
 */
export async function testApp(
  taskQueue = uniqueTaskQueue('api'),
  overrides: Record<string, string> = {},
): Promise<TestApp> {
  const config = testConfig({ ...overrides, TASK_QUEUE: taskQueue });
  const client = await testClient();
  const launcher = launcherFromConfig(client, config, () => {});
  const app = createApp({ config, sql: testSql(), temporal: client, launcher });
  checkResponsesOf(app);
  return { app, config, taskQueue, client, launcher };
}

let organizationCounter = 0;
export type TestMerchant = CreatedOrganization & { request: Requester };

/**
 * Limits of test organizations: suites read one organization far more than 30 times a minute.
 * Throttling tests pass `{ throttle: 'default' }` to get the production defaults.
 */
export const TEST_THROTTLE_LIMITS: ThrottleLimits = { reads: 100_000, writes: 100_000 };

/** A fresh organization with a funded BXC wallet, and a requester that sends its token. */
export async function createMerchant(
  app: TestApp['app'],
  name = `Merchant ${++organizationCounter}`,
  options: { throttle?: ThrottleLimits | 'default' } = {},
): Promise<TestMerchant> {
  const sql = testSql();
  const created = await createOrganization(sql, name);
  await fundWallet(sql, created.organization.id, 'BXC', '1000');
  const throttle = options.throttle ?? TEST_THROTTLE_LIMITS;
  if (throttle !== 'default') await setThrottleLimits(sql, created.organization.id, throttle);
  return { ...created, request: requester(app, created.apiKey) };
}

export type RequestOptions = {
  method?: string;
  body?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
};
export type Requester = (
  path: string,
  options?: RequestOptions,
) => Promise<{ status: number; body: any; headers: Headers }>;

export function requester(app: TestApp['app'], apiKey: string | null): Requester {
  checkResponsesOf(app);
  return async (path, options = {}) => {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (apiKey !== null) headers.Authorization ??= `Token ${apiKey}`;
    let body: string | undefined;
    if (options.form) {
      headers['Content-Type'] ??= 'application/x-www-form-urlencoded';
      body = new URLSearchParams(options.form).toString();
    } else if (options.body !== undefined) {
      headers['Content-Type'] ??= 'application/json';
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    }
    const response = await app.handle(
      new Request(`${BASE_URL}${path}`, {
        method: options.method ?? (body === undefined ? 'GET' : 'POST'),
        headers,
        body,
      }),
    );
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      // Not JSON: the test sees the text.
    }
    return { status: response.status, body: parsed, headers: response.headers };
  };
}

/** Throttle windows restart on the window's edge: a burst that must land in one window starts well inside one. */
export async function awayFromWindowEdge(windowSeconds: number, marginMs: number): Promise<void> {
  const windowMs = windowSeconds * 1000;
  const intoWindow = Date.now() % windowMs;
  if (intoWindow > windowMs - marginMs) await Bun.sleep(windowMs - intoWindow + 50);
}

/** How long past its wait's deadline one check of `eventually` may still run before the wait fails. */
const CHECK_GRACE_MS = 5_000;

/**
 * Polls until `check` returns a value other than undefined/false, or fails after `timeoutMs`. A
 * check that does not come back (a query nobody answers, a request that hangs) fails the wait too,
 * `CHECK_GRACE_MS` after the deadline: no wait outlives its deadline by more than that.
 */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const timedOut = () => new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
  for (;;) {
    const result = await boundedBy(check(), deadline + CHECK_GRACE_MS, timedOut);
    if (result !== undefined && result !== false) return result;
    if (Date.now() > deadline) throw timedOut();
    await Bun.sleep(100);
  }
}

/** `pending`, or `failure()` thrown once `limit` (a time) has passed without it settling. */
async function boundedBy<T>(pending: Promise<T>, limit: number, failure: () => Error): Promise<T> {
  // A check abandoned at the limit may still fail later: that is no unhandled rejection.
  pending.catch(() => undefined);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(failure()), Math.max(0, limit - Date.now()));
  });
  try {
    return await Promise.race([pending, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** What the worker's JSON log says once it polls its task queue (the SDK's "Worker state changed"). */
export const WORKER_RUNNING_LOG = '"state":"RUNNING"';

/** How long a worker asked to stop may take to end (its SDK shutdown) before it is killed. */
const WORKER_STOP_GRACE_MS = 30_000;

export type WorkerProcess = {
  child: ChildProcess;
  taskQueue: string;
  output: () => string;
  stop: () => Promise<void>;
  kill: () => Promise<void>;
};

export type WorkerRuntime = 'node' | 'bun';

/**
 * The runtime test workers run on: Node (the one the worker ships on) unless TEST_WORKER_RUNTIME
 * says `bun`; the production-parity lane runs the whole suite once with each (scripts/test-parity.mjs).
 */
export function defaultWorkerRuntime(): WorkerRuntime {
  const runtime = process.env.TEST_WORKER_RUNTIME ?? 'node';
  if (runtime !== 'node' && runtime !== 'bun')
    throw new Error(`TEST_WORKER_RUNTIME must be node or bun, not ${JSON.stringify(runtime)}`);
  return runtime;
}

/** The command that runs a TypeScript worker-side script on `runtime` (Node needs the tsx loader; Bun runs it as is). */
export function workerRuntimeCommand(
  script: string,
  runtime: WorkerRuntime = defaultWorkerRuntime(),
): [string, ...string[]] {
  return runtime === 'node' ? ['node', ...WORKER_NODE_ARGS, script] : [process.execPath, script];
}

/**
 * The outbox sweep's grace in the tests' workers (`OUTBOX_GRACE_SECONDS`). Test files share one database, and a sweep
 * starts every organization's rows on its own task queue: with a short grace, a test's sweep started another file's
 * request, committed and its start still on the way, on a sandbox-only worker, and that request was paid by the
 * sandbox, not by its file's operator simulator. A test whose sweep must find its own orphans ages them (`ageRequests`).
 */
const TEST_SWEEP_GRACE_SECONDS = 3600;

/** Dates the collection requests `ids` two hours back, past `TEST_SWEEP_GRACE_SECONDS`: orphans a test's sweep starts. */
export async function ageRequests(ids: number[]): Promise<void> {
  const sql = testSql();
  await sql`update collection_requests set created = created - interval '2 hours' where id in ${sql(ids)}`;
}

/**
 * Starts the real worker process, as `npm start` does, on Node (the runtime it ships on) unless
 * `runtime` or TEST_WORKER_RUNTIME says otherwise, and waits until it polls its task queue.
 */
export async function startWorker(
  taskQueue: string,
  env: Record<string, string> = {},
  runtime: WorkerRuntime = defaultWorkerRuntime(),
): Promise<WorkerProcess> {
  const command = workerRuntimeCommand('src/worker.ts', runtime);
  const child = spawn(command[0], command.slice(1), {
    cwd: ROOT,
    // No metrics port unless a test asks for one: several workers run at once.
    env: {
      ...process.env,
      TASK_QUEUE: taskQueue,
      OUTBOX_SWEEP: 'false',
      OUTBOX_GRACE_SECONDS: String(TEST_SWEEP_GRACE_SECONDS),
      RETENTION_SWEEP: 'false',
      WORKER_METRICS_PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    // TEST_WORKER_LOG=1 shows the worker's own log while a test runs.
    if (process.env.TEST_WORKER_LOG === '1') process.stderr.write(chunk);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await eventually(
    'the worker to run',
    async () => {
      if (child.exitCode !== null) throw new Error(`worker exited early:\n${output}`);
      return output.includes(WORKER_RUNNING_LOG);
    },
    60_000,
  );
  const end = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    // A worker still running after the grace period is killed: stopping one never waits forever.
    const force = setTimeout(() => child.kill('SIGKILL'), WORKER_STOP_GRACE_MS);
    await exited;
    clearTimeout(force);
  };
  return { child, taskQueue, output: () => output, stop: () => end('SIGTERM'), kill: () => end('SIGKILL') };
}

/**
 * With RECORD_HISTORIES set to a folder (test/histories), writes a workflow's history there for
 * the replay test, as scripts/record-history.ts does: how the histories of each path were recorded
 * (`RECORD_HISTORIES=$PWD/test/histories npm test -- test/workflows test/networks`). Without it, nothing.
 */
export async function recordHistory(client: Client, workflowId: string, name: string, runId?: string): Promise<void> {
  const folder = process.env.RECORD_HISTORIES;
  if (!folder) return;
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  writeFileSync(join(folder, `${name}.json`), `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 2)}\n`);
}
