/**
 * MTN Uganda through the MTN MoMo connector, against the project's MoMo simulator on loopback, a
 * real worker, Temporal and PostgreSQL: request to pay (callback as a hint, GET as the truth),
 * transfers for payments and reversals, account holder look-ups, and the API's validation rules.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { startMomoSimulator, type MomoSimulator } from '../simulators/momo';
import { LIVE_METRICS_TOKEN, eventually, numberSequence, requester, testApp, testSql } from '../helpers';
import {
  balanceOf,
  callbackSettled,
  creditsOf,
  expectBalanced,
  fundedMerchant,
  paidOut,
  promptedRequest,
  recordHistory,
  requestOutcome,
  requestStatus,
  startStack,
  type Stack,
  reversedOut,
} from './stack';

const CREDENTIALS = {
  collection: {
    subscriptionKey: 'momo-collection-key',
    apiUser: '5f0e8c2e-3c1f-4f7e-9a51-6c2b9a1d7e01',
    apiKey: 'momo-collection-secret',
  },
  disbursement: {
    subscriptionKey: 'momo-disbursement-key',
    apiUser: '7a1d2c3b-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
    apiKey: 'momo-disbursement-secret',
  },
};
let momo: MomoSimulator;
let stack: Stack;
const nextNumber = numberSequence('+256776');
const msisdn = (e164: string) => e164.slice(1);

beforeAll(async () => {
  momo = await startMomoSimulator({
    ...CREDENTIALS,
    targetEnvironment: 'sandbox',
    decisionDelayMs: 300,
    callbackDelayMs: 50,
  });
  stack = await startStack('momo', {
    MTN_MOMO_BASE_URL: momo.url,
    MTN_MOMO_TARGET_ENVIRONMENT: 'sandbox',
    MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: CREDENTIALS.collection.subscriptionKey,
    MTN_MOMO_COLLECTION_API_USER: CREDENTIALS.collection.apiUser,
    MTN_MOMO_COLLECTION_API_KEY: CREDENTIALS.collection.apiKey,
    MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: CREDENTIALS.disbursement.subscriptionKey,
    MTN_MOMO_DISBURSEMENT_API_USER: CREDENTIALS.disbursement.apiUser,
    MTN_MOMO_DISBURSEMENT_API_KEY: CREDENTIALS.disbursement.apiKey,
  });
});

afterAll(async () => {
  await stack?.stop();
  await momo?.stop();
});

const STATUS_PATH = /^\/collection\/v1_0\/requesttopay\/[^/]+$/;
const requestsToPayOf = (phone: string) => momo.requestsToPay().filter((request) => request.payer === msisdn(phone));

describe('request to pay', () => {
  test("the callback wakes the request, MoMo's GET confirms it, it is credited once; a repeated callback changes nothing", async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = nextNumber();
    momo.party(msisdn(phone), { outcome: 'SUCCESSFUL', callback: 'twice' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '1500', currency: 'UGX' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    await recordHistory(stack, `collection-request-${requestId}`, 'collection-request-operator-paid');
    const [sent] = requestsToPayOf(phone);
    expect(sent).toMatchObject({
      amount: '1500',
      currency: 'EUR',
      externalId: `req-${requestId}-1`,
      status: 'SUCCESSFUL',
      submissions: 1,
    });
    expect(sent!.referenceId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(sent!.callbackUrl).toBe(`${stack.env.PUBLIC_BASE_URL}/network/momo/${sent!.referenceId}`);
    const credits = await creditsOf(merchant.organization.id);
    expect(credits).toEqual([
      { collectionId: expect.any(Number), amount: '1500.0000', remoteTransactionId: sent!.financialTransactionId! },
    ]);
    // The same callback once more, by hand: nothing moves.
    const again = await requester(stack.ctx.app, null)(`/network/momo/${sent!.referenceId}`, {
      method: 'PUT',
      body: {
        financialTransactionId: sent!.financialTransactionId,
        externalId: sent!.externalId,
        amount: '1500',
        currency: 'EUR',
        status: 'SUCCESSFUL',
      },
    });
    expect(again.status).toBe(200);
    await callbackSettled(stack, requestId, 'MTN Uganda', sent!.financialTransactionId!);
    expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('1001500.0000');
    await expectBalanced(merchant.organization.id);
  });

  test("a callback that lies (SUCCESSFUL while MoMo's record says FAILED) credits nothing", async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = nextNumber();
    momo.party(msisdn(phone), { outcome: 'FAILED', reason: 'APPROVAL_REJECTED', callback: 'lie' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '700', currency: 'UGX' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({
      status: 'failed',
      errorMessage: 'The subscriber declined the payment.',
    });
    expect(await creditsOf(merchant.organization.id)).toEqual([]);
    expect(await testSql()`select id from collections where phone_number = ${phone}`).toHaveLength(0);
  });

  test('no callback at all: the poll asks MoMo and the payment is credited once', async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = nextNumber();
    momo.party(msisdn(phone), { outcome: 'SUCCESSFUL', callback: 'none' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '900', currency: 'UGX' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
  });

  test('MoMo answers 500 after recording: the retry repeats the X-Reference-Id, MoMo refuses the duplicate, one charge', async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = nextNumber();
    momo.failNext('requesttopay', '500-after-recording');
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '1100', currency: 'UGX' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    const sent = requestsToPayOf(phone);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.submissions).toBe(2);
    expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
  });

  test('tokens MoMo stops honouring are fetched again (one refresh), and the request to pay goes through', async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = nextNumber();
    momo.expireTokens();
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '600', currency: 'UGX' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    const refused = momo.calls().filter((call) => call.api === 'requesttopay' && call.status === 401);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(requestsToPayOf(phone)).toHaveLength(1);
  });

  test('the worker killed between the request to pay and its callback: credited once', async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = nextNumber();
    momo.party(msisdn(phone), { outcome: 'SUCCESSFUL', callback: 'truthful', decideAfterMs: 4000 });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '1300', currency: 'UGX' });
    await eventually('the request to pay to reach MoMo', async () => requestsToPayOf(phone).length === 1);
    await stack.killWorker();
    await stack.startWorker();
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    expect(requestsToPayOf(phone)).toHaveLength(1);
    expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
    await expectBalanced(merchant.organization.id);
  }, 60_000);
});

describe('transfers', () => {
  test("a payment goes out by transfer and completes; MoMo's refusal releases the amount once", async () => {
    const merchant = await fundedMerchant(stack, 'UGX', '10000');
    const phone = nextNumber();
    const completed = await paidOut(stack, merchant, { phonenumber: phone, amount: '2500', currency: 'UGX' });
    expect(completed).toMatchObject({ state: 'completed' });
    await recordHistory(stack, `payment-${completed.id}`, 'payment-operator-completed');
    const [transfer] = momo.transfers().filter((sent) => sent.payee === msisdn(phone));
    expect(transfer).toMatchObject({ amount: '2500', currency: 'EUR', status: 'SUCCESSFUL', submissions: 1 });
    const refusedPhone = nextNumber();
    momo.party(msisdn(refusedPhone), { outcome: 'FAILED', reason: 'PAYEE_NOT_FOUND', callback: 'truthful' });
    expect(
      await paidOut(stack, merchant, { phonenumber: refusedPhone, amount: '1000', currency: 'UGX' }),
    ).toMatchObject({ state: 'rejected' });
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('7500.0000');
    await expectBalanced(merchant.organization.id);
  });

  test('MoMo answers 500 after recording a transfer: one transfer, completed once', async () => {
    const merchant = await fundedMerchant(stack, 'UGX', '5000');
    const phone = nextNumber();
    momo.failNext('transfer', '500-after-recording');
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '1200', currency: 'UGX' })).toMatchObject({
      state: 'completed',
    });
    const sent = momo.transfers().filter((transfer) => transfer.payee === msisdn(phone));
    expect(sent).toHaveLength(1);
    expect(sent[0]!.submissions).toBe(2);
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('3800.0000');
  });

  test('a reversal sends a MoMo collection back by transfer', async () => {
    const merchant = await fundedMerchant(stack, 'UGX', '1');
    const phone = nextNumber();
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '800', currency: 'UGX' });
    const outcome = await requestOutcome(stack, requestId);
    expect(outcome.status).toBe('successful');
    expect(await reversedOut(stack, merchant, outcome.collectionId, 'Returned goods')).toMatchObject({
      state: 'completed',
    });
    expect(momo.transfers().filter((transfer) => transfer.payee === msisdn(phone))).toMatchObject([
      { amount: '800', status: 'SUCCESSFUL' },
    ]);
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('1.0000');
    await expectBalanced(merchant.organization.id);
  });
});

describe('an answer lost after MoMo did the operation', () => {
  const TRANSFER_PATH = '/disbursement/v1_0/transfer';

  test('a transfer MoMo made but answered 5xx: paid once, the payment completed, debited once', async () => {
    const merchant = await fundedMerchant(stack, 'UGX', '5000');
    const phone = nextNumber();
    const errorsBefore = momo.systemErrors();
    momo.late({ method: 'POST', path: TRANSFER_PATH, holdMs: 0, process: 'before', answer: 'error' });
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '1400', currency: 'UGX' })).toMatchObject({
      state: 'completed',
    });
    await momo.settled();
    // The operation's answer was the operator's 5xx.
    expect(momo.systemErrors()).toBe(errorsBefore + 1);
    expect(momo.transfers().filter((transfer) => transfer.payee === msisdn(phone))).toMatchObject([
      { amount: '1400', status: 'SUCCESSFUL' },
    ]);
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('3600.0000');
    await expectBalanced(merchant.organization.id);
  });

  test("a reversal's transfer MoMo made but answered 5xx: sent back once, the reversal completed, debited once", async () => {
    const merchant = await fundedMerchant(stack, 'UGX', '1');
    const phone = nextNumber();
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '650', currency: 'UGX' });
    const outcome = await requestOutcome(stack, requestId);
    expect(outcome.status).toBe('successful');
    const errorsBefore = momo.systemErrors();
    momo.late({ method: 'POST', path: TRANSFER_PATH, holdMs: 0, process: 'before', answer: 'error' });
    expect(await reversedOut(stack, merchant, outcome.collectionId, 'Returned goods')).toMatchObject({
      state: 'completed',
    });
    await momo.settled();
    // The operation's answer was the operator's 5xx.
    expect(momo.systemErrors()).toBe(errorsBefore + 1);
    const sent = momo.transfers().filter((transfer) => transfer.payee === msisdn(phone));
    expect(sent).toMatchObject([{ amount: '650', status: 'SUCCESSFUL' }]);
    // The retry repeated the X-Reference-Id and MoMo refused it as a duplicate.
    expect(sent[0]!.submissions).toBe(2);
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('1.0000');
    await expectBalanced(merchant.organization.id);
  });

  test('a request to pay MoMo took but answered 5xx: the subscriber prompted once, credited once', async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = nextNumber();
    const errorsBefore = momo.systemErrors();
    momo.late({ method: 'POST', path: '/collection/v1_0/requesttopay', holdMs: 0, process: 'before', answer: 'error' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '1250', currency: 'UGX' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    await momo.settled();
    // The operation's answer was the operator's 5xx.
    expect(momo.systemErrors()).toBe(errorsBefore + 1);
    expect(requestsToPayOf(phone)).toHaveLength(1);
    expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('1001250.0000');
    await expectBalanced(merchant.organization.id);
  });

  test("the subscriber pays while MoMo's status query answers nothing until the request expired: the payment is followed on, left unassigned, never lost", async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = nextNumber();
    momo.party(msisdn(phone), { outcome: 'SUCCESSFUL', callback: 'truthful' });
    // Its callback comes while the request is open; every status query fails until the request has expired.
    momo.late({ method: 'GET', path: STATUS_PATH, holdMs: 0, process: 'before', answer: 'error', times: 1000 });
    const requestId = await promptedRequest(merchant, {
      phonenumber: phone,
      amount: '1750',
      currency: 'UGX',
      expiry_date: new Date(Date.now() + 6_000).toISOString(),
    });
    await requestStatus(merchant, requestId, 'expired');
    momo.clearLate();
    const [paid] = requestsToPayOf(phone);
    expect(paid).toMatchObject({ status: 'SUCCESSFUL' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'expired' });
    await recordHistory(stack, `collection-request-${requestId}`, 'collection-request-followed-after-expiry');
    const stored = await testSql()<{ organizationId: number | null; promptReference: string; status: string }[]>`
      select organization_id as "organizationId", prompt_reference as "promptReference", status from collections
      where network = 'MTN Uganda' and remote_transaction_id = ${paid!.financialTransactionId}`;
    expect([...stored]).toEqual([{ organizationId: null, promptReference: `req-${requestId}-1`, status: 'pending' }]);
    expect(await creditsOf(merchant.organization.id)).toEqual([]);
    await expectBalanced(merchant.organization.id);
  }, 60_000);
});

describe("the API's validation and look-ups", () => {
  test("instant verification asks MoMo's account holder API", async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = nextNumber();
    momo.party(msisdn(phone), { active: true, name: { given_name: 'Jane', family_name: 'Nakato' } });
    const created = await merchant.request('/api/contacts', {
      form: { phone_number: phone, first_name: 'Jane', last_name: 'Nakato', 'metadata.sync': '1' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      phone_is_mm_registered: 'yes',
      name_on_network: 'Jane Nakato',
      name_matches_network_status: 'checked',
      name_matches_network_score: 100,
      network_name: 'MTN Uganda',
    });
    const inactive = nextNumber();
    momo.party(msisdn(inactive), { active: false });
    const unknown = await merchant.request('/api/contacts', {
      form: { phone_number: inactive, first_name: 'No', last_name: 'Body', 'metadata.sync': '1' },
    });
    expect(unknown.body).toMatchObject({ phone_is_mm_registered: 'no', name_matches_network_status: 'not_registered' });
  });

  test('UGX with decimals is refused by validation, before MoMo sees it', async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const response = await merchant.request('/api/collectionrequests', {
      form: { phonenumber: nextNumber(), amount: '100.50', currency: 'UGX' },
    });
    expect(response.status).toBe(400);
    expect(response.body.amount).toEqual(['MTN MoMo takes whole amounts only: enter UGX without decimals.']);
    const payment = await merchant.request('/api/payments', {
      form: { phonenumber: nextNumber(), amount: '10.5', currency: 'UGX', description: 'x' },
    });
    expect(payment.body.amount).toEqual(['MTN MoMo takes whole amounts only: enter UGX without decimals.']);
  });

  test('outside sandbox mode a network with no connector is refused by validation, naming it', async () => {
    const live = await testApp(undefined, { ...stack.env, SANDBOX: 'false', METRICS_TOKEN: LIVE_METRICS_TOKEN });
    const merchant = await fundedMerchant(stack, 'UGX');
    const airtel = await requester(live.app, merchant.apiKey)('/api/collectionrequests', {
      form: { phonenumber: '+256701234567', amount: '100', currency: 'UGX' },
    });
    expect(airtel.status).toBe(400);
    expect(airtel.body.phonenumber[0]).toContain('Airtel Uganda is not connected');
    const mtn = await requester(live.app, merchant.apiKey)('/api/collectionrequests', {
      form: { phonenumber: nextNumber(), amount: '100', currency: 'UGX' },
    });
    expect(mtn.status).toBe(201);
    await live.client.workflow
      .getHandle(`collection-request-${mtn.body.id}`)
      .terminate('test over')
      .catch(() => {});
  });
});
