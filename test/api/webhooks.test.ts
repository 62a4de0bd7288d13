import { asId, type DeliveryId } from '../../src/domain/ids';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { issueApiKey } from '../../src/auth/keys';
import { createApp } from '../../src/app';
import { recordEvent } from '../../src/services/webhooks/events';
import { logAttempt } from '../../src/services/webhooks/webhook-deliveries';
import { setBasicCredentials } from '../../src/services/webhooks/webhook-secrets';
import { launcherFromConfig } from '../../src/temporal/launcher';
import {
  LIVE_METRICS_TOKEN,
  createMerchant,
  requester,
  testApp,
  testConfig,
  testSql,
  type Requester,
  type TestApp,
  type TestMerchant,
} from '../helpers';

let ctx: TestApp;
let merchant: TestMerchant;
let other: TestMerchant;
/** A user of `merchant`'s organization without the "Manage Users and Organization Settings" permission. */
let clerk: Requester;
let clerkUserId: number;
const startedWorkflows: string[] = [];

beforeAll(async () => {
  ctx = await testApp();
  merchant = await createMerchant(ctx.app);
  other = await createMerchant(ctx.app);
  const sql = testSql();
  const [user] = await sql<{ id: number }[]>`
    insert into users (organization_id, name, role) values (${merchant.organization.id}, 'clerk', 'finance') returning id`;
  clerkUserId = user!.id;
  const key = issueApiKey();
  await sql`insert into api_keys (organization_id, user_id, prefix, digest) values (${merchant.organization.id}, ${clerkUserId}, ${key.prefix}, ${key.digest})`;
  clerk = requester(ctx.app, key.key);
});

afterAll(async () => {
  // Redeliveries started here have no worker on their task queue: end them.
  await Promise.all(
    startedWorkflows.map((id) =>
      ctx.client.workflow
        .getHandle(id)
        .terminate('test over')
        .catch(() => {}),
    ),
  );
});

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
let hookCounter = 0;
const target = () => `https://merchant.example/hooks/${++hookCounter}`;

async function createHook(owner: TestMerchant, event = 'contact.created') {
  const response = await owner.request('/api/webhooks', { form: { event, target: target() } });
  expect(response.status).toBe(201);
  return response.body as { id: number; user: number; event: string; target: string; created: string; updated: string };
}

