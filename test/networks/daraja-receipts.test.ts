/**
 * Whose payment an M-Pesa receipt is, and reversals Daraja answered out of time, against the Daraja
 * simulator, a real worker, Temporal and PostgreSQL. A push credited before its receipt was known (its
 * callback lost, transaction status refusing the look-up by CheckoutRequestID) keeps that credit until
 * Daraja names its receipt; a paybill payment of the same number and amount is a payment of its own,
 * matched by its account number, never given to the push by number and amount, nor to another
 * organization's push. A reversal whose first answer was lost completes once, on Daraja's result and
 * its transaction status, and never gives money back.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { startDarajaSimulator, type DarajaSimulator } from '../simulators/daraja';
import { incomingCollectionWorkflowId } from '../../src/contracts/incoming-collection';
import { reconcile } from '../../src/domain/reconciliation';
import { settlementReport } from '../../src/services/settlements';
import { eventually, numberSequence, requester, testSql, type TestMerchant } from '../helpers';
import {
  balanceOf,
  creditsOf,
  expectBalanced,
  fundedMerchant,
  promptedRequest,
  requestOutcome,
  startStack,
  type Stack,
} from './stack';

const CREDENTIALS = {
  consumerKey: 'daraja-consumer-key',
  consumerSecret: 'daraja-consumer-secret',
  shortcode: '174379',
  passkey: 'bfb279f9aa9bdbcf158e97dd71a467cd2e0c893059b10f78e6b72ada1ed2c919',
  initiatorName: 'testapi',
  securityCredential: 'c2VjdXJpdHktY3JlZGVudGlhbA==',
};
const FUNDS = '1000000';
let daraja: DarajaSimulator;
let stack: Stack;
const nextNumber = numberSequence('+254712');
const msisdn = (e164: string) => e164.slice(1);

beforeAll(async () => {
  daraja = await startDarajaSimulator({
    credentials: CREDENTIALS,
    decisionDelayMs: 300,
    callbackDelayMs: 50,
    // Daraja documents transaction status by receipt only: a push paid with its callback lost is credited under the
    // push, its receipt unknown.
    checkoutRequestLookup: 'refused',
  });
  stack = await startStack('daraja-receipts', {
    MPESA_BASE_URL: daraja.url,
    MPESA_CONSUMER_KEY: CREDENTIALS.consumerKey,
    MPESA_CONSUMER_SECRET: CREDENTIALS.consumerSecret,
    MPESA_SHORTCODE: CREDENTIALS.shortcode,
    MPESA_PASSKEY: CREDENTIALS.passkey,
    MPESA_INITIATOR_NAME: CREDENTIALS.initiatorName,
    MPESA_SECURITY_CREDENTIAL: CREDENTIALS.securityCredential,
    MPESA_VALIDATION_TIMEOUT_MS: '2000',
  });
});

afterAll(async () => {
  await stack?.stop();
  await daraja?.stop();
});

const pushesTo = (phone: string) => daraja.stkPushes().filter((push) => push.msisdn === msisdn(phone));

/** A push of the merchant's, paid with its callback lost: credited under its CheckoutRequestID, its receipt unknown. */
async function pushCreditedWithoutReceipt(merchant: TestMerchant, phone: string, amount: string) {
  daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'none' });
  const before = pushesTo(phone).length;
  const requestId = await promptedRequest(merchant, { phonenumber: phone, amount, currency: 'KES' });
  const outcome = await requestOutcome(stack, requestId);
  expect(outcome).toMatchObject({ status: 'successful' });
  const push = pushesTo(phone)[before]!;
  expect(await creditsOf(merchant.organization.id)).toContainEqual({
    collectionId: outcome.collectionId!,
    amount: `${amount}.0000`,
    remoteTransactionId: push.checkoutRequestId,
  });
  return { requestId, collectionId: outcome.collectionId!, push };
}

/** An open request of the merchant's that prompts nobody, paid by its request code (`svccode`). */
async function openRequest(merchant: TestMerchant, phone: string, amount: string) {
  const created = await merchant.request('/api/collectionrequests', {
    form: { phonenumber: phone, amount, currency: 'KES', send_instructions: 'false', expiry_date: '5 minutes' },
  });
  expect(created.status).toBe(201);
  return { requestId: created.body.id as number, code: created.body.svccode as string };
}

