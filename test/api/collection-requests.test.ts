import { asId } from '../../src/domain/ids';
import { beforeAll, describe, expect, test } from 'bun:test';
import { fundWallet } from '../../src/services/merchants/organizations';
import { changeRequestStatus } from '../../src/services/collections/request-status';
import { createMerchant, numberSequence, testApp, testSql, type TestApp, type TestMerchant } from '../helpers';

let ctx: TestApp;
let merchant: TestMerchant;
let other: TestMerchant;

beforeAll(async () => {
  ctx = await testApp();
  merchant = await createMerchant(ctx.app);
  other = await createMerchant(ctx.app);
});

const nextNumber = numberSequence('+256772');
const valid = (extra: Record<string, string> = {}) => ({
  phonenumber: nextNumber(),
  amount: '1500',
  currency: 'BXC',
  ...extra,
});

async function countRequests(organizationId: number): Promise<number> {
  const [row] = await testSql()<
    { n: number }[]
  >`select count(*)::int as n from collection_requests where organization_id = ${organizationId}`;
  return row?.n ?? 0;
}

describe('POST /api/collectionrequests', () => {
  test('creates a request with defaults, the expanded contact and the documented formats', async () => {
    const before = Date.now();
    const form = valid();
    const response = await merchant.request('/api/collectionrequests', { form });
    expect(response.status).toBe(201);
    const body = response.body;
    expect(body).toMatchObject({
      organization: merchant.organization.id,
      amount: '1500.0000',
      currency: 'BXC',
      phonenumber: form.phonenumber,
      reason: merchant.organization.name,
      status: 'new',
      send_instructions: false,
      instructions: null,
      max_attempts: 3,
      retry_interval_minutes: null,
      start_date: null,
      collection: null,
      subscription_settings: null,
      contact: { first_name: 'Anonymous', last_name: 'Contact', phone_number: form.phonenumber },
    });
    expect(body.svccode).toMatch(/^\d+-\d+$/);
    expect(body.account).toBeNumber();
    expect(body.expiry_date).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}\+00:00$/);
    const expiry = Date.parse(body.expiry_date.replace(' ', 'T').replace('+00:00', 'Z'));
    expect(expiry - before).toBeGreaterThanOrEqual(24 * 3600_000 - 1000);
    expect(expiry - before).toBeLessThan(24 * 3600_000 + 60_000);
  });

  test.each([
    ['amount as a decimal string', { amount: '10.25' }, { amount: '10.2500' }],
    ['amount as a JSON number', { amount: 99 }, { amount: '99.0000' }],
    ['currency in lower case', { currency: 'bxc' }, { currency: 'BXC' }],
    ['send_instructions True', { send_instructions: 'True' }, { send_instructions: true }],
    ['send_instructions 1', { send_instructions: '1' }, { send_instructions: true }],
    ['max_attempts 0', { max_attempts: '0' }, { max_attempts: 0 }],
    ['retry_interval_minutes 10', { retry_interval_minutes: '10' }, { retry_interval_minutes: 10 }],
    ['instructions skip', { instructions: 'skip' }, { instructions: 'skip' }],
    ['a 140-character success message', { success_message: 'x'.repeat(140) }, { success_message: 'x'.repeat(140) }],
    ['metadata as form fields', { 'metadata.order': '42' }, { metadata: { order: '42' } }],
    ['metadata as a JSON string', { metadata: '{"order": 7}' }, { metadata: { order: 7 } }],
  ])('accepts %s', async (_name, extra, expected) => {
    const asForm = Object.keys(extra).some((key) => key.includes('.'));
    const body = { ...valid(), ...extra };
    const response = await merchant.request(
      '/api/collectionrequests',
      asForm ? { form: body as Record<string, string> } : { body },
    );
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject(expected);
  });

  test('a JSON number is judged by its text as sent, as the same value in a string is: nothing is rounded silently', async () => {
    const json = (amount: string) =>
      merchant.request('/api/collectionrequests', {
        body: JSON.stringify(valid()).replace(/"amount":"[^"]*"/, `"amount":${amount}`),
      });
    for (const amount of ['0.99999999999999999999', '"0.99999999999999999999"', '1.00001', '1e2', '12345678901.5']) {
      const response = await json(amount);
      expect({ amount, status: response.status }).toEqual({ amount, status: 400 });
      expect(response.body.amount).toHaveLength(1);
    }
    expect((await json('0.99999999999999999999')).body).toEqual((await json('"0.99999999999999999999"')).body);
    for (const [amount, stored] of [
      ['100.50', '100.5000'],
      ['1.0', '1.0000'],
      ['0.0001', '0.0001'],
      ['99', '99.0000'],
    ]) {
      const response = await json(amount!);
      expect({ amount, status: response.status, stored: response.body.amount }).toEqual({
        amount,
        status: 201,
        stored,
      });
    }
  });

  test.each([
    ['expiry_date', '2 minutes', 2 * 60_000],
    ['expiry_date', 'tomorrow', 24 * 3600_000],
    ['expiry_date', '3 days', 3 * 24 * 3600_000],
  ])('%s %p is relative to now', async (field, value, offset) => {
    const before = Date.now();
    const response = await merchant.request('/api/collectionrequests', { form: valid({ [field]: value }) });
    expect(response.status).toBe(201);
    const expiry = Date.parse(response.body.expiry_date.replace(' ', 'T').replace('+00:00', 'Z'));
    expect(Math.abs(expiry - before - offset)).toBeLessThan(5000);
  });

  test('start_date and expiry_date in DD/MM/YYYY forms; expiry counts from the start', async () => {
    const year = new Date().getUTCFullYear() + 1;
    const response = await merchant.request('/api/collectionrequests', {
      form: valid({ start_date: `15/06/${year} 10:30:00`, expiry_date: `16/06/${year}` }),
    });
    expect(response.status).toBe(201);
    expect(response.body.start_date).toBe(`${year}-06-15 10:30:00.000000+00:00`);
    expect(response.body.expiry_date).toBe(`${year}-06-16 00:00:00.000000+00:00`);
    const relative = await merchant.request('/api/collectionrequests', {
      form: valid({ start_date: `15/06/${year}` }),
    });
    expect(relative.body.expiry_date).toBe(`${year}-06-16 00:00:00.000000+00:00`);
  });

  test("names create the contact, and overwrite a saved contact's name; no names keep it", async () => {
    const phone = nextNumber();
    const first = await merchant.request('/api/collectionrequests', {
      form: { ...valid(), phonenumber: phone, first_name: 'Jane', last_name: 'Doe' },
    });
    expect(first.body.contact).toMatchObject({ first_name: 'Jane', last_name: 'Doe' });
    const renamed = await merchant.request('/api/collectionrequests', {
      form: { ...valid(), phonenumber: phone, first_name: 'Janet' },
    });
    expect(renamed.body.contact).toMatchObject({ id: first.body.contact.id, first_name: 'Janet', last_name: 'Doe' });
    const kept = await merchant.request('/api/collectionrequests', { form: { ...valid(), phonenumber: phone } });
    expect(kept.body.contact).toMatchObject({ first_name: 'Janet', last_name: 'Doe' });
    const events =
      await testSql()`select count(*)::int as n from events where organization_id = ${merchant.organization.id}
      and type = 'contact.created' and (data->>'id')::bigint = ${first.body.contact.id}`;
    expect(events[0]?.n).toBe(1);
  });

  test('subscription_settings as a hash, a JSON string or form fields', async () => {
    const year = new Date().getUTCFullYear() + 1;
    const settings = { start_date: `01/01/${year} 09:00:00`, end_date: `01/06/${year} 09:00:00`, frequency: 'monthly' };
    const asHash = await merchant.request('/api/collectionrequests', {
      body: { ...valid(), subscription_settings: settings },
    });
    expect(asHash.status).toBe(201);
    expect(JSON.parse(asHash.body.subscription_settings)).toEqual(settings);
    expect(asHash.body.start_date).toBe(`${year}-01-01 09:00:00.000000+00:00`);
    const asString = await merchant.request('/api/collectionrequests', {
      form: { ...valid(), subscription_settings: JSON.stringify({ ...settings, weekdays: ['mon', 'fri'] }) },
    });
    expect(JSON.parse(asString.body.subscription_settings).weekdays).toEqual([1, 5]);
    const asForm = await merchant.request('/api/collectionrequests', {
      form: {
        ...valid(),
        'subscription_settings.start_date': settings.start_date,
        'subscription_settings[end_date]': settings.end_date,
        'subscription_settings.frequency': 'Weekly',
      },
    });
    expect(asForm.status).toBe(201);
    expect(JSON.parse(asForm.body.subscription_settings).frequency).toBe('weekly');
  });

  test.each([
    ['phonenumber', { phonenumber: undefined }, 'This field is required.'],
    ['amount', { amount: undefined }, 'This field is required.'],
    ['currency', { currency: undefined }, 'This field is required.'],
    ['phonenumber', { phonenumber: '+2567' }, 'international format'],
    ['phonenumber', { phonenumber: '+3361234' }, 'international format'],
    ['amount', { amount: '1,000' }, 'thousands separators'],
    ['amount', { amount: '0' }, 'greater than 0'],
    ['amount', { amount: '-5' }, 'without a sign'],
    ['amount', { amount: '0100' }, 'without leading zeros'],
    ['amount', { amount: 'ten' }, 'A valid number is required.'],
    ['amount', { amount: '1.23456' }, 'no more than 4 decimal places'],
    ['amount', { amount: '9999999999999999.9999' }, 'at most 1,000,000,000'],
    ['amount', { amount: '1000000000.0001' }, 'at most 1,000,000,000'],
    ['expiry_date', { expiry_date: '999999 weeks' }, 'before 01/01/2100'],
    ['start_date', { start_date: '999999 weeks' }, 'before 01/01/2100'],
    ['start_date', { start_date: '31/12/9999 23:59:59' }, 'before 01/01/2100'],
    [
      'subscription_settings',
      {
        subscription_settings:
          '{"start_date": "01/01/2099 00:00:00", "end_date": "999999 weeks", "frequency": "weekly"}',
      },
      'before 01/01/2100',
    ],
    ['metadata', { metadata: `${'['.repeat(50_000)}${']'.repeat(50_000)}` }, 'nest deeper'],
    ['currency', { currency: 'EUR' }, 'Select a valid choice. EUR is not one of the available choices.'],
    ['currency', { currency: 'UGX' }, 'no funded UGX wallet'],
    ['account', { account: '999999999' }, 'No active BXC wallet'],
    ['account', { account: 'abc' }, 'A valid integer is required.'],
    ['success_message', { success_message: 'x'.repeat(141) }, 'no more than 140 characters'],
    ['instructions', { instructions: 'x'.repeat(141) }, 'no more than 140 characters'],
    ['expiry_date', { expiry_date: 'never' }, 'Enter a valid date'],
    ['expiry_date', { expiry_date: '01/01/2020' }, 'later than now'],
    ['start_date', { start_date: '01/01/2020' }, 'later than now'],
    ['start_date', { start_date: 'someday' }, 'Enter a valid date'],
    ['retry_interval_minutes', { retry_interval_minutes: '9' }, 'greater than or equal to 10'],
    ['retry_interval_minutes', { retry_interval_minutes: 'often' }, 'A valid integer is required.'],
    ['max_attempts', { max_attempts: '4' }, 'less than or equal to 3'],
    ['max_attempts', { max_attempts: '-1' }, 'greater than or equal to 0'],
    ['send_instructions', { send_instructions: 'maybe' }, 'Must be a valid boolean.'],
    ['subscription_settings', { subscription_settings: '{oops' }, 'valid JSON'],
    [
      'subscription_settings',
      {
        subscription_settings:
          '{"start_date": "01/01/2099 00:00:00", "end_date": "01/02/2099 00:00:00", "frequency": "fortnightly"}',
      },
      'fortnightly',
    ],
    [
      'subscription_settings',
      {
        subscription_settings:
          '{"start_date": "01/02/2099 00:00:00", "end_date": "01/01/2099 00:00:00", "frequency": "daily"}',
      },
      'end_date must be later',
    ],
    ['subscription_settings', { subscription_settings: '{"frequency": "daily"}' }, 'start_date'],
  ])('rejects %s: %p', async (field, extra, message) => {
    const before = await countRequests(merchant.organization.id);
    const form = Object.fromEntries(
      Object.entries({ ...valid(), ...extra }).filter(([, value]) => value !== undefined),
    ) as Record<string, string>;
    const response = await merchant.request('/api/collectionrequests', { form });
    expect(response.status).toBe(400);
    expect(Object.keys(response.body)).toContain(field);
    expect(response.body[field].join(' ')).toContain(message);
    expect(await countRequests(merchant.organization.id)).toBe(before);
  });

  test('the largest amount is accepted; a hash nested too deep is refused without a stack overflow', async () => {
    expect((await merchant.request('/api/collectionrequests', { form: valid({ amount: '1000000000' }) })).status).toBe(
      201,
    );
    let deep: unknown = 'x';
    for (let level = 0; level < 20; level += 1) deep = { level: deep };
    const refused = await merchant.request('/api/collectionrequests', { body: { ...valid(), metadata: { deep } } });
    expect(refused.status).toBe(400);
    expect(refused.body.metadata[0]).toContain('nest');
  });

  test.each([
    ['a Romanian mobile number', '+40 712 345 678', 'BXC'],
    ['a French mobile number', '+33 6 12 34 56 78', 'BXC'],
    ['a US number', '+1 415 555 2671', 'BXC'],
    ['a Ugandan number on a prefix the plan does not list yet', '+256 73 123 4567', 'BXC'],
  ])('BXC takes any possible number: %s', async (_name, phonenumber) => {
    const response = await merchant.request('/api/collectionrequests', { form: valid({ phonenumber }) });
    expect(response.status).toBe(201);
    expect(response.body.phonenumber).toBe(phonenumber.replaceAll(' ', ''));
  });

  test('a real currency needs a known network of its own country, and says so', async () => {
    const fresh = await createMerchant(ctx.app);
    await fundWallet(testSql(), fresh.organization.id, 'UGX', '10');
    const kenyan = await fresh.request('/api/collectionrequests', {
      form: valid({ currency: 'UGX', phonenumber: '+254712345678' }),
    });
    expect(kenyan.status).toBe(400);
    expect(kenyan.body.phonenumber[0]).toContain(
      'UGX collections need a number on a Ugandan mobile network (MTN Uganda, Airtel Uganda)',
    );
    const ugandan = await fresh.request('/api/collectionrequests', {
      form: valid({ currency: 'UGX', phonenumber: '+256772123456' }),
    });
    expect(ugandan.status).toBe(201);
  });

  test('expiry before the start is rejected', async () => {
    const response = await merchant.request('/api/collectionrequests', {
      form: valid({ start_date: '2 days', expiry_date: '01/01/2000' }),
    });
    expect(response.status).toBe(400);
    expect(response.body.expiry_date[0]).toContain('later than the start date');
  });

  test('the oldest active wallet is used unless an account is named', async () => {
    const funded = await createMerchant(ctx.app);
    const [oldest] = await testSql()<
      { id: number }[]
    >`select id from accounts where organization_id = ${funded.organization.id}`;
    const [second] = await testSql()<{ id: number }[]>`insert into accounts (organization_id, currency, label, balance)
      values (${funded.organization.id}, 'BXC', 'second', 5) returning id`;
    expect((await funded.request('/api/collectionrequests', { form: valid() })).body.account).toBe(oldest!.id);
    expect(
      (await funded.request('/api/collectionrequests', { form: valid({ account: String(second!.id) }) })).body.account,
    ).toBe(second!.id);
    const foreign = await other.request('/api/collectionrequests', { form: valid({ account: String(second!.id) }) });
    expect(foreign.status).toBe(400);
  });

  test('a currency becomes usable once its wallet is funded', async () => {
    const fresh = await createMerchant(ctx.app);
    expect(
      (
        await fresh.request('/api/collectionrequests', {
          form: valid({ currency: 'KES', phonenumber: '+254712345678' }),
        })
      ).status,
    ).toBe(400);
    await fundWallet(testSql(), fresh.organization.id, 'KES', '10');
    expect(
      (
        await fresh.request('/api/collectionrequests', {
          form: valid({ currency: 'KES', phonenumber: '+254712345678' }),
        })
      ).status,
    ).toBe(201);
  });
});

