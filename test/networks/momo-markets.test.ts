/**
 * MTN MoMo in several markets at once, against the project's MoMo simulator serving three target
 * environments, a real worker, Temporal and PostgreSQL: MTN Uganda through the single-market
 * MTN_MOMO_* variables, MTN Ghana (GHS) and MTN Rwanda (RWF) through MTN_MOMO_MARKETS_FILE, each
 * with its own credentials; every number reaches its own country's market only.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMomoSimulator, type MomoSimulator, type MomoSimulatorMarket } from '../simulators/momo';
import { momoMarketsFile } from '../simulators/run';
import { numberSequence } from '../helpers';
import {
  balanceOf,
  creditsOf,
  expectBalanced,
  fundedMerchant,
  paidOut,
  promptedRequest,
  requestOutcome,
  startStack,
  type Stack,
} from './stack';

const credentials = (market: string) => ({
  collection: {
    subscriptionKey: `${market}-collection-key`,
    apiUser: crypto.randomUUID(),
    apiKey: `${market}-collection-secret`,
  },
  disbursement: {
    subscriptionKey: `${market}-disbursement-key`,
    apiUser: crypto.randomUUID(),
    apiKey: `${market}-disbursement-secret`,
  },
});
const UGANDA = credentials('uganda');
const GHANA: MomoSimulatorMarket = { targetEnvironment: 'mtnghana', currency: 'GHS', ...credentials('ghana') };
const RWANDA: MomoSimulatorMarket = { targetEnvironment: 'mtnrwanda', currency: 'RWF', ...credentials('rwanda') };
const KEYS: Record<string, string[]> = {
  mtnuganda: [UGANDA.collection.subscriptionKey, UGANDA.disbursement.subscriptionKey],
  mtnghana: [GHANA.collection.subscriptionKey, GHANA.disbursement.subscriptionKey],
  mtnrwanda: [RWANDA.collection.subscriptionKey, RWANDA.disbursement.subscriptionKey],
};

let momo: MomoSimulator;
let stack: Stack;
const ghanaian = numberSequence('+233244');
const rwandan = numberSequence('+250788');
const ugandan = numberSequence('+256778');
const msisdn = (e164: string) => e164.slice(1);

beforeAll(async () => {
  momo = await startMomoSimulator({
    ...UGANDA,
    targetEnvironment: 'mtnuganda',
    currency: 'UGX',
    markets: [GHANA, RWANDA],
    decisionDelayMs: 300,
    callbackDelayMs: 50,
  });
  const file = join(mkdtempSync(join(tmpdir(), 'momo-markets-')), 'markets.json');
  writeFileSync(file, JSON.stringify(momoMarketsFile(momo.url, [GHANA, RWANDA])));
  stack = await startStack('momo-markets', {
    MTN_MOMO_BASE_URL: momo.url,
    MTN_MOMO_TARGET_ENVIRONMENT: 'mtnuganda',
    MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: UGANDA.collection.subscriptionKey,
    MTN_MOMO_COLLECTION_API_USER: UGANDA.collection.apiUser,
    MTN_MOMO_COLLECTION_API_KEY: UGANDA.collection.apiKey,
    MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: UGANDA.disbursement.subscriptionKey,
    MTN_MOMO_DISBURSEMENT_API_USER: UGANDA.disbursement.apiUser,
    MTN_MOMO_DISBURSEMENT_API_KEY: UGANDA.disbursement.apiKey,
    MTN_MOMO_MARKETS_FILE: file,
  });
});

afterAll(async () => {
  await stack?.stop();
  await momo?.stop();
});

/** Every call the simulator saw carried the keys of the market it named, and no other market's. */
function expectOwnKeysOnly(): void {
  const calls = momo.calls().filter((call) => call.api !== 'token');
  expect(calls.length).toBeGreaterThan(0);
  for (const call of calls) expect(KEYS[call.targetEnvironment ?? '']).toContain(call.subscriptionKey!);
}

