/**
 * Tigo and Halotel (Tanzania), Telecel and AT (Ghana) and Orange DRC through the pawaPay connector,
 * against the project's pawaPay simulator on loopback, a real worker, Temporal and PostgreSQL:
 * deposits under a depositId stored before the call (a retried activity repeats it, and pawaPay
 * ignores the duplicate), signed callbacks as hints and the status query as the truth (forged,
 * replayed and reconciling callbacks credit nothing more), payouts and refunds, and the providers'
 * limits in the API's validation.
 */
import { asId } from '../../src/domain/ids';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createNetworks } from '../../src/network/connections';
import { loadConfig } from '../../src/config';
import { networkForNumber } from '../../src/domain/networks';
import { startPawapaySimulator, type PawapaySimulator } from '../simulators/pawapay';
import { eventually, numberSequence, requester, testSql } from '../helpers';
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

const TOKEN = 'pawapay-test-token';
const PROVIDERS = 'TIGO_TZA,HALOTEL_TZA,VODAFONE_GHA,AIRTELTIGO_GHA,ORANGE_COD';
let pawapay: PawapaySimulator;
let stack: Stack;
const tigo = numberSequence('+25565');
const halotel = numberSequence('+25562');
const telecel = numberSequence('+23320');
const airtelTigo = numberSequence('+23326');
const orange = numberSequence('+24384');
/** The number as pawaPay takes it: digits with the country code. */
const digits = (e164: string) => e164.slice(1);

beforeAll(async () => {
  pawapay = await startPawapaySimulator({ apiToken: TOKEN, decisionDelayMs: 200, callbackDelayMs: 20 });
  stack = await startStack('pawapay', {
    PAWAPAY_BASE_URL: pawapay.url,
    PAWAPAY_API_TOKEN: TOKEN,
    PAWAPAY_PROVIDERS: PROVIDERS,
  });
  // The callback URLs registered in pawaPay's dashboard.
  pawapay.setCallbackBase(stack.env.PUBLIC_BASE_URL!);
});

afterAll(async () => {
  await stack?.stop();
  await pawapay?.stop();
});

const depositsOf = (phone: string) => pawapay.deposits().filter((deposit) => deposit.phoneNumber === digits(phone));

