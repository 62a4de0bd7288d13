/**
 * Vodacom Tanzania (TZS) and Vodacom DRC (USD) through the Vodacom M-Pesa connector, against the
 * project's simulator of the M-Pesa OpenAPI on loopback (its RSA key pair made at start, the public
 * key handed to the service), a real worker, Temporal and PostgreSQL: customer payments answered
 * at once, late (INS-9) or never (our side times out) and resolved by the transaction status query,
 * a retried call with its conversation id, B2C payouts, reversals, beneficiary names, sessions
 * (asked for at a process's start with a spare, never used before they are active, reused, renewed
 * ahead of their end, the spare taking over at once when M-Pesa revokes the one in use) and the
 * API's validation rules.
 */
import { asId } from '../../src/domain/ids';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { constants, publicEncrypt } from 'node:crypto';
import type { VodacomSettings } from '../../src/config';
import { networkByName } from '../../src/domain/networks';
import { createVodacomConnector } from '../../src/network/vodacom';
import { startVodacomSimulator, type VodacomSimulator } from '../simulators/vodacom';
import { eventually, numberSequence, testSql } from '../helpers';
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
  reversedOut,
} from './stack';

const CREDENTIALS = { apiKey: 'vodacom-test-api-key', serviceProviderCode: '000000', origin: 'collections.example' };
let vodacom: VodacomSimulator;
let stack: Stack;
const tanzanian = numberSequence('+255741');
const congolese = numberSequence('+243811');
/** The number as M-Pesa writes it: without `+`. */
const msisdn = (e164: string) => e164.slice(1);

beforeAll(async () => {
  vodacom = await startVodacomSimulator({
    ...CREDENTIALS,
    markets: { TZN: ['TZS'], DRC: ['USD'] },
    activationMs: 1000,
    pinWindowMs: 2000,
    decisionDelayMs: 200,
  });
  stack = await startStack('vodacom', {
    VODACOM_BASE_URL: vodacom.url,
    VODACOM_API_KEY: CREDENTIALS.apiKey,
    VODACOM_PUBLIC_KEY: vodacom.publicKey,
    VODACOM_SERVICE_PROVIDER_CODE: CREDENTIALS.serviceProviderCode,
    VODACOM_MARKETS: 'TZN,DRC',
    VODACOM_ORIGIN: CREDENTIALS.origin,
    VODACOM_SESSION_ACTIVATION_SECONDS: '1',
  });
});

afterAll(async () => {
  await stack?.stop();
  await vodacom?.stop();
});

const paymentsBy = (phone: string) => vodacom.transactions('c2b').filter((payment) => payment.msisdn === msisdn(phone));
const sessionRequests = (simulator: VodacomSimulator) => simulator.calls().filter((call) => call.api === 'getSession');

test("the worker and the API process ask for each market's session and its spare at their start: the first collection waits for none", async () => {
  // Before any call: two sessions (the one in use and its spare) per market (TZN, DRC) and process (the worker, the API for name look-ups).
  await eventually('the sessions asked for at start', async () => vodacom.sessions().issued >= 8);
  expect(vodacom.sessions().issued).toBe(8);
  expect(vodacom.calls().filter((call) => call.api !== 'getSession')).toEqual([]);
  // Their activation delay (VODACOM_SESSION_ACTIVATION_SECONDS=1) passes while nobody calls.
  await Bun.sleep(1100);
  const merchant = await fundedMerchant(stack, 'TZS');
  expect(
    await requestOutcome(
      stack,
      await promptedRequest(merchant, { phonenumber: tanzanian(), amount: '400', currency: 'TZS' }),
    ),
  ).toMatchObject({ status: 'successful' });
  expect(vodacom.sessions()).toEqual({ issued: 8, usedBeforeActive: 0 });
});