describe('GET /api/collectionrequests', () => {
  let lister: TestMerchant;
  let collectionId = 0;
  const ids: number[] = [];

  beforeAll(async () => {
    lister = await createMerchant(ctx.app);
    await fundWallet(testSql(), lister.organization.id, 'UGX', '100');
    const specs = [
      { amount: '100', currency: 'BXC', first_name: 'Ann', last_name: 'One', reason: 'rent' },
      { amount: '200', currency: 'BXC', first_name: 'Ben', last_name: 'Two', reason: 'rent' },
      { amount: '100', currency: 'UGX', first_name: 'Ann', last_name: 'Three', reason: 'fees' },
    ];
    for (const spec of specs) {
      const response = await lister.request('/api/collectionrequests', {
        form: { phonenumber: nextNumber(), ...spec },
      });
      ids.push(response.body.id);
    }
    const [collection] = await testSql()<
      { id: number }[]
    >`insert into collections (network, remote_transaction_id, amount, currency, phone_number, payment_date)
      values ('MTN Uganda', ${`RT-${ids[1]}`}, 200, 'BXC', '+256772000000', now()) returning id`;
    collectionId = collection!.id;
    await testSql()`update collection_requests set status = 'expired', collection_id = ${collectionId}, remote_transaction_id = 'RT-9' where id = ${ids[1]!}`;
  });

  const idsOf = (body: { results: { id: number }[] }) => body.results.map((item) => item.id).sort((a, b) => a - b);

  test.each([
    ['amount=100', [0, 2]],
    ['amount=100.0000', [0, 2]],
    ['currency=UGX', [2]],
    ['currency=ugx', [2]],
    ['status=expired', [1]],
    ['collection=COLLECTION', [1]],
    ['remote_transaction_id=RT-9', [1]],
    ['reason=rent', [0, 1]],
    ['contact_first_name=Ann', [0, 2]],
    ['contact_last_name=Two', [1]],
    ['contact_first_name=Ann&currency=BXC', [0]],
  ])('filter %s', async (query, expected) => {
    const response = await lister.request(
      `/api/collectionrequests?${query.replace('COLLECTION', String(collectionId))}`,
    );
    expect(response.status).toBe(200);
    expect(idsOf(response.body)).toEqual(expected.map((index) => ids[index]!));
  });

  test('phonenumber filter adds the +; date filters; bad filters are 400', async () => {
    const one = await lister.request(`/api/collectionrequests/${ids[0]}`);
    const phone = one.body.phonenumber.slice(1);
    expect(idsOf((await lister.request(`/api/collectionrequests?phonenumber=${phone}`)).body)).toEqual([ids[0]!]);
    const hourAgo = encodeURIComponent(new Date(Date.now() - 3600_000).toISOString().slice(0, 16).replace('T', ' '));
    expect(
      (await lister.request(`/api/collectionrequests?created_after=${hourAgo}&modified_after=${hourAgo}`)).body.count,
    ).toBe(3);
    expect((await lister.request(`/api/collectionrequests?created_before=${hourAgo}`)).body.count).toBe(0);
    expect((await lister.request('/api/collectionrequests?status=done')).status).toBe(400);
    expect((await lister.request('/api/collectionrequests?amount=abc')).status).toBe(400);
  });

  test('GET by id: own 200, another organization 403, missing 404', async () => {
    expect((await lister.request(`/api/collectionrequests/${ids[0]}/`)).status).toBe(200);
    expect((await other.request(`/api/collectionrequests/${ids[0]}`)).status).toBe(403);
    expect((await lister.request('/api/collectionrequests/99999999')).status).toBe(404);
  });
});

