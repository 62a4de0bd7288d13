/**
 * How the delivery pool shares itself (docs/architecture.md, How the pool shares itself), claim by
 * claim against real PostgreSQL: the webhooks are made on a task queue no worker serves, so no
 * dispatcher takes their rows and each claim here is the only one.
 */
import { asId, type OrganizationId } from '../../src/domain/ids';
import { beforeAll, describe, expect, test } from 'bun:test';
import { recordEvent } from '../../src/services/webhooks/events';
import {
  claimDueAcrossWebhooks,
  releaseClaims,
  type ClaimShares,
  type ClaimedDelivery,
} from '../../src/services/webhooks/webhook-queue';
import { createWakeups } from '../../src/activities/webhook-wakeups';
import { createMerchant, eventually, testApp, testSql, type TestApp, type TestMerchant } from '../helpers';

let ctx: TestApp;
beforeAll(async () => {
  ctx = await testApp();
});

const OPEN: ClaimShares = { perWebhook: 16, perReceiver: 1000, perOrganization: 1000 };
const LEASE_MS = 60_000;

/** A receiver origin of this test alone: nothing listens there, and nothing is sent. */
let port = 40_000 + Math.floor(Math.random() * 10_000);
const newOrigin = () => `https://127.0.0.1:${++port}`;

async function createHooks(merchant: TestMerchant, origin: string, count: number): Promise<number[]> {
  const ids: number[] = [];
  for (let index = 0; index < count; index++) {
    const response = await merchant.request('/api/webhooks', {
      form: { event: 'contact.created', target: `${origin}/hooks/${index}` },
    });
    expect(response.status).toBe(201);
    ids.push(response.body.id);
  }
  return ids;
}

/** `count` events, each recorded with a delivery row for every webhook of the organization, due now. */
async function recordEvents(organizationId: OrganizationId, count: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    await recordEvent(testSql(), { organizationId, type: 'contact.created', data: { index }, author: null });
  }
}

const claim = (limit: number, shares: ClaimShares = OPEN) =>
  claimDueAcrossWebhooks(testSql(), { limit, leaseMs: LEASE_MS, dispatchQueue: ctx.taskQueue, shares });

async function organizationOf(claimed: readonly ClaimedDelivery[]): Promise<number[]> {
  const ids = claimed.map((item) => item.deliveryId as number);
  const rows = await testSql()<{ id: number; organizationId: number }[]>`
    select id, organization_id as "organizationId" from webhook_deliveries where id = any(${ids}::bigint[])`;
  const byId = new Map(rows.map((row) => [Number(row.id), Number(row.organizationId)]));
  return ids.map((id) => byId.get(Number(id))!);
}

/** Gives every claimed row of this test's queue back, so each test starts with nothing in flight. */
async function releaseAll(): Promise<void> {
  const rows = await testSql()<{ id: number }[]>`
    select d.id from webhook_deliveries d join webhooks w on w.id = d.webhook_id
    where w.dispatch_queue = ${ctx.taskQueue} and d.status = 'pending' and d.leased_until is not null`;
  await releaseClaims(
    testSql(),
    rows.map((row) => row.id),
  );
}

/** Closes every pending row of this test's queue: the next test starts from an empty queue. */
async function drain(): Promise<void> {
  await testSql()`
    update webhook_deliveries d set status = 'cancelled', finished_at = now(), next_attempt_at = null, leased_until = null
    from webhooks w where w.id = d.webhook_id and w.dispatch_queue = ${ctx.taskQueue} and d.status = 'pending'`;
}

describe('claims share the pool by organization, then by webhook', () => {
  test("a merchant with a thousand due deliveries on 50 webhooks does not delay another merchant's first", async () => {
    await drain();
    const busy = await createMerchant(ctx.app);
    const quiet = await createMerchant(ctx.app);
    const other = await createMerchant(ctx.app);
    await createHooks(busy, newOrigin(), 50);
    await recordEvents(busy.organization.id, 20);
    const [quietHook] = await createHooks(quiet, newOrigin(), 1);
    await createHooks(other, newOrigin(), 1);
    // The quiet merchants' rows are the newest of all: a claim across webhooks alone would take the busy merchant's 50 first.
    await recordEvents(quiet.organization.id, 1);
    await recordEvents(other.organization.id, 1);
    const first = await claim(3);
    expect((await organizationOf(first)).sort()).toEqual(
      [busy.organization.id, quiet.organization.id, other.organization.id].sort(),
    );
    expect(first.some((item) => item.webhookId === asId('Webhook', quietHook!))).toBe(true);
    // Within the busy merchant, every webhook's first row before any webhook's second.
    const next = await claim(49);
    expect(new Set(next.map((item) => item.webhookId)).size).toBe(49);
    await releaseAll();
    await drain();
  });

  test('an organization passed over by a full claim is first in the next one, its rows in flight or not: no starvation', async () => {
    await drain();
    const merchants = await Promise.all(Array.from({ length: 6 }, () => createMerchant(ctx.app)));
    for (const merchant of merchants) {
      await createHooks(merchant, newOrigin(), 2);
      await recordEvents(merchant.organization.id, 5);
    }
    const served = new Set<number>();
    for (let round = 0; round < 3; round++) {
      const claimed = await claim(2);
      const organizations = await organizationOf(claimed);
      expect(new Set(organizations).size).toBe(2);
      for (const organization of organizations) {
        expect(served.has(organization)).toBe(false);
        served.add(organization);
      }
      // Their POSTs answered at once: only when each organization was last served tells them apart.
      await releaseAll();
    }
    expect(served.size).toBe(6);
    await releaseAll();
    await drain();
  });

  test('an organization keeps to its share of deliveries in flight, all its webhooks together', async () => {
    await drain();
    const merchant = await createMerchant(ctx.app);
    await createHooks(merchant, newOrigin(), 10);
    await recordEvents(merchant.organization.id, 10);
    const shares = { ...OPEN, perOrganization: 25 };
    expect(await claim(100, shares)).toHaveLength(25);
    expect(await claim(100, shares)).toHaveLength(0);
    await releaseAll();
    await drain();
  });
});

