/**
 * In doubt is not refused (docs/going-live.md#in-doubt-is-not-refused), in the timing an operator
 * that is slow, not down, makes: the call is held 25 s while our client gives up at 20 s
 * (OPERATOR_TIMEOUT_MS, its default), and processed after; or processed, then answered 500. A status
 * query in between finds nothing, which proves nothing: the operation stays on its route, is sent
 * again there under the same reference (the operator deduplicates on it), and moves nothing twice.
 * MTN Uganda has two routes (MoMo, then pawaPay provider MTN_MOMO_UGA); Tigo Tanzania one (pawaPay).
 * Real worker, Temporal and PostgreSQL; the project's simulators of MoMo and pawaPay.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { startMomoSimulator, type MomoSimulator } from '../simulators/momo';
import { startPawapaySimulator, type PawapaySimulator } from '../simulators/pawapay';
import { numberSequence, testSql } from '../helpers';
import {
  balanceOf,
  creditsOf,
  expectBalanced,
  fundedMerchant,
  paidOut,
  promptedRequest,
  requestOutcome,
  reversedOut,
  startStack,
  type Stack,
} from './stack';

const MOMO = {
  collection: {
    subscriptionKey: 'doubt-collection-key',
    apiUser: '0b7c7a0e-1d2e-4f3a-8b4c-5d6e7f8a9b0c',
    apiKey: 'doubt-collection-secret',
  },
  disbursement: {
    subscriptionKey: 'doubt-disbursement-key',
    apiUser: '1c8d8b1f-2e3f-4a4b-9c5d-6e7f8a9b0c1d',
    apiKey: 'doubt-disbursement-secret',
  },
};
const PAWAPAY_TOKEN = 'doubt-pawapay-token';
/** Longer than the client's 20 s: the client has given up when the operator gets to the call. */
const HELD_MS = 25_000;
let momo: MomoSimulator;
let pawapay: PawapaySimulator;
let stack: Stack;
const mtn = numberSequence('+256772');
const tigo = numberSequence('+255654');
const digits = (e164: string) => e164.slice(1);
const sql = testSql();

beforeAll(async () => {
  momo = await startMomoSimulator({
    ...MOMO,
    targetEnvironment: 'mtnuganda',
    currency: 'UGX',
    decisionDelayMs: 200,
    callbackDelayMs: 20,
  });
  pawapay = await startPawapaySimulator({ apiToken: PAWAPAY_TOKEN, decisionDelayMs: 200, callbackDelayMs: 20 });
  stack = await startStack('in-doubt', {
    MTN_MOMO_BASE_URL: momo.url,
    MTN_MOMO_TARGET_ENVIRONMENT: 'mtnuganda',
    MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: MOMO.collection.subscriptionKey,
    MTN_MOMO_COLLECTION_API_USER: MOMO.collection.apiUser,
    MTN_MOMO_COLLECTION_API_KEY: MOMO.collection.apiKey,
    MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: MOMO.disbursement.subscriptionKey,
    MTN_MOMO_DISBURSEMENT_API_USER: MOMO.disbursement.apiUser,
    MTN_MOMO_DISBURSEMENT_API_KEY: MOMO.disbursement.apiKey,
    PAWAPAY_BASE_URL: pawapay.url,
    PAWAPAY_API_TOKEN: PAWAPAY_TOKEN,
    PAWAPAY_PROVIDERS: 'MTN_MOMO_UGA,TIGO_TZA',
    // Longer than any hold here, as each operator's own window is longer than any hold it makes.
    OPERATOR_IN_FLIGHT_WINDOW_SECONDS: '60',
  });
  pawapay.setCallbackBase(stack.env.PUBLIC_BASE_URL!);
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  await momo?.stop();
  await pawapay?.stop();
});

beforeEach(async () => {
  momo.clearLate();
  pawapay.clearLate();
  await momo.settled();
  await pawapay.settled();
});

const momoTransfersTo = (phone: string) => momo.transfers().filter((transfer) => transfer.payee === digits(phone));
const pawapayPayoutsTo = (phone: string) => pawapay.payouts().filter((payout) => payout.phoneNumber === digits(phone));
const pawapayDepositsOf = (phone: string) =>
  pawapay.deposits().filter((deposit) => deposit.phoneNumber === digits(phone));

/** A subscriber who receives and pays on either route. */
function subscriber(phone: string): string {
  momo.party(digits(phone), { outcome: 'SUCCESSFUL', callback: 'truthful' });
  pawapay.setSubscriber(digits(phone), { deposit: 'pays', payout: 'receives', callback: 'once' });
  return phone;
}

/** The journal's entries of one reference of ours, oldest first. */
const journalOf = (network: string, reference: string) => sql<{ route: string; state: string }[]>`
  select route, state from network_operations where network = ${network} and reference = ${reference} order by id`;

