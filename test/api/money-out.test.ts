/**
 * Money out and money visible through the API (the app against real PostgreSQL; the workflows the
 * payments start wait on a task queue with no worker here, test/workflows/payments.test.ts runs
 * them): wallets, transactions, currencies, networks, payments with their reservation, cancellation
 * and reversals, as the provider's client libraries call them.
 */
import { beforeAll, describe, expect, test } from 'bun:test';
import { acceptVerified, storeIncomingPayment } from '../../src/services/collections/collection-receiving';
import { CURRENCIES } from '../../src/domain/money';
import type { OrganizationId } from '../../src/domain/ids';
import { fundWallet } from '../../src/services/merchants/organizations';
import { walletsOutOfBalance } from '../../src/services/wallets/wallets';
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

const nextNumber = numberSequence('+256772');
let transactions = 0;

const balanceOf = async (organizationId: number, currency = 'BXC') =>
  (
    await testSql()<{ balance: string }[]>`
    select balance::text from accounts where organization_id = ${organizationId} and currency = ${currency} order by id limit 1`
  )[0]!.balance;

async function expectBalanced(organizationId: OrganizationId): Promise<void> {
  expect(await walletsOutOfBalance(testSql(), organizationId)).toEqual([]);
}

/** A collection credited to the merchant, as the incoming-collection workflow leaves it (no workflow here). */
async function creditedCollection(owner: TestMerchant, amount: string): Promise<number> {
  const collection = await storeIncomingPayment(testSql(), {
    network: 'MTN Uganda',
    remoteTransactionId: `REV-${Date.now()}-${transactions++}`,
    phoneNumber: nextNumber(),
    amount,
    currency: 'BXC',
    reference: 'x',
    paymentDate: new Date().toISOString(),
  });
  await acceptVerified(testSql(), collection.id, owner.organization.id);
  return collection.id;
}