describe('POST /api/webhooks', () => {
  test('creates a webhook from form fields: the webhook object and its status (enabled), nothing else', async () => {
    const url = target();
    const response = await merchant.request('/api/webhooks', { form: { event: 'collection.received', target: url } });
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      id: expect.any(Number),
      user: merchant.user.id,
      event: 'collection.received',
      target: url,
      created: expect.stringMatching(TIMESTAMP),
      updated: expect.stringMatching(TIMESTAMP),
      status: 'enabled',
      disabled_at: null,
      disabled_reason: null,
    });
  });

  test('accepts JSON and ignores read-only fields', async () => {
    // An id no webhook of this run can have: the one sent is ignored, whatever ran before.
    const response = await merchant.request('/api/webhooks', {
      body: { event: 'contact.created', target: target(), id: 987654321, user: 77 },
    });
    expect(response.status).toBe(201);
    expect(response.body.id).not.toBe(987654321);
    expect(response.body.user).toBe(merchant.user.id);
  });

  test('an unknown event is 400 with the choice message', async () => {
    const response = await merchant.request('/api/webhooks', { form: { event: 'wrongevent', target: target() } });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      event: ['Select a valid choice. wrongevent is not one of the available choices.'],
    });
  });

  test('a non-HTTPS target is 400, sandbox mode included', async () => {
    const plain = await merchant.request('/api/webhooks', {
      form: { event: 'contact.created', target: 'http://merchant.example/hooks' },
    });
    expect(plain.status).toBe(400);
    expect(plain.body).toEqual({ target: ['Enter a valid HTTPS URL: webhook targets must use https://.'] });
    const notUrl = await merchant.request('/api/webhooks', {
      form: { event: 'contact.created', target: 'merchant.example/hooks' },
    });
    expect(notUrl.body).toEqual({ target: ['Enter a valid URL.'] });
  });

  test('missing fields are 400 naming each field', async () => {
    const response = await merchant.request('/api/webhooks', { form: {} });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ event: ['This field is required.'], target: ['This field is required.'] });
  });

  test('outside sandbox mode, targets naming loopback or private addresses are 400', async () => {
    const config = testConfig({
      SANDBOX: 'false',
      PUBLIC_BASE_URL: 'https://collections.example',
      METRICS_TOKEN: LIVE_METRICS_TOKEN,
      TASK_QUEUE: ctx.taskQueue,
    });
    const app = createApp({
      config,
      sql: testSql(),
      temporal: ctx.client,
      launcher: launcherFromConfig(ctx.client, config, () => {}),
    });
    const production = requester(app, merchant.apiKey);
    const privateTargets = [
      'https://127.0.0.1/h',
      'https://localhost:8443/h',
      'https://10.1.2.3/h',
      'https://[::1]/h',
      'https://169.254.169.254/latest',
      // IPv6 forms that carry a private IPv4 address: NAT64, 6to4, mapped, translated, compatible.
      'https://[64:ff9b::a01:203]/h',
      'https://[64:ff9b::10.1.2.3]/h',
      'https://[2002:c0a8:101::1]/h',
      'https://[::ffff:127.0.0.1]/h',
      'https://[::ffff:0:10.0.0.1]/h',
      'https://[::127.0.0.1]/h',
    ];
    for (const url of privateTargets) {
      const response = await production('/api/webhooks', { form: { event: 'contact.created', target: url } });
      expect(response.status).toBe(400);
      expect(response.body.target).toEqual([
        'Enter a public address: webhook targets may not point to loopback or private networks.',
      ]);
    }
    expect(
      (await production('/api/webhooks', { form: { event: 'contact.created', target: 'https://93.184.215.14/h' } }))
        .status,
    ).toBe(201);
    expect(
      (
        await production('/api/webhooks', {
          form: { event: 'contact.created', target: 'https://[64:ff9b::5db8:d70e]/h' },
        })
      ).status,
    ).toBe(201);
  });

  test.each([
    ['a CR/LF inside', 'https://merchant.example/h\r\nX-Injected: 1', 'control characters'],
    ['a tab inside', 'https://merchant.example/\th', 'control characters'],
    ['an empty host', 'https:///x', 'Enter a valid URL.'],
    ['user information', 'https://user:secret@merchant.example/h', 'without a user name or password'],
    ['a user name only', 'https://user@merchant.example/h', 'without a user name or password'],
  ])('a target with %s is 400', async (_name, url, message) => {
    const response = await merchant.request('/api/webhooks', { body: { event: 'contact.created', target: url } });
    expect(response.status).toBe(400);
    expect(response.body.target[0]).toContain(message);
  });

  test('targets are stored normalised: lower-case host, default port dropped', async () => {
    const response = await merchant.request('/api/webhooks', {
      form: { event: 'contact.created', target: 'https://Merchant.EXAMPLE:443/Hooks?a=1' },
    });
    expect(response.status).toBe(201);
    expect(response.body.target).toBe('https://merchant.example/Hooks?a=1');
  });

  test('a v1 client reads the webhook list and a delivery log as bare arrays', async () => {
    const hook = await createHook(merchant, 'contact.created');
    const list = await merchant.request('/api/webhooks', { headers: { 'Api-Version': 'v1' } });
    expect(list.status).toBe(200);
    expect(Array.isArray(list.body)).toBe(true);
    expect(list.body.map((item: { id: number }) => item.id)).toContain(hook.id);
    const log = await merchant.request(`/api/v1/webhooks/${hook.id}/deliveries`);
    expect(log.status).toBe(200);
    expect(log.body).toEqual([]);
  });
});