/** The paybill payment's confirming workflow, to its end. */
const reportSettled = async (receipt: string) =>
  await stack.ctx.client.workflow.getHandle(incomingCollectionWorkflowId('Safaricom', receipt)).result();

/** A paybill payment as M-Pesa makes it (validation, completion, confirmation), followed to its end. */
async function paidByPaybill(phone: string, amount: string, billRefNumber: string) {
  const paid = await daraja.payBill({ msisdn: msisdn(phone), amount, billRefNumber });
  expect(paid.completed).toBe(true);
  expect(paid.confirmation?.status).toBe(200);
  return { receipt: paid.transId, result: await reportSettled(paid.transId) };
}

/** The push's own callback, as Daraja sends it late: success with the push's receipt. */
async function lateCallback(push: {
  merchantRequestId: string;
  checkoutRequestId: string;
  receipt: string | null;
  amount: number;
  msisdn: string;
}) {
  const answer = await requester(stack.ctx.app, null)('/network/prompts/result', {
    body: {
      Body: {
        stkCallback: {
          MerchantRequestID: push.merchantRequestId,
          CheckoutRequestID: push.checkoutRequestId,
          ResultCode: 0,
          ResultDesc: 'The service request is processed successfully.',
          CallbackMetadata: {
            Item: [
              { Name: 'Amount', Value: push.amount },
              { Name: 'MpesaReceiptNumber', Value: push.receipt },
              { Name: 'PhoneNumber', Value: Number(push.msisdn) },
            ],
          },
        },
      },
    },
  });
  expect(answer.body).toEqual({ ResultCode: 0, ResultDesc: 'Accepted' });
}

/** Every credit of `receipt` in the whole service, by organization. */
const creditsOfReceipt = async (receipt: string) => [
  ...(await testSql()<{ organizationId: number }[]>`
    select a.organization_id as "organizationId" from transactions t join accounts a on a.id = t.account_id
      join collections c on c.id = t.collection_id
    where c.network = 'Safaricom' and c.remote_transaction_id = ${receipt} and t.type = 'mobile_collection'`),
];

const requestRow = async (requestId: number) =>
  (
    await testSql()<{ status: string; remoteTransactionId: string | null; organizationId: number }[]>`
      select status, remote_transaction_id as "remoteTransactionId", organization_id as "organizationId"
      from collection_requests where id = ${requestId}`
  )[0]!;