describe('status changes of a prompt', () => {
  test('a prompt retried (its worker lost) repeats none of its status changes; the next prompt records them again', async () => {
    const created = await merchant.request('/api/collectionrequests', { form: valid({ send_instructions: 'true' }) });
    expect(created.status).toBe(201);
    const requestId = created.body.id as number;
    const step = (status: 'instructions_sent' | 'processing_started', attempt: number) =>
      changeRequestStatus(testSql(), {
        requestId: asId('CollectionRequest', requestId),
        status,
        attempts: attempt,
        promptAttempt: attempt,
      });
    const recorded = async (steps: [Parameters<typeof step>[0], number][]) => {
      const results = [];
      for (const [status, attempt] of steps) results.push((await step(status, attempt)) !== null);
      return results;
    };
    expect(
      await recorded([
        ['instructions_sent', 1],
        ['processing_started', 1],
      ]),
    ).toEqual([true, true]);
    // The same prompt again, as a retried activity runs it: nothing is recorded twice.
    expect(
      await recorded([
        ['instructions_sent', 1],
        ['processing_started', 1],
      ]),
    ).toEqual([false, false]);
    // The next prompt is a new story.
    expect(
      await recorded([
        ['instructions_sent', 2],
        ['processing_started', 2],
        ['instructions_sent', 2],
      ]),
    ).toEqual([true, true, false]);
    const statuses = await testSql()<{ status: string }[]>`
      select data->>'status' as status from events where type = 'collectionrequest.status.changed' and (data->>'id')::bigint = ${requestId} order by id`;
    expect(statuses.map((row) => row.status)).toEqual([
      'instructions_sent',
      'processing_started',
      'instructions_sent',
      'processing_started',
    ]);
    expect((await merchant.request(`/api/collectionrequests/${requestId}`)).body.status).toBe('processing_started');
  });
});