describe('customer payments (C2B single stage)', () => {
  test('TZS through Vodacom Tanzania: the answer after the PIN is the payment, credited once', async () => {
    const merchant = await fundedMerchant(stack, 'TZS');
    const phone = tanzanian();
    const requestId = await promptedRequest(merchant, {
      phonenumber: phone,
      amount: '1500',
      currency: 'TZS',
      reason: 'Order 42',
    });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    const [payment] = paymentsBy(phone);
    expect(payment).toMatchObject({
      market: 'TZN',
      currency: 'TZS',
      amount: '1500',
      status: 'Completed',
      submissions: 1,
      description: 'Order 42',
      origin: CREDENTIALS.origin,
    });
    expect(payment!.thirdPartyConversationId).toMatch(/^C[0-9a-f]{31}$/);
    expect(await creditsOf(merchant.organization.id)).toEqual([
      { collectionId: expect.any(Number), amount: '1500.0000', remoteTransactionId: payment!.transactionId },
    ]);
    expect(await balanceOf(merchant.organization.id, 'TZS')).toBe('1001500.0000');
    await expectBalanced(merchant.organization.id);
  });

  test('USD through Vodacom DRC: input_Country DRC, a 243 number, cents kept', async () => {
    const merchant = await fundedMerchant(stack, 'USD');
    const phone = congolese();
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '12.50', currency: 'USD' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    expect(paymentsBy(phone)).toMatchObject([
      { market: 'DRC', currency: 'USD', amount: '12.50', msisdn: msisdn(phone), status: 'Completed' },
    ]);
    expect(await balanceOf(merchant.organization.id, 'USD')).toBe('1000012.5000');
    await expectBalanced(merchant.organization.id);
  });

  test('the PIN window closes first (INS-9) and the subscriber pays later: the status query credits it once', async () => {
    const merchant = await fundedMerchant(stack, 'TZS');
    const phone = tanzanian();
    vodacom.subscriber(msisdn(phone), { outcome: 'pays', decideAfterMs: 3500 });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '700', currency: 'TZS' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    const [payment] = paymentsBy(phone);
    expect(payment).toMatchObject({ status: 'Completed', submissions: 1 });
    expect(vodacom.calls().some((call) => call.api === 'c2bPayment/singleStage' && call.code === 'INS-9')).toBe(true);
    expect(await creditsOf(merchant.organization.id)).toEqual([
      { collectionId: expect.any(Number), amount: '700.0000', remoteTransactionId: payment!.transactionId },
    ]);
    await expectBalanced(merchant.organization.id);
  });

  test('a call that times out on our side but completes at M-Pesa is credited exactly once, after the status query', async () => {
    const merchant = await fundedMerchant(stack, 'TZS');
    const phone = tanzanian();
    vodacom.subscriber(msisdn(phone), { outcome: 'pays', answer: 'lost', decideAfterMs: 500 });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '900', currency: 'TZS' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    const [payment] = paymentsBy(phone);
    expect(payment).toMatchObject({ status: 'Completed', submissions: 1 });
    expect(vodacom.calls().some((call) => call.api === 'queryTransactionStatus')).toBe(true);
    expect(await creditsOf(merchant.organization.id)).toEqual([
      { collectionId: expect.any(Number), amount: '900.0000', remoteTransactionId: payment!.transactionId },
    ]);
    await expectBalanced(merchant.organization.id);
  }, 60_000);

  // Vodacom takes no resend (its unit's `inFlight.resends`): a call the operator is found holding is taken, and its
  // status query decides.
  test('a retried call (the worker killed while the subscriber enters the PIN) is not sent again: found by its conversation id, one payment, one credit', async () => {
    const merchant = await fundedMerchant(stack, 'TZS');
    const phone = tanzanian();
    vodacom.subscriber(msisdn(phone), { outcome: 'pays', decideAfterMs: 1500 });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '1100', currency: 'TZS' });
    await eventually('the payment request to reach M-Pesa', async () => paymentsBy(phone)[0]);
    await stack.killWorker();
    await stack.startWorker();
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    const payments = paymentsBy(phone);
    expect(payments).toHaveLength(1);
    expect(payments[0]).toMatchObject({ status: 'Completed', submissions: 1 });
    expect(vodacom.calls().some((call) => call.api === 'queryTransactionStatus')).toBe(true);
    expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
    expect(await balanceOf(merchant.organization.id, 'TZS')).toBe('1001100.0000');
    await expectBalanced(merchant.organization.id);
  }, 90_000);

  test('a cancelled payment (INS-5, sent with HTTP 401) fails in words and keeps the session', async () => {
    const merchant = await fundedMerchant(stack, 'TZS');
    const phone = tanzanian();
    vodacom.subscriber(msisdn(phone), { outcome: 'cancels' });
    const issued = vodacom.sessions().issued;
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '300', currency: 'TZS' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({
      status: 'failed',
      errorMessage: 'The subscriber cancelled the payment (or did not enter the PIN).',
    });
    expect(paymentsBy(phone)).toMatchObject([{ status: 'Cancelled', submissions: 1 }]);
    expect(vodacom.sessions().issued).toBe(issued);
    expect(await creditsOf(merchant.organization.id)).toEqual([]);
  });

  test('not enough balance (INS-2006) and a number with no M-Pesa account (INS-2051) are refused in words', async () => {
    const merchant = await fundedMerchant(stack, 'TZS');
    const poor = tanzanian();
    vodacom.subscriber(msisdn(poor), { outcome: 'insufficient' });
    expect(
      await requestOutcome(
        stack,
        await promptedRequest(merchant, { phonenumber: poor, amount: '300', currency: 'TZS' }),
      ),
    ).toMatchObject({ status: 'failed', errorMessage: "The subscriber's M-Pesa balance is not enough." });
    const unknown = tanzanian();
    vodacom.subscriber(msisdn(unknown), { registered: false });
    expect(
      await requestOutcome(
        stack,
        await promptedRequest(merchant, { phonenumber: unknown, amount: '300', currency: 'TZS' }),
      ),
    ).toMatchObject({ status: 'failed', errorMessage: 'This is not a valid M-Pesa number (not registered).' });
    expect(paymentsBy(unknown)).toHaveLength(0);
  });
});

