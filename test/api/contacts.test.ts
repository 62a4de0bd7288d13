import { beforeAll, describe, expect, test } from 'bun:test';
import {
  LIVE_METRICS_TOKEN,
  createMerchant,
  numberSequence,
  requester,
  testApp,
  testSql,
  type TestApp,
  type TestMerchant,
} from '../helpers';

let ctx: TestApp;
let merchant: TestMerchant;
let other: TestMerchant;

beforeAll(async () => {
  ctx = await testApp();
  merchant = await createMerchant(ctx.app);
  other = await createMerchant(ctx.app);
});

/** A valid, unused Ugandan mobile number. */
const nextNumber = numberSequence('+256772');

describe('POST /api/contacts', () => {
  test('creates a contact from form fields, metadata.key included', async () => {
    const phone = nextNumber();
    const response = await merchant.request('/api/contacts', {
      form: {
        phone_number: phone,
        first_name: 'Jane',
        last_name: 'Doe',
        email: 'jane@example.com',
        'metadata.tier': 'gold',
        'metadata[region]': 'north',
      },
    });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      organization: merchant.organization.id,
      first_name: 'Jane',
      last_name: 'Doe',
      email: 'jane@example.com',
      phone_number: phone,
      type: 'other',
      status: 'active',
      metadata: { tier: 'gold', region: 'north' },
      author: merchant.user.id,
      updated_by: null,
    });
    expect(response.body.id).toBeNumber();
    expect(response.body.created).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  });

  test('accepts JSON, adds the missing +, normalises to E.164 and ignores read-only fields', async () => {
    const phone = nextNumber();
    const response = await merchant.request('/api/contacts', {
      body: {
        phone_number: phone.slice(1).replace(/(\d{3})(\d{3})/, '$1 $2 '),
        first_name: 'Ann',
        last_name: 'Lee',
        id: 1,
        created: 'x',
        metadata: '{"a": 1}',
      },
    });
    expect(response.status).toBe(201);
    expect(response.body.phone_number).toBe(phone);
    expect(response.body.metadata).toEqual({ a: 1 });
    expect(response.body.id).not.toBe(1);
  });

  test('writes a contact.created event in the same transaction', async () => {
    const response = await merchant.request('/api/contacts', {
      form: { phone_number: nextNumber(), first_name: 'Eve', last_name: 'Ng' },
    });
    const [event] = await testSql()<{ type: string; data: { id: number } }[]>`
      select type, data from events where organization_id = ${merchant.organization.id} and (data->>'id')::bigint = ${response.body.id}`;
    expect(event?.type).toBe('contact.created');
    expect(event?.data).toEqual(response.body);
  });

  test('missing fields are 400 naming each field', async () => {
    const response = await merchant.request('/api/contacts', { form: {} });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      phone_number: ['This field is required.'],
      first_name: ['This field is required.'],
      last_name: ['This field is required.'],
    });
  });

  test.each([
    ['phone_number', { phone_number: '12345', first_name: 'A', last_name: 'B' }],
    ['phone_number', { phone_number: '+2567721', first_name: 'A', last_name: 'B' }],
    ['email', { phone_number: '+256772999001', first_name: 'A', last_name: 'B', email: 'not-an-email' }],
    ['first_name', { phone_number: '+256772999001', first_name: '   ', last_name: 'B' }],
    ['last_name', { phone_number: '+256772999001', first_name: 'A', last_name: 'x'.repeat(101) }],
    ['metadata', { phone_number: '+256772999001', first_name: 'A', last_name: 'B', metadata: '{not json' }],
    ['metadata', { phone_number: '+256772999001', first_name: 'A', last_name: 'B', metadata: '[1]' }],
  ])('invalid %s is 400 and writes nothing', async (field, form) => {
    const before =
      await testSql()`select count(*)::int as n from contacts where organization_id = ${merchant.organization.id}`;
    const response = await merchant.request('/api/contacts', { form });
    expect(response.status).toBe(400);
    expect(Object.keys(response.body)).toEqual([field]);
    expect(response.body[field][0]).toBeString();
    const after =
      await testSql()`select count(*)::int as n from contacts where organization_id = ${merchant.organization.id}`;
    expect(after[0]?.n).toBe(before[0]?.n);
  });

  test.each([
    ['an invisible character', 'jane\u200b@example.com', 'invisible or control characters'],
    [
      'a domain label that decodes to mixed scripts (аpple with a Cyrillic а)',
      'jane@xn--pple-43d.com',
      'mixes Cyrillic and Latin letters',
    ],
  ])('an email with %s is 400 on email, saying why, and writes nothing', async (_what, email, why) => {
    const response = await merchant.request('/api/contacts', {
      form: { phone_number: nextNumber(), first_name: 'A', last_name: 'B', email },
    });
    expect(response.status).toBe(400);
    expect(Object.keys(response.body)).toEqual(['email']);
    expect(response.body.email).toHaveLength(1);
    expect(response.body.email[0]).toContain(why);
    const [{ n }] = await testSql()<
      [{ n: number }]
    >`select count(*)::int as n from contacts where organization_id = ${merchant.organization.id} and email = ${email}`;
    expect(n).toBe(0);
  });

  test('a wrongly typed JSON value is 400, not 500', async () => {
    const response = await merchant.request('/api/contacts', {
      body: { phone_number: ['+256772999001'], first_name: {}, last_name: true },
    });
    expect(response.status).toBe(400);
    expect(Object.keys(response.body).sort()).toEqual(['first_name', 'last_name', 'phone_number']);
  });

  test('a second contact with the same number is 400', async () => {
    const phone = nextNumber();
    expect(
      (await merchant.request('/api/contacts', { form: { phone_number: phone, first_name: 'A', last_name: 'B' } }))
        .status,
    ).toBe(201);
    const again = await merchant.request('/api/contacts', {
      form: { phone_number: phone, first_name: 'C', last_name: 'D' },
    });
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ phone_number: ['A contact with this phone number already exists.'] });
    // Another organization may hold the same number.
    expect(
      (await other.request('/api/contacts', { form: { phone_number: phone, first_name: 'A', last_name: 'B' } })).status,
    ).toBe(201);
  });
});