describe('subscriptions: bounds and cancel', () => {
  const year = new Date().getUTCFullYear() + 1;
  const settings = (extra: Record<string, string>) => ({
    start_date: `01/01/${year} 09:00:00`,
    end_date: `01/06/${year} 09:00:00`,
    frequency: 'monthly',
    ...extra,
  });
  const subscribe = (owner: TestMerchant, extra: Record<string, string> = {}) =>
    owner.request('/api/collectionrequests', { body: { ...valid(), subscription_settings: settings(extra) } });

  test.each([
    [
      { frequency: 'minutely', end_date: `01/01/2099 00:00:00` },
      'minutely would prompt the subscriber more than once a day',
    ],
    [
      { frequency: 'hourly' },
      'hourly would prompt the subscriber more than once a day: the shortest frequency is daily',
    ],
    [{ frequency: 'daily', end_date: `01/01/${year + 3} 09:00:00` }, 'at most 1,000 occurrences'],
    [{ frequency: 'weekly', end_date: `01/01/2099 09:00:00` }, 'at most 1,000 occurrences'],
  ])('a subscription past the bounds is a 400 on subscription_settings: %p', async (extra, message) => {
    const before = await countRequests(merchant.organization.id);
    const response = await subscribe(merchant, extra);
    expect(response.status).toBe(400);
    expect(Object.keys(response.body)).toEqual(['subscription_settings']);
    expect(response.body.subscription_settings.join(' ')).toContain(message);
    expect(await countRequests(merchant.organization.id)).toBe(before);
  });

  test('within the bounds: daily for 1,000 occurrences, weekdays only, monthly to 2099', async () => {
    // 01/01 09:00 plus 999 days is the 1,000th occurrence, the first request included.
    const last = new Date(Date.UTC(year, 0, 1, 9) + 999 * 86_400_000).toISOString();
    const lastDay = `${last.slice(8, 10)}/${last.slice(5, 7)}/${last.slice(0, 4)} 09:00:00`;
    expect((await subscribe(merchant, { frequency: 'daily', end_date: lastDay })).status).toBe(201);
    expect((await subscribe(merchant, { frequency: 'monthly', end_date: '01/01/2099 09:00:00' })).status).toBe(201);
    const weekdays = await merchant.request('/api/collectionrequests', {
      body: {
        ...valid(),
        subscription_settings: { ...settings({ frequency: 'weekly' }), weekdays: ['mon', 'wed', 'fri'] },
      },
    });
    expect(weekdays.status).toBe(201);
  });

  test('a merchant cancels a subscription: cancelled_at is visible, the write is audited, a repeat changes nothing', async () => {
    const created = await subscribe(merchant);
    expect(created.status).toBe(201);
    const id = created.body.id as number;
    const cancelled = await merchant.request(`/api/collectionrequests/${id}/subscription/cancel`, { body: {} });
    expect(cancelled.status).toBe(200);
    const cancelledSettings = JSON.parse(cancelled.body.subscription_settings);
    expect(cancelledSettings).toMatchObject(settings({}));
    expect(cancelledSettings.cancelled_at).toMatch(/^\d{2}\/\d{2}\/\d{4} \d{2}:\d{2}:\d{2}$/);
    const read = await merchant.request(`/api/collectionrequests/${id}`);
    expect(JSON.parse(read.body.subscription_settings).cancelled_at).toBe(cancelledSettings.cancelled_at);
    const again = await merchant.request(`/api/collectionrequests/${id}/subscription/cancel`, { body: {} });
    expect(again.status).toBe(200);
    expect(JSON.parse(again.body.subscription_settings).cancelled_at).toBe(cancelledSettings.cancelled_at);
    const audited = await testSql()<{ action: string }[]>`
      select action from audit_events where organization_id = ${merchant.organization.id}
        and object_type = 'collection_request' and object_id = ${id} order by id`;
    expect(audited.map((row) => row.action)).toEqual([
      'POST /api/collectionrequests',
      'POST /api/collectionrequests/:id/subscription/cancel',
    ]);
  });

  test("another organization's subscription is not cancelled (403, as every object of another organization); a request without one is a 400", async () => {
    const created = await subscribe(merchant);
    const id = created.body.id as number;
    const theirs = await other.request(`/api/collectionrequests/${id}/subscription/cancel`, { body: {} });
    expect(theirs.status).toBe(403);
    expect(
      JSON.parse((await merchant.request(`/api/collectionrequests/${id}`)).body.subscription_settings),
    ).not.toHaveProperty('cancelled_at');
    expect((await other.request('/api/collectionrequests/999999999/subscription/cancel', { body: {} })).status).toBe(
      404,
    );
    const plain = await merchant.request('/api/collectionrequests', { form: valid() });
    const refused = await merchant.request(`/api/collectionrequests/${plain.body.id}/subscription/cancel`, {
      body: {},
    });
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toBe(`Collection request ${plain.body.id} carries no subscription.`);
  });
});
