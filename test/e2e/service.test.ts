/**
 * The service as `npm start` runs it: the API process on Bun and the worker process on Node
 * (bundling its workflows itself), driven over HTTP, with an organization made by the admin CLI.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { collectionRequestWorkflowId } from '../../src/workflows/contracts/collection-request';
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
  const result = spawnSync(process.execPath, ['src/admin.ts', ...args], { cwd: ROOT, env: process.env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`admin ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

beforeAll(async () => {
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = { ...(process.env as Record<string, string>), PORT: String(port), TASK_QUEUE: taskQueue };
  delete env.WORKFLOW_BUNDLE_PATH;
  // process.execPath is Bun here: the API runs on the runtime it ships on.
  api = spawn(process.execPath, ['src/server.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  api.stderr?.on('data', (chunk: Buffer) => (apiOutput += chunk.toString()));
  worker = await startWorker(taskQueue, { WORKFLOW_BUNDLE_PATH: '' });
  await eventually('the API to answer', async () => (await fetch(`${baseUrl}/healthz`).catch(() => null))?.status === 200, 30_000);
});

afterAll(async () => {
  api?.kill('SIGTERM');
  await worker?.stop();
});

test('a merchant creates a contact and a collection request over HTTP; the worker runs the request and operators find it by organization', async () => {
  const merchant = JSON.parse(admin('org', 'create', '--name', 'E2E Merchant', '--json')) as { apiKey: string; organization: { id: number } };
  admin('wallet', 'fund', '--org', String(merchant.organization.id), '--currency', 'BXC', '--amount', '100');
  const api = apiClient(baseUrl, { apiKey: merchant.apiKey });
  const created = await api.POST('/api/contacts', { body: { phone_number: '+256772123456', first_name: 'A', last_name: 'B' }, ...FORM });
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
    body: { phonenumber: '+80000000009', amount: '10', currency: 'BXC', send_instructions: true }, ...FORM,
  });
  expect(requested.response.status).toBe(201);
  const request = requested.data!;
  await eventually('the worker to prompt the subscriber', async () => {
    const shown = await api.GET('/api/collectionrequests/{id}', { params: { path: { id: String(request.id) } } });
    return shown.data?.status === 'processing_started';
  }, 30_000);
  const client = await testClient();
  const listed = await eventually('the workflow to be listed by organization', async () => {
    const executions = [];
    for await (const execution of client.workflow.list({ query: `OrganizationId = '${merchant.organization.id}'` })) executions.push(execution);
    return executions.length === 1 ? executions : undefined;
  });
  expect(listed[0]?.workflowId).toBe(collectionRequestWorkflowId(request.id));
  await client.workflow.getHandle(collectionRequestWorkflowId(request.id)).terminate('test done');

  const wrong = await apiClient(baseUrl, { apiKey: '0123456789012345678901234567890123456789' }).GET('/api/contacts');
  expect(wrong.response.status).toBe(401);
  expect(wrong.error).toEqual({ detail: 'Invalid token.' });
  expect(apiOutput).not.toContain('"level":"error"');
});
