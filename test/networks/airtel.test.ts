/**
 * Airtel Uganda and Airtel Kenya through the Airtel Money connector, against the project's Airtel
 * simulator on loopback, a real worker, Temporal and PostgreSQL: USSD push (the signed callback as
 * a hint, the transaction enquiry as the truth), disbursements with the encrypted PIN, refunds as
 * reversals, user enquiries, the token cache, and the API's validation rules.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHmac } from 'node:crypto';
import { startAirtelSimulator, type AirtelSimulator } from '../simulators/airtel';
import { eventually, numberSequence, requester, testSql } from '../helpers';
import {
  balanceOf,
  callbackSettled,
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

const CREDENTIALS = {
  clientId: 'airtel-test-client',
  clientSecret: 'airtel-test-secret',
  pin: '4321',
  callbackKey: 'airtel-test-callback-key',
};
const CALLBACK_PATH = '/network/airtel/callback';
const REFUND_PATH = '/standard/v1/payments/refund';
const DISBURSEMENT_PATH = /^\/standard\/v2\/disbursements\/?$/;
let airtel: AirtelSimulator;
let stack: Stack;
const ugandan = numberSequence('+256701');
const kenyan = numberSequence('+254733');
/** The number as Airtel takes it: without the country code. */
const national = (e164: string) => e164.slice(4);
const sign = (transaction: unknown, key = CREDENTIALS.callbackKey) =>
  createHmac('sha256', key).update(JSON.stringify(transaction)).digest('base64');

beforeAll(async () => {
  airtel = await startAirtelSimulator({
    ...CREDENTIALS,
    countries: { UG: 'UGX', KE: 'KES' },
    decisionDelayMs: 300,
    callbackDelayMs: 50,
    tokenLifetimeSeconds: 3600,
  });
  stack = await startStack('airtel', {
    AIRTEL_BASE_URL: airtel.url,
    AIRTEL_CLIENT_ID: CREDENTIALS.clientId,
    AIRTEL_CLIENT_SECRET: CREDENTIALS.clientSecret,
    AIRTEL_COUNTRIES: 'UG,KE',
    AIRTEL_PIN: CREDENTIALS.pin,
    AIRTEL_CALLBACK_KEY: CREDENTIALS.callbackKey,
  });
  // The URL registered in Airtel's portal.
  airtel.setCallbackUrl(`${stack.env.PUBLIC_BASE_URL}${CALLBACK_PATH}`);
});

afterAll(async () => {
  await stack?.stop();
  await airtel?.stop();
});

const pushesTo = (phone: string) => airtel.collections().filter((push) => push.msisdn === national(phone));