describe('a paybill payment after a push credited without its receipt', () => {
  test("same organization, its own account number: two collections, each under its own receipt; the push's receipt attaches only when Daraja names it", async () => {
    const merchant = await fundedMerchant(stack, 'KES', FUNDS);
    const phone = nextNumber();
    const credited = await pushCreditedWithoutReceipt(merchant, phone, '150');
    const other = await openRequest(merchant, phone, '150');
    const paybill = await paidByPaybill(phone, '150', other.code);
    expect(paybill.result).toMatchObject({ outcome: 'accepted', requestId: other.requestId });
    expect(await requestRow(other.requestId)).toMatchObject({
      status: 'successful',
      remoteTransactionId: paybill.receipt,
    });
    expect(await creditsOf(merchant.organization.id)).toEqual([
      { collectionId: credited.collectionId, amount: '150.0000', remoteTransactionId: credited.push.checkoutRequestId },
      { collectionId: expect.any(Number), amount: '150.0000', remoteTransactionId: paybill.receipt },
    ]);
    // The push's own receipt is in no record until Daraja names it for the push.
    expect(
      await testSql()`select id from collections where remote_transaction_id = ${credited.push.receipt!}`,
    ).toHaveLength(0);
    expect(await balanceOf(merchant.organization.id, 'KES')).toBe('1000300.0000');
    await expectBalanced(merchant.organization.id);

    // The push's late callback names its receipt: it attaches to the push's credit, and nothing more is credited.
    await lateCallback(credited.push);
    expect(await reportSettled(credited.push.receipt!)).toMatchObject({ requestId: credited.requestId });
    expect(await creditsOf(merchant.organization.id)).toEqual([
      { collectionId: credited.collectionId, amount: '150.0000', remoteTransactionId: credited.push.receipt! },
      { collectionId: expect.any(Number), amount: '150.0000', remoteTransactionId: paybill.receipt },
    ]);
    expect(await balanceOf(merchant.organization.id, 'KES')).toBe('1000300.0000');
    await expectBalanced(merchant.organization.id);
  }, 45_000);

  test("another organization's request named by the account number: that request is credited under the paybill's receipt, the push's organization is not credited again", async () => {
    const pusher = await fundedMerchant(stack, 'KES', FUNDS);
    const payee = await fundedMerchant(stack, 'KES', FUNDS);
    const phone = nextNumber();
    const credited = await pushCreditedWithoutReceipt(pusher, phone, '160');
    const open = await openRequest(payee, phone, '160');
    const paybill = await paidByPaybill(phone, '160', open.code);
    expect(paybill.result).toMatchObject({ outcome: 'accepted', requestId: open.requestId });
    expect(await requestRow(open.requestId)).toMatchObject({
      status: 'successful',
      remoteTransactionId: paybill.receipt,
      organizationId: payee.organization.id,
    });
    expect(await creditsOf(payee.organization.id)).toEqual([
      { collectionId: expect.any(Number), amount: '160.0000', remoteTransactionId: paybill.receipt },
    ]);
    expect(await creditsOf(pusher.organization.id)).toEqual([
      { collectionId: credited.collectionId, amount: '160.0000', remoteTransactionId: credited.push.checkoutRequestId },
    ]);
    expect(await balanceOf(pusher.organization.id, 'KES')).toBe('1000160.0000');
    expect(await balanceOf(payee.organization.id, 'KES')).toBe('1000160.0000');
    await expectBalanced(pusher.organization.id);
    await expectBalanced(payee.organization.id);
  }, 45_000);

  test('late callbacks, paybill payments and a forged report of a push receipt, all at once: each receipt credited once, to its own organization', async () => {
    const first = await fundedMerchant(stack, 'KES', FUNDS);
    const second = await fundedMerchant(stack, 'KES', FUNDS);
    const third = await fundedMerchant(stack, 'KES', FUNDS);
    const phone = nextNumber();
    const firstPush = await pushCreditedWithoutReceipt(first, phone, '170');
    const secondPush = await pushCreditedWithoutReceipt(second, phone, '170');
    const open = await openRequest(third, phone, '170');
    const openToo = await openRequest(first, phone, '170');
    const forged = {
      TransactionType: 'Pay Bill',
      TransID: firstPush.push.receipt!,
      TransTime: '20261127120000',
      TransAmount: '170',
      BusinessShortCode: CREDENTIALS.shortcode,
      BillRefNumber: open.code,
      InvoiceNumber: '',
      OrgAccountBalance: '',
      ThirdPartyTransID: '',
      MSISDN: msisdn(phone),
      FirstName: 'Eve',
      MiddleName: '',
      LastName: '',
    };
    const [, , thirdPaid, firstPaid] = await Promise.all([
      lateCallback(firstPush.push),
      lateCallback(secondPush.push),
      paidByPaybill(phone, '170', open.code),
      paidByPaybill(phone, '170', openToo.code),
      requester(stack.ctx.app, null)('/network/paybill/confirmation', { body: forged }),
      lateCallback(secondPush.push),
    ]);
    expect(await reportSettled(firstPush.push.receipt!)).toMatchObject({ requestId: firstPush.requestId });
    expect(await reportSettled(secondPush.push.receipt!)).toMatchObject({ requestId: secondPush.requestId });
    expect(thirdPaid.result).toMatchObject({ outcome: 'accepted', requestId: open.requestId });
    expect(firstPaid.result).toMatchObject({ outcome: 'accepted', requestId: openToo.requestId });
    expect(await creditsOfReceipt(firstPush.push.receipt!)).toEqual([{ organizationId: first.organization.id }]);
    expect(await creditsOfReceipt(secondPush.push.receipt!)).toEqual([{ organizationId: second.organization.id }]);
    expect(await creditsOfReceipt(thirdPaid.receipt)).toEqual([{ organizationId: third.organization.id }]);
    expect(await creditsOfReceipt(firstPaid.receipt)).toEqual([{ organizationId: first.organization.id }]);
    expect(await creditsOf(first.organization.id)).toHaveLength(2);
    expect(await creditsOf(second.organization.id)).toHaveLength(1);
    expect(await creditsOf(third.organization.id)).toHaveLength(1);
    for (const merchant of [first, second, third]) await expectBalanced(merchant.organization.id);
  }, 60_000);

  test('the settlement report and the reconciliation against the M-Pesa statement show a credit whose receipt is unknown, for finance to match by hand', async () => {
    const merchant = await fundedMerchant(stack, 'KES', FUNDS);
    const phone = nextNumber();
    const credited = await pushCreditedWithoutReceipt(merchant, phone, '180');
    const report = await settlementReport(
      testSql(),
      { organizationId: merchant.organization.id },
      { network: 'Safaricom', currency: 'KES' },
    );
    const line = report.lines.find((each) => each.type === 'collection' && each.id === credited.collectionId);
    expect(line).toMatchObject({ operatorTransactionId: credited.push.checkoutRequestId, amount: '180.0000' });
    // M-Pesa's statement holds the push's receipt: neither side finds the other, and both are shown.
    const found = reconcile(
      report.day,
      [line!],
      [],
      [
        {
          row: 1,
          operatorId: credited.push.receipt!,
          reference: null,
          linkedId: null,
          time: new Date(),
          status: 'Completed',
          completed: true,
          direction: 'in',
          amount: '180.0000',
          currency: 'KES',
          fee: null,
          charge: false,
          party: `${msisdn(phone)} - JOHN DOE`,
        },
      ],
    );
    expect(found.missingOnOperatorSide).toEqual([line!]);
    expect(found.missingOnOurSide.map((theirs) => theirs.operatorId)).toEqual([credited.push.receipt!]);
    expect(found.differs).toBe(true);
  }, 30_000);
});

