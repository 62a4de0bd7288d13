/**
 * The audit trail: every write route of the API and every form of the console that changes data
 * records who, with which key, through what, from where, which object and its change, in the
 * write's own transaction; nothing secret lands in it; the search shows the caller's organization
 * only. The write routes are read from `app.routes`, so a write route added later without an
 * entry (or a reason to have none) fails here.
 */
import { beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { createMerchant, numberSequence, testApp, testSql, type TestApp, type TestMerchant } from '../helpers';
import { ConsoleClient, PASSWORD, consoleUser } from '../console-helpers';
import { REDACTED } from '../../src/domain/audit';
import { isConsolePath } from '../../src/console';
import { recordEvent } from '../../src/services/webhooks/events';
import { acceptVerified, storeIncomingPayment } from '../../src/services/collections/collection-receiving';
import { writeAs } from '../../src/services/merchants/audit';
import { createWebhook } from '../../src/services/webhooks/webhooks';
import { loadConfig } from '../../src/config';
import { callbackUnits } from '../../src/network/registry';

let ctx: TestApp;
const nextNumber = numberSequence('+256772');
/** The trusted proxy appends the client's address: the audit trail records that one, not the first. */
const CLIENT_ADDRESS = '198.51.100.23';
const FORWARDED = { 'X-Forwarded-For': `203.0.113.9, ${CLIENT_ADDRESS}` };
/** Columns whose values are secrets: present in a change only as "[redacted]" (or null when cleared). */
const SECRET_FIELDS = [
  'password_hash',
  'digest',
  'signing_secret',
  'previous_signing_secret',
  'basic_password',
  'token_digest',
  'csrf_token',
];

beforeAll(async () => {
  ctx = await testApp(undefined, { TRUST_PROXY: 'true' });
});

type AuditRow = {
  id: number;
  organizationId: number;
  userId: number | null;
  apiKeyId: number | null;
  channel: string;
  clientAddress: string | null;
  action: string;
  objectType: string;
  objectId: number;
  change: { before: Record<string, unknown> | null; after: Record<string, unknown> | null };
};

const auditRows = (organizationId: number) => testSql()<AuditRow[]>`
  select id, organization_id as "organizationId", user_id as "userId", api_key_id as "apiKeyId", channel, client_address as "clientAddress",
         action, object_type as "objectType", object_id as "objectId", change
  from audit_events where organization_id = ${organizationId} order by id`;

const keyIdOf = async (organizationId: number) =>
  (
    await testSql()<
      { id: number }[]
    >`select id from api_keys where organization_id = ${organizationId} order by id limit 1`
  )[0]!.id;
const newestId = async (table: string, where: string, id: number) =>
  (
    await testSql()<
      { id: number }[]
    >`select id from ${testSql()(table)} where ${testSql()(where)} = ${id} order by id desc limit 1`
  )[0]!.id;

/** Every secret column in every change is redacted, and no known secret appears anywhere in the entries. */
function expectNothingSecret(rows: AuditRow[], secrets: string[]) {
  for (const row of rows) {
    for (const side of [row.change.before, row.change.after]) {
      for (const field of SECRET_FIELDS) {
        if (side !== null && side[field] !== null && side[field] !== undefined)
          expect({ field, value: side[field] }).toEqual({ field, value: REDACTED });
      }
    }
  }
  const text = JSON.stringify(rows);
  for (const secret of secrets) expect(text).not.toContain(secret);
}

/**
 * The entry of a write's change to its object, through its route: when the write changed the object
 * more than once (inserted, then updated), its fields after are the last values of each.
 */
function entryOf(rows: AuditRow[], action: string, written: { type: string; id: number }): AuditRow | undefined {
  const entries = rows.filter(
    (row) => row.action === action && row.objectType === written.type && row.objectId === written.id,
  );
  if (entries.length === 0) return undefined;
  return {
    ...entries.at(-1)!,
    change: {
      before: entries[0]!.change.before,
      after: Object.assign({}, ...entries.map((entry) => entry.change.after)),
    },
  };
}

/** A collection paid to a number: unassigned, or credited to `owner`. */
async function collection(owner: TestMerchant | null) {
  const stored = await storeIncomingPayment(testSql(), {
    network: 'MTN Uganda',
    remoteTransactionId: `AUDIT-${randomBytes(5).toString('hex')}`,
    phoneNumber: nextNumber(),
    amount: '25',
    currency: 'BXC',
    reference: 'audit',
    paymentDate: new Date().toISOString(),
  });
  if (owner !== null) await acceptVerified(testSql(), stored.id, owner.organization.id);
  return stored;
}

const hookOf = (owner: TestMerchant, event: 'contact.created' | 'payment.status.changed' = 'contact.created') =>
  createWebhook(testSql(), {
    organizationId: owner.organization.id,
    userId: owner.user.id,
    event,
    target: `https://audit.example/${randomBytes(3).toString('hex')}`,
  });

// ---------------------------------------------------------------------------------------------
// The API

/** What one successful write through a route did: the object it changed and some of its new values. */
type Written = { status: number; type: string; id: number; after: Record<string, unknown> };
type ApiWrite = (
  owner: TestMerchant,
  call: (path: string, init?: { method?: string; body?: unknown }) => Promise<{ status: number; body: any }>,
) => Promise<Written>;

const API_WRITES: Record<string, ApiWrite> = {
  'POST /api/contacts': async (owner, call) => {
    const phone = nextNumber();
    const answer = await call('/api/contacts', {
      body: { first_name: 'Ada', last_name: 'Audit', phone_number: phone },
    });
    return {
      status: answer.status,
      type: 'contact',
      id: answer.body.id,
      after: { first_name: 'Ada', phone_number: phone, organization_id: owner.organization.id },
    };
  },
  'POST /api/collectionrequests': async (_owner, call) => {
    const answer = await call('/api/collectionrequests', {
      body: { phonenumber: nextNumber(), amount: '15', currency: 'BXC' },
    });
    return {
      status: answer.status,
      type: 'collection_request',
      id: answer.body.id,
      after: { amount: 15, currency: 'BXC' },
    };
  },
  'POST /api/payments': async (_owner, call) => {
    const answer = await call('/api/payments', {
      body: { phonenumber: nextNumber(), amount: '12', currency: 'BXC', description: 'Audited payout' },
    });
    return {
      status: answer.status,
      type: 'payment',
      id: answer.body.id,
      after: { amount: 12, description: 'Audited payout' },
    };
  },
  'POST /api/payments/:id/cancel': async (_owner, call) => {
    const created = await call('/api/payments', {
      body: { phonenumber: nextNumber(), amount: '11', currency: 'BXC', description: 'Later', start_date: '2 hours' },
    });
    const answer = await call(`/api/payments/${created.body.id}/cancel`, { body: { reason: 'Wrong number' } });
    return {
      status: answer.status,
      type: 'payment',
      id: created.body.id,
      after: { state: 'cancelled', cancelled_reason: 'Wrong number' },
    };
  },
  'POST /api/collectionrequests/:id/subscription/cancel': async (_owner, call) => {
    const created = await call('/api/collectionrequests', { body: subscribed(nextNumber()) });
    const answer = await call(`/api/collectionrequests/${created.body.id}/subscription/cancel`, { body: {} });
    return { status: answer.status, type: 'collection_request', id: created.body.id, after: cancelledSubscription };
  },
  'POST /api/payment-batches': async (_owner, call) => {
    const answer = await call('/api/payment-batches', {
      body: { payments: [{ phonenumber: nextNumber(), amount: '10', currency: 'BXC', description: 'Payroll' }] },
    });
    return {
      status: answer.status,
      type: 'payment_batch',
      id: answer.body.id,
      after: { row_count: 1, state: 'processing' },
    };
  },
  'POST /api/reversals': async (owner, call) => {
    const paid = await collection(owner);
    const answer = await call('/api/reversals', { body: { collection: paid.id, reason: 'Order cancelled' } });
    return {
      status: answer.status,
      type: 'reversal',
      id: answer.body.id,
      after: { collection_id: paid.id, reason: 'Order cancelled' },
    };
  },
  'GET /api/collections': async (owner, call) => {
    // The claim (docs/api.md#collections) is a write that arrives as a GET.
    const unassigned = await collection(null);
    const answer = await call(
      `/api/collections?claim=True&amount=25&remote_transaction_id=${unassigned.remoteTransactionId}&phonenumber=${encodeURIComponent(unassigned.phoneNumber)}`,
    );
    return {
      status: answer.status,
      type: 'collection',
      id: unassigned.id,
      after: { organization_id: owner.organization.id, status: 'successful' },
    };
  },
  'POST /api/webhooks': async (_owner, call) => {
    const answer = await call('/api/webhooks', {
      body: { event: 'contact.created', target: 'https://audit.example/new' },
    });
    return {
      status: answer.status,
      type: 'webhook',
      id: answer.body.id,
      after: { event: 'contact.created', target: 'https://audit.example/new' },
    };
  },
  'PATCH /api/webhooks/:id': async (owner, call) => {
    const hook = await hookOf(owner);
    const answer = await call(`/api/webhooks/${hook.id}`, {
      method: 'PATCH',
      body: { target: 'https://audit.example/patched' },
    });
    return { status: answer.status, type: 'webhook', id: hook.id, after: { target: 'https://audit.example/patched' } };
  },
  'PUT /api/webhooks/:id': async (owner, call) => {
    const hook = await hookOf(owner);
    const answer = await call(`/api/webhooks/${hook.id}`, {
      method: 'PUT',
      body: { event: 'payment.status.changed', target: 'https://audit.example/put' },
    });
    return {
      status: answer.status,
      type: 'webhook',
      id: hook.id,
      after: { event: 'payment.status.changed', target: 'https://audit.example/put' },
    };
  },
  'DELETE /api/webhooks/:id': async (owner, call) => {
    const hook = await hookOf(owner);
    const answer = await call(`/api/webhooks/${hook.id}`, { method: 'DELETE' });
    return { status: answer.status, type: 'webhook', id: hook.id, after: { deleted_reason: 'deleted' } };
  },
  'POST /api/webhooks/:id/deliveries': async (owner, call) => {
    const hook = await hookOf(owner);
    const event = await recordEvent(testSql(), {
      organizationId: owner.organization.id,
      type: 'contact.created',
      data: { id: 1 },
      author: null,
    });
    const answer = await call(`/api/webhooks/${hook.id}/deliveries`, { body: { event: event.id } });
    return {
      status: answer.status,
      type: 'webhook_delivery',
      id: answer.body.id,
      after: { event_id: event.id, webhook_id: hook.id, redelivery: true },
    };
  },
  'POST /api/webhooks/:id/recover': async (owner, call) => {
    const hook = await hookOf(owner);
    const answer = await call(`/api/webhooks/${hook.id}/recover`, { body: { since: '2025-05-01 00:00' } });
    return { status: answer.status, type: 'webhook_recovery', id: answer.body.id, after: { webhook_id: hook.id } };
  },
  'POST /api/webhooks/:id/disable': async (owner, call) => {
    const hook = await hookOf(owner);
    const answer = await call(`/api/webhooks/${hook.id}/disable`, { body: {} });
    return { status: answer.status, type: 'webhook', id: hook.id, after: { disabled_reason: 'manual' } };
  },
  'POST /api/webhooks/:id/enable': async (owner, call) => {
    const hook = await hookOf(owner);
    await testSql()`update webhooks set disabled_at = now(), disabled_reason = 'failing' where id = ${hook.id}`;
    const answer = await call(`/api/webhooks/${hook.id}/enable`, { body: {} });
    return { status: answer.status, type: 'webhook', id: hook.id, after: { disabled_at: null, disabled_reason: null } };
  },
};

/** A request that starts a weekly subscription tomorrow, for a month. */
function subscribed(phonenumber: string) {
  const day = (offset: number) => {
    const date = new Date(Date.now() + offset * 86_400_000);
    const two = (value: number) => String(value).padStart(2, '0');
    return `${two(date.getUTCDate())}/${two(date.getUTCMonth() + 1)}/${date.getUTCFullYear()} 10:00:00`;
  };
  return {
    phonenumber,
    amount: '12',
    currency: 'BXC',
    subscription_settings: { start_date: day(1), end_date: day(30), frequency: 'weekly' },
  };
}
/** What a cancelled subscription's audit entry shows after: its settings, now with `cancelled_at`. */
const cancelledSubscription = {
  subscription_settings: expect.objectContaining({ cancelled_at: expect.any(String) }),
};

/** The API's routes that change nothing of the organization's, and why. */
const API_NOT_RECORDED: Record<string, string> = {
  'POST /api/bills/services/epin/bundles': 'a look-up sent as a POST: it reads pin bundles and writes nothing',
  'POST /network/payments':
    "a network reporting a payment with its own secret, not a merchant's write: the workflow it starts records the payment",
};
/**
 * The operators' callbacks (each connector's, mounted by src/api/operator-callbacks.ts): they only wake the workflow they name,
 * and change nothing a merchant asked for.
 */
const isOperatorCallback = (path: string) =>
  callbackUnits(loadConfig({})).some(({ unit }) => unit.callbacks.owns(path.replace(/\/+$/, '')));

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const label = (route: { method: string; path: string }) => `${route.method.toUpperCase()} ${route.path}`;

describe('the API', () => {
  test("every write route is recorded, or named here with why it changes nothing of the organization's", () => {
    const writes = ctx.app.routes
      .filter(
        (route) =>
          !isConsolePath(route.path) &&
          WRITE_METHODS.has(route.method.toUpperCase()) &&
          !isOperatorCallback(route.path),
      )
      .map(label);
    expect(ctx.app.routes.some((route) => isOperatorCallback(route.path))).toBe(true);
    const listed = [
      ...Object.keys(API_WRITES).filter((write) => !write.startsWith('GET ')),
      ...Object.keys(API_NOT_RECORDED),
    ];
    expect([...new Set(writes)].sort()).toEqual(listed.sort());
  });

  for (const [route, write] of Object.entries(API_WRITES)) {
    test(`${route}: who, which key, from where, through what, which object and its new values`, async () => {
      const owner = await createMerchant(ctx.app);
      const call = (path: string, init: { method?: string; body?: unknown } = {}) =>
        owner.request(path, { ...init, headers: FORWARDED });
      const written = await write(owner, call);
      expect({ route, succeeded: [200, 201, 202, 204].includes(written.status), status: written.status }).toMatchObject(
        { route, succeeded: true },
      );
      const rows = await auditRows(owner.organization.id);
      const entry = entryOf(rows, route, written);
      expect({ route, entry }).toEqual({
        route,
        entry: expect.objectContaining({
          organizationId: owner.organization.id,
          userId: owner.user.id,
          apiKeyId: await keyIdOf(owner.organization.id),
          channel: 'api',
          clientAddress: CLIENT_ADDRESS,
        }),
      });
      expect(entry!.change.after).toMatchObject(written.after);
      expectNothingSecret(rows, [owner.apiKey]);
    });
  }

  test('a write under a version prefix is recorded as its route; the change of an update holds only the fields that changed', async () => {
    const owner = await createMerchant(ctx.app);
    const hook = await hookOf(owner);
    expect(
      (
        await owner.request(`/api/v3/webhooks/${hook.id}`, {
          method: 'PATCH',
          body: { target: 'https://audit.example/v3' },
          headers: FORWARDED,
        })
      ).status,
    ).toBe(200);
    const [entry] = await auditRows(owner.organization.id);
    expect(entry).toMatchObject({
      action: 'PATCH /api/webhooks/:id',
      clientAddress: CLIENT_ADDRESS,
      objectType: 'webhook',
      objectId: hook.id,
    });
    expect(Object.keys(entry!.change.after!).sort()).toEqual(['target', 'updated']);
    expect(entry!.change.before).toMatchObject({ target: hook.target });
  });

  test("X-Forwarded-For is believed only with TRUST_PROXY: otherwise the address is the connection's (none through app.handle)", async () => {
    const untrusting = await testApp(undefined, { TRUST_PROXY: 'false' });
    const owner = await createMerchant(untrusting.app);
    const answer = await owner.request('/api/contacts', {
      body: { first_name: 'No', last_name: 'Proxy', phone_number: nextNumber() },
      headers: FORWARDED,
    });
    expect(answer.status).toBe(201);
    expect((await auditRows(owner.organization.id)).map((row) => row.clientAddress)).toEqual([null]);
  });
});

// ---------------------------------------------------------------------------------------------
// The console

type ConsoleWrite = (
  owner: TestMerchant,
  browser: ConsoleClient,
  post: (path: string, form?: Record<string, string>) => ReturnType<ConsoleClient['post']>,
) => Promise<Written & { secrets?: string[] }>;
const idIn = (location: string | null) => Number(/\/(\d+)(?:[?#]|$)/.exec(location ?? '')?.[1]);

const CONSOLE_WRITES: Record<string, ConsoleWrite> = {
  'POST /console/collections/claim': async (owner, _browser, post) => {
    const unassigned = await collection(null);
    const answer = await post('/console/collections/claim', {
      amount: '25',
      remote_transaction_id: unassigned.remoteTransactionId,
      phonenumber: unassigned.phoneNumber,
    });
    return {
      status: answer.status,
      type: 'collection',
      id: unassigned.id,
      after: { organization_id: owner.organization.id },
    };
  },
  'POST /console/collections/:id/reverse': async (owner, _browser, post) => {
    const paid = await collection(owner);
    const answer = await post(`/console/collections/${paid.id}/reverse`, { reason: 'Sent back' });
    return {
      status: answer.status,
      type: 'reversal',
      id: idIn(answer.location),
      after: { collection_id: paid.id, reason: 'Sent back' },
    };
  },
  'POST /console/contacts': async (_owner, _browser, post) => {
    const phone = nextNumber();
    const answer = await post('/console/contacts', { first_name: 'Con', last_name: 'Sole', phone_number: phone });
    return { status: answer.status, type: 'contact', id: idIn(answer.location), after: { phone_number: phone } };
  },
  'POST /console/payment-batches': async (_owner, _browser, post) => {
    const answer = await post('/console/payment-batches', {
      key: randomBytes(4).toString('hex'),
      csv: `phonenumber,amount,currency,description\n${nextNumber()},10,BXC,Payroll\n`,
    });
    return { status: answer.status, type: 'payment_batch', id: idIn(answer.location), after: { row_count: 1 } };
  },
  'POST /console/payments': async (_owner, _browser, post) => {
    const answer = await post('/console/payments', {
      phonenumber: nextNumber(),
      amount: '13',
      currency: 'BXC',
      description: 'From the console',
      payment_type: 'money',
    });
    return {
      status: answer.status,
      type: 'payment',
      id: idIn(answer.location),
      after: { amount: 13, description: 'From the console' },
    };
  },
  'POST /console/payments/:id/cancel': async (owner, _browser, post) => {
    const created = await owner.request('/api/payments', {
      body: { phonenumber: nextNumber(), amount: '11', currency: 'BXC', description: 'Later', start_date: '2 hours' },
    });
    const answer = await post(`/console/payments/${created.body.id}/cancel`, { reason: 'Not needed' });
    return {
      status: answer.status,
      type: 'payment',
      id: created.body.id,
      after: { state: 'cancelled', cancelled_reason: 'Not needed' },
    };
  },
  'POST /console/requests/:id/subscription/cancel': async (owner, _browser, post) => {
    const created = await owner.request('/api/collectionrequests', { body: subscribed(nextNumber()) });
    const answer = await post(`/console/requests/${created.body.id}/subscription/cancel`, {});
    return { status: answer.status, type: 'collection_request', id: created.body.id, after: cancelledSubscription };
  },
  'POST /console/requests': async (_owner, _browser, post) => {
    const answer = await post('/console/requests', { phonenumber: nextNumber(), amount: '16', currency: 'BXC' });
    return { status: answer.status, type: 'collection_request', id: idIn(answer.location), after: { amount: 16 } };
  },
  'POST /console/settings': async (owner, _browser, post) => {
    const answer = await post('/console/settings', {
      verification_url: 'http://127.0.0.1:9/verify',
      accept_by_default: 'false',
    });
    return {
      status: answer.status,
      type: 'organization',
      id: owner.organization.id,
      after: { verification_url: 'http://127.0.0.1:9/verify', accept_by_default: false },
    };
  },
  'POST /console/settings/keys': async (owner, _browser, post) => {
    const answer = await post('/console/settings/keys');
    const key = /\b[0-9a-f]{40}\b/.exec(answer.text)?.[0];
    expect(key).toBeDefined();
    return {
      status: answer.status,
      type: 'api_key',
      id: await newestId('api_keys', 'organization_id', owner.organization.id),
      after: { digest: REDACTED },
      secrets: [key!],
    };
  },
  'POST /console/settings/keys/:id/revoke': async (owner, _browser, post) => {
    const keyId = await keyIdOf(owner.organization.id);
    const answer = await post(`/console/settings/keys/${keyId}/revoke`);
    return { status: answer.status, type: 'api_key', id: keyId, after: { revoked_at: expect.any(String) } };
  },
  'POST /console/settings/users': async (owner, _browser, post) => {
    const email = `audited-${randomBytes(4).toString('hex')}@console.test`;
    const answer = await post('/console/settings/users', {
      email,
      name: 'Audited',
      password: 'another good password',
      role: 'viewer',
    });
    return {
      status: answer.status,
      type: 'user',
      id: await newestId('users', 'organization_id', owner.organization.id),
      after: { email, role: 'viewer', password_hash: REDACTED },
      secrets: ['another good password'],
    };
  },
  'POST /console/settings/users/:id/remove': async (owner, _browser, post) => {
    const colleague = await consoleUser(owner.organization.id);
    const answer = await post(`/console/settings/users/${colleague.id}/remove`);
    return { status: answer.status, type: 'user', id: colleague.id, after: { removed_at: expect.any(String) } };
  },
  'POST /console/settings/users/:id/role': async (owner, _browser, post) => {
    const colleague = await consoleUser(owner.organization.id, { role: 'viewer' });
    const answer = await post(`/console/settings/users/${colleague.id}/role`, { role: 'finance' });
    return { status: answer.status, type: 'user', id: colleague.id, after: { role: 'finance' } };
  },
  'POST /console/webhooks': async (_owner, _browser, post) => {
    const answer = await post('/console/webhooks', {
      event: 'contact.created',
      target: 'https://audit.example/console',
    });
    return {
      status: answer.status,
      type: 'webhook',
      id: idIn(answer.location),
      after: { target: 'https://audit.example/console' },
    };
  },
  'POST /console/webhooks/:id': async (owner, _browser, post) => {
    const hook = await hookOf(owner);
    const answer = await post(`/console/webhooks/${hook.id}`, {
      event: 'contact.created',
      target: 'https://audit.example/edited',
    });
    return { status: answer.status, type: 'webhook', id: hook.id, after: { target: 'https://audit.example/edited' } };
  },
  'POST /console/webhooks/:id/delete': async (owner, _browser, post) => {
    const hook = await hookOf(owner);
    const answer = await post(`/console/webhooks/${hook.id}/delete`);
    return { status: answer.status, type: 'webhook', id: hook.id, after: { deleted_reason: 'deleted' } };
  },
  'POST /console/webhooks/:id/redeliver': async (owner, _browser, post) => {
    const hook = await hookOf(owner);
    const event = await recordEvent(testSql(), {
      organizationId: owner.organization.id,
      type: 'contact.created',
      data: { id: 2 },
      author: null,
    });
    const answer = await post(`/console/webhooks/${hook.id}/redeliver`, { event: String(event.id) });
    return {
      status: answer.status,
      type: 'webhook_delivery',
      id: await newestId('webhook_deliveries', 'webhook_id', hook.id),
      after: { event_id: event.id, redelivery: true },
    };
  },
  'POST /console/webhooks/:id/recover': async (owner, _browser, post) => {
    const hook = await hookOf(owner);
    const answer = await post(`/console/webhooks/${hook.id}/recover`, { since: '2025-05-01 00:00' });
    return {
      status: answer.status,
      type: 'webhook_recovery',
      id: await newestId('webhook_recoveries', 'webhook_id', hook.id),
      after: { webhook_id: hook.id },
    };
  },
  'POST /console/webhooks/:id/disable': async (owner, _browser, post) => {
    const hook = await hookOf(owner);
    const answer = await post(`/console/webhooks/${hook.id}/disable`);
    return { status: answer.status, type: 'webhook', id: hook.id, after: { disabled_reason: 'manual' } };
  },
  'POST /console/webhooks/:id/enable': async (owner, _browser, post) => {
    const hook = await hookOf(owner);
    await testSql()`update webhooks set disabled_at = now(), disabled_reason = 'manual' where id = ${hook.id}`;
    const answer = await post(`/console/webhooks/${hook.id}/enable`);
    return { status: answer.status, type: 'webhook', id: hook.id, after: { disabled_at: null } };
  },
  'POST /console/webhook-settings/reveal': async (owner, _browser, post) => {
    // The secret is made on first use: revealing it the first time writes it.
    const answer = await post('/console/webhook-settings/reveal');
    const secret = /whsec_[A-Za-z0-9+/=]+/.exec(answer.text)?.[0];
    expect(secret).toBeDefined();
    return {
      status: answer.status,
      type: 'webhook_settings',
      id: owner.organization.id,
      after: { signing_secret: REDACTED },
      secrets: [secret!],
    };
  },
  'POST /console/webhook-settings/rotate': async (owner, _browser, post) => {
    const answer = await post('/console/webhook-settings/rotate');
    return {
      status: answer.status,
      type: 'webhook_settings',
      id: owner.organization.id,
      after: { signing_secret: REDACTED, previous_signing_secret: REDACTED },
    };
  },
  'POST /console/webhook-settings/basic-auth': async (owner, _browser, post) => {
    const answer = await post('/console/webhook-settings/basic-auth', {
      username: 'acme-hooks',
      password: 'basic-secret-value',
    });
    return {
      status: answer.status,
      type: 'webhook_settings',
      id: owner.organization.id,
      after: { basic_username: 'acme-hooks', basic_password: REDACTED },
      secrets: ['basic-secret-value'],
    };
  },
  'POST /console/webhook-settings/basic-auth/clear': async (owner, _browser, post) => {
    await testSql()`insert into webhook_settings (organization_id, signing_secret, basic_username, basic_password) values (${owner.organization.id}, 'whsec_x', 'acme', 'to-be-cleared')`;
    const answer = await post('/console/webhook-settings/basic-auth/clear');
    return {
      status: answer.status,
      type: 'webhook_settings',
      id: owner.organization.id,
      after: { basic_username: null, basic_password: null },
    };
  },
};

/** The console's forms that change nothing of the organization's, and why. */
const CONSOLE_NOT_RECORDED: Record<string, string> = {
  'POST /console/sign-in': "signs a browser in: a session, not the organization's data",
  'POST /console/sign-out': 'signs a browser out: ends a session',
  'POST /console/payment-batches/preview': 'checks an upload and shows it; nothing is written before the batch is sent',
  'POST /console/settings/test-verification': 'sends a test to the verification URL; nothing is written',
  'POST /console/webhooks/:id/test': 'sends a test message to the webhook once; nothing is recorded',
  'POST /console/sandbox/payments':
    "plays the network (sandbox mode): the payment it reports is the network's, recorded by its workflow",
};

describe('the console', () => {
  test("every form that writes is recorded, or named here with why it changes nothing of the organization's", () => {
    const posts = ctx.app.routes
      .filter((route) => isConsolePath(route.path) && route.method.toUpperCase() === 'POST')
      .map(label);
    expect([...new Set(posts)].sort()).toEqual(
      [...Object.keys(CONSOLE_WRITES), ...Object.keys(CONSOLE_NOT_RECORDED)].sort(),
    );
  });

  for (const [route, write] of Object.entries(CONSOLE_WRITES)) {
    test(`${route}: who, from where, through which form, which object and its new values`, async () => {
      const owner = await createMerchant(ctx.app);
      const user = await consoleUser(owner.organization.id);
      const browser = new ConsoleClient(ctx.app, FORWARDED);
      expect((await browser.signIn(user.email, PASSWORD)).status).toBe(303);
      const post = async (path: string, form: Record<string, string> = {}) => {
        await browser.get('/console');
        return await browser.post(path, form);
      };
      const { secrets = [], ...written } = await write(owner, browser, post);
      expect({ route, succeeded: [200, 303].includes(written.status), status: written.status }).toMatchObject({
        route,
        succeeded: true,
      });
      const rows = await auditRows(owner.organization.id);
      const entry = entryOf(rows, route, written);
      expect({ route, entry }).toEqual({
        route,
        entry: expect.objectContaining({
          organizationId: owner.organization.id,
          userId: user.id,
          apiKeyId: null,
          channel: 'console',
          clientAddress: CLIENT_ADDRESS,
        }),
      });
      expect(entry!.change.after).toMatchObject(written.after);
      expectNothingSecret(rows, [...secrets, PASSWORD, owner.apiKey]);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// One transaction, one organization

describe("the entry lives in the write's transaction", () => {
  test('a write that fails after its change rolls the entry back with it', async () => {
    const owner = await createMerchant(ctx.app);
    const actor = {
      organizationId: owner.organization.id,
      userId: owner.user.id,
      audit: {
        userId: owner.user.id,
        apiKeyId: null,
        channel: 'console' as const,
        clientAddress: CLIENT_ADDRESS,
        action: 'POST /console/contacts',
      },
    };
    await expect(
      writeAs(testSql(), actor, async (tx) => {
        await tx`insert into contacts (organization_id, first_name, last_name, phone_number) values (${owner.organization.id}, 'Rolled', 'Back', ${nextNumber()})`;
        throw new Error('the write failed after its change');
      }),
    ).rejects.toThrow('the write failed after its change');
    expect((await auditRows(owner.organization.id)).length).toBe(0);
    expect((await testSql()`select 1 from contacts where organization_id = ${owner.organization.id}`).length).toBe(0);
  });

  test('a refused write through the API leaves no entry; a write without an audit context (here a service called directly) leaves none', async () => {
    const owner = await createMerchant(ctx.app);
    const refused = await owner.request('/api/payments', {
      body: { phonenumber: nextNumber(), amount: '5000', currency: 'BXC', description: 'Too much' },
      headers: FORWARDED,
    });
    expect(refused.status).toBe(400);
    await hookOf(owner);
    expect((await auditRows(owner.organization.id)).length).toBe(0);
  });

  test('concurrent writes each get exactly their own entries', async () => {
    const owner = await createMerchant(ctx.app);
    const phones = Array.from({ length: 8 }, () => nextNumber());
    const answers = await Promise.all(
      phones.map((phone) =>
        owner.request('/api/contacts', {
          body: { first_name: 'Many', last_name: 'At once', phone_number: phone },
          headers: FORWARDED,
        }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(phones.map(() => 201));
    const rows = await auditRows(owner.organization.id);
    expect(rows.map((row) => row.objectId).sort()).toEqual(answers.map((answer) => answer.body.id as number).sort());
    for (const answer of answers) {
      const [entry] = rows.filter((row) => row.objectId === answer.body.id);
      expect(entry!.change.after).toMatchObject({ phone_number: answer.body.phone_number });
    }
  });
});

describe("the search shows the caller's organization only", () => {
  async function twoOrganizations() {
    const [mine, theirs] = [await createMerchant(ctx.app), await createMerchant(ctx.app)];
    for (const owner of [mine, theirs]) {
      const answer = await owner.request('/api/webhooks', {
        body: { event: 'contact.created', target: 'https://audit.example/both' },
        headers: FORWARDED,
      });
      expect(answer.status).toBe(201);
    }
    return { mine, theirs, theirHook: (await auditRows(theirs.organization.id))[0]! };
  }

  test("GET /api/audit-events: filters, paging, newest first, and never another organization's entry", async () => {
    const { mine, theirHook } = await twoOrganizations();
    const phone = nextNumber();
    await mine.request('/api/contacts', {
      body: { first_name: 'Last', last_name: 'One', phone_number: phone },
      headers: FORWARDED,
    });
    const all = await mine.request('/api/audit-events?limit=1');
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ count: 2, previous: null, next: expect.stringContaining('offset=1') });
    expect(all.body.results[0]).toMatchObject({
      organization: mine.organization.id,
      action: 'POST /api/contacts',
      object_type: 'contact',
      channel: 'api',
    });
    const byObject = await mine.request('/api/audit-events?object_type=webhook');
    expect(byObject.body.results.map((entry: { action: string }) => entry.action)).toEqual(['POST /api/webhooks']);
    expect(
      (await mine.request(`/api/audit-events?user=${mine.user.id}&action=${encodeURIComponent('POST /api/contacts')}`))
        .body.count,
    ).toBe(1);
    expect((await mine.request('/api/audit-events?created_before=2000-01-01')).body.count).toBe(0);
    // Their entry's object id and user name nothing here.
    expect(
      (await mine.request(`/api/audit-events?object_type=webhook&object_id=${theirHook.objectId}`)).body.count,
    ).toBe(0);
    expect((await mine.request(`/api/audit-events?user=${theirHook.userId}`)).body.count).toBe(0);
    expect((await mine.request('/api/audit-events?object_type=nothing')).status).toBe(400);
    expect((await mine.request('/api/audit-events?created_after=yesterday-ish')).status).toBe(400);
  });

  test('the audit route and page are for owners and admins', async () => {
    const owner = await createMerchant(ctx.app);
    await testSql()`update users set role = 'finance' where id = ${owner.user.id}`;
    expect((await owner.request('/api/audit-events')).status).toBe(403);
    const member = await consoleUser(owner.organization.id, { role: 'finance' });
    const browser = new ConsoleClient(ctx.app, FORWARDED);
    await browser.signIn(member.email, PASSWORD);
    expect((await browser.get('/console/audit')).status).toBe(403);
    expect((await browser.get('/console')).text).not.toContain('href="/console/audit"');
  });

  test("/console/audit: the search form finds the organization's entries only, each with who, key, channel, address, action, object and change", async () => {
    const { mine, theirs, theirHook } = await twoOrganizations();
    const user = await consoleUser(mine.organization.id);
    const browser = new ConsoleClient(ctx.app, FORWARDED);
    await browser.signIn(user.email, PASSWORD);
    const page = await browser.get('/console/audit?object_type=webhook');
    expect(page.status).toBe(200);
    expect(page.text).toContain('href="/console/audit"');
    expect(page.text).toContain('<code>POST /api/webhooks</code>');
    expect(page.text).toContain(`API key #${await keyIdOf(mine.organization.id)}`);
    expect(page.text).toContain(CLIENT_ADDRESS);
    expect(page.text).toContain('&quot;https://audit.example/both&quot;');
    expect(page.text).not.toContain(theirs.organization.name);
    const theirsById = await browser.get(`/console/audit?object_type=webhook&object_id=${theirHook.objectId}`);
    expect(theirsById.text).toContain('No audit entries match.');
    expect((await browser.get('/console/audit?created_after=not-a-date')).status).toBe(400);
  });
});