describe('permission "Manage Users and Organization Settings"', () => {
  test('without it every webhook route is 403, even for a missing id', async () => {
    const hook = await createHook(merchant);
    const attempts = await Promise.all([
      clerk('/api/webhooks', { form: { event: 'contact.created', target: target() } }),
      clerk('/api/webhooks'),
      clerk(`/api/webhooks/${hook.id}`),
      clerk(`/api/webhooks/${hook.id}`, { method: 'PATCH', form: { target: target() } }),
      clerk(`/api/webhooks/${hook.id}`, { method: 'PUT', form: { event: 'contact.created', target: target() } }),
      clerk(`/api/webhooks/${hook.id}`, { method: 'DELETE' }),
      clerk(`/api/webhooks/${hook.id}/deliveries`),
      clerk(`/api/webhooks/${hook.id}/deliveries`, { form: { event: '1' } }),
      clerk('/api/webhooks/987654321'),
    ]);
    for (const response of attempts) {
      expect(response.status).toBe(403);
      expect(response.body).toEqual({ detail: 'You do not have permission to perform this action.' });
    }
    expect((await merchant.request(`/api/webhooks/${hook.id}`)).status).toBe(200);
    // The same user still reads other resources.
    expect((await clerk('/api/events')).status).toBe(200);
  });

  test('without a token it is 401', async () => {
    expect((await requester(ctx.app, null)('/api/webhooks')).status).toBe(401);
  });
});

describe('GET /api/webhooks', () => {
  test("lists the organization's webhooks, filtered by event and by user", async () => {
    const owner = await createMerchant(ctx.app);
    const first = await createHook(owner, 'contact.created');
    const second = await createHook(owner, 'collection.received');
    const all = await owner.request('/api/webhooks');
    expect(all.body.count).toBe(2);
    expect(all.body.results.map((hook: { id: number }) => hook.id)).toEqual([second.id, first.id]);
    expect((await owner.request('/api/webhooks?event=contact.created')).body.results).toEqual([first]);
    expect((await owner.request(`/api/webhooks?user=${owner.user.id}`)).body.count).toBe(2);
    expect((await owner.request(`/api/webhooks?user=${owner.user.id + 100000}`)).body.count).toBe(0);
    const bad = await owner.request('/api/webhooks?event=wrongevent');
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ event: ['Select a valid choice. wrongevent is not one of the available choices.'] });
    expect((await owner.request('/api/webhooks?user=me')).body).toEqual({ user: ['A valid integer is required.'] });
    expect(
      (await other.request('/api/webhooks?event=contact.created')).body.results.map((hook: { id: number }) => hook.id),
    ).not.toContain(first.id);
  });

  test('pages with limit and offset', async () => {
    const owner = await createMerchant(ctx.app);
    for (let index = 0; index < 3; index += 1) await createHook(owner);
    const page = await owner.request('/api/webhooks?limit=2');
    expect(page.body.results).toHaveLength(2);
    expect(page.body.next).toBe('http://localhost/api/webhooks?limit=2&offset=2');
  });
});