describe('USSD push', () => {
  test('UGX through Airtel Uganda: the signed callback wakes the request, the enquiry confirms it, a duplicate callback credits nothing more', async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = ugandan();
    airtel.subscriber(national(phone), { outcome: 'pays', callback: 'twice' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '1500', currency: 'UGX' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    const [push] = pushesTo(phone);
    expect(push).toMatchObject({ country: 'UG', currency: 'UGX', amount: 1500, status: 'TS', submissions: 1 });
    expect(push!.id).toMatch(/^C[0-9a-f]{23}$/);
    const credits = await creditsOf(merchant.organization.id);
    expect(credits).toEqual([
      { collectionId: expect.any(Number), amount: '1500.0000', remoteTransactionId: push!.airtelMoneyId! },
    ]);
    await eventually('both callbacks to be answered', async () => {
      const answered = airtel.callbacks().filter((sent) => sent.body.includes(push!.id));
      return answered.length === 2 && answered.every((sent) => sent.status === 200);
    });
    await callbackSettled(stack, requestId, 'Airtel Uganda', push!.airtelMoneyId!);
    expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('1001500.0000');
    await expectBalanced(merchant.organization.id);
  });

  test('a dozen signed callbacks of one payment at the same moment credit it once', async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = ugandan();
    airtel.subscriber(national(phone), { outcome: 'pays', callback: 'none' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '2500', currency: 'UGX' });
    const push = await eventually('the payment to be made at Airtel', async () =>
      pushesTo(phone).find((made) => made.status === 'TS'),
    );
    const transaction = { id: push.id, message: 'Paid', status_code: 'TS', airtel_money_id: push.airtelMoneyId };
    const post = requester(stack.ctx.app, null);
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        post(CALLBACK_PATH, { method: 'POST', body: { transaction, hash: sign(transaction) } }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: 12 }, () => 200));
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    await callbackSettled(stack, requestId, 'Airtel Uganda', push.airtelMoneyId!);
    expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('1002500.0000');
    await expectBalanced(merchant.organization.id);
  });

  test('KES through Airtel Kenya: X-Country KE, the number without 254, credited once', async () => {
    const merchant = await fundedMerchant(stack, 'KES');
    const phone = kenyan();
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '250', currency: 'KES' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    expect(pushesTo(phone)).toMatchObject([
      { country: 'KE', currency: 'KES', msisdn: national(phone), amount: 250, status: 'TS' },
    ]);
    expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
    expect(await balanceOf(merchant.organization.id, 'KES')).toBe('1000250.0000');
    await expectBalanced(merchant.organization.id);
  });

  test('a callback that lies (TS while the enquiry says TF) ends failed, with no credit', async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = ugandan();
    airtel.subscriber(national(phone), { outcome: 'insufficient', callback: 'lie' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '700', currency: 'UGX' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({
      status: 'failed',
      errorMessage: "The subscriber's Airtel Money balance is not enough.",
    });
    expect(
      airtel
        .callbacks()
        .some((sent) => sent.body.includes(pushesTo(phone)[0]!.id) && sent.body.includes('"status_code":"TS"')),
    ).toBe(true);
    expect(await creditsOf(merchant.organization.id)).toEqual([]);
    expect(await testSql()`select id from collections where phone_number = ${phone}`).toHaveLength(0);
    await expectBalanced(merchant.organization.id);
  });

  test('no callback at all: the enquiry poll finds it paid, credited once', async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = ugandan();
    airtel.subscriber(national(phone), { outcome: 'pays', callback: 'none' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '900', currency: 'UGX' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
    expect(pushesTo(phone)).toHaveLength(1);
  });

  test('a callback with a missing or wrong hash is refused (403) and wakes nothing; a signed one is taken', async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = ugandan();
    airtel.subscriber(national(phone), { outcome: 'ignores' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '400', currency: 'UGX' });
    const push = await eventually('the push to reach Airtel', async () => pushesTo(phone)[0]);
    const post = requester(stack.ctx.app, null);
    const transaction = { id: push.id, message: 'Paid', status_code: 'TS', airtel_money_id: 'MP000000.0000.X00000' };
    const hintOf = async () =>
      (
        await testSql()<{ hint: unknown }[]>`select hint from network_operations where operator_reference = ${push.id}`
      )[0]?.hint ?? null;
    expect((await post(CALLBACK_PATH, { method: 'POST', body: { transaction } })).status).toBe(403);
    expect(
      (await post(CALLBACK_PATH, { method: 'POST', body: { transaction, hash: sign(transaction, 'another-key') } }))
        .status,
    ).toBe(403);
    // The right key over the keys in another order than sent is no match either.
    const reordered = { status_code: 'TS', id: push.id, message: 'Paid', airtel_money_id: 'MP000000.0000.X00000' };
    expect(
      (await post(CALLBACK_PATH, { method: 'POST', body: { transaction: reordered, hash: sign(transaction) } })).status,
    ).toBe(403);
    expect(await hintOf()).toBeNull();
    const signed = await post(CALLBACK_PATH, {
      method: 'POST',
      body: { transaction: reordered, hash: sign(reordered) },
    });
    expect({ status: signed.status, body: signed.body }).toEqual({ status: 200, body: { status: 'received' } });
    expect(await hintOf()).not.toBeNull();
    // The enquiry still says TIP: nothing is credited by the callback's word.
    await Bun.sleep(1500);
    expect(await creditsOf(merchant.organization.id)).toEqual([]);
    await stack.ctx.client.workflow.getHandle(`collection-request-${requestId}`).terminate('test over');
  });

  test('a number with no Airtel Money account is refused at once, in words', async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = ugandan();
    airtel.subscriber(national(phone), { registered: false });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '300', currency: 'UGX' });
    const outcome = await eventually('the refusal to be recorded', async () => {
      const [row] = await testSql()<
        { error: string | null }[]
      >`select error_message as error from collection_requests where id = ${requestId}`;
      return row?.error ?? undefined;
    });
    expect(outcome).toBe('This number may not pay by Airtel Money (not registered, or barred).');
    expect(pushesTo(phone)).toHaveLength(0);
    await stack.ctx.client.workflow
      .getHandle(`collection-request-${requestId}`)
      .terminate('test over')
      .catch(() => {});
  });
});