describe('payouts and reversals', () => {
  test('payments go out by B2C in TZS and USD; a refused one releases its amount once', async () => {
    const merchant = await fundedMerchant(stack, 'TZS', '10000');
    const phone = tanzanian();
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '2500', currency: 'TZS' })).toMatchObject({
      state: 'completed',
    });
    const [sent] = vodacom.transactions('b2c').filter((payout) => payout.msisdn === msisdn(phone));
    expect(sent).toMatchObject({ market: 'TZN', currency: 'TZS', amount: '2500', status: 'Completed', submissions: 1 });
    expect(sent!.thirdPartyConversationId).toMatch(/^B[0-9a-f]{31}$/);
    const refused = tanzanian();
    vodacom.subscriber(msisdn(refused), { registered: false });
    expect(await paidOut(stack, merchant, { phonenumber: refused, amount: '1000', currency: 'TZS' })).toMatchObject({
      state: 'rejected',
    });
    expect(await balanceOf(merchant.organization.id, 'TZS')).toBe('7500.0000');
    await expectBalanced(merchant.organization.id);

    const drc = await fundedMerchant(stack, 'USD', '50');
    const congo = congolese();
    expect(await paidOut(stack, drc, { phonenumber: congo, amount: '20.25', currency: 'USD' })).toMatchObject({
      state: 'completed',
    });
    expect(vodacom.transactions('b2c').filter((payout) => payout.msisdn === msisdn(congo))).toMatchObject([
      { market: 'DRC', currency: 'USD', amount: '20.25' },
    ]);
    expect(await balanceOf(drc.organization.id, 'USD')).toBe('29.7500');
    await expectBalanced(drc.organization.id);
  });

  test('a B2C whose answer is lost is confirmed by the status query, sent once', async () => {
    const merchant = await fundedMerchant(stack, 'TZS', '5000');
    const phone = tanzanian();
    vodacom.subscriber(msisdn(phone), { answer: 'lost' });
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '1200', currency: 'TZS' })).toMatchObject({
      state: 'completed',
    });
    expect(vodacom.transactions('b2c').filter((payout) => payout.msisdn === msisdn(phone))).toMatchObject([
      { status: 'Completed', submissions: 1 },
    ]);
    expect(await balanceOf(merchant.organization.id, 'TZS')).toBe('3800.0000');
  }, 60_000);

  test('a reversal reverses the M-Pesa transaction of the collection, once, in TZS and in USD', async () => {
    for (const [currency, phone, amount] of [
      ['TZS', tanzanian(), '800'],
      ['USD', congolese(), '8.40'],
    ] as const) {
      const merchant = await fundedMerchant(stack, currency, '1');
      const outcome = await requestOutcome(
        stack,
        await promptedRequest(merchant, { phonenumber: phone, amount, currency }),
      );
      expect(outcome.status).toBe('successful');
      expect(await reversedOut(stack, merchant, outcome.collectionId, 'Returned goods')).toMatchObject({
        state: 'completed',
      });
      const [payment] = paymentsBy(phone);
      const reversals = vodacom
        .transactions('reversal')
        .filter((done) => done.originalTransactionId === payment!.transactionId);
      expect(reversals).toMatchObject([{ amount, status: 'Completed', submissions: 1 }]);
      expect(reversals[0]!.thirdPartyConversationId).toMatch(/^R[0-9a-f]{31}$/);
      expect(await balanceOf(merchant.organization.id, currency)).toBe('1.0000');
      await expectBalanced(merchant.organization.id);
    }
  });
});