describe('accounts and transactions', () => {
  test("a merchant lists and reads its wallets; another organization's is 403", async () => {
    // Its own merchant: other tests move the shared one's money.
    const owner = await createMerchant(ctx.app);
    const list = await owner.request('/api/accounts');
    expect(list.status).toBe(200);
    expect(list.body.count).toBe(1);
    const [wallet] = list.body.results;
    expect(wallet).toMatchObject({
      organization: owner.organization.id,
      currency: 'BXC',
      status: 'active',
      balance: '1000.0000',
    });
    expect((await owner.request(`/api/accounts/${wallet.id}`)).body).toEqual(wallet);
    expect((await other.request(`/api/accounts/${wallet.id}`)).status).toBe(403);
    expect((await owner.request('/api/accounts/99999999')).status).toBe(404);
    expect((await owner.request('/api/accounts?currency=ugx')).body.count).toBe(0);
    expect((await owner.request('/api/accounts?status=frozen')).status).toBe(400);
    const v1 = await owner.request('/api/accounts', { headers: { 'Api-Version': 'v1' } });
    expect(v1.body).toEqual([{ ...wallet, organization: owner.organization.name }]);
  });

  test('every balance movement is a transaction; filters by wallet, type and dates', async () => {
    const fresh = await createMerchant(ctx.app);
    await fundWallet(testSql(), fresh.organization.id, 'UGX', '500');
    const all = await fresh.request('/api/transactions');
    expect(all.body.count).toBe(2);
    expect(
      all.body.results.map((transaction: { type: string; amount: string; currency: string }) => [
        transaction.type,
        transaction.amount,
        transaction.currency,
      ]),
    ).toEqual([
      ['funding', '500.0000', 'UGX'],
      ['funding', '1000.0000', 'BXC'],
    ]);
    const ugx = (await fresh.request('/api/accounts?currency=UGX')).body.results[0];
    expect((await fresh.request(`/api/transactions?account=${ugx.id}`)).body.count).toBe(1);
    expect((await fresh.request('/api/transactions?type=mobile_payment')).body.count).toBe(0);
    expect((await fresh.request('/api/transactions?created_after=2099-01-01')).body.count).toBe(0);
    const one = all.body.results[0];
    expect((await fresh.request(`/api/transactions/${one.id}`)).body).toEqual(one);
    expect((await merchant.request(`/api/transactions/${one.id}`)).status).toBe(403);
    await expectBalanced(fresh.organization.id);
  });

  test('currencies and networks', async () => {
    const currencies = await merchant.request('/api/currencies');
    expect(currencies.body.results).toEqual([
      { id: 1, code: 'BXC', name: 'Sandbox currency', minor_units: 4 },
      { id: 2, code: 'UGX', name: 'Ugandan shilling', minor_units: 0 },
      { id: 3, code: 'KES', name: 'Kenyan shilling', minor_units: 2 },
      { id: 4, code: 'TZS', name: 'Tanzanian shilling', minor_units: 0 },
      { id: 5, code: 'RWF', name: 'Rwandan franc', minor_units: 0 },
      { id: 6, code: 'GHS', name: 'Ghanaian cedi', minor_units: 2 },
      { id: 7, code: 'CDF', name: 'Congolese franc', minor_units: 2 },
      { id: 8, code: 'USD', name: 'US dollar', minor_units: 2 },
    ]);
    // The table the validation checks amounts by is the one the API lists.
    expect(currencies.body.results).toEqual(
      CURRENCIES.map(({ id, code, name, decimals }) => ({ id, code, name, minor_units: decimals })),
    );
    const networks = await merchant.request('/api/networks?limit=100');
    expect(networks.body.results).toContainEqual({
      id: 2,
      name: 'MTN Uganda',
      country: 'UG',
      currency: 'UGX',
      currencies: ['UGX'],
      verification: true,
      name_lookup: true,
      collections: true,
      payments: true,
      // Simulated by the sandbox here (sandbox mode, no connector on): its availability is the sandbox's.
      availability: { collect: 'operational', payout: 'operational' },
    });
    expect(networks.body.results).toContainEqual(expect.objectContaining({ id: 1, name: 'Sandbox', currency: 'BXC' }));
    expect(networks.body.results).toContainEqual(
      expect.objectContaining({ id: 4, name: 'Safaricom', currency: 'KES' }),
    );
    expect(networks.body.results).toContainEqual(
      expect.objectContaining({ name: 'MTN Ghana', currency: 'GHS', currencies: ['GHS'], payments: true }),
    );
    expect(networks.body.results).toContainEqual(
      expect.objectContaining({ name: 'Vodacom DRC', currency: 'CDF', currencies: ['CDF', 'USD'], payments: true }),
    );
  });

  test('every network has a stable integer id (the Python client reads it on every item) and its own address', async () => {
    const { results } = (await merchant.request('/api/networks?limit=100')).body as {
      results: { id: number; name: string }[];
    };
    const ids = results.map((network) => network.id);
    expect(ids.every((id) => Number.isInteger(id) && id > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const network of results)
      expect((await merchant.request(`/api/networks/${network.id}`)).body).toEqual(network);
    expect((await merchant.request('/api/networks/999')).status).toBe(404);
    expect((await merchant.request('/api/networks/mtn')).status).toBe(404);
    expect((await requester(ctx.app, null)('/api/networks/2')).status).toBe(401);
    // Outside sandbox mode the sandbox network is not served, by list or by id.
    const live = await testApp(undefined, {
      SANDBOX: 'false',
      PUBLIC_BASE_URL: 'https://collections.example',
      METRICS_TOKEN: LIVE_METRICS_TOKEN,
    });
    const liveMerchant = requester(live.app, merchant.apiKey);
    expect((await liveMerchant('/api/networks/1')).status).toBe(404);
    expect((await liveMerchant('/api/networks/2')).body.name).toBe('MTN Uganda');
  });
});

describe('payments', () => {
  test('created as the client libraries send it (form, metadata as a hash): amount debited at once, state new', async () => {
    const payer = await createMerchant(ctx.app);
    const phone = nextNumber();
    const response = await payer.request('/api/payments', {
      form: {
        phonenumber: phone,
        amount: '100.2',
        currency: 'BXC',
        description: 'Refund A-17',
        payment_type: 'money',
        'metadata[invoice]': 'A-17',
        'metadata.customer': '42',
        first_name: 'Ann',
        last_name: 'Payee',
      },
    });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      organization: payer.organization.id,
      amount: '100.2000',
      currency: 'BXC',
      payment_type: 'money',
      description: 'Refund A-17',
      metadata: { invoice: 'A-17', customer: '42' },
      phone_nos: [phone],
      state: 'new',
      last_error: null,
      charged_fee: '0.0000',
      send_sms_message: false,
      start_date: null,
      callback_url: null,
      remote_transaction_id: null,
      cancelled_time: null,
    });
    expect(response.body.transactions).toEqual([
      { id: expect.any(Number), type: 'mobile_payment', amount: '-100.2000', created: expect.any(String) },
    ]);
    expect(await balanceOf(payer.organization.id)).toBe('899.8000');
    expect((await payer.request(`/api/payments/${response.body.id}`)).body).toEqual(response.body);
    // The recipient became a contact, and the payment's first state is an event.
    expect(
      (await payer.request(`/api/contacts?phone_number=${encodeURIComponent(phone)}`)).body.results[0],
    ).toMatchObject({ first_name: 'Ann', last_name: 'Payee' });
    const events = await payer.request('/api/events?type=payment.status.changed');
    expect(events.body.results[0].data).toMatchObject({ id: response.body.id, state: 'new' });
    await expectBalanced(payer.organization.id);
  });

  test.each([
    ['phonenumber', { phonenumber: undefined }, 'This field is required.'],
    ['description', { description: undefined }, 'This field is required.'],
    ['description', { description: ' ' }, 'This field may not be blank.'],
    ['amount', { amount: '0' }, 'greater than 0'],
    ['amount', { amount: '9999999999999999.9999' }, 'at most 1,000,000,000'],
    ['currency', { currency: 'EUR' }, 'Select a valid choice.'],
    ['currency', { currency: 'KES', phonenumber: '+254712345678' }, 'no active KES wallet'],
    ['account', { account: '99999999' }, 'No active BXC wallet'],
    ['payment_type', { payment_type: 'gold' }, 'Select a valid choice.'],
    ['callback_url', { callback_url: 'http://merchant.example/cb' }, 'https://'],
    ['callback_url', { callback_url: 'https:///x' }, 'Enter a valid URL.'],
    ['start_date', { start_date: '999999 weeks' }, 'before 01/01/2100'],
    ['phonenumber', { phonenumber: '+254712345678', currency: 'UGX' }, 'UGX payments need'],
  ])('rejects %s: %p', async (field, extra, message) => {
    const before = await balanceOf(merchant.organization.id);
    const form = Object.fromEntries(
      Object.entries({
        phonenumber: nextNumber(),
        amount: '10',
        currency: 'BXC',
        description: 'Payout',
        ...extra,
      }).filter(([, value]) => value !== undefined),
    ) as Record<string, string>;
    if (form.currency === 'UGX') await fundWallet(testSql(), merchant.organization.id, 'UGX', '10');
    const response = await merchant.request('/api/payments', { form });
    expect(response.status).toBe(400);
    expect(response.body[field].join(' ')).toContain(message);
    expect(await balanceOf(merchant.organization.id)).toBe(before);
  });

  test('metadata as a Python dict literal, form-encoded as the Ruby client sends it, is the same hash', async () => {
    const response = await merchant.request('/api/payments', {
      form: {
        phonenumber: nextNumber(),
        amount: '3',
        currency: 'BXC',
        description: 'Lucy',
        metadata: "{'id': '1234', 'name': 'Lucy'}",
      },
    });
    expect(response.status).toBe(201);
    expect(response.body.metadata).toEqual({ id: '1234', name: 'Lucy' });
    const nested = await merchant.request('/api/payments', {
      form: {
        phonenumber: nextNumber(),
        amount: '3',
        currency: 'BXC',
        description: 'Lucy',
        metadata: "{'id': {'nested': 1}}",
      },
    });
    expect(nested.status).toBe(400);
    expect(nested.body.metadata[0]).toContain('Value must be valid JSON');
  });

  test('the missing description is named beside the other missing fields, as the recorded service names it', async () => {
    const response = await merchant.request('/api/payments', { form: { payment_type: 'money' } });
    expect(response.status).toBe(400);
    expect(Object.keys(response.body).sort()).toEqual(['amount', 'currency', 'description', 'phonenumber']);
    expect(response.body.description).toEqual(['This field is required.']);
  });

  test('more than the wallet holds is 400 insufficient funds, and writes nothing', async () => {
    const poor = await createMerchant(ctx.app);
    const response = await poor.request('/api/payments', {
      form: { phonenumber: nextNumber(), amount: '1000.0001', currency: 'BXC', description: 'Too much' },
    });
    expect(response.status).toBe(400);
    expect(response.body.detail).toContain('insufficient funds');
    expect((await poor.request('/api/payments')).body.count).toBe(0);
    expect(await balanceOf(poor.organization.id)).toBe('1000.0000');
  });

  test('50 payments at once whose sum exceeds the balance: exactly as many as it covers succeed, never below zero', async () => {
    const spender = await createMerchant(ctx.app);
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        spender.request('/api/payments', {
          form: { phonenumber: nextNumber(), amount: '30', currency: 'BXC', description: 'Race' },
        }),
      ),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(33);
    expect(statuses.filter((status) => status === 400)).toHaveLength(17);
    expect(await balanceOf(spender.organization.id)).toBe('10.0000');
    expect((await spender.request('/api/payments?limit=100')).body.count).toBe(33);
    await expectBalanced(spender.organization.id);
  });

  test('a scheduled payment can be cancelled (its amount given back), once; lists filter by state', async () => {
    const scheduler = await createMerchant(ctx.app);
    const created = await scheduler.request('/api/payments', {
      body: { phonenumber: nextNumber(), amount: '40', currency: 'BXC', description: 'Later', start_date: '2 hours' },
    });
    expect(created.status).toBe(201);
    expect(created.body.state).toBe('scheduled');
    expect(await balanceOf(scheduler.organization.id)).toBe('960.0000');
    expect((await scheduler.request('/api/payments?state=scheduled')).body.count).toBe(1);
    expect((await other.request(`/api/payments/${created.body.id}/cancel`, { method: 'POST', body: {} })).status).toBe(
      403,
    );
    const cancelled = await scheduler.request(`/api/payments/${created.body.id}/cancel`, {
      body: { reason: 'Wrong number' },
    });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({
      state: 'cancelled',
      cancelled_reason: 'Wrong number',
      cancelled_by: scheduler.user.id,
    });
    expect(
      cancelled.body.transactions.map((transaction: { type: string; amount: string }) => [
        transaction.type,
        transaction.amount,
      ]),
    ).toEqual([
      ['mobile_payment', '-40.0000'],
      ['payment_release', '40.0000'],
    ]);
    expect(await balanceOf(scheduler.organization.id)).toBe('1000.0000');
    const again = await scheduler.request(`/api/payments/${created.body.id}/cancel`, { body: {} });
    expect(again.status).toBe(400);
    expect(again.body.detail).toContain('only new and scheduled payments can');
    expect(await balanceOf(scheduler.organization.id)).toBe('1000.0000');
    expect((await scheduler.request('/api/payments?state=cancelled')).body.count).toBe(1);
    await expectBalanced(scheduler.organization.id);
  });

  test('a repeated Duplicate-Check-Key is 409 and debits nothing more', async () => {
    const careful = await createMerchant(ctx.app);
    const headers = { 'Duplicate-Check-Key': `payment-${Date.now()}` };
    const form = { phonenumber: nextNumber(), amount: '25', currency: 'BXC', description: 'Once' };
    expect((await careful.request('/api/payments', { form, headers })).status).toBe(201);
    expect((await careful.request('/api/payments', { form, headers })).status).toBe(409);
    expect(await balanceOf(careful.organization.id)).toBe('975.0000');
  });

  test("another organization's payment is 403; v1 names the organization and lists bare arrays", async () => {
    const created = await merchant.request('/api/payments', {
      form: { phonenumber: nextNumber(), amount: '5', currency: 'BXC', description: 'Small' },
    });
    expect((await other.request(`/api/payments/${created.body.id}`)).status).toBe(403);
    const v1 = await merchant.request(`/api/v1/payments/${created.body.id}`);
    expect(v1.body.organization).toBe(merchant.organization.name);
    expect(Array.isArray((await merchant.request('/api/v1/payments')).body)).toBe(true);
  });
});