describe('disbursements and refunds', () => {
  test('payments go out in UGX and KES with the encrypted PIN; a refused one releases its amount once', async () => {
    const merchant = await fundedMerchant(stack, 'UGX', '10000');
    const phone = ugandan();
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '2500', currency: 'UGX' })).toMatchObject({
      state: 'completed',
    });
    const [sent] = airtel.disbursements().filter((disbursement) => disbursement.msisdn === national(phone));
    expect(sent).toMatchObject({ country: 'UG', currency: 'UGX', amount: 2500, status: 'TS', submissions: 1 });
    expect(sent!.id).toMatch(/^D[0-9a-f]{23}$/);
    const refused = ugandan();
    airtel.subscriber(national(refused), { registered: false });
    expect(await paidOut(stack, merchant, { phonenumber: refused, amount: '1000', currency: 'UGX' })).toMatchObject({
      state: 'rejected',
    });
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('7500.0000');
    await expectBalanced(merchant.organization.id);

    const kenyanMerchant = await fundedMerchant(stack, 'KES', '5000');
    const kenyanPhone = kenyan();
    expect(
      await paidOut(stack, kenyanMerchant, { phonenumber: kenyanPhone, amount: '1200', currency: 'KES' }),
    ).toMatchObject({ state: 'completed' });
    expect(
      airtel.disbursements().filter((disbursement) => disbursement.msisdn === national(kenyanPhone)),
    ).toMatchObject([{ country: 'KE', currency: 'KES', amount: 1200 }]);
    expect(await balanceOf(kenyanMerchant.organization.id, 'KES')).toBe('3800.0000');
    await expectBalanced(kenyanMerchant.organization.id);
  });

  test('a reversal refunds the Airtel collection (its airtel_money_id), once', async () => {
    for (const [currency, phone] of [
      ['UGX', ugandan()],
      ['KES', kenyan()],
    ] as const) {
      const merchant = await fundedMerchant(stack, currency, '1');
      const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '800', currency });
      const outcome = await requestOutcome(stack, requestId);
      expect(outcome.status).toBe('successful');
      expect(await reversedOut(stack, merchant, outcome.collectionId, 'Returned goods')).toMatchObject({
        state: 'completed',
      });
      const [push] = pushesTo(phone);
      expect(airtel.refunds().filter((refund) => refund.airtelMoneyId === push!.airtelMoneyId)).toHaveLength(1);
      expect(await balanceOf(merchant.organization.id, currency)).toBe('1.0000');
      await expectBalanced(merchant.organization.id);
    }
  });
});