describe('an answer lost after M-Pesa did the operation', () => {
  test('a B2C M-Pesa made but answered 500 (INS-1): paid once, the payment completed, debited once', async () => {
    const merchant = await fundedMerchant(stack, 'TZS', '5000');
    const phone = tanzanian();
    const errorsBefore = vodacom.systemErrors();
    vodacom.late({
      method: 'POST',
      path: /\/ipg\/v2\/vodacomTZN\/b2cPayment\/?$/,
      holdMs: 0,
      process: 'before',
      answer: 'error',
    });
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '1700', currency: 'TZS' })).toMatchObject({
      state: 'completed',
    });
    await vodacom.settled();
    // The operation's answer was the operator's 5xx.
    expect(vodacom.systemErrors()).toBe(errorsBefore + 1);
    expect(vodacom.transactions('b2c').filter((payout) => payout.msisdn === msisdn(phone))).toMatchObject([
      { amount: '1700', status: 'Completed' },
    ]);
    expect(await balanceOf(merchant.organization.id, 'TZS')).toBe('3300.0000');
    await expectBalanced(merchant.organization.id);
  });

  test('a reversal M-Pesa made but answered 500 (INS-1): reversed once, the reversal completed, debited once', async () => {
    const merchant = await fundedMerchant(stack, 'TZS', '1');
    const phone = tanzanian();
    const outcome = await requestOutcome(
      stack,
      await promptedRequest(merchant, { phonenumber: phone, amount: '900', currency: 'TZS' }),
    );
    expect(outcome.status).toBe('successful');
    const errorsBefore = vodacom.systemErrors();
    vodacom.late({
      method: 'PUT',
      path: /\/ipg\/v2\/vodacomTZN\/reversal\/?$/,
      holdMs: 0,
      process: 'before',
      answer: 'error',
    });
    expect(await reversedOut(stack, merchant, outcome.collectionId, 'Returned goods')).toMatchObject({
      state: 'completed',
    });
    await vodacom.settled();
    // The operation's answer was the operator's 5xx.
    expect(vodacom.systemErrors()).toBe(errorsBefore + 1);
    const [payment] = paymentsBy(phone);
    expect(
      vodacom.transactions('reversal').filter((done) => done.originalTransactionId === payment!.transactionId),
    ).toMatchObject([{ amount: '900', status: 'Completed' }]);
    expect(await balanceOf(merchant.organization.id, 'TZS')).toBe('1.0000');
    await expectBalanced(merchant.organization.id);
  });
});