describe('reversals', () => {
  test('a successful collection goes back once: debited at once, a second reversal is 400', async () => {
    const seller = await createMerchant(ctx.app);
    const collectionId = await creditedCollection(seller, '300');
    expect(await balanceOf(seller.organization.id)).toBe('1300.0000');
    const reversed = await seller.request('/api/reversals', {
      form: { collection: String(collectionId), reason: 'Order cancelled' },
    });
    expect(reversed.status).toBe(201);
    expect(reversed.body).toMatchObject({
      collection: collectionId,
      amount: '300.0000',
      currency: 'BXC',
      state: 'processing',
      reason: 'Order cancelled',
    });
    expect(await balanceOf(seller.organization.id)).toBe('1000.0000');
    const again = await seller.request('/api/reversals', { form: { collection: String(collectionId) } });
    expect(again.status).toBe(400);
    expect(again.body.collection[0]).toContain('reversed already');
    expect((await seller.request(`/api/reversals/${reversed.body.id}`)).body).toEqual(reversed.body);
    expect((await other.request(`/api/reversals/${reversed.body.id}`)).status).toBe(403);
    expect((await other.request('/api/reversals', { form: { collection: String(collectionId) } })).status).toBe(400);
    await expectBalanced(seller.organization.id);
  });

  test('two simultaneous reversals of one collection: one succeeds', async () => {
    const seller = await createMerchant(ctx.app);
    const collectionId = await creditedCollection(seller, '120');
    const responses = await Promise.all(
      [1, 2, 3].map(() => seller.request('/api/reversals', { form: { collection: String(collectionId) } })),
    );
    expect(responses.map((response) => response.status).sort()).toEqual([201, 400, 400]);
    expect(await balanceOf(seller.organization.id)).toBe('1000.0000');
    await expectBalanced(seller.organization.id);
  });

  test('refused when the wallet no longer holds the amount', async () => {
    const seller = await createMerchant(ctx.app);
    const collectionId = await creditedCollection(seller, '200');
    expect(
      (
        await seller.request('/api/payments', {
          form: { phonenumber: nextNumber(), amount: '1100', currency: 'BXC', description: 'Drain' },
        })
      ).status,
    ).toBe(201);
    const refused = await seller.request('/api/reversals', { form: { collection: String(collectionId) } });
    expect(refused.status).toBe(400);
    expect(refused.body.collection[0]).toContain('no longer holds');
    expect((await seller.request('/api/reversals')).body.count).toBe(0);
    await expectBalanced(seller.organization.id);
  });
});