describe('deposits', () => {
  test('TZS on Tigo and Halotel, GHS on Telecel and AT, CDF on Orange DRC: each credited once, under its depositId, after the status query', async () => {
    const cases = [
      ['TZS', tigo(), 'TIGO_TZA', '1500', '1500'],
      ['TZS', halotel(), 'HALOTEL_TZA', '2000', '2000'],
      ['GHS', telecel(), 'VODAFONE_GHA', '10.50', '10.5'],
      ['GHS', airtelTigo(), 'AIRTELTIGO_GHA', '25', '25'],
      ['CDF', orange(), 'ORANGE_COD', '1000.25', '1000.25'],
    ] as const;
    for (const [currency, phone, provider, amount, sent] of cases) {
      const merchant = await fundedMerchant(stack, currency, '1');
      pawapay.setSubscriber(digits(phone), { deposit: 'pays', callback: 'twice' });
      const requestId = await promptedRequest(merchant, { phonenumber: phone, amount, currency });
      expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
      const [deposit] = depositsOf(phone);
      expect(deposit).toMatchObject({ provider, currency, status: 'COMPLETED' });
      // pawaPay refuses a decimal point for a provider without decimals: taken, the amount went out as `sent`.
      expect(Number(deposit!.amount)).toBe(Number(sent));
      expect(deposit!.customerMessage.length).toBeGreaterThanOrEqual(4);
      expect(pawapay.promptsOf(deposit!.id)).toBe(1);
      // The id was stored with its operation before pawaPay heard of it.
      const [operation] = await testSql()<{ operatorReference: string }[]>`
        select operator_reference as "operatorReference" from network_operations where network = ${networkForNumber(phone)!.name} and kind = 'prompt' and phone_number = ${phone}`;
      expect(operation!.operatorReference).toBe(deposit!.id);
      const credits = await creditsOf(merchant.organization.id);
      expect(credits).toEqual([
        { collectionId: expect.any(Number), amount: expect.any(String), remoteTransactionId: deposit!.id },
      ]);
      expect(Number(credits[0]!.amount)).toBe(Number(amount));
      await eventually('both callbacks to be answered', async () => {
        const answered = pawapay.callbacks().filter((callback) => callback.body.includes(deposit!.id));
        return answered.length === 2 && answered.every((callback) => callback.status === 200);
      });
      expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
      await expectBalanced(merchant.organization.id);
    }
  });

  test('no callback at all: the poll finds the deposit COMPLETED, credited once', async () => {
    const merchant = await fundedMerchant(stack, 'TZS', '1');
    const phone = tigo();
    pawapay.setSubscriber(digits(phone), { deposit: 'pays', callback: 'none' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '700', currency: 'TZS' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    expect(await balanceOf(merchant.organization.id, 'TZS')).toBe('701.0000');
    await expectBalanced(merchant.organization.id);
  });

  test('a declined deposit fails the request in plain words, with no credit', async () => {
    const merchant = await fundedMerchant(stack, 'GHS', '1');
    const phone = telecel();
    pawapay.setSubscriber(digits(phone), { deposit: 'declines' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '5', currency: 'GHS' });
    const outcome = await requestOutcome(stack, requestId);
    expect(outcome.status).toBe('failed');
    expect(outcome.errorMessage).not.toContain('PAYMENT_NOT_APPROVED');
    expect(outcome.errorMessage?.length).toBeGreaterThan(10);
    expect(await creditsOf(merchant.organization.id)).toEqual([]);
  });

  test('forged callbacks: unsigned, tampered or signed with a key pawaPay does not serve claim COMPLETED for a deposit still open: nothing is credited, the bad signatures are refused', async () => {
    const merchant = await fundedMerchant(stack, 'TZS', '1');
    const phone = halotel();
    pawapay.setSubscriber(digits(phone), { deposit: 'reconciles', callback: 'none' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '900', currency: 'TZS' });
    const deposit = await eventually('the deposit to reach pawaPay', async () => depositsOf(phone)[0]);
    pawapay.holdInReconciliation(deposit.id);
    const claim = {
      depositId: deposit.id,
      status: 'COMPLETED',
      amount: '900.00',
      currency: 'TZS',
      country: 'TZA',
      payer: { type: 'MMO', accountDetails: { phoneNumber: digits(phone), provider: 'HALOTEL_TZA' } },
      created: new Date().toISOString(),
      providerTransactionId: 'FORGED1',
    };
    expect((await pawapay.sendCallback('deposit', claim, { tamper: true })).status).toBe(403);
    expect((await pawapay.sendCallback('deposit', claim, { wrongKey: true })).status).toBe(403);
    // Unsigned callbacks are hints while PAWAPAY_SIGNED_CALLBACKS is off: taken, and the status query says it is still in reconciliation.
    expect((await pawapay.sendCallback('deposit', claim, { sign: false })).status).toBe(200);
    expect((await pawapay.sendCallback('deposit', claim)).status).toBe(200);
    await Bun.sleep(1500);
    expect(await creditsOf(merchant.organization.id)).toEqual([]);
    const row = await merchant.request(`/api/collectionrequests/${requestId}`);
    expect(row.body.status).not.toBe('successful');
    // Reconciliation ends FAILED: the request fails, nothing was ever credited.
    expect(pawapay.release(deposit.id, 'FAILED')).toBe(true);
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'failed' });
    expect(await creditsOf(merchant.organization.id)).toEqual([]);
    await expectBalanced(merchant.organization.id);
  });

  test('a deposit in reconciliation waits; released COMPLETED it is credited once, and a replayed callback credits nothing more', async () => {
    const merchant = await fundedMerchant(stack, 'CDF', '1');
    const phone = orange();
    pawapay.setSubscriber(digits(phone), { deposit: 'reconciles', callback: 'once' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '5000', currency: 'CDF' });
    const deposit = await eventually('the deposit to reach pawaPay', async () => depositsOf(phone)[0]);
    pawapay.holdInReconciliation(deposit.id);
    await eventually(
      'the deposit to be in reconciliation',
      async () => depositsOf(phone)[0]?.status === 'IN_RECONCILIATION',
    );
    await Bun.sleep(1500);
    expect(await creditsOf(merchant.organization.id)).toEqual([]);
    expect(pawapay.release(deposit.id, 'COMPLETED')).toBe(true);
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    const index = await eventually('the final callback to be answered', async () => {
      const found = pawapay
        .callbacks()
        .findIndex((callback) => callback.body.includes(deposit.id) && callback.status === 200);
      return found >= 0 ? found : undefined;
    });
    const replays = await Promise.all(Array.from({ length: 5 }, () => pawapay.replayCallback(index)));
    expect(replays.map((replay) => replay.status)).toEqual([200, 200, 200, 200, 200]);
    await Bun.sleep(500);
    expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
    expect(await balanceOf(merchant.organization.id, 'CDF')).toBe('5001.0000');
    await expectBalanced(merchant.organization.id);
  });

  test('a retried deposit repeats its depositId: pawaPay ignores the duplicate and prompts once; one it never received is sent again under the same id', async () => {
    const config = loadConfig({
      ...stack.env,
      PAWAPAY_BASE_URL: pawapay.url,
      PAWAPAY_API_TOKEN: TOKEN,
      PAWAPAY_PROVIDERS: PROVIDERS,
    });
    const networks = createNetworks(config, testSql());
    const phone = tigo();
    pawapay.setSubscriber(digits(phone), { deposit: 'ignores', callback: 'none' });
    const prompt = {
      requestId: asId('CollectionRequest', 1),
      attempt: 1,
      phoneNumber: phone,
      amount: '1200.0000',
      currency: 'TZS',
      reference: 'Invoice 77',
      promptReference: `retry-${phone}`,
      network: networkForNumber(phone)!,
      workflowId: 'collection-request-none',
    };
    // The same activity run twice (its first answer lost): the same id, pawaPay's DUPLICATE_IGNORED, one prompt.
    const [first, second] = [await networks.requestPayment(prompt), await networks.requestPayment(prompt)];
    expect(first).toMatchObject({ accepted: true });
    expect(second).toEqual(first);
    const depositId = (first as { confirm: { operatorReference: string } }).confirm.operatorReference;
    expect(depositId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(pawapay.promptsOf(depositId)).toBe(1);
    expect(depositsOf(phone)).toHaveLength(1);
    // The request's workflow asks by its prompt reference: the stored id is the one asked about.
    expect(await networks.promptStatus({ ...prompt, operatorReference: prompt.promptReference })).toEqual({
      status: 'pending',
    });
    expect(pawapay.promptsOf(depositId)).toBe(1);
    // A deposit whose POST never reached pawaPay: its id stored, the status query finds nothing, and it is sent under that id, once.
    const lost = { ...prompt, promptReference: `lost-${phone}` };
    const [stored] = await testSql()<{ id: string }[]>`
      insert into network_operations (network, kind, reference, operator_reference, workflow_id, subject, phone_number, amount)
      values ('Tigo Tanzania', 'prompt', ${lost.promptReference}, '8f2b6f1e-33c4-4d7e-9a1b-2c3d4e5f6a7b', 'collection-request-none', ${lost.promptReference}, ${phone}, 1200)
      returning operator_reference as id`;
    expect(await networks.promptStatus({ ...lost, operatorReference: lost.promptReference })).toEqual({
      status: 'pending',
    });
    expect(pawapay.promptsOf(stored!.id)).toBe(1);
    expect(await networks.promptStatus({ ...lost, operatorReference: lost.promptReference })).toEqual({
      status: 'pending',
    });
    expect(pawapay.promptsOf(stored!.id)).toBe(1);
  });
});

describe('payouts and refunds', () => {
  test('payments go out to Tigo, Telecel and Orange numbers; one to a number with no wallet fails and its amount returns once', async () => {
    for (const [currency, phone, amount] of [
      ['TZS', tigo(), '2500'],
      ['GHS', telecel(), '12.75'],
      ['CDF', orange(), '3000'],
    ] as const) {
      const merchant = await fundedMerchant(stack, currency, '10000');
      expect(await paidOut(stack, merchant, { phonenumber: phone, amount, currency })).toMatchObject({
        state: 'completed',
      });
      const sent = pawapay.payouts().filter((payout) => payout.phoneNumber === digits(phone));
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatchObject({ currency, status: 'COMPLETED' });
      const missing = currency === 'TZS' ? halotel() : currency === 'GHS' ? airtelTigo() : orange();
      pawapay.setSubscriber(digits(missing), { payout: 'unknown' });
      const failed = await paidOut(stack, merchant, { phonenumber: missing, amount: '100', currency });
      expect(['failed', 'rejected', 'processed_with_errors']).toContain(failed.state);
      const left = (10000 - Number(amount)).toFixed(4);
      expect(await balanceOf(merchant.organization.id, currency)).toBe(left);
      await expectBalanced(merchant.organization.id);
    }
  });

  test('a reversal refunds the deposit (its depositId) once', async () => {
    const merchant = await fundedMerchant(stack, 'GHS', '1');
    const phone = airtelTigo();
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '40', currency: 'GHS' });
    const outcome = await requestOutcome(stack, requestId);
    expect(outcome.status).toBe('successful');
    expect(await reversedOut(stack, merchant, outcome.collectionId, 'Returned goods')).toMatchObject({
      state: 'completed',
    });
    const [deposit] = depositsOf(phone);
    expect(pawapay.refunds().filter((refund) => refund.depositId === deposit!.id)).toMatchObject([
      { status: 'COMPLETED', currency: 'GHS' },
    ]);
    expect(await balanceOf(merchant.organization.id, 'GHS')).toBe('1.0000');
    await expectBalanced(merchant.organization.id);
  });
});