describe("sessions, names and the API's validation", () => {
  test('sessions: never used before they are active, reused, and renewed once M-Pesa ends them all', async () => {
    expect(vodacom.sessions().usedBeforeActive).toBe(0);
    // Two per market for each process at its start (the worker, its replacement after the kill, the API process), none since.
    expect(vodacom.sessions().issued).toBeLessThanOrEqual(12);
    expect(vodacom.calls().filter((call) => call.api !== 'getSession').length).toBeGreaterThan(10);
    const before = vodacom.sessions().issued;
    const since = vodacom.calls().length;
    vodacom.expireSessions();
    const merchant = await fundedMerchant(stack, 'TZS');
    expect(
      await requestOutcome(
        stack,
        await promptedRequest(merchant, { phonenumber: tanzanian(), amount: '600', currency: 'TZS' }),
      ),
    ).toMatchObject({ status: 'successful' });
    // The session in use and the spare refused, the call waited for a new one's activation (1 s, within its deadline) and was sent once more, in the same try.
    expect(
      vodacom
        .calls()
        .slice(since)
        .filter((call) => call.api === 'c2bPayment/singleStage'),
    ).toMatchObject([
      { status: 401, code: 'INS-2' },
      { status: 401, code: 'INS-2' },
      { status: 201, code: 'INS-0' },
    ]);
    expect(vodacom.sessions().issued).toBe(before + 2);
    expect(vodacom.sessions().usedBeforeActive).toBe(0);
  });

  test('instant verification asks queryBeneficiaryName in Tanzania and the DRC', async () => {
    const merchant = await fundedMerchant(stack, 'TZS');
    for (const [phone, network] of [
      [tanzanian(), 'Vodacom Tanzania'],
      [congolese(), 'Vodacom DRC'],
    ] as const) {
      vodacom.subscriber(msisdn(phone), { name: { first: 'Neema', last: 'Mushi' } });
      const created = await merchant.request('/api/contacts', {
        form: { phone_number: phone, first_name: 'Neema', last_name: 'Mushi', 'metadata.sync': '1' },
      });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({
        phone_is_mm_registered: 'yes',
        name_on_network: 'Neema Mushi',
        name_matches_network_status: 'checked',
        network_name: network,
      });
    }
    const unknown = tanzanian();
    vodacom.subscriber(msisdn(unknown), { registered: false });
    const missing = await merchant.request('/api/contacts', {
      form: { phone_number: unknown, first_name: 'No', last_name: 'Body', 'metadata.sync': '1' },
    });
    expect(missing.body).toMatchObject({ phone_is_mm_registered: 'no', name_matches_network_status: 'not_registered' });
  });

  test('a session M-Pesa revokes: the spare, already active, takes over at once; one name look-up, one taken C2B call, one credit', async () => {
    const merchant = await fundedMerchant(stack, 'TZS');
    const verified = async (first: string) => {
      const phone = tanzanian();
      vodacom.subscriber(msisdn(phone), { name: { first, last: 'Mushi' } });
      const created = await merchant.request('/api/contacts', {
        form: { phone_number: phone, first_name: first, last_name: 'Mushi', 'metadata.sync': '1' },
      });
      expect(created.status).toBe(201);
      return created.body;
    };
    // Both processes' Tanzanian sessions carry calls (the API process's a name look-up, the worker's a collection).
    expect(await verified('Neema')).toMatchObject({ name_on_network: 'Neema Mushi' });
    expect(
      await requestOutcome(
        stack,
        await promptedRequest(merchant, { phonenumber: tanzanian(), amount: '100', currency: 'TZS' }),
      ),
    ).toMatchObject({ status: 'successful' });
    const issuedBefore = vodacom.sessions().issued;
    const since = vodacom.calls().length;
    expect(vodacom.revokeSessionsInUse()).toBeGreaterThanOrEqual(2);
    const callsSince = (api: string) =>
      vodacom
        .calls()
        .slice(since)
        .filter((call) => call.api === api);

    const started = Date.now();
    expect(await verified('Baraka')).toMatchObject({
      phone_is_mm_registered: 'yes',
      name_on_network: 'Baraka Mushi',
      name_matches_network_status: 'checked',
    });
    // The spare answered: a session issued before the revocation, without waiting for any activation (1 s here).
    expect(Date.now() - started).toBeLessThan(1000);
    expect(callsSince('queryBeneficiaryName')).toMatchObject([
      { status: 401, code: 'INS-2' },
      { status: 200, code: 'INS-0' },
    ]);
    expect(callsSince('queryBeneficiaryName')[1]!.session).toBeLessThanOrEqual(issuedBefore);

    const phone = tanzanian();
    const outcome = await requestOutcome(
      stack,
      await promptedRequest(merchant, { phonenumber: phone, amount: '650', currency: 'TZS' }),
    );
    expect(outcome).toMatchObject({ status: 'successful' });
    const c2bCalls = callsSince('c2bPayment/singleStage');
    // The refused call carried out nothing; the spare's call is the only one M-Pesa took, and nothing was sent twice (no INS-10).
    expect(c2bCalls).toMatchObject([
      { status: 401, code: 'INS-2' },
      { status: 201, code: 'INS-0' },
    ]);
    expect(c2bCalls[1]!.session).toBeLessThanOrEqual(issuedBefore);
    expect(paymentsBy(phone)).toMatchObject([{ status: 'Completed', submissions: 1 }]);
    const credits = (await creditsOf(merchant.organization.id)).filter(
      (credit) => credit.collectionId === outcome.collectionId,
    );
    expect(credits).toEqual([
      {
        collectionId: outcome.collectionId!,
        amount: '650.0000',
        remoteTransactionId: paymentsBy(phone)[0]!.transactionId,
      },
    ]);
    await expectBalanced(merchant.organization.id);
    // Each process asked for one new spare, no more; none was used before it was active.
    await eventually('the new spares', async () => vodacom.sessions().issued >= issuedBefore + 2);
    expect(vodacom.sessions().issued).toBe(issuedBefore + 2);
    expect(vodacom.sessions().usedBeforeActive).toBe(0);
  });

  test("another operator's number never reaches Vodacom (no connector of theirs here), and TZS takes no decimals", async () => {
    const merchant = await fundedMerchant(stack, 'TZS');
    const before = vodacom.transactions().length;
    const airtel = await merchant.request('/api/collectionrequests', {
      form: { phonenumber: '+255681000001', amount: '100', currency: 'TZS' },
    });
    expect(airtel.status).toBe(400);
    expect(airtel.body.phonenumber[0]).toContain('Airtel Tanzania');
    const decimals = await merchant.request('/api/collectionrequests', {
      form: { phonenumber: tanzanian(), amount: '100.50', currency: 'TZS' },
    });
    expect(decimals.body.amount).toEqual(['M-Pesa takes whole amounts only: enter TZS without decimals.']);
    expect(vodacom.transactions()).toHaveLength(before);
    // Other files send to Airtel Tanzania at the same time: this number's operations are the ones to count.
    expect(
      await testSql()`select id from network_operations where network = 'Airtel Tanzania' and phone_number = '+255681000001'`,
    ).toHaveLength(0);
  });
});