describe('GET, PATCH, PUT, DELETE /api/webhooks/<id>', () => {
  test("get: the webhook; another organization's is 403; a missing one 404", async () => {
    const hook = await createHook(merchant);
    expect((await merchant.request(`/api/webhooks/${hook.id}`)).body).toEqual(hook);
    expect((await merchant.request(`/api/webhooks/${hook.id}/`)).body).toEqual(hook);
    expect((await other.request(`/api/webhooks/${hook.id}`)).status).toBe(403);
    expect((await merchant.request('/api/webhooks/987654321')).status).toBe(404);
  });

  test('patch changes the target or the event; bad values are 400 and change nothing', async () => {
    const hook = await createHook(merchant);
    const url = target();
    const patched = await merchant.request(`/api/webhooks/${hook.id}`, { method: 'PATCH', form: { target: url } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id: hook.id, event: 'contact.created', target: url });
    const event = await merchant.request(`/api/webhooks/${hook.id}`, {
      method: 'PATCH',
      body: { event: 'collection.received', created: 'x' },
    });
    expect(event.body).toMatchObject({ event: 'collection.received', target: url });
    const bad = await merchant.request(`/api/webhooks/${hook.id}`, {
      method: 'PATCH',
      form: { target: 'http://merchant.example/' },
    });
    expect(bad.status).toBe(400);
    expect((await merchant.request(`/api/webhooks/${hook.id}`)).body.target).toBe(url);
    expect(
      (await other.request(`/api/webhooks/${hook.id}`, { method: 'PATCH', form: { target: target() } })).status,
    ).toBe(403);
  });

  test('put replaces event and target, needs both, ignores read-only fields', async () => {
    const hook = await createHook(merchant);
    const url = target();
    const put = await merchant.request(`/api/webhooks/${hook.id}`, {
      method: 'PUT',
      body: { ...hook, event: 'collectionrequest.status.changed', target: url },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      id: hook.id,
      user: merchant.user.id,
      event: 'collectionrequest.status.changed',
      target: url,
      created: hook.created,
    });
    const partial = await merchant.request(`/api/webhooks/${hook.id}`, { method: 'PUT', form: { target: target() } });
    expect(partial.status).toBe(400);
    expect(partial.body).toEqual({ event: ['This field is required.'] });
  });

  test('delete is 204; the webhook is then gone from get and list', async () => {
    const hook = await createHook(merchant);
    expect((await other.request(`/api/webhooks/${hook.id}`, { method: 'DELETE' })).status).toBe(403);
    const deleted = await merchant.request(`/api/webhooks/${hook.id}`, { method: 'DELETE' });
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBeNull();
    expect((await merchant.request(`/api/webhooks/${hook.id}`)).status).toBe(404);
    expect((await merchant.request(`/api/webhooks/${hook.id}`, { method: 'DELETE' })).status).toBe(404);
    const listed = await merchant.request('/api/webhooks?limit=100');
    expect(listed.body.results.map((item: { id: number }) => item.id)).not.toContain(hook.id);
  });

  test('Basic credentials and the signing secret never appear in a response', async () => {
    await setBasicCredentials(
      testSql(),
      { organizationId: merchant.organization.id },
      { username: 'acme-hooks', password: 'pa55-w0rd-unique' },
    );
    const hook = await createHook(merchant);
    const texts = [
      JSON.stringify((await merchant.request(`/api/webhooks/${hook.id}`)).body),
      JSON.stringify((await merchant.request('/api/webhooks?limit=100')).body),
    ];
    for (const text of texts) {
      expect(text).not.toContain('pa55-w0rd-unique');
      expect(text).not.toContain('whsec_');
    }
    await setBasicCredentials(testSql(), { organizationId: merchant.organization.id }, null);
  });
});

