/**
 * The service as `npm start` runs it: the API process on Bun and the worker process on Node
 * (bundling its workflows itself), driven over HTTP, with an organization made by the admin CLI.
 */
import { asId } from '../../src/domain/ids';
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { firstSteps } from '../../scripts/first-steps.mjs';
import { collectionRequestWorkflowId } from '../../src/contracts/collection-request';
import { FORM, apiClient } from '../client';
import { ROOT, eventually, startWorker, testClient, uniqueTaskQueue, type WorkerProcess } from '../helpers';

const taskQueue = uniqueTaskQueue('e2e');
let api: ChildProcess;
let apiOutput = '';
let worker: WorkerProcess;
let baseUrl: string;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function admin(...args: string[]): string {
  const result = spawnSync(process.execPath, ['src/admin.ts', ...args], {
    cwd: ROOT,
    env: process.env,
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`admin ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

beforeAll(async () => {
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    PORT: String(port),
    TASK_QUEUE: taskQueue,
  };
  delete env.WORKFLOW_BUNDLE_PATH;
  // process.execPath is Bun here: the API runs on the runtime it ships on.
  api = spawn(process.execPath, ['src/server.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  api.stderr?.on('data', (chunk: Buffer) => (apiOutput += chunk.toString()));
  worker = await startWorker(taskQueue, { WORKFLOW_BUNDLE_PATH: '' });
  await eventually(
    'the API to answer',
    async () => (await fetch(`${baseUrl}/healthz`).catch(() => null))?.status === 200,
    30_000,
  );
});

afterAll(async () => {
  api?.kill('SIGTERM');
  await worker?.stop();
});

test('a merchant creates a contact and a collection request over HTTP; the worker runs the request and operators find it by organization', async () => {
  const merchant = JSON.parse(admin('org', 'create', '--name', 'E2E Merchant', '--json')) as {
    apiKey: string;
    organization: { id: number };
  };
  admin('wallet', 'fund', '--org', String(merchant.organization.id), '--currency', 'BXC', '--amount', '100');
  const api = apiClient(baseUrl, { apiKey: merchant.apiKey });
  const created = await api.POST('/api/contacts', {
    body: { phone_number: '+256772123456', first_name: 'A', last_name: 'B' },
    ...FORM,
  });
  expect(created.response.status).toBe(201);
  const contact = created.data!;
  expect(contact.phone_number).toBe('+256772123456');

  const eventList = await api.GET('/api/events');
  expect(eventList.response.status).toBe(200);
  const events = eventList.data!;
  expect(events.count).toBe(1);
  expect(events.results[0]?.type).toBe('contact.created');
  expect(events.results[0]?.data.id).toBe(contact.id);

  // The sandbox's never-paying number: the worker prompts, and the request waits for a payment.
  const requested = await api.POST('/api/collectionrequests', {
    body: { phonenumber: '+80000000009', amount: '10', currency: 'BXC', send_instructions: true },
    ...FORM,
  });
  expect(requested.response.status).toBe(201);
  const request = requested.data!;
  await eventually(
    'the worker to prompt the subscriber',
    async () => {
      const shown = await api.GET('/api/collectionrequests/{id}', { params: { path: { id: String(request.id) } } });
      return shown.data?.status === 'processing_started';
    },
    30_000,
  );
  const client = await testClient();
  const listed = await eventually('the workflow to be listed by organization', async () => {
    const executions = [];
    for await (const execution of client.workflow.list({ query: `OrganizationId = '${merchant.organization.id}'` }))
      executions.push(execution);
    return executions.length === 1 ? executions : undefined;
  });
  expect(listed[0]?.workflowId).toBe(collectionRequestWorkflowId(asId('CollectionRequest', request.id)));
  await client.workflow
    .getHandle(collectionRequestWorkflowId(asId('CollectionRequest', request.id)))
    .terminate('test done');

  const wrong = await apiClient(baseUrl, { apiKey: '0123456789012345678901234567890123456789' }).GET('/api/contacts');
  expect(wrong.response.status).toBe(401);
  expect(wrong.error).toEqual({ detail: 'Invalid token.' });
  expect(apiOutput).not.toContain('"level":"error"');
});

/** A banner command (`curl -H "Name: value" -d field=value ... URL`) sent as curl sends it: `-d` fields joined raw with `&`, form-encoded, a POST when there are any. */
async function asCurlSends(command: string): Promise<{ status: number; body: any }> {
  const words = [...command.matchAll(/"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2]!);
  expect(words[0]).toBe('curl');
  const headers: Record<string, string> = {};
  const fields: string[] = [];
  let url = '';
  for (let index = 1; index < words.length; index += 1) {
    const word = words[index]!;
    if (word === '-H') {
      const [name, ...value] = words[++index]!.split(':');
      headers[name!.trim()] = value.join(':').trim();
    } else if (word === '-d') {
      fields.push(words[++index]!);
    } else {
      url = word;
    }
  }
  const response =
    fields.length === 0
      ? await fetch(url, { headers })
      : await fetch(url, {
          method: 'POST',
          headers: { ...headers, 'Content-Type': 'application/x-www-form-urlencoded' },
          body: fields.join('&'),
        });
  return { status: response.status, body: await response.json() };
}

test("npm start's first steps, as its banner prints them: the collection request it shows ends successful in the sandbox", async () => {
  // The sandbox merchant as npm start makes it: an organization and a BXC wallet with funds.
  const merchant = JSON.parse(admin('org', 'create', '--name', 'Banner Merchant', '--json')) as {
    apiKey: string;
    organization: { id: number };
  };
  admin('wallet', 'fund', '--org', String(merchant.organization.id), '--currency', 'BXC', '--amount', '1000000');
  const steps = firstSteps(merchant.apiKey, baseUrl);
  expect((await asCurlSends(steps.contact)).status).toBe(201);
  expect((await asCurlSends(steps.events)).status).toBe(200);
  const requested = await asCurlSends(steps.request);
  expect(requested).toMatchObject({
    status: 201,
    body: { phonenumber: '+256772123456', amount: '500.0000', currency: 'BXC' },
  });
  // The status command shows the newest request: the sandbox subscriber pays it after SANDBOX_PAYMENT_DELAY_SECONDS (5).
  // Asked once a second, as a person would (reads are throttled, THROTTLE_READS a minute).
  const newest = await eventually(
    "the banner's request to be paid",
    async () => {
      const shown = await asCurlSends(steps.status);
      expect(shown.status).toBe(200);
      if (shown.body.results[0]?.status === 'successful') return shown.body.results[0];
      await Bun.sleep(1000);
      return undefined;
    },
    30_000,
  );
  expect(newest).toMatchObject({ id: requested.body.id, status: 'successful', collection: expect.anything() });
});

test('README.md\'s "Two commands" example is the banner\'s first steps, with $KEY at localhost:8000', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Two commands'), readme.indexOf('## Processes and ports'));
  const example = [...section.matchAll(/```sh\n([\s\S]*?)```/g)]
    .map((match) => match[1]!)
    .find((block) => block.includes('curl'));
  const commands = (example ?? '')
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  expect(commands).toEqual(Object.values(firstSteps('$KEY', 'localhost:8000')));
});