describe('sessions asked for ahead of their use (one connector against its own simulator, short delays)', () => {
  const tanzania = networkByName('Vodacom Tanzania')!;
  /** The settings of a connector to `openApi`'s Tanzanian market, with the activation delay and lifetime of the test. */
  const settingsOf = (
    openApi: VodacomSimulator,
    sessions: { activationMs: number; lifetimeMs: number },
  ): VodacomSettings => ({
    baseUrl: openApi.url,
    apiKey: CREDENTIALS.apiKey,
    publicKey: openApi.publicKey,
    serviceProviderCode: CREDENTIALS.serviceProviderCode,
    origin: CREDENTIALS.origin,
    markets: [{ market: 'TZN', context: 'vodacomTZN', network: tanzania.name, currency: 'TZS' }],
    sessionActivationMs: sessions.activationMs,
    sessionLifetimeMs: sessions.lifetimeMs,
  });

  test('warm-up: a connector asks for its session and a spare when a process starts it, and its first collection, after the activation delay, asks for none', async () => {
    const openApi = await startVodacomSimulator({
      ...CREDENTIALS,
      markets: { TZN: ['TZS'] },
      activationMs: 500,
      decisionDelayMs: 50,
    });
    const connector = createVodacomConnector(settingsOf(openApi, { activationMs: 500, lifetimeMs: 60_000 }));
    try {
      connector.warmUp();
      await eventually('the session and its spare asked for at start', async () => openApi.sessions().issued === 2);
      await Bun.sleep(550);
      const phone = tanzanian();
      const started = Date.now();
      const result = await connector.requestPayment({
        requestId: asId('CollectionRequest', 1),
        attempt: 1,
        phoneNumber: phone,
        amount: '250',
        currency: 'TZS',
        reference: 'Warm start',
        promptReference: `warm-${phone}`,
        network: tanzania,
        workflowId: `warm-${phone}`,
      });
      const took = Date.now() - started;
      expect(result).toMatchObject({ accepted: true, paid: { remoteTransactionId: expect.any(String) } });
      // The answer came after the subscriber's PIN (50 ms), not after a session's activation (500 ms).
      expect(took).toBeLessThan(400);
      expect(sessionRequests(openApi)).toHaveLength(2);
      expect(openApi.calls().filter((call) => call.api === 'c2bPayment/singleStage')).toMatchObject([
        { status: 201, code: 'INS-0', session: 1 },
      ]);
      expect(openApi.sessions()).toEqual({ issued: 2, usedBeforeActive: 0 });
    } finally {
      connector.stop();
      await openApi.stop();
    }
  });

  test("renewal ahead: each session's replacement is asked for in the background, active when the session retires, the calls never waiting", async () => {
    // Lifetime 3 s, activation 0.5 s: a session retires 1 s before its end (half of the 2 s it serves beyond two activations),
    // its replacement asked for an activation delay before that, 1.5 s after it. The session in use and the spare were asked together.
    const openApi = await startVodacomSimulator({
      ...CREDENTIALS,
      markets: { TZN: ['TZS'] },
      activationMs: 500,
      sessionLifetimeMs: 3000,
    });
    const connector = createVodacomConnector(settingsOf(openApi, { activationMs: 500, lifetimeMs: 3000 }));
    try {
      connector.warmUp();
      const first = await eventually('the session asked for at start', async () => sessionRequests(openApi)[0]);
      await Bun.sleep(550);
      const phone = tanzanian();
      const slowest: number[] = [];
      // Calls every 100 ms until 2.7 s after the first session was issued: past its retirement (2 s), before its end (3 s).
      while (Date.now() < first.at + 2700) {
        const started = Date.now();
        expect(await connector.lookupName(phone, tanzania)).toMatchObject({ registered: true });
        slowest.push(Date.now() - started);
        await Bun.sleep(100);
      }
      const requests = sessionRequests(openApi);
      expect(requests).toHaveLength(4);
      const renewedAfter = requests[2]!.at - first.at;
      expect(renewedAfter).toBeGreaterThan(1300);
      expect(renewedAfter).toBeLessThan(2000);
      // No call waited for a session: each took far less than an activation delay.
      expect(Math.max(...slowest)).toBeLessThan(250);
      const names = openApi.calls().filter((call) => call.api === 'queryBeneficiaryName');
      expect(names.every((call) => call.status === 200)).toBe(true);
      // The first session served until it retired, after its replacement was asked for; then the replacement, once active.
      const used = names.map((call) => call.session!);
      expect(names.filter((call) => call.at > requests[2]!.at && call.session === 1).length).toBeGreaterThan(0);
      expect(used[0]).toBe(1);
      expect(used.at(-1)).toBe(3);
      expect(used.every((session, index) => index === 0 || session >= used[index - 1]!)).toBe(true);
      expect(names.at(-1)!.at).toBeLessThan(first.at + 3000);
      expect(openApi.sessions()).toEqual({ issued: 4, usedBeforeActive: 0 });
    } finally {
      connector.stop();
      await openApi.stop();
    }
  });

  test.each([0, 30_000])(
    'every session revoked, a new one usable only 0.5 s after its issue (INS-2 Invalid API Key until then), %d ms configured: the call tries it until M-Pesa takes it',
    async (activationMs) => {
      const openApi = await startVodacomSimulator({
        ...CREDENTIALS,
        markets: { TZN: ['TZS'] },
        activationMs: 500,
        plainSessionRefusals: true,
        decisionDelayMs: 50,
      });
      const connector = createVodacomConnector(settingsOf(openApi, { activationMs, lifetimeMs: 3_600_000 }));
      try {
        connector.warmUp();
        await eventually('the session and its spare asked for at start', async () => openApi.sessions().issued === 2);
        await Bun.sleep(550);
        expect(await connector.lookupName(tanzanian(), tanzania)).toMatchObject({ registered: true });
        const since = openApi.calls().length;
        expect(openApi.revokeSessions()).toBe(2);

        const phone = tanzanian();
        const started = Date.now();
        const result = await connector.requestPayment({
          requestId: asId('CollectionRequest', 1),
          attempt: 1,
          phoneNumber: phone,
          amount: '300',
          currency: 'TZS',
          reference: 'After revocation',
          promptReference: `revoked-${phone}`,
          network: tanzania,
          workflowId: `revoked-${phone}`,
        });
        const took = Date.now() - started;
        expect(result).toMatchObject({ accepted: true, paid: { remoteTransactionId: expect.any(String) } });
        // Sent once the new session was active (0.5 s after its issue), well within the customer payment's deadline.
        expect(took).toBeGreaterThanOrEqual(450);
        expect(took).toBeLessThan(3000);
        const payments = openApi
          .calls()
          .slice(since)
          .filter((call) => call.api === 'c2bPayment/singleStage');
        expect(payments.at(-1)).toMatchObject({ status: 201, code: 'INS-0', session: 3 });
        // Every other try was refused for its session (M-Pesa carried nothing out): the revoked two, then the new one before it was active.
        expect(payments.slice(0, -1).every((call) => call.status === 401 && call.code === 'INS-2')).toBe(true);
        expect(payments.length).toBeGreaterThanOrEqual(3);
        expect(payments.length).toBeLessThanOrEqual(8);
        expect(openApi.transactions('c2b').filter((payment) => payment.msisdn === msisdn(phone))).toMatchObject([
          { status: 'Completed', submissions: 1 },
        ]);

        openApi.revokeSessions();
        expect(await connector.lookupName(tanzanian(), tanzania)).toMatchObject({
          registered: true,
          nameOnNetwork: 'Sand Box',
        });
        // One request in flight at a time, and a new session (with its spare) per revocation, not one per refusal.
        await eventually('the spares after the revocations', async () => openApi.sessions().issued >= 6);
        await Bun.sleep(100);
        expect(openApi.sessions().issued).toBe(6);
      } finally {
        connector.stop();
        await openApi.stop();
      }
    },
  );
});

