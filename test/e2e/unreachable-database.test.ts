/**
 * The API process (Bun) when its PostgreSQL stops answering mid-connection, as a host cut from the
 * database by a partition sees it (no refusal, no reset: packets vanish): a merchant's request is
 * answered 503 with Retry-After within API_REQUEST_TIMEOUT_SECONDS, never held until TCP gives up;
 * readiness fails within its 2 s check, liveness does not; once the database answers again, so does
 * the API. And SIGTERM: readiness fails at once while requests are still served for
 * API_DRAIN_SECONDS, then the process ends by itself.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createOrganization } from '../../src/services/merchants/organizations';
import { ROOT, eventually, testConfig, testSql, uniqueTaskQueue } from '../helpers';
import { postgresProxy } from '../postgres-proxy';

/** A TCP proxy to PostgreSQL that can stop passing bytes either way, keeping every connection open. */
async function stallableProxy(target: URL) {
  let stalled = false;
  const proxy = await postgresProxy(target, () => (stalled ? 'drop' : 'pass'));
  return {
    url: proxy.url,
    stall: () => {
      stalled = true;
    },
    /** Passing again; the connections whose bytes were dropped are cut, as TCP would after its retries. */
    resume: () => {
      stalled = false;
      proxy.cutAll();
    },
    close: proxy.close,
  };
}

const REQUEST_TIMEOUT_SECONDS = 4;
const DRAIN_SECONDS = 2;
let proxy: Awaited<ReturnType<typeof stallableProxy>>;
let api: ChildProcess;
let port = 0;
let merchant: { apiKey: string };

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

const get = (path: string, key?: string) =>
  fetch(`http://127.0.0.1:${port}${path}`, {
    headers: key ? { Authorization: `Token ${key}` } : {},
    signal: AbortSignal.timeout(30_000),
  });

beforeAll(async () => {
  merchant = await createOrganization(testSql(), 'Unreachable database');
  const databaseUrl = new URL(testConfig().databaseUrl);
  proxy = await stallableProxy(databaseUrl);
  port = await freePort();
  api = spawn(process.execPath, ['src/server.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: proxy.url,
      TASK_QUEUE: uniqueTaskQueue('unreachable-db'),
      API_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_SECONDS),
      API_DRAIN_SECONDS: String(DRAIN_SECONDS),
      METRICS: 'false',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The process's last words, shown when it ends other than by the SIGTERM the second test sends.
  const output: string[] = [];
  for (const stream of [api.stdout, api.stderr]) stream?.on('data', (chunk) => output.push(String(chunk)));
  api.once('exit', (code) => {
    if (code !== 0) process.stderr.write(`the API process ended (${code}):\n${output.join('').slice(-4000)}\n`);
  });
  await eventually(
    'the API process to answer',
    async () => (await get('/readyz').catch(() => null))?.status === 200,
    30_000,
  );
});

afterAll(() => {
  api?.kill('SIGKILL');
  proxy?.close();
});

test('a database that stops answering: 503 with Retry-After in time, readiness fails, liveness holds, then service again', async () => {
  expect((await get('/api/events?limit=1', merchant.apiKey)).status).toBe(200);
  proxy.stall();
  const started = Date.now();
  const answer = await get('/api/events?limit=1', merchant.apiKey);
  const waited = Date.now() - started;
  expect(answer.status).toBe(503);
  expect(answer.headers.get('retry-after')).toBe('5');
  expect(await answer.json()).toEqual({ detail: 'The service is temporarily unavailable. Try again shortly.' });
  expect(waited).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_SECONDS * 1000 - 100);
  expect(waited).toBeLessThan(REQUEST_TIMEOUT_SECONDS * 1000 + 3000);
  const readiness = await get('/readyz');
  expect(readiness.status).toBe(503);
  expect(await readiness.json()).toMatchObject({ postgres: 'unreachable' });
  expect((await get('/livez')).status).toBe(200);
  proxy.resume();
  await eventually(
    'the API to answer again',
    async () => (await get('/api/events?limit=1', merchant.apiKey)).status === 200,
    30_000,
  );
}, 60_000);

test('SIGTERM: readiness fails at once, requests are served through the drain, then the process ends', async () => {
  await eventually('ready', async () => (await get('/readyz')).status === 200, 30_000);
  const exited = new Promise<number | null>((resolve) => api.once('exit', (code) => resolve(code)));
  const signalled = Date.now();
  api.kill('SIGTERM');
  await eventually('readiness to fail', async () => (await get('/readyz')).status === 503, 2_000);
  expect((await get('/api/events?limit=1', merchant.apiKey)).status).toBe(200);
  expect(await exited).toBe(0);
  expect(Date.now() - signalled).toBeGreaterThanOrEqual(DRAIN_SECONDS * 1000);
}, 60_000);