describe('a reversal Daraja answered out of time', () => {
  /** A collection of the merchant's by STK push, credited under its receipt (its callback came). */
  async function collected(merchant: TestMerchant, amount: string) {
    const phone = nextNumber();
    daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'truthful' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount, currency: 'KES' });
    const outcome = await requestOutcome(stack, requestId);
    expect(outcome.status).toBe('successful');
    const receipt = pushesTo(phone)[0]!.receipt!;
    await eventually('the collection under its receipt', async () =>
      (await creditsOf(merchant.organization.id)).some((credit) => credit.remoteTransactionId === receipt),
    );
    return { collectionId: outcome.collectionId!, receipt };
  }

  async function reversed(merchant: TestMerchant, collectionId: number) {
    const reversal = await merchant.request('/api/reversals', { form: { collection: String(collectionId) } });
    expect(reversal.status).toBe(201);
    return await stack.ctx.client.workflow.getHandle(`reversal-${reversal.body.id}`).result();
  }

  async function expectReversedOnce(merchant: TestMerchant, receipt: string, amount: string) {
    expect(daraja.reversals().filter((entry) => entry.transactionId === receipt && entry.completed)).toHaveLength(1);
    const debits = await testSql()<{ type: string; amount: string }[]>`
      select t.type, t.amount::text as amount from transactions t join accounts a on a.id = t.account_id
      where a.organization_id = ${merchant.organization.id} and t.type like 'reversal%' order by t.id`;
    expect([...debits]).toEqual([{ type: 'reversal', amount: `-${amount}.0000` }]);
    await expectBalanced(merchant.organization.id);
  }

  test('processed, then answered 500: its result names it, transaction status confirms it, completed once', async () => {
    const merchant = await fundedMerchant(stack, 'KES', '1');
    const { collectionId, receipt } = await collected(merchant, '210');
    daraja.late({ method: 'POST', path: '/mpesa/reversal/v1/request', holdMs: 0, process: 'before', answer: 'error' });
    expect(await reversed(merchant, collectionId)).toMatchObject({ state: 'completed' });
    await daraja.settled();
    expect(await balanceOf(merchant.organization.id, 'KES')).toBe('1.0000');
    await expectReversedOnce(merchant, receipt, '210');
  }, 45_000);

  test('held past the client timeout and processed after it: completed once, nothing given back', async () => {
    const merchant = await fundedMerchant(stack, 'KES', '1');
    const { collectionId, receipt } = await collected(merchant, '220');
    daraja.late({
      method: 'POST',
      path: '/mpesa/reversal/v1/request',
      holdMs: 25_000,
      process: 'after',
      answer: 'real',
    });
    expect(await reversed(merchant, collectionId)).toMatchObject({ state: 'completed' });
    await daraja.settled();
    expect(await balanceOf(merchant.organization.id, 'KES')).toBe('1.0000');
    await expectReversedOnce(merchant, receipt, '220');
  }, 60_000);
});
