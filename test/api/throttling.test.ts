import { beforeAll, describe, expect, test } from 'bun:test';
import { awayFromWindowEdge, createMerchant, numberSequence, testApp, testSql, type TestApp } from '../helpers';
import { setThrottleLimits } from '../../src/services/platform/throttling';
import { storeIncomingPayment } from '../../src/services/collections/collection-receiving';

let ctx: TestApp;

beforeAll(async () => {
  ctx = await testApp();
});

const nextNumber = numberSequence('+256772');

describe('throttling with the production defaults (30 reads, 3000 writes a minute)', () => {
  test('the 31st read in a minute is 429 with Retry-After while writes still pass', async () => {
    expect(ctx.config.throttle).toEqual({ reads: 30, writes: 3000, windowSeconds: 60 });
    const merchant = await createMerchant(ctx.app, 'Throttled reader', { throttle: 'default' });
    await awayFromWindowEdge(60, 10_000);
    for (let read = 1; read <= 30; read += 1) {
      const response = await merchant.request(read % 2 === 0 ? '/api/contacts' : '/api/events');
      expect(response.status).toBe(200);
    }
    const throttled = await merchant.request('/api/contacts');
    expect(throttled.status).toBe(429);
    const retryAfter = Number(throttled.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(throttled.body).toEqual({
      detail: `Request was throttled. Expected available in ${retryAfter} second${retryAfter === 1 ? '' : 's'}.`,
    });

    const write = await merchant.request('/api/contacts', {
      form: { phone_number: nextNumber(), first_name: 'Still', last_name: 'Writes' },
    });
    expect(write.status).toBe(201);
    expect((await merchant.request('/api/events')).status).toBe(429);

    const neighbour = await createMerchant(ctx.app, 'Unthrottled neighbour', { throttle: 'default' });
    expect((await neighbour.request('/api/contacts')).status).toBe(200);
  });

  test('unauthenticated requests are refused before they count', async () => {
    const merchant = await createMerchant(ctx.app, 'Counted only when known', { throttle: 'default' });
    await merchant.request('/api/contacts', {
      headers: { Authorization: 'Token 0000000000000000000000000000000000000000' },
    });
    const [counter] =
      await testSql()`select count from request_counters where starts_with(key, ${`organization:${merchant.organization.id}:`})`;
    expect(counter).toBeUndefined();
  });
});

describe('per-organization limits and the window', () => {
  test('writes past an organization limit are 429; reads are counted apart', async () => {
    const merchant = await createMerchant(ctx.app, 'Few writes', { throttle: { reads: 100, writes: 2 } });
    await awayFromWindowEdge(60, 10_000);
    const statuses = [];
    for (let write = 0; write < 3; write += 1) {
      statuses.push(
        (
          await merchant.request('/api/contacts', {
            form: { phone_number: nextNumber(), first_name: 'W', last_name: 'X' },
          })
        ).status,
      );
    }
    expect(statuses).toEqual([201, 201, 429]);
    expect((await merchant.request('/api/contacts')).status).toBe(200);
  });

  test('a claim is counted as a write, not a read: it passes the read limit and is 429 past the write limit', async () => {
    const merchant = await createMerchant(ctx.app, 'Claims are writes', { throttle: { reads: 1, writes: 2 } });
    const unassigned = await storeIncomingPayment(testSql(), {
      network: 'MTN Uganda',
      remoteTransactionId: `THROTTLE-${Date.now()}-${nextNumber().slice(-6)}`,
      phoneNumber: nextNumber(),
      amount: '7',
      currency: 'BXC',
      reference: 'throttle',
      paymentDate: new Date().toISOString(),
    });
    const claim = `/api/collections?claim=True&amount=7&remote_transaction_id=${unassigned.remoteTransactionId}&phonenumber=${encodeURIComponent(unassigned.phoneNumber)}`;
    await awayFromWindowEdge(60, 10_000);
    expect((await merchant.request('/api/contacts')).status).toBe(200);
    const claimed = await merchant.request(claim);
    expect({
      status: claimed.status,
      ids: Array.isArray(claimed.body) ? claimed.body.map((row: { id: number }) => row.id) : claimed.body,
    }).toEqual({ status: 200, ids: [unassigned.id] });
    expect(
      (
        await merchant.request('/api/contacts', {
          form: { phone_number: nextNumber(), first_name: 'W', last_name: 'X' },
        })
      ).status,
    ).toBe(201);
    expect((await merchant.request(claim)).status).toBe(429);
    // A listing that does not ask for a claim is still a read: the read limit is spent.
    expect((await merchant.request('/api/collections?claim=no')).status).toBe(429);
    const counters = await testSql()<{ key: string; count: number }[]>`
      select key, count from request_counters where starts_with(key, ${`organization:${merchant.organization.id}:`}) order by key`;
    expect([...counters]).toEqual([
      { key: `organization:${merchant.organization.id}:read`, count: 2 },
      { key: `organization:${merchant.organization.id}:write`, count: 3 },
    ]);
  });

  test('a new window restarts the count', async () => {
    const { app } = await testApp(undefined, { THROTTLE_WINDOW_SECONDS: '1' });
    const merchant = await createMerchant(app, 'One-second window', { throttle: { reads: 2, writes: 10 } });
    await awayFromWindowEdge(1, 400);
    expect((await merchant.request('/api/contacts')).status).toBe(200);
    expect((await merchant.request('/api/contacts')).status).toBe(200);
    const throttled = await merchant.request('/api/contacts');
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toBe('1');
    await Bun.sleep(1000 - (Date.now() % 1000) + 50);
    expect((await merchant.request('/api/contacts')).status).toBe(200);
  });

  test('an organization limit of null falls back to the configured default', async () => {
    const { app } = await testApp(undefined, { THROTTLE_READS: '1' });
    const merchant = await createMerchant(app, 'Back to default', { throttle: { reads: 5, writes: 5 } });
    await setThrottleLimits(testSql(), merchant.organization.id, { reads: null });
    await awayFromWindowEdge(60, 5_000);
    expect((await merchant.request('/api/contacts')).status).toBe(200);
    expect((await merchant.request('/api/contacts')).status).toBe(429);
  });
});