describe('an answer lost after pawaPay did the operation, and a deposit refunded already', () => {
  test('a payout pawaPay took but answered 500: paid once, completed, debited once', async () => {
    const merchant = await fundedMerchant(stack, 'TZS', '10000');
    const phone = tigo();
    const errorsBefore = pawapay.systemErrors();
    pawapay.late({ method: 'POST', path: '/v2/payouts', holdMs: 0, process: 'before', answer: 'error' });
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '2200', currency: 'TZS' })).toMatchObject({
      state: 'completed',
    });
    await pawapay.settled();
    // The payout's answer was pawaPay's 500.
    expect(pawapay.systemErrors()).toBe(errorsBefore + 1);
    expect(pawapay.payouts().filter((payout) => payout.phoneNumber === digits(phone))).toMatchObject([
      { status: 'COMPLETED', currency: 'TZS' },
    ]);
    expect(await balanceOf(merchant.organization.id, 'TZS')).toBe('7800.0000');
    await expectBalanced(merchant.organization.id);
  });

  test('a refund pawaPay took but answered 500: refunded once, the reversal completed, debited once', async () => {
    const merchant = await fundedMerchant(stack, 'GHS', '1');
    const phone = telecel();
    const outcome = await requestOutcome(
      stack,
      await promptedRequest(merchant, { phonenumber: phone, amount: '30', currency: 'GHS' }),
    );
    expect(outcome.status).toBe('successful');
    const errorsBefore = pawapay.systemErrors();
    pawapay.late({ method: 'POST', path: '/v2/refunds', holdMs: 0, process: 'before', answer: 'error' });
    expect(await reversedOut(stack, merchant, outcome.collectionId, 'Returned goods')).toMatchObject({
      state: 'completed',
    });
    await pawapay.settled();
    expect(pawapay.systemErrors()).toBe(errorsBefore + 1);
    const [deposit] = depositsOf(phone);
    const refunds = pawapay.refunds().filter((refund) => refund.depositId === deposit!.id);
    expect(refunds).toMatchObject([{ status: 'COMPLETED', currency: 'GHS' }]);
    // The retry repeated the refundId, which pawaPay ignored as a duplicate.
    expect(refunds[0]!.submissions).toBeGreaterThanOrEqual(2);
    expect(await balanceOf(merchant.organization.id, 'GHS')).toBe('1.0000');
    await expectBalanced(merchant.organization.id);
  });

  test('a deposit refunded in full at pawaPay already (DEPOSIT_ALREADY_REFUNDED): the reversal completes, debited once, nothing refunded twice', async () => {
    const merchant = await fundedMerchant(stack, 'GHS', '1');
    const phone = airtelTigo();
    const outcome = await requestOutcome(
      stack,
      await promptedRequest(merchant, { phonenumber: phone, amount: '45', currency: 'GHS' }),
    );
    expect(outcome.status).toBe('successful');
    const [deposit] = depositsOf(phone);
    // The deposit refunded under another refundId (from pawaPay's dashboard, say) before the reversal.
    const elsewhere = await fetch(`${pawapay.url}/v2/refunds`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ refundId: crypto.randomUUID(), depositId: deposit!.id }),
    });
    expect(await elsewhere.json()).toMatchObject({ status: 'ACCEPTED' });
    await eventually('the refund made elsewhere to complete', async () =>
      pawapay.refunds().some((refund) => refund.depositId === deposit!.id && refund.status === 'COMPLETED'),
    );
    expect(await reversedOut(stack, merchant, outcome.collectionId, 'Returned goods')).toMatchObject({
      state: 'completed',
    });
    expect(pawapay.refunds().filter((refund) => refund.depositId === deposit!.id)).toHaveLength(1);
    expect(await balanceOf(merchant.organization.id, 'GHS')).toBe('1.0000');
    await expectBalanced(merchant.organization.id);
  });
  test('another refund of the deposit under way at pawaPay (REFUND_IN_PROGRESS): the reversal waits for it and completes, debited once', async () => {
    const merchant = await fundedMerchant(stack, 'GHS', '1');
    const phone = airtelTigo();
    // The refund made elsewhere stays in progress long enough for the reversal to meet it.
    pawapay.setSubscriber(digits(phone), { decideAfterMs: 2500 });
    const outcome = await requestOutcome(
      stack,
      await promptedRequest(merchant, { phonenumber: phone, amount: '35', currency: 'GHS' }),
    );
    expect(outcome.status).toBe('successful');
    const [deposit] = depositsOf(phone);
    const elsewhere = await fetch(`${pawapay.url}/v2/refunds`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ refundId: crypto.randomUUID(), depositId: deposit!.id }),
    });
    expect(await elsewhere.json()).toMatchObject({ status: 'ACCEPTED' });
    expect(await reversedOut(stack, merchant, outcome.collectionId, 'Returned goods')).toMatchObject({
      state: 'completed',
    });
    expect(pawapay.refunds().filter((refund) => refund.depositId === deposit!.id)).toMatchObject([
      { status: 'COMPLETED' },
    ]);
    expect(await balanceOf(merchant.organization.id, 'GHS')).toBe('1.0000');
    await expectBalanced(merchant.organization.id);
  }, 30_000);
});