describe('GET /api/contacts/<id>', () => {
  test('returns the contact; another organization gets 403; a missing one 404', async () => {
    const created = await merchant.request('/api/contacts', {
      form: { phone_number: nextNumber(), first_name: 'Own', last_name: 'Er' },
    });
    const fetched = await merchant.request(`/api/contacts/${created.body.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(created.body);
    const foreign = await other.request(`/api/contacts/${created.body.id}`);
    expect(foreign.status).toBe(403);
    expect(foreign.body.detail).toBeString();
    const missing = await merchant.request('/api/contacts/987654321');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: 'Not found.' });
  });
});

describe('GET /api/contacts', () => {
  let listMerchant: TestMerchant;
  const phones: string[] = [];

  beforeAll(async () => {
    listMerchant = await createMerchant(ctx.app);
    for (let index = 0; index < 13; index += 1) {
      const phone = nextNumber();
      phones.push(phone);
      await listMerchant.request('/api/contacts', {
        form: {
          phone_number: phone,
          first_name: index % 2 === 0 ? 'Even' : 'Odd',
          last_name: `L${index}`,
          email: `c${index}@example.com`,
        },
      });
    }
  });

  test('pages with count/next/previous and absolute URLs, newest first', async () => {
    const first = await listMerchant.request('/api/contacts');
    expect(first.body.count).toBe(13);
    expect(first.body.results).toHaveLength(10);
    expect(first.body.previous).toBeNull();
    expect(first.body.next).toBe('http://localhost/api/contacts?offset=10');
    expect(first.body.results[0].phone_number).toBe(phones[12]);
    const second = await listMerchant.request('/api/contacts?offset=10');
    expect(second.body.results).toHaveLength(3);
    expect(second.body.next).toBeNull();
    expect(second.body.previous).toBe('http://localhost/api/contacts');
    const limited = await listMerchant.request('/api/contacts?limit=5&offset=5&first_name=Even');
    expect(limited.body.count).toBe(7);
    expect(limited.body.next).toBeNull();
    expect(limited.body.results).toHaveLength(2);
    expect(limited.body.previous).toBe('http://localhost/api/contacts?first_name=Even&limit=5');
    const withLimit = await listMerchant.request('/api/contacts?limit=3&first_name=Even');
    expect(withLimit.body.next).toBe('http://localhost/api/contacts?first_name=Even&limit=3&offset=3');
  });

  test("outside sandbox mode the links are built from PUBLIC_BASE_URL, never from the request's Host header", async () => {
    const live = await testApp(undefined, {
      SANDBOX: 'false',
      PUBLIC_BASE_URL: 'https://collections.example/',
      METRICS_TOKEN: LIVE_METRICS_TOKEN,
    });
    const page = await requester(live.app, listMerchant.apiKey)('/api/contacts?limit=2', {
      headers: { Host: 'evil.example' },
    });
    expect(page.status).toBe(200);
    expect(page.body.next).toBe('https://collections.example/api/contacts?limit=2&offset=2');
  });

  test('limit above the maximum is cut; bad limit or offset is 400', async () => {
    expect((await listMerchant.request('/api/contacts?limit=100000')).body.results).toHaveLength(13);
    // However large (docs/configuration.md, PAGE_SIZE_MAX): cut to the maximum, never refused.
    for (const limit of ['1000000000', '9'.repeat(40)]) {
      const cut = await listMerchant.request(`/api/contacts?limit=${limit}`);
      expect({ limit, status: cut.status, results: cut.body.results?.length }).toEqual({
        limit,
        status: 200,
        results: 13,
      });
    }
    expect((await listMerchant.request('/api/contacts?limit=abc')).body).toEqual({
      limit: ['A valid integer is required.'],
    });
    expect((await listMerchant.request('/api/contacts?offset=-1')).status).toBe(400);
    expect((await listMerchant.request('/api/contacts?limit=0')).status).toBe(400);
  });

  test('filters by each field, exact match, combined', async () => {
    const byName = await listMerchant.request('/api/contacts?first_name=Odd');
    expect(byName.body.count).toBe(6);
    const byLast = await listMerchant.request('/api/contacts?last_name=L3&first_name=Odd');
    expect(byLast.body.count).toBe(1);
    expect((await listMerchant.request('/api/contacts?last_name=L')).body.count).toBe(0);
    expect((await listMerchant.request('/api/contacts?email=c4@example.com')).body.results[0].last_name).toBe('L4');
    const byPhone = await listMerchant.request(`/api/contacts?phone_number=${encodeURIComponent(phones[2]!.slice(1))}`);
    expect(byPhone.body.count).toBe(1);
    expect(byPhone.body.results[0].phone_number).toBe(phones[2]);
  });

  test('created_after / created_before take YYYY-MM-DD HH:MM', async () => {
    const minuteAgo = new Date(Date.now() - 60_000).toISOString().slice(0, 16).replace('T', ' ');
    const inAMinute = new Date(Date.now() + 60_000).toISOString().slice(0, 16).replace('T', ' ');
    expect(
      (await listMerchant.request(`/api/contacts?created_after=${encodeURIComponent(minuteAgo)}`)).body.count,
    ).toBe(13);
    expect(
      (await listMerchant.request(`/api/contacts?created_after=${encodeURIComponent(inAMinute)}`)).body.count,
    ).toBe(0);
    expect(
      (await listMerchant.request(`/api/contacts?created_before=${encodeURIComponent(minuteAgo)}`)).body.count,
    ).toBe(0);
    const bad = await listMerchant.request('/api/contacts?created_after=yesterday');
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body)).toEqual(['created_after']);
  });

  test("lists only the caller organization's contacts", async () => {
    const fresh = await createMerchant(ctx.app);
    expect((await fresh.request('/api/contacts')).body).toEqual({ count: 0, next: null, previous: null, results: [] });
  });
});
