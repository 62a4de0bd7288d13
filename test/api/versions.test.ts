import { beforeAll, describe, expect, test } from 'bun:test';
import { createMerchant, testApp, testSql, type TestApp, type TestMerchant } from '../helpers';
import { setApiVersion } from '../../src/services/merchants/organizations';
import { V1_CURRENCY_IDS } from '../../src/domain/versions';

let ctx: TestApp;
let merchant: TestMerchant;
let contactId: number;
const NAME = 'Versioned Merchant Ltd';

beforeAll(async () => {
  ctx = await testApp();
  merchant = await createMerchant(ctx.app, NAME);
  const created = await merchant.request('/api/contacts', {
    form: { phone_number: '+256772199001', first_name: 'Vera', last_name: 'Sion' },
  });
  expect(created.status).toBe(201);
  contactId = created.body.id;
});

async function savedVersion(organizationId: number): Promise<number | null> {
  const [row] = await testSql()<
    { api_version: number | null }[]
  >`select api_version from organizations where id = ${organizationId}`;
  return row?.api_version ?? null;
}

describe('the saved version', () => {
  test('is set to the current version (v4) on the first request and reported in Api-Version', async () => {
    const fresh = await createMerchant(ctx.app);
    expect(await savedVersion(fresh.organization.id)).toBeNull();
    const response = await fresh.request('/api/contacts');
    expect(response.headers.get('api-version')).toBe('v4');
    expect(await savedVersion(fresh.organization.id)).toBe(4);
  });

  test('is what a request without a version gets; the header overrides it', async () => {
    const old = await createMerchant(ctx.app, 'Old Client Co');
    await setApiVersion(testSql(), old.organization.id, 1);
    const saved = await old.request('/api/contacts');
    expect(saved.headers.get('api-version')).toBe('v1');
    expect(saved.body).toEqual([]);
    const overridden = await old.request('/api/contacts', { headers: { 'Api-Version': 'v4' } });
    expect(overridden.body).toEqual({ count: 0, next: null, previous: null, results: [] });
    expect(await savedVersion(old.organization.id)).toBe(1);
  });
});

describe('documented shapes per version', () => {
  test('v1: lists are bare arrays and organization is the name', async () => {
    const list = await merchant.request('/api/contacts', { headers: { 'Api-Version': 'v1' } });
    expect(list.status).toBe(200);
    expect(Array.isArray(list.body)).toBe(true);
    expect(list.body).toHaveLength(1);
    expect(list.body[0]).toMatchObject({ id: contactId, organization: NAME, first_name: 'Vera' });
    const one = await merchant.request(`/api/contacts/${contactId}`, { headers: { 'Api-Version': 'v1' } });
    expect(one.body.organization).toBe(NAME);

    const events = await merchant.request('/api/events', { headers: { 'Api-Version': 'v1' } });
    expect(events.body).toHaveLength(1);
    expect(events.body[0]).toMatchObject({
      type: 'contact.created',
      organization: NAME,
      data: { id: contactId, organization: NAME },
    });
    const event = await merchant.request(`/api/events/${events.body[0].id}`, { headers: { 'Api-Version': 'v1' } });
    expect(event.body.organization).toBe(NAME);
  });

  test.each(['v2', 'v3', 'v4'])('%s: paged envelope and organization ids', async (version) => {
    const list = await merchant.request('/api/contacts', { headers: { 'Api-Version': version } });
    expect(list.headers.get('api-version')).toBe(version);
    expect(list.body).toMatchObject({ count: 1, next: null, previous: null });
    expect(list.body.results[0]).toMatchObject({ id: contactId, organization: merchant.organization.id });
    const events = await merchant.request('/api/events', { headers: { 'Api-Version': version } });
    expect(events.body.results[0]).toMatchObject({
      organization: merchant.organization.id,
      data: { organization: merchant.organization.id },
    });
  });

  test('every version of a contact has the same fields apart from organization', async () => {
    const shapes = await Promise.all(
      ['v1', 'v2', 'v3', 'v4'].map(
        async (version) =>
          (await merchant.request(`/api/contacts/${contactId}`, { headers: { 'Api-Version': version } })).body,
      ),
    );
    for (const shape of shapes) expect(Object.keys(shape)).toEqual(Object.keys(shapes[3]));
    expect(shapes.slice(1).every((shape) => JSON.stringify(shape) === JSON.stringify(shapes[3]))).toBe(true);
  });
});

describe('the /api/vN/ prefix', () => {
  test('serves every route under the prefix, with and without a trailing slash', async () => {
    const v1 = await merchant.request('/api/v1/contacts/');
    expect(v1.status).toBe(200);
    expect(v1.body[0].organization).toBe(NAME);
    expect(v1.headers.get('api-version')).toBe('v1');
    const v3 = await merchant.request(`/api/v3/contacts/${contactId}`);
    expect(v3.body.organization).toBe(merchant.organization.id);
    expect((await merchant.request('/api/v2/events')).body.count).toBeGreaterThanOrEqual(1);
  });

  test('wins over the header, and carries request bodies through', async () => {
    const created = await merchant.request('/api/v1/contacts', {
      form: { phone_number: '+256772199002', first_name: 'Pre', last_name: 'Fix' },
      headers: { 'Api-Version': 'v4' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ organization: NAME, first_name: 'Pre', phone_number: '+256772199002' });
  });

  test('page links keep the prefix the client used', async () => {
    await merchant.request('/api/contacts', {
      form: { phone_number: '+256772199003', first_name: 'Page', last_name: 'Two' },
    });
    const paged = await merchant.request('/api/v2/contacts?limit=1');
    expect(paged.body.count).toBeGreaterThanOrEqual(2);
    expect(paged.body.next).toBe('http://localhost/api/v2/contacts?limit=1&offset=1');
    const next = await merchant.request(new URL(paged.body.next).pathname + new URL(paged.body.next).search);
    expect(next.body.previous).toBe('http://localhost/api/v2/contacts?limit=1');
  });

  test('keeps 404 and 405 for paths and methods that do not exist', async () => {
    expect((await merchant.request('/api/v2/nothing-here')).status).toBe(404);
    const put = await merchant.request('/api/v2/events', { method: 'PUT', body: {} });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET');
  });
});

describe('unknown versions', () => {
  test.each(['v5', 'v0', 'banana', '4.1'])('Api-Version: %s is 400', async (version) => {
    const response = await merchant.request('/api/contacts', { headers: { 'Api-Version': version } });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ detail: 'Invalid version in "Api-Version" header.' });
  });

  test('an unknown version prefix is 400', async () => {
    const response = await merchant.request('/api/v9/contacts');
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ detail: 'Invalid version in URL path.' });
  });
});

test('the numeric currency ids of v1 are those of the currencies table', async () => {
  const rows = await testSql()<{ id: number; code: string }[]>`select id, code from currencies order by id`;
  expect(Object.fromEntries(rows.map((row) => [row.code, row.id]))).toEqual({ ...V1_CURRENCY_IDS });
});
