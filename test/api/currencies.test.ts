/**
 * The currencies of every market in the API's validation (the app against real PostgreSQL, sandbox mode, no
 * connector): each currency's minor units and the networks that carry it, for collection requests,
 * payments and the networks' reports of incoming payments, refused as field errors; wallets,
 * statements and settlement reports in a new currency.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { issueNetworkSecret } from '../../src/services/networks/network-credentials';
import { fundWallet } from '../../src/services/merchants/organizations';
import { incomingCollectionWorkflowId } from '../../src/contracts/incoming-collection';
import { createMerchant, requester, testApp, testSql, uniqueNumber, type TestApp, type TestMerchant } from '../helpers';

let ctx: TestApp;
let merchant: TestMerchant;

beforeAll(async () => {
  ctx = await testApp();
  merchant = await createMerchant(ctx.app);
  for (const currency of ['TZS', 'RWF', 'GHS', 'CDF', 'USD'] as const)
    await fundWallet(testSql(), merchant.organization.id, currency, '100000');
});

const started: string[] = [];
afterAll(async () => {
  await Promise.all(
    started.map((id) =>
      ctx.client.workflow
        .getHandle(id)
        .terminate('test over')
        .catch(() => {}),
    ),
  );
});

const request = (fields: Record<string, string>) => merchant.request('/api/collectionrequests', { form: fields });
const payment = (fields: Record<string, string>) =>
  merchant.request('/api/payments', { form: { description: 'Market payout', ...fields } });

describe('collection requests in every currency', () => {
  test('a TZS request with decimals is refused with a field error on the amount', async () => {
    const response = await request({ phonenumber: '+255741234567', amount: '1500.50', currency: 'TZS' });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ amount: ['TZS has no minor unit: enter TZS without decimals.'] });
    const whole = await request({ phonenumber: '+255741234568', amount: '1500', currency: 'TZS' });
    expect(whole.status).toBe(201);
    expect(whole.body).toMatchObject({ currency: 'TZS', amount: '1500.0000' });
  });

  test('GHS takes two decimals, not three', async () => {
    const accepted = await request({ phonenumber: '+233241234567', amount: '10.25', currency: 'GHS' });
    expect(accepted.status).toBe(201);
    expect(accepted.body).toMatchObject({ currency: 'GHS', amount: '10.2500' });
    const refused = await request({ phonenumber: '+233241234568', amount: '10.255', currency: 'ghs' });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ amount: ['GHS takes at most 2 decimals.'] });
  });

  test('a DRC number takes USD and CDF', async () => {
    const usd = await request({ phonenumber: '+243811234567', amount: '12.50', currency: 'USD' });
    expect(usd.status).toBe(201);
    const cdf = await request({ phonenumber: '+243971234567', amount: '25000', currency: 'CDF' });
    expect(cdf.status).toBe(201);
  });

  test("a currency the number's network cannot carry is refused on the number", async () => {
    const response = await request({ phonenumber: '+233241234569', amount: '10', currency: 'USD' });
    expect(response.status).toBe(400);
    expect(response.body.phonenumber[0]).toContain('USD collections need a number on a Congolese mobile network');
    const rwandan = await request({ phonenumber: '+256772123456', amount: '100', currency: 'RWF' });
    expect(rwandan.status).toBe(400);
    expect(rwandan.body.phonenumber[0]).toContain(
      'RWF collections need a number on a Rwandan mobile network (MTN Rwanda, Airtel Rwanda)',
    );
  });

  test('an unknown currency is still a field error', async () => {
    const response = await request({ phonenumber: '+255741234567', amount: '10', currency: 'EUR' });
    expect(response.status).toBe(400);
    expect(Object.keys(response.body)).toEqual(['currency']);
  });
});

describe('payments and wallets in every currency', () => {
  test('an RWF payment with decimals is refused; a whole one is debited from the RWF wallet', async () => {
    const refused = await payment({ phonenumber: '+250781234567', amount: '100.5', currency: 'RWF' });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ amount: ['RWF has no minor unit: enter RWF without decimals.'] });
    const created = await payment({ phonenumber: '+250781234567', amount: '100', currency: 'RWF' });
    expect(created.status).toBe(201);
    const wallets = await merchant.request('/api/accounts?currency=RWF');
    expect(wallets.body.results).toEqual([expect.objectContaining({ currency: 'RWF', balance: '99900.0000' })]);
  });

  test('a USD payment to a DRC number, and a GHS one to a Ghanaian number; USD to a Kenyan number is refused', async () => {
    expect((await payment({ phonenumber: '+243841234567', amount: '5.25', currency: 'USD' })).status).toBe(201);
    expect((await payment({ phonenumber: '+233541234567', amount: '5.25', currency: 'GHS' })).status).toBe(201);
    const kenyan = await payment({ phonenumber: '+254712345678', amount: '5', currency: 'USD' });
    expect(kenyan.status).toBe(400);
    expect(kenyan.body.phonenumber[0]).toContain('USD payments need a number on a Congolese mobile network');
  });

  test('a wallet in a new currency is made as in any other, and its statement reads in it', async () => {
    const fresh = await createMerchant(ctx.app);
    const funding = await fundWallet(testSql(), fresh.organization.id, 'CDF', '5000.50');
    const wallets = await fresh.request('/api/accounts?currency=CDF');
    expect(wallets.body.results).toEqual([
      expect.objectContaining({ id: funding.accountId, currency: 'CDF', balance: '5000.5000', label: 'CDF wallet' }),
    ]);
    const statement = await fresh.request(`/api/accounts/${funding.accountId}/statement`);
    expect(statement.status).toBe(200);
    expect(statement.body).toMatchObject({ currency: 'CDF' });
  });

  test('settlement reports take every currency as a filter', async () => {
    const day = new Date().toISOString().slice(0, 10);
    for (const currency of ['TZS', 'RWF', 'GHS', 'CDF', 'USD']) {
      const report = await merchant.request(`/api/settlements?date=${day}&currency=${currency}`);
      expect(report.status).toBe(200);
      expect(report.body).toMatchObject({ currency });
    }
  });
});

describe("a network's report of an incoming payment in every currency", () => {
  const report = (secret: string, body: Record<string, unknown>) =>
    requester(ctx.app, null)('/network/payments', { body, headers: { Authorization: `Bearer ${secret}` } });

  async function workflowExists(workflowId: string): Promise<boolean> {
    try {
      await ctx.client.workflow.getHandle(workflowId).describe();
      return true;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return false;
      throw error;
    }
  }

  test('Tigo Tanzania reporting TZS with decimals is refused on the amount, and nothing is stored or started', async () => {
    const secret = await issueNetworkSecret(testSql(), 'Tigo Tanzania');
    const id = `TIGO-${randomBytes(4).toString('hex').toUpperCase()}`;
    const refused = await report(secret, {
      network: 'Tigo Tanzania',
      remote_transaction_id: id,
      phonenumber: uniqueNumber('+25565'),
      amount: '10.5',
      currency: 'TZS',
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ amount: ['TZS has no minor unit: enter TZS without decimals.'] });
    expect(await testSql()`select id from collections where remote_transaction_id = ${id}`).toHaveLength(0);
    expect(await workflowExists(incomingCollectionWorkflowId('Tigo Tanzania', id))).toBe(false);
    // The same payment in whole shillings is taken: a network with no connector is simulated here (sandbox mode, no connector on).
    const whole = await report(secret, {
      network: 'Tigo Tanzania',
      remote_transaction_id: id,
      phonenumber: uniqueNumber('+25565'),
      amount: '10.0000',
      currency: 'TZS',
    });
    expect(whole.status).toBe(202);
    started.push(whole.body.workflow_id);
  });

  test("GHS reported with three decimals, and the sandbox's own report of UGX with decimals, are refused on the amount", async () => {
    const telecel = await issueNetworkSecret(testSql(), 'Telecel Ghana');
    const ghs = await report(telecel, {
      network: 'Telecel Ghana',
      remote_transaction_id: `TEL-${randomBytes(4).toString('hex')}`,
      phonenumber: uniqueNumber('+23320'),
      amount: '10.255',
      currency: 'GHS',
    });
    expect(ghs.status).toBe(400);
    expect(ghs.body).toEqual({ amount: ['GHS takes at most 2 decimals.'] });
    const sandbox = await issueNetworkSecret(testSql(), 'Sandbox');
    const ugx = await report(sandbox, {
      network: 'Sandbox',
      remote_transaction_id: `SBX-${randomBytes(4).toString('hex')}`,
      phonenumber: uniqueNumber('+256701'),
      amount: '1500.5',
      currency: 'UGX',
    });
    expect(ugx.status).toBe(400);
    expect(ugx.body).toEqual({ amount: ['UGX has no minor unit: enter UGX without decimals.'] });
  });
});