describe('the attempt log and redelivery', () => {
  test('GET /deliveries shows each delivery with its attempts, newest first, paged, filtered by event', async () => {
    const owner = await createMerchant(ctx.app);
    const hook = await createHook(owner);
    const sql = testSql();
    const events = [];
    for (let index = 0; index < 2; index += 1) {
      events.push(
        await recordEvent(sql, {
          organizationId: owner.organization.id,
          type: 'contact.created',
          data: { index },
          author: null,
        }),
      );
    }
    // Each event recorded its delivery to the webhook (one row each).
    const deliveryIds: DeliveryId[] = events.map((event) => event.deliveries[0]!.id);
    const startedAt = new Date('2026-01-02T03:04:05Z');
    const retryAt = new Date(Date.now() + 3_600_000);
    await logAttempt(sql, {
      deliveryId: deliveryIds[0]!,
      webhookId: asId('Webhook', hook.id),
      attempt: 1,
      startedAt,
      durationMs: 12,
      outcome: 'failed',
      statusCode: 500,
      error: null,
      responseExcerpt: 'oops',
      final: false,
      nextAttemptAt: retryAt,
    });
    await logAttempt(sql, {
      deliveryId: deliveryIds[0]!,
      webhookId: asId('Webhook', hook.id),
      attempt: 2,
      startedAt,
      durationMs: 5001,
      outcome: 'failed',
      statusCode: null,
      error: 'timeout: no response within 5 s',
      responseExcerpt: null,
      final: false,
      nextAttemptAt: retryAt,
    });
    const response = await owner.request(`/api/webhooks/${hook.id}/deliveries`);
    expect(response.status).toBe(200);
    expect(response.body.count).toBe(2);
    expect(response.body.results[0]).toMatchObject({ id: deliveryIds[1], event: events[1]!.id, attempts: [] });
    expect(response.body.results[1]).toEqual({
      id: deliveryIds[0],
      webhook: hook.id,
      event: events[0]!.id,
      event_type: 'contact.created',
      redelivery: false,
      status: 'pending',
      created: expect.stringMatching(TIMESTAMP),
      finished: null,
      next_attempt_at: expect.stringMatching(TIMESTAMP),
      waiting: null,
      attempts: [
        {
          attempt: 1,
          time: '2026-01-02T03:04:05Z',
          duration_ms: 12,
          outcome: 'failed',
          status_code: 500,
          error: null,
          response: 'oops',
        },
        {
          attempt: 2,
          time: '2026-01-02T03:04:05Z',
          duration_ms: 5001,
          outcome: 'failed',
          status_code: null,
          error: 'timeout: no response within 5 s',
          response: null,
        },
      ],
    });
    const filtered = await owner.request(`/api/webhooks/${hook.id}/deliveries?event=${events[0]!.id}&limit=1`);
    expect(filtered.body.results.map((delivery: { id: number }) => delivery.id)).toEqual([deliveryIds[0]]);
    expect((await other.request(`/api/webhooks/${hook.id}/deliveries`)).status).toBe(403);
    // The log outlives the webhook.
    await owner.request(`/api/webhooks/${hook.id}`, { method: 'DELETE' });
    expect((await owner.request(`/api/webhooks/${hook.id}/deliveries`)).body.count).toBe(2);
  });

  test('POST /deliveries records a fresh delivery of that event for the dispatch pool, starting no workflow of its own', async () => {
    const owner = await createMerchant(ctx.app);
    const hook = await createHook(owner);
    const event = await recordEvent(testSql(), {
      organizationId: owner.organization.id,
      type: 'contact.created',
      data: { a: 1 },
      author: null,
    });
    const response = await owner.request(`/api/webhooks/${hook.id}/deliveries`, { form: { event: String(event.id) } });
    expect(response.status).toBe(202);
    expect(response.body).toMatchObject({
      webhook: hook.id,
      event: event.id,
      redelivery: true,
      status: 'pending',
      attempts: [],
    });
    const started = [];
    // No workflow of the organization's at all: the dispatch pool's are the service's own.
    for await (const execution of ctx.client.workflow.list({ query: `OrganizationId = "${owner.organization.id}"` }))
      started.push(execution);
    expect(started).toEqual([]);
    const [row] = await testSql()<
      { status: string; redelivery: boolean }[]
    >`select status, redelivery from webhook_deliveries where id = ${response.body.id}`;
    expect(row).toEqual({ status: 'pending', redelivery: true });
    expect((await owner.request(`/api/webhooks/${hook.id}/deliveries`)).body.results[0].id).toBe(response.body.id);
  });

  test('redelivery of a missing, foreign or other-type event is 400', async () => {
    const owner = await createMerchant(ctx.app);
    const hook = await createHook(owner);
    const foreign = await recordEvent(testSql(), {
      organizationId: other.organization.id,
      type: 'contact.created',
      data: {},
      author: null,
    });
    const otherType = await recordEvent(testSql(), {
      organizationId: owner.organization.id,
      type: 'collection.received',
      data: {},
      author: null,
    });
    const missing = await owner.request(`/api/webhooks/${hook.id}/deliveries`, { form: { event: '987654321' } });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ event: ['Invalid pk "987654321" - object does not exist.'] });
    expect(
      (await owner.request(`/api/webhooks/${hook.id}/deliveries`, { form: { event: String(foreign.id) } })).status,
    ).toBe(400);
    const mismatch = await owner.request(`/api/webhooks/${hook.id}/deliveries`, {
      form: { event: String(otherType.id) },
    });
    expect(mismatch.body).toEqual({
      event: [`Event ${otherType.id} is a collection.received event; this webhook receives contact.created events.`],
    });
    expect((await owner.request(`/api/webhooks/${hook.id}/deliveries`, { form: {} })).body).toEqual({
      event: ['This field is required.'],
    });
  });
});