describe('an answer lost after Airtel did the operation', () => {
  test('a refund Airtel made but answered 500: the retry hears "already refunded", the reversal completes, debited once', async () => {
    for (const [currency, phone] of [
      ['UGX', ugandan()],
      ['KES', kenyan()],
    ] as const) {
      const merchant = await fundedMerchant(stack, currency, '1');
      const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '700', currency });
      const outcome = await requestOutcome(stack, requestId);
      expect(outcome.status).toBe('successful');
      const repeatsBefore = airtel.refundRepeats();
      const errorsBefore = airtel.systemErrors();
      airtel.late({ method: 'POST', path: REFUND_PATH, holdMs: 0, process: 'before', answer: 'error' });
      expect(await reversedOut(stack, merchant, outcome.collectionId, 'Returned goods')).toMatchObject({
        state: 'completed',
      });
      await airtel.settled();
      // The operation's answer was the operator's 5xx.
      expect(airtel.systemErrors()).toBe(errorsBefore + 1);
      const [push] = pushesTo(phone);
      expect(airtel.refunds().filter((refund) => refund.airtelMoneyId === push!.airtelMoneyId)).toHaveLength(1);
      // The retry reached Airtel and was refused as a repeat: nothing was refunded twice.
      expect(airtel.refundRepeats()).toBeGreaterThan(repeatsBefore);
      expect(await balanceOf(merchant.organization.id, currency)).toBe('1.0000');
      await expectBalanced(merchant.organization.id);
    }
  });

  test('a disbursement Airtel made but answered 500: paid once, the payment completed, debited once', async () => {
    const merchant = await fundedMerchant(stack, 'UGX', '10000');
    const phone = ugandan();
    const errorsBefore = airtel.systemErrors();
    airtel.late({ method: 'POST', path: DISBURSEMENT_PATH, holdMs: 0, process: 'before', answer: 'error' });
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '2500', currency: 'UGX' })).toMatchObject({
      state: 'completed',
    });
    await airtel.settled();
    // The operation's answer was the operator's 5xx.
    expect(airtel.systemErrors()).toBe(errorsBefore + 1);
    expect(airtel.disbursements().filter((disbursement) => disbursement.msisdn === national(phone))).toMatchObject([
      { amount: 2500, status: 'TS' },
    ]);
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('7500.0000');
    await expectBalanced(merchant.organization.id);
  });
});

describe("tokens, look-ups and the API's validation", () => {
  test('the token is cached: one per process, fetched again only when Airtel stops honouring it', async () => {
    const tokenCalls = () => airtel.calls().filter((call) => call.api === 'token').length;
    // The worker and the API process (look-ups) each keep one.
    expect(tokenCalls()).toBeLessThanOrEqual(2);
    expect(airtel.calls().filter((call) => call.api !== 'token').length).toBeGreaterThan(10);
    const before = tokenCalls();
    airtel.expireTokens();
    const merchant = await fundedMerchant(stack, 'UGX');
    const requestId = await promptedRequest(merchant, { phonenumber: ugandan(), amount: '600', currency: 'UGX' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    expect(tokenCalls()).toBe(before + 1);
    expect(airtel.calls().some((call) => call.status === 401)).toBe(true);
  });

  test("instant verification asks Airtel's user enquiry", async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const phone = ugandan();
    airtel.subscriber(national(phone), { name: { first_name: 'Grace', last_name: 'Auma' } });
    const created = await merchant.request('/api/contacts', {
      form: { phone_number: phone, first_name: 'Grace', last_name: 'Auma', 'metadata.sync': '1' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      phone_is_mm_registered: 'yes',
      name_on_network: 'Grace Auma',
      name_matches_network_status: 'checked',
      network_name: 'Airtel Uganda',
    });
    const unknown = ugandan();
    airtel.subscriber(national(unknown), { registered: false });
    const missing = await merchant.request('/api/contacts', {
      form: { phone_number: unknown, first_name: 'No', last_name: 'Body', 'metadata.sync': '1' },
    });
    expect(missing.body).toMatchObject({ phone_is_mm_registered: 'no', name_matches_network_status: 'not_registered' });
  });

  test('an MTN or Safaricom number never reaches Airtel (no connector of theirs here: refused by validation), and Airtel takes whole amounts', async () => {
    const merchant = await fundedMerchant(stack, 'UGX');
    const pushesBefore = airtel.collections().length;
    const mtn = await merchant.request('/api/collectionrequests', {
      form: { phonenumber: '+256772000001', amount: '100', currency: 'UGX' },
    });
    expect(mtn.status).toBe(400);
    expect(mtn.body.phonenumber[0]).toContain('MTN Uganda has no connector here');
    const kenyanMerchant = await fundedMerchant(stack, 'KES');
    const safaricom = await kenyanMerchant.request('/api/collectionrequests', {
      form: { phonenumber: '+254712000001', amount: '100', currency: 'KES' },
    });
    expect(safaricom.status).toBe(400);
    const decimals = await merchant.request('/api/collectionrequests', {
      form: { phonenumber: ugandan(), amount: '100.50', currency: 'UGX' },
    });
    expect(decimals.body.amount).toEqual(['Airtel Money takes whole amounts only: enter UGX without decimals.']);
    expect(airtel.collections()).toHaveLength(pushesBefore);
  });
});
