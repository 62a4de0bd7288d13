import { beforeAll, describe, expect, test } from 'bun:test';
import { createMerchant, requester, testApp, type TestApp, type TestMerchant } from '../helpers';

let ctx: TestApp;
let merchant: TestMerchant;
const BILLS_DATE = { 'Bills-date': new Date().toUTCString() };

beforeAll(async () => {
  ctx = await testApp();
  merchant = await createMerchant(ctx.app);
});

const SERVICE_ITEM_FIELDS = [
  'id',
  'serviceId',
  'serviceCode',
  'serviceCategory',
  'serviceType',
  'serviceName',
  'serviceDescription',
  'serviceHandler',
  'serviceProvider',
  'serviceEnabled',
  'serviceStatus',
  'deployed',
  'created_at',
  'updated_at',
];

describe('GET /api/bills/billers/services/list', () => {
  test('groups service items by category by default, every item with every field of the catalogue', async () => {
    const response = await merchant.request('/api/bills/billers/services/list');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'success', code: 200 });
    expect(response.body.message).toBeString();
    const data = response.body.data as Record<string, Record<string, unknown>[]>;
    expect(Object.keys(data)).toEqual(expect.arrayContaining(['airtime', 'data', 'cable_tv', 'electricity', 'epin']));
    for (const [category, items] of Object.entries(data)) {
      for (const item of items) {
        expect(Object.keys(item)).toEqual(SERVICE_ITEM_FIELDS);
        expect(item.serviceCategory).toBe(category);
        expect(item.id).toBeNumber();
        expect(['true', 'false']).toContain(item.serviceEnabled as string);
        expect(['true', 'false']).toContain(item.deployed as string);
        expect(item.created_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
      }
    }
    expect(data.airtime?.find((item) => item.serviceProvider === 'mtn')).toMatchObject({
      serviceCode: 'MTNVTU',
      created_at: '2023-01-10 09:00:00',
    });
  });

  test('groupby=billers keys the items by biller; an unknown grouping is 400 in the envelope', async () => {
    const response = await merchant.request('/api/bills/billers/services/list?groupby=billers');
    const data = response.body.data as Record<string, Record<string, unknown>[]>;
    expect(Object.keys(data)).toEqual(
      expect.arrayContaining(['mtn', 'glo', 'airtel', '9mobile', 'spectranet', 'ikeja_electric']),
    );
    for (const [biller, items] of Object.entries(data))
      for (const item of items) expect(item.serviceProvider).toBe(biller);
    const categories = await merchant.request('/api/bills/billers/services/list?groupby=category');
    expect(Object.values(categories.body.data).flat()).toHaveLength(Object.values(data).flat().length);

    const wrong = await merchant.request('/api/bills/billers/services/list?groupby=colour');
    expect(wrong.status).toBe(400);
    expect(wrong.body).toEqual({
      status: 'error',
      message: 'groupby: Select a valid choice. colour is not one of the available choices.',
      code: 400,
      data: { groupby: ['Select a valid choice. colour is not one of the available choices.'] },
    });
  });
});

describe('GET /api/bills/services/electricity/billers', () => {
  test('lists billers with service_types maps to PREPAID / POSTPAID', async () => {
    const response = await merchant.request('/api/bills/services/electricity/billers');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'success', code: 200 });
    const billers = response.body.data as { name: string; service_types: Record<string, string> }[];
    expect(billers.length).toBeGreaterThanOrEqual(5);
    for (const biller of billers) {
      expect(Object.keys(biller)).toEqual(['name', 'service_types']);
      for (const [key, plan] of Object.entries(biller.service_types)) {
        expect(key).toMatch(/^[a-z]+_electric_(prepaid|postpaid)$/);
        expect(plan).toBe(key.endsWith('_prepaid') ? 'PREPAID' : 'POSTPAID');
      }
    }
    expect(billers[0]).toEqual({
      name: 'Ikeja Electric Distribution Company (IKEDC)',
      service_types: { ikeja_electric_prepaid: 'PREPAID', ikeja_electric_postpaid: 'POSTPAID' },
    });
  });
});

