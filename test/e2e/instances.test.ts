/**
 * Two API processes (Bun) on one database: the throttle count and the Duplicate-Check-Key are
 * shared, so together they hold one organization's limit and create one object per key.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { randomUUID } from 'node:crypto';
import { apiClient } from '../client';
import { ROOT, awayFromWindowEdge, eventually, testSql, uniqueTaskQueue } from '../helpers';
import { createOrganization } from '../../src/services/merchants/organizations';
import { setThrottleLimits } from '../../src/services/platform/throttling';

const WINDOW_SECONDS = 600;
const apis: { process: ChildProcess; baseUrl: string; output: () => string }[] = [];

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function startApi(): Promise<(typeof apis)[number]> {
  const port = await freePort();
  const env = {
    ...(process.env as Record<string, string>),
    PORT: String(port),
    TASK_QUEUE: uniqueTaskQueue('instances'),
    THROTTLE_WINDOW_SECONDS: String(WINDOW_SECONDS),
  };
  const child = spawn(process.execPath, ['src/server.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const baseUrl = `http://127.0.0.1:${port}`;
  await eventually(
    'an API process to answer',
    async () => (await fetch(`${baseUrl}/healthz`).catch(() => null))?.status === 200,
    30_000,
  );
  return { process: child, baseUrl, output: () => output };
}

beforeAll(async () => {
  apis.push(...(await Promise.all([startApi(), startApi()])));
});

afterAll(() => {
  for (const api of apis) api.process.kill('SIGTERM');
});

test('two API processes together hold one organization read limit', async () => {
  const merchant = await createOrganization(testSql(), 'Shared limit');
  await setThrottleLimits(testSql(), merchant.organization.id, { reads: 10, writes: 1000 });
  const clients = apis.map((api) => apiClient(api.baseUrl, { apiKey: merchant.apiKey }));
  await awayFromWindowEdge(WINDOW_SECONDS, 15_000);
  const statuses = await Promise.all(
    Array.from({ length: 24 }, (_, index) =>
      clients[index % 2]!.GET('/api/contacts').then(({ response }) => response.status),
    ),
  );
  expect(statuses.filter((status) => status === 200)).toHaveLength(10);
  expect(statuses.filter((status) => status === 429)).toHaveLength(14);
});

test('one Duplicate-Check-Key sent to both processes at once creates one object', async () => {
  const merchant = await createOrganization(testSql(), 'Shared keys');
  const rounds = 4;
  for (let round = 0; round < rounds; round += 1) {
    const key = randomUUID();
    const statuses = await Promise.all(
      apis.map((api, index) =>
        apiClient(api.baseUrl, { apiKey: merchant.apiKey })
          .POST('/api/contacts', {
            params: { header: { 'Duplicate-Check-Key': key } },
            body: {
              phone_number: `+2567721${String(60000 + round * 2 + index)}`,
              first_name: 'Two',
              last_name: 'Instances',
            },
          })
          .then(({ response }) => response.status),
      ),
    );
    expect(statuses.sort()).toEqual([201, 409]);
  }
  const [row] = await testSql()<
    { count: number }[]
  >`select count(*)::int as count from contacts where organization_id = ${merchant.organization.id}`;
  expect(row?.count).toBe(rounds);
  for (const api of apis) expect(api.output()).not.toContain('"level":"error"');
});
