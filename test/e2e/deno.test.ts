/**
 * The API on Deno 2 (npm package `deno`), from the same code the Bun process serves: started as
 * `npm run api:deno` does, against the test database and Temporal, driven over HTTP.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { FORM, apiClient } from '../client';
import { ROOT, eventually, testSql, uniqueTaskQueue } from '../helpers';
import { createOrganization } from '../../src/services/merchants/organizations';
import packageJson from '../../package.json';

let api: ChildProcess;
let output = '';
let baseUrl: string;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

beforeAll(async () => {
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  // The command of `npm run api:deno`, with the Deno binary the npm package installed.
  const [command, ...args] = packageJson.scripts['api:deno'].split(' ');
  expect(command).toBe('deno');
  api = spawn(join(ROOT, 'node_modules/.bin/deno'), args, {
    cwd: ROOT,
    env: { ...(process.env as Record<string, string>), PORT: String(port), TASK_QUEUE: uniqueTaskQueue('deno') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const collect = (chunk: Buffer) => (output += chunk.toString());
  api.stdout?.on('data', collect);
  api.stderr?.on('data', collect);
  await eventually(
    'the API on Deno to answer',
    async () => {
      if (api.exitCode !== null) throw new Error(`deno exited early:\n${output}`);
      return (await fetch(`${baseUrl}/healthz`).catch(() => null))?.status === 200;
    },
    90_000,
  );
}, 120_000);

afterAll(() => {
  api?.kill('SIGTERM');
});

test('the API serves on Deno: a contact round trip over HTTP', async () => {
  expect(output).toContain('"runtime":"deno"');
  const merchant = await createOrganization(testSql(), 'Deno Merchant');
  const api = apiClient(baseUrl, { apiKey: merchant.apiKey });
  const created = await api.POST('/api/contacts', {
    body: { phone_number: '+256772123456', first_name: 'Dino', last_name: 'Runtime', metadata: { source: 'deno' } },
    ...FORM,
  });
  expect(created.response.status).toBe(201);
  const contact = created.data!;
  expect(contact).toMatchObject({ phone_number: '+256772123456', metadata: { source: 'deno' } });

  const read = await api.GET('/api/contacts/{id}', { params: { path: { id: String(contact.id) } } });
  expect(read.response.status).toBe(200);
  expect(read.data).toEqual(contact);

  // A versioned path re-enters the app with its body on Deno too.
  const viaPrefix = await apiClient(baseUrl, { apiKey: merchant.apiKey, versionPrefix: 'v1' }).POST('/api/contacts', {
    body: { phone_number: '+256772123457', first_name: 'Vee', last_name: 'One' },
  });
  expect(viaPrefix.response.status).toBe(201);
  // Version 1 names the organization (the document of v1 says so; the client's types are the current version's).
  expect((viaPrefix.data as { organization: unknown }).organization).toBe('Deno Merchant');

  const wrong = await apiClient(baseUrl, { apiKey: '0123456789012345678901234567890123456789' }).GET('/api/contacts');
  expect(wrong.response.status).toBe(401);
  // The contact.created events were handed to Temporal from Deno (no deferral to the outbox sweep).
  expect(output).not.toContain('event dispatch deferred');
  expect(output).not.toContain('"level":"error"');
});