describe('POST /api/bills/services/epin/bundles', () => {
  test.each(['glo', 'mtn', 'airtel', '9mobile', 'spectranet'])(
    'lists the %s bundles with a valid Bills-date',
    async (provider) => {
      const response = await merchant.request('/api/bills/services/epin/bundles', {
        form: { service_type: provider },
        headers: BILLS_DATE,
      });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ status: 'success', code: 200 });
      const bundles = response.body.data as { amount: number; available: number; description: string }[];
      expect(bundles.length).toBeGreaterThan(0);
      for (const bundle of bundles) {
        expect(Object.keys(bundle)).toEqual(['amount', 'available', 'description']);
        expect(bundle.amount).toBeNumber();
        expect(Number.isInteger(bundle.available)).toBe(true);
      }
    },
  );

  test.each([
    ['RFC 7231 IMF-fixdate', 'Sun, 06 Nov 1994 08:49:37 GMT'],
    ['RFC 2822 with an offset', 'Tue, 15 Nov 1994 08:12:31 +0100'],
    ['RFC 2822 without the weekday', '2 Jan 2024 10:00 -0500'],
    ['RFC 850', 'Sunday, 06-Nov-94 08:49:37 GMT'],
    ['asctime', 'Sun Nov  6 08:49:37 1994'],
  ])('accepts a JSON body and a Bills-date in %s form', async (_form, date) => {
    const response = await merchant.request('/api/bills/services/epin/bundles', {
      body: { service_type: 'MTN' },
      headers: { 'Bills-date': date },
    });
    expect(response.status).toBe(200);
    expect(response.body.data[0]).toEqual({ amount: 100, available: 500, description: 'MTN N100 recharge PIN' });
  });

  test('without Bills-date is 400 in the envelope', async () => {
    const response = await merchant.request('/api/bills/services/epin/bundles', { form: { service_type: 'glo' } });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      status: 'error',
      message: 'The Bills-date header is required.',
      code: 400,
      data: null,
    });
  });

  test.each([
    '2024-05-01T10:00:00Z',
    'yesterday',
    'Mon, 06 Nov 1994 08:49:37 GMT',
    'Sun, 31 Feb 2021 08:49:37 GMT',
    '1714557600',
  ])('Bills-date %p is not an RFC date: 400', async (date) => {
    const response = await merchant.request('/api/bills/services/epin/bundles', {
      form: { service_type: 'glo' },
      headers: { 'Bills-date': date },
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ status: 'error', code: 400, data: null });
    expect(response.body.message).toContain('RFC 7231 or RFC 2822');
  });

  test('a missing or unknown service_type is 400 with the field error in data', async () => {
    const missing = await merchant.request('/api/bills/services/epin/bundles', { form: {}, headers: BILLS_DATE });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({
      status: 'error',
      message: 'service_type: This field is required.',
      code: 400,
      data: { service_type: ['This field is required.'] },
    });
    const unknown = await merchant.request('/api/bills/services/epin/bundles', {
      form: { service_type: 'dstv' },
      headers: BILLS_DATE,
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.data.service_type[0]).toContain('dstv is not one of the available choices');
  });
});

describe('authorization on bill-payment endpoints', () => {
  test.each([
    ['GET', '/api/bills/billers/services/list'],
    ['GET', '/api/bills/services/electricity/billers'],
    ['POST', '/api/bills/services/epin/bundles'],
  ])('%s %s without Authorization is 401 in the envelope', async (method, path) => {
    const response = await requester(ctx.app, null)(path, {
      method,
      headers: BILLS_DATE,
      ...(method === 'POST' ? { form: { service_type: 'mtn' } } : {}),
    });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ status: 'error', message: 'Invalid token.', code: 401, data: null });
    expect(response.headers.get('www-authenticate')).toBe('Token');
  });

  test('Bearer <key> is accepted as well as Token <key>', async () => {
    const response = await merchant.request('/api/bills/services/electricity/billers', {
      headers: { Authorization: `Bearer ${merchant.apiKey}` },
    });
    expect(response.status).toBe(200);
  });

  test('an unknown bill-payment path is 404 in the envelope', async () => {
    const response = await merchant.request('/api/bills/services/nothing');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ status: 'error', message: 'Not found.', code: 404, data: null });
  });
});