describe('the simulator keeps the published contract', () => {
  test('bearers are RSA-encrypted (the API key for getSession, the session id after), sessions wait for their activation, Origin and fields are checked', async () => {
    const openApi = await startVodacomSimulator({ ...CREDENTIALS, markets: { TZN: ['TZS'] }, activationMs: 400 });
    try {
      const key = `-----BEGIN PUBLIC KEY-----\n${openApi.publicKey}\n-----END PUBLIC KEY-----`;
      const bearer = (text: string) =>
        `Bearer ${publicEncrypt({ key, padding: constants.RSA_PKCS1_PADDING }, Buffer.from(text)).toString('base64')}`;
      const call = async (
        path: string,
        init: { method?: string; authorization?: string; origin?: string | null; json?: unknown } = {},
      ) => {
        const response = await fetch(`${openApi.url}/ipg/v2/vodacomTZN/${path}`, {
          method: init.method ?? 'GET',
          headers: {
            ...(init.authorization ? { Authorization: init.authorization } : {}),
            ...(init.origin === null ? {} : { Origin: init.origin ?? CREDENTIALS.origin }),
            'Content-Type': 'application/json',
          },
          body: init.json === undefined ? undefined : JSON.stringify(init.json),
        });
        return { status: response.status, body: (await response.json()) as Record<string, string> };
      };
      expect(await call('getSession/', { authorization: `Bearer ${CREDENTIALS.apiKey}` })).toMatchObject({
        status: 401,
        body: { output_ResponseCode: 'INS-2' },
      });
      expect(await call('getSession/', { authorization: bearer(CREDENTIALS.apiKey), origin: null })).toMatchObject({
        status: 400,
        body: { output_ResponseCode: 'INS-20' },
      });
      const session = await call('getSession/', { authorization: bearer(CREDENTIALS.apiKey) });
      expect(session).toMatchObject({
        status: 200,
        body: { output_ResponseCode: 'INS-0', output_ResponseDesc: 'Request processed successfully' },
      });
      const authorization = bearer(session.body.output_SessionID!);
      const query =
        'queryTransactionStatus/?input_QueryReference=X1&input_ServiceProviderCode=000000&input_ThirdPartyConversationID=Q1&input_Country=TZN';
      expect(await call(query, { authorization })).toMatchObject({
        status: 401,
        body: { output_ResponseDesc: 'Session ID not yet active' },
      });
      await Bun.sleep(450);
      expect(await call(query, { authorization })).toMatchObject({
        status: 200,
        body: { output_ResponseCode: 'INS-0', output_ResponseTransactionStatus: 'N/A' },
      });
      expect(await call(query, { authorization: `Bearer ${session.body.output_SessionID}` })).toMatchObject({
        status: 401,
      });
      const payment = {
        input_Amount: '100',
        input_Country: 'TZN',
        input_Currency: 'TZS',
        input_CustomerMSISDN: '255741000999',
        input_ServiceProviderCode: '000000',
        input_ThirdPartyConversationID: 'C1',
        input_TransactionReference: 'T1',
        input_PurchasedItemsDesc: 'Test',
      };
      const pay = (json: unknown) => call('c2bPayment/singleStage/', { method: 'POST', authorization, json });
      expect(await pay({ ...payment, input_Amount: '100.50' })).toMatchObject({
        status: 400,
        body: { output_ResponseCode: 'INS-15' },
      });
      expect(await pay({ ...payment, input_CustomerMSISDN: '0741000999' })).toMatchObject({
        status: 400,
        body: { output_ResponseCode: 'INS-2051' },
      });
      expect(await pay({ ...payment, input_ServiceProviderCode: '111111' })).toMatchObject({
        status: 400,
        body: { output_ResponseCode: 'INS-13' },
      });
      expect(await pay({ ...payment, input_TransactionReference: undefined })).toMatchObject({
        status: 400,
        body: { output_ResponseCode: 'INS-20' },
      });
      expect(await pay(payment)).toMatchObject({
        status: 201,
        body: { output_ResponseCode: 'INS-0', output_ThirdPartyConversationID: 'C1' },
      });
      expect(await pay(payment)).toMatchObject({ status: 409, body: { output_ResponseCode: 'INS-10' } });
      openApi.expireSessions();
      expect(await call(query, { authorization })).toMatchObject({
        status: 401,
        body: { output_ResponseDesc: 'Session ID expired' },
      });
      expect(openApi.sessions()).toEqual({ issued: 1, usedBeforeActive: 1 });
    } finally {
      await openApi.stop();
    }
  });
});
