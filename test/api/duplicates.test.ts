import { beforeAll, describe, expect, test } from 'bun:test';
import { randomUUID } from 'node:crypto';
import {
  createMerchant,
  numberSequence,
  requester,
  testApp,
  testSql,
  type TestApp,
  type TestMerchant,
} from '../helpers';
import {
  DuplicateRequestError,
  duplicateCheckObject,
  writeOnce,
} from '../../src/services/collections/duplicate-checks';

let ctx: TestApp;
let merchant: TestMerchant;

beforeAll(async () => {
  ctx = await testApp();
  merchant = await createMerchant(ctx.app);
});

const nextNumber = numberSequence('+256772');
const newKey = () => `key-${randomUUID()}`;
const contactForm = () => ({ phone_number: nextNumber(), first_name: 'Dup', last_name: 'Check' });

async function contactCount(organizationId: number): Promise<number> {
  const [row] = await testSql()<
    { count: number }[]
  >`select count(*)::int as count from contacts where organization_id = ${organizationId}`;
  return row?.count ?? 0;
}

describe('Duplicate-Check-Key', () => {
  test('a repeat within the lifetime is 409 and creates nothing, even with another body', async () => {
    const key = newKey();
    const first = await merchant.request('/api/contacts', {
      form: contactForm(),
      headers: { 'Duplicate-Check-Key': key },
    });
    expect(first.status).toBe(201);
    const before = await contactCount(merchant.organization.id);
    const repeat = await merchant.request('/api/contacts', {
      form: contactForm(),
      headers: { 'Duplicate-Check-Key': key },
    });
    expect(repeat.status).toBe(409);
    expect(repeat.body).toEqual({ detail: 'Duplicate Request Detected!' });
    expect(await contactCount(merchant.organization.id)).toBe(before);
  });

  test('two simultaneous requests on two app instances with one key create exactly one object', async () => {
    const other = await testApp();
    const owner = await createMerchant(ctx.app);
    const onOther = requester(other.app, owner.apiKey);
    for (let round = 0; round < 5; round += 1) {
      const key = newKey();
      const headers = { 'Duplicate-Check-Key': key };
      const responses = await Promise.all([
        owner.request('/api/contacts', { form: contactForm(), headers }),
        onOther('/api/contacts', { form: contactForm(), headers }),
        owner.request('/api/contacts', { body: contactForm(), headers }),
      ]);
      expect(responses.map((response) => response.status).sort()).toEqual([201, 409, 409]);
    }
    expect(await contactCount(owner.organization.id)).toBe(5);
  });

  test('after the lifetime the same key creates a new object', async () => {
    const { app } = await testApp(undefined, { DUPLICATE_CHECK_TTL_SECONDS: '1' });
    const shortLived = await createMerchant(app);
    const headers = { 'Duplicate-Check-Key': 'expiring-key' };
    expect((await shortLived.request('/api/contacts', { form: contactForm(), headers })).status).toBe(201);
    expect((await shortLived.request('/api/contacts', { form: contactForm(), headers })).status).toBe(409);
    await Bun.sleep(1100);
    expect((await shortLived.request('/api/contacts', { form: contactForm(), headers })).status).toBe(201);
    expect(await contactCount(shortLived.organization.id)).toBe(2);
  });

  test('a request refused with 4xx gives its key back, so the corrected retry goes through', async () => {
    const headers = { 'Duplicate-Check-Key': newKey() };
    const invalid = await merchant.request('/api/contacts', {
      form: { phone_number: 'nope', first_name: 'A', last_name: 'B' },
      headers,
    });
    expect(invalid.status).toBe(400);
    const unsupported = await merchant.request('/api/contacts', {
      body: '<contact/>',
      headers: { ...headers, 'Content-Type': 'application/xml' },
    });
    expect(unsupported.status).toBe(415);
    const fixed = await merchant.request('/api/contacts', { form: contactForm(), headers });
    expect(fixed.status).toBe(201);
    expect((await merchant.request('/api/contacts', { form: contactForm(), headers })).status).toBe(409);
  });

  test('keys are per organization, ignored on reads, and bounded in length', async () => {
    const key = newKey();
    const other = await createMerchant(ctx.app);
    expect(
      (await merchant.request('/api/contacts', { form: contactForm(), headers: { 'Duplicate-Check-Key': key } }))
        .status,
    ).toBe(201);
    expect(
      (await other.request('/api/contacts', { form: contactForm(), headers: { 'Duplicate-Check-Key': key } })).status,
    ).toBe(201);
    expect((await merchant.request('/api/contacts', { headers: { 'Duplicate-Check-Key': key } })).status).toBe(200);
    expect((await merchant.request('/api/contacts', { headers: { 'Duplicate-Check-Key': key } })).status).toBe(200);
    const long = await merchant.request('/api/contacts', {
      form: contactForm(),
      headers: { 'Duplicate-Check-Key': 'k'.repeat(256) },
    });
    expect(long.status).toBe(400);
    expect(long.body).toEqual({ detail: 'Duplicate-Check-Key must have at most 255 characters.' });
  });
});

describe("the claim lives in the write's transaction", () => {
  test('a write that fails after claiming keeps nothing: the key is free again', async () => {
    const sql = testSql();
    const check = {
      organizationId: merchant.organization.id,
      key: newKey(),
      method: 'POST',
      path: '/api/x',
      ttlSeconds: 60,
    };
    await expect(
      writeOnce(sql, null, check, async () => {
        throw new Error('the write failed');
      }),
    ).rejects.toThrow('the write failed');
    const linked = await writeOnce(
      sql,
      null,
      check,
      async () => ({ id: 42 }),
      (result) => ({ type: 'collection_request', id: result.id }),
    );
    expect(linked).toEqual({ id: 42 });
    expect(await duplicateCheckObject(sql, merchant.organization.id, check.key)).toEqual({
      type: 'collection_request',
      id: 42,
    });
    await expect(writeOnce(sql, null, check, async () => 'again')).rejects.toBeInstanceOf(DuplicateRequestError);
  });

  test('a request refused after its key was read (far-future dates) leaves the key for the corrected retry', async () => {
    const headers = { 'Duplicate-Check-Key': newKey() };
    const form = { phonenumber: nextNumber(), amount: '10', currency: 'BXC' };
    const farDates: Record<string, string>[] = [
      { start_date: '999999 weeks' },
      { expiry_date: '999999 weeks' },
      { start_date: '31/12/9999 23:59:59' },
    ];
    for (const dates of farDates) {
      const refused = await merchant.request('/api/collectionrequests', { form: { ...form, ...dates }, headers });
      expect(refused.status).toBe(400);
    }
    const corrected = await merchant.request('/api/collectionrequests', { form, headers });
    expect(corrected.status).toBe(201);
    expect((await merchant.request('/api/collectionrequests', { form, headers })).status).toBe(409);
  });
});