describe('MTN Ghana (GHS) through its own market', () => {
  test('a request to pay in cedis with two decimals is collected through mtnghana and credited in GHS', async () => {
    const merchant = await fundedMerchant(stack, 'GHS', '100');
    const phone = ghanaian();
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '10.50', currency: 'GHS' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    const sent = momo.requestsToPay().filter((request) => request.payer === msisdn(phone));
    expect(sent).toMatchObject([
      { targetEnvironment: 'mtnghana', amount: '10.5', currency: 'GHS', status: 'SUCCESSFUL', submissions: 1 },
    ]);
    expect(await creditsOf(merchant.organization.id)).toEqual([
      { collectionId: expect.any(Number), amount: '10.5000', remoteTransactionId: sent[0]!.financialTransactionId! },
    ]);
    expect(await balanceOf(merchant.organization.id, 'GHS')).toBe('110.5000');
    await expectBalanced(merchant.organization.id);
    expectOwnKeysOnly();
  });

  test('a payment goes out by transfer through mtnghana', async () => {
    const merchant = await fundedMerchant(stack, 'GHS', '50');
    const phone = ghanaian();
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '12.25', currency: 'GHS' })).toMatchObject({
      state: 'completed',
    });
    expect(momo.transfers().filter((transfer) => transfer.payee === msisdn(phone))).toMatchObject([
      { targetEnvironment: 'mtnghana', amount: '12.25', currency: 'GHS' },
    ]);
    expect(await balanceOf(merchant.organization.id, 'GHS')).toBe('37.7500');
    expectOwnKeysOnly();
  });
});

describe('MTN Rwanda (RWF) through its own market', () => {
  test('a request to pay and a payment in francs go through mtnrwanda only', async () => {
    const merchant = await fundedMerchant(stack, 'RWF', '10000');
    const phone = rwandan();
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '2000', currency: 'RWF' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '500', currency: 'RWF' })).toMatchObject({
      state: 'completed',
    });
    expect(await balanceOf(merchant.organization.id, 'RWF')).toBe('11500.0000');
    const rwandanCalls = [...momo.requestsToPay(), ...momo.transfers()].filter(
      (transaction) => transaction.payer.startsWith('250') || transaction.payee.startsWith('250'),
    );
    expect(rwandanCalls.length).toBeGreaterThanOrEqual(2);
    // A Rwandan number never reaches the Ghana market (nor any other but its own).
    for (const transaction of rwandanCalls)
      expect(transaction).toMatchObject({ targetEnvironment: 'mtnrwanda', currency: 'RWF' });
    expectOwnKeysOnly();
  });

  test('francs with decimals, and cedis to a Rwandan number, are refused by validation', async () => {
    const merchant = await fundedMerchant(stack, 'RWF', '1000');
    const decimals = await merchant.request('/api/collectionrequests', {
      form: { phonenumber: rwandan(), amount: '100.5', currency: 'RWF' },
    });
    expect(decimals.status).toBe(400);
    expect(decimals.body).toEqual({ amount: ['MTN MoMo takes whole amounts only: enter RWF without decimals.'] });
    const before = momo.requestsToPay().length;
    const cedis = await merchant.request('/api/collectionrequests', {
      form: { phonenumber: rwandan(), amount: '10', currency: 'GHS' },
    });
    expect(cedis.status).toBe(400);
    expect(cedis.body.phonenumber[0]).toContain('GHS collections need a number on a Ghanaian mobile network');
    expect(momo.requestsToPay()).toHaveLength(before);
  });
});

describe('the single-market variables beside the file', () => {
  test('MTN Uganda still collects and pays out through the MTN_MOMO_* credentials', async () => {
    const merchant = await fundedMerchant(stack, 'UGX', '10000');
    const phone = ugandan();
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '1500', currency: 'UGX' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '700', currency: 'UGX' })).toMatchObject({
      state: 'completed',
    });
    const ugandanTransactions = [...momo.requestsToPay(), ...momo.transfers()].filter((transaction) =>
      [transaction.payer, transaction.payee].includes(msisdn(phone)),
    );
    expect(ugandanTransactions).toMatchObject([
      { targetEnvironment: 'mtnuganda', currency: 'UGX' },
      { targetEnvironment: 'mtnuganda', currency: 'UGX' },
    ]);
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('10800.0000');
    expectOwnKeysOnly();
  });

  test("tokens are fetched per market and product, each with that market's own subscription key", () => {
    const tokens = momo.calls().filter((call) => call.api === 'token' && call.status === 200);
    const markets = new Set(
      tokens.map((call) => Object.entries(KEYS).find(([, keys]) => keys.includes(call.subscriptionKey!))?.[0]),
    );
    expect([...markets].sort()).toEqual(['mtnghana', 'mtnrwanda', 'mtnuganda']);
    expect(new Set(tokens.map((call) => call.subscriptionKey)).size).toBe(6);
  });
});