describe('claims count what is in flight per receiver', () => {
  test('a receiver shared by many webhooks and organizations takes at most its share; other receivers are not held back', async () => {
    await drain();
    const shared = newOrigin();
    const first = await createMerchant(ctx.app);
    const second = await createMerchant(ctx.app);
    await createHooks(first, shared, 30);
    await createHooks(second, shared, 30);
    await recordEvents(first.organization.id, 3);
    await recordEvents(second.organization.id, 3);
    const elsewhere = await createMerchant(ctx.app);
    const [elsewhereHook] = await createHooks(elsewhere, newOrigin(), 1);
    await recordEvents(elsewhere.organization.id, 1);
    const shares = { ...OPEN, perReceiver: 8 };
    const claimed = await claim(100, shares);
    expect(claimed).toHaveLength(9);
    expect(claimed.filter((item) => item.webhookId === asId('Webhook', elsewhereHook!))).toHaveLength(1);
    // The shared receiver's 8 are shared by its two organizations.
    const organizations = await organizationOf(claimed);
    expect(organizations.filter((id) => id === first.organization.id)).toHaveLength(4);
    expect(organizations.filter((id) => id === second.organization.id)).toHaveLength(4);
    // Full: nothing more for it until one of its deliveries is logged or given back.
    expect(await claim(100, shares)).toHaveLength(0);
    await releaseClaims(testSql(), [claimed[0]!.deliveryId]);
    expect(await claim(100, shares)).toHaveLength(1);
    await releaseAll();
    await drain();
  });

  test('the same origin however the target writes it: case and default port', async () => {
    const merchant = await createMerchant(ctx.app);
    const targets = [
      'https://Example.COM/a',
      'https://example.com:443/b?x=1',
      'https://example.com/c#part',
      'https://example.com:8443/d',
    ];
    for (const target of targets) {
      const response = await merchant.request('/api/webhooks', { form: { event: 'contact.created', target } });
      expect(response.status).toBe(201);
    }
    const rows = await testSql()<{ receiver: string }[]>`
      select receiver from webhooks where organization_id = ${merchant.organization.id} order by id`;
    expect(rows.map((row) => row.receiver)).toEqual([
      'https://example.com',
      'https://example.com',
      'https://example.com',
      'https://example.com:8443',
    ]);
    const [state] = await testSql()<
      { count: number }[]
    >`select count(*)::int as count from webhook_receivers where origin in ('https://example.com', 'https://example.com:8443')`;
    expect(state!.count).toBe(2);
  });

  test('a receiver being probed gets one delivery in flight, then its share again once it answers', async () => {
    await drain();
    const origin = newOrigin();
    const merchant = await createMerchant(ctx.app);
    await createHooks(merchant, origin, 5);
    await recordEvents(merchant.organization.id, 4);
    await testSql()`update webhook_receivers set failures = 3, probing_since = now() where origin = ${origin}`;
    // Its last probe failed a moment ago: the next waits for its time.
    await testSql()`update webhook_receivers set probe_after = now() + interval '1 minute' where origin = ${origin}`;
    expect(await claim(100)).toHaveLength(0);
    await testSql()`update webhook_receivers set probe_after = now() - interval '1 second' where origin = ${origin}`;
    const probe = await claim(100);
    expect(probe).toHaveLength(1);
    expect(await claim(100)).toHaveLength(0);
    await testSql()`update webhook_receivers set failures = 0, probing_since = null, probe_after = null where origin = ${origin}`;
    expect(await claim(100)).toHaveLength(19);
    await releaseAll();
    await drain();
  });
});

describe("a dispatcher's wake-ups", () => {
  test('a notification that comes while the dispatcher claims, its earlier wait abandoned, wakes its next wait at once', async () => {
    const wakeups = createWakeups(testSql(), () => {});
    const dispatcher = wakeups.subscribeAll();
    try {
      // The listening connection is up once a notification gets through.
      await eventually('the wake-ups to listen', async () => {
        await testSql()`select pg_notify('webhook_deliveries', '0')`;
        const asked = performance.now();
        await dispatcher.wait(200);
        return performance.now() - asked < 150;
      });
      // The dispatcher waited, then woke for another reason (a POST finished) and left that wait pending.
      void dispatcher.wait(5_000);
      dispatcher.take();
      // During its claim, new rows are recorded.
      await testSql()`select pg_notify('webhook_deliveries', '1')`;
      await Bun.sleep(100);
      const began = performance.now();
      await dispatcher.wait(5_000);
      expect(performance.now() - began).toBeLessThan(50);
    } finally {
      dispatcher.close();
    }
  });
});