describe('a payout answered late on the first of two routes (MTN Uganda: MoMo, then pawaPay)', () => {
  test('MoMo holds the transfer 25 s and then pays: paid once, by MoMo; pawaPay never asked; the wallet debited once', async () => {
    const merchant = await fundedMerchant(stack, 'UGX', '100000');
    const phone = subscriber(mtn());
    momo.late({
      method: 'POST',
      path: '/disbursement/v1_0/transfer',
      holdMs: HELD_MS,
      process: 'after',
      answer: 'real',
    });
    const payment = await paidOut(stack, merchant, { phonenumber: phone, amount: '40000', currency: 'UGX' });
    await momo.settled();
    expect(payment.state).toBe('completed');
    expect(momoTransfersTo(phone)).toHaveLength(1);
    expect(pawapayPayoutsTo(phone)).toHaveLength(0);
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('60000.0000');
    expect((await journalOf('MTN Uganda', `pay-${payment.id}`)).map((entry) => entry.route)).toEqual(['momo']);
    await expectBalanced(merchant.organization.id);
  }, 120_000);

  test('MoMo pays and answers 500: paid once, by MoMo; the wallet debited once', async () => {
    const merchant = await fundedMerchant(stack, 'UGX', '100000');
    const phone = subscriber(mtn());
    momo.late({ method: 'POST', path: '/disbursement/v1_0/transfer', holdMs: 0, process: 'before', answer: 'error' });
    const payment = await paidOut(stack, merchant, { phonenumber: phone, amount: '25000', currency: 'UGX' });
    expect(payment.state).toBe('completed');
    expect(momoTransfersTo(phone).filter((transfer) => transfer.status === 'SUCCESSFUL')).toHaveLength(1);
    expect(pawapayPayoutsTo(phone)).toHaveLength(0);
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('75000.0000');
    await expectBalanced(merchant.organization.id);
  }, 120_000);
});

describe('a reversal on a network of two routes', () => {
  test('a collection pawaPay carried (MoMo refusing connections) is refunded by pawaPay, and only there: MoMo pays nothing', async () => {
    const merchant = await fundedMerchant(stack, 'UGX', '1');
    const phone = subscriber(mtn());
    await momo.outage('refused');
    let outcome: Awaited<ReturnType<typeof requestOutcome>>;
    try {
      outcome = await requestOutcome(
        stack,
        await promptedRequest(merchant, { phonenumber: phone, amount: '7000', currency: 'UGX' }),
      );
    } finally {
      await momo.outage('none');
    }
    expect(outcome.status).toBe('successful');
    expect(pawapayDepositsOf(phone)).toHaveLength(1);
    // Asked about at every poll: on pawaPay, where it was sent, never on the network's first route.
    expect(await reversedOut(stack, merchant, outcome.collectionId)).toMatchObject({ state: 'completed' });
    const [deposit] = pawapayDepositsOf(phone);
    expect(pawapay.refunds().filter((refund) => refund.depositId === deposit!.id)).toMatchObject([
      { status: 'COMPLETED' },
    ]);
    expect(momoTransfersTo(phone)).toHaveLength(0);
    expect(await balanceOf(merchant.organization.id, 'UGX')).toBe('1.0000');
    await expectBalanced(merchant.organization.id);
  }, 120_000);
});

describe('pawaPay answering late on the only route (Tigo Tanzania)', () => {
  test('a payout held 25 s and then paid: completed, paid once, the amount never released', async () => {
    const merchant = await fundedMerchant(stack, 'TZS', '50000');
    const phone = subscriber(tigo());
    pawapay.late({ method: 'POST', path: '/v2/payouts', holdMs: HELD_MS, process: 'after', answer: 'real' });
    const payment = await paidOut(stack, merchant, { phonenumber: phone, amount: '9000', currency: 'TZS' });
    await pawapay.settled();
    expect(payment.state).toBe('completed');
    expect(pawapayPayoutsTo(phone)).toHaveLength(1);
    expect(await balanceOf(merchant.organization.id, 'TZS')).toBe('41000.0000');
    await expectBalanced(merchant.organization.id);
  }, 120_000);

  test('a deposit held 25 s and then prompted: one deposit, under one depositId, credited once', async () => {
    const merchant = await fundedMerchant(stack, 'TZS', '1');
    const phone = subscriber(tigo());
    pawapay.late({ method: 'POST', path: '/v2/deposits', holdMs: HELD_MS, process: 'after', answer: 'real' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '1300', currency: 'TZS' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    await pawapay.settled();
    const deposits = pawapayDepositsOf(phone);
    expect(deposits).toHaveLength(1);
    expect(await creditsOf(merchant.organization.id)).toEqual([
      { collectionId: expect.any(Number), amount: '1300.0000', remoteTransactionId: deposits[0]!.id },
    ]);
    await expectBalanced(merchant.organization.id);
  }, 120_000);
});