describe("the API's validation", () => {
  test("the providers' limits from active-conf are refused at the API, naming the limit, before anything is sent", async () => {
    const merchant = await fundedMerchant(stack, 'TZS');
    const before = pawapay.deposits().length;
    const small = await merchant.request('/api/collectionrequests', {
      form: { phonenumber: tigo(), amount: '50', currency: 'TZS' },
    });
    expect(small.status).toBe(400);
    expect(small.body.amount[0]).toContain('100');
    const large = await merchant.request('/api/collectionrequests', {
      form: { phonenumber: halotel(), amount: '9000000', currency: 'TZS' },
    });
    expect(large.status).toBe(400);
    expect(large.body.amount[0]).toContain('5,000,000');
    const payment = await merchant.request('/api/payments', {
      form: { phonenumber: tigo(), amount: '10', currency: 'TZS', description: 'Too small' },
    });
    expect(payment.status).toBe(400);
    expect(payment.body.amount[0]).toContain('100');
    expect(pawapay.deposits()).toHaveLength(before);
  });

  test('pawaPay has no name look-up: instant verification says "not supported", never a name', async () => {
    const merchant = await fundedMerchant(stack, 'TZS');
    const created = await merchant.request('/api/contacts', {
      form: { phone_number: tigo(), first_name: 'Neema', last_name: 'Mushi', 'metadata.sync': '1' },
    });
    expect(created.status).toBe(201);
    expect(created.body.name_on_network ?? null).toBeNull();
    expect(created.body.name_matches_network_status).not.toBe('checked');
  });

  test('Africell DRC has no route: its CDF is refused by validation while a connector is on', async () => {
    const merchant = await fundedMerchant(stack, 'CDF');
    const africell = await merchant.request('/api/collectionrequests', {
      form: { phonenumber: '+243901234567', amount: '1000', currency: 'CDF' },
    });
    expect(africell.status).toBe(400);
    expect(africell.body.phonenumber[0]).toContain('Africell DRC');
    const callback = await requester(stack.ctx.app, null)('/network/pawapay/deposits', {
      method: 'POST',
      body: { depositId: 'not-a-uuid', status: 'COMPLETED' },
    });
    expect(callback.status).toBe(400);
  });
});
