/**
 * Whose payment an M-Pesa receipt is, and reversals Daraja answered out of time, against the Daraja
 * simulator, a real worker, Temporal and PostgreSQL. A push credited before its receipt was known (its
 * callback lost, transaction status refusing the look-up by CheckoutRequestID) keeps that credit until
 * Daraja names its receipt; a paybill payment of the same number and amount is a payment of its own,
 * matched by its account number, never given to the push by number and amount, nor to another
 * organization's push. A reversal whose first answer was lost completes once, on Daraja's result and
 * its transaction status, or, its result lost too, on a resend once per in-flight window that Daraja
 * carries out or answers "already reversed"; it never gives money back.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { startDarajaSimulator, type DarajaSimulator } from '../simulators/daraja';
import { incomingCollectionWorkflowId } from '../../src/contracts/incoming-collection';
import { reconcile } from '../../src/domain/reconciliation';
import { settlementReport } from '../../src/services/wallets/settlements';
import { eventually, numberSequence, requester, testSql, type TestMerchant } from '../helpers';
import {
  balanceOf,
  creditsOf,
  expectBalanced,
  fundedMerchant,
  promptedRequest,
  requestOutcome,
  requestStatus,
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
/** OPERATOR_IN_FLIGHT_WINDOW_SECONDS here: a reversal with neither answer nor result is sent again this long after. */
const WINDOW_SECONDS = 3;
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
    OPERATOR_IN_FLIGHT_WINDOW_SECONDS: String(WINDOW_SECONDS),
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

/** The collections of `receipt` that no organization holds: unassigned, for the right merchant to claim. */
const unassignedOf = async (receipt: string) => [
  ...(await testSql()<{ promptReference: string | null; status: string }[]>`
    select prompt_reference as "promptReference", status from collections
    where network = 'Safaricom' and remote_transaction_id = ${receipt} and organization_id is null`),
];

const STK_PUSH_PATH = '/mpesa/stkpush/v1/processrequest';

describe("a payment of the operator's that names no open request of ours is never matched by number and amount", () => {
  test("a push answered 500 after Daraja took it, paid at once: credited to the pushing organization's request, not to another organization's look-alike", async () => {
    const pusher = await fundedMerchant(stack, 'KES', FUNDS);
    const other = await fundedMerchant(stack, 'KES', FUNDS);
    const phone = nextNumber();
    const lookAlike = await openRequest(other, phone, '210');
    daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'truthful' });
    daraja.late({ method: 'POST', path: STK_PUSH_PATH, holdMs: 0, process: 'before', answer: 'error' });
    const requestId = await promptedRequest(pusher, { phonenumber: phone, amount: '210', currency: 'KES' });
    const outcome = await requestOutcome(stack, requestId);
    const push = pushesTo(phone)[0]!;
    expect(push.charged).toBe(true);
    // The callback named the push (the one unanswered push of this number and amount): its request is paid.
    expect(outcome).toMatchObject({ status: 'successful' });
    expect(await creditsOfReceipt(push.receipt!)).toEqual([{ organizationId: pusher.organization.id }]);
    expect(await creditsOf(other.organization.id)).toEqual([]);
    expect(await requestRow(lookAlike.requestId)).toMatchObject({ status: 'pending' });
    await expectBalanced(pusher.organization.id);
  }, 45_000);

  test("a push answered 500 after Daraja took it, paid after its request ended: left unassigned, another organization's look-alike is not credited", async () => {
    const pusher = await fundedMerchant(stack, 'KES', FUNDS);
    const other = await fundedMerchant(stack, 'KES', FUNDS);
    const phone = nextNumber();
    const lookAlike = await openRequest(other, phone, '220');
    // The subscriber pays after the pushing request expired (5 s): nobody follows the push any more.
    daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'truthful', decideAfterMs: 8_000 });
    daraja.late({ method: 'POST', path: STK_PUSH_PATH, holdMs: 0, process: 'before', answer: 'error' });
    const requestId = await promptedRequest(pusher, {
      phonenumber: phone,
      amount: '220',
      currency: 'KES',
      expiry_date: new Date(Date.now() + 5_000).toISOString(),
    });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'expired' });
    const push = await eventually('the push to be paid', async () => {
      const paid = pushesTo(phone)[0];
      return paid?.charged ? paid : undefined;
    });
    // Its callback comes a moment after the charge and starts the report that confirms it.
    const report = stack.ctx.client.workflow.getHandle(incomingCollectionWorkflowId('Safaricom', push.receipt!));
    await eventually('the report of the push to start', async () =>
      (await report.describe().then(
        () => true,
        () => false,
      ))
        ? true
        : undefined,
    );
    expect(await report.result()).toMatchObject({ outcome: 'unmatched', requestId: null });
    expect(await unassignedOf(push.receipt!)).toEqual([{ promptReference: `req-${requestId}-1`, status: 'pending' }]);
    expect(await creditsOfReceipt(push.receipt!)).toEqual([]);
    expect(await creditsOf(other.organization.id)).toEqual([]);
    expect(await creditsOf(pusher.organization.id)).toEqual([]);
    expect(await requestRow(lookAlike.requestId)).toMatchObject({ status: 'pending' });
  }, 45_000);

  test('a paybill payment whose account number names no request of ours, while one other organization has a look-alike open: left unassigned', async () => {
    const other = await fundedMerchant(stack, 'KES', FUNDS);
    const phone = nextNumber();
    const lookAlike = await openRequest(other, phone, '230');
    const paybill = await paidByPaybill(phone, '230', 'UNKNOWN42');
    expect(paybill.result).toMatchObject({ outcome: 'unmatched', requestId: null });
    expect(await unassignedOf(paybill.receipt)).toEqual([{ promptReference: null, status: 'pending' }]);
    expect(await creditsOf(other.organization.id)).toEqual([]);
    expect(await requestRow(lookAlike.requestId)).toMatchObject({ status: 'pending' });
  }, 30_000);
});

/** Every collection of a payment from `phone`, assigned or not. */
const collectionsFrom = async (phone: string) => [
  ...(await testSql()<{ remoteTransactionId: string; promptReference: string | null; organizationId: number | null }[]>`
    select remote_transaction_id as "remoteTransactionId", prompt_reference as "promptReference",
      organization_id as "organizationId"
    from collections where network = 'Safaricom' and phone_number = ${phone} order by id`),
];

const STK_QUERY_PATH = '/mpesa/stkpushquery/v1/query';

describe("a push paid after its request ended, its receipt reported by a callback that names no push of ours (it came before the push's answer, or anyone sent it)", () => {
  /**
   * A push paid 8 s after it went out, its request expired at 5 s, its callback lost: the request follows the push on,
   * and with transaction status refusing the look-up by CheckoutRequestID it can only credit the push under itself.
   * The receipt is also reported by a callback under a CheckoutRequestID of nobody's; transaction status asked about
   * the receipt names the push (its ConversationID). Either way round, M-Pesa debited the subscriber once and the
   * service holds one collection, under the receipt, as that push's (unassigned: its request had ended).
   */
  async function pushPaidAfterExpiry(merchant: TestMerchant, phone: string, amount: string) {
    daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'none', decideAfterMs: 8_000 });
    const requestId = await promptedRequest(merchant, {
      phonenumber: phone,
      amount,
      currency: 'KES',
      expiry_date: new Date(Date.now() + 5_000).toISOString(),
    });
    const push = await eventually('the push to be paid', async () => {
      const paid = pushesTo(phone)[0];
      return paid?.charged ? paid : undefined;
    });
    await requestStatus(merchant, requestId, 'expired');
    return { requestId, push };
  }

  /** The push's payment reported under a CheckoutRequestID no push of ours holds, followed to its end. */
  async function reportedUnderAnotherPush(push: Parameters<typeof lateCallback>[0]) {
    await lateCallback({ ...push, checkoutRequestId: `ws_CO_${crypto.randomUUID().replaceAll('-', '').slice(0, 20)}` });
    return await reportSettled(push.receipt!);
  }

  test('the report settles first, the following then hears the push was paid: one collection, under the receipt', async () => {
    const merchant = await fundedMerchant(stack, 'KES', FUNDS);
    const phone = nextNumber();
    // The following cannot reach the STK push query until the report has settled.
    daraja.late({ method: 'POST', path: STK_QUERY_PATH, holdMs: 0, process: 'never', answer: 'error', times: 1_000 });
    try {
      const { requestId, push } = await pushPaidAfterExpiry(merchant, phone, '240');
      expect(await reportedUnderAnotherPush(push)).toMatchObject({ requestId: null });
      daraja.clearLate();
      expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'expired' });
      expect(await collectionsFrom(phone)).toEqual([
        { remoteTransactionId: push.receipt!, promptReference: `req-${requestId}-1`, organizationId: null },
      ]);
    } finally {
      daraja.clearLate();
    }
    expect(await creditsOf(merchant.organization.id)).toEqual([]);
  }, 60_000);

  test('the following credits the push under itself first, the report then names its receipt: one collection, renamed to the receipt', async () => {
    const merchant = await fundedMerchant(stack, 'KES', FUNDS);
    const phone = nextNumber();
    const { requestId, push } = await pushPaidAfterExpiry(merchant, phone, '250');
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'expired' });
    expect(await collectionsFrom(phone)).toEqual([
      { remoteTransactionId: push.checkoutRequestId, promptReference: `req-${requestId}-1`, organizationId: null },
    ]);
    expect(await reportedUnderAnotherPush(push)).toMatchObject({ requestId: null });
    expect(await collectionsFrom(phone)).toEqual([
      { remoteTransactionId: push.receipt!, promptReference: `req-${requestId}-1`, organizationId: null },
    ]);
    expect(await creditsOf(merchant.organization.id)).toEqual([]);
  }, 60_000);
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

  /** Every reversal of `receipt` M-Pesa processed, in order, by the API or outside it. */
  const reversalsOf = (receipt: string) => daraja.reversals().filter((entry) => entry.transactionId === receipt);

  /** How many times the connector sent the reversal of `receipt` (its operation's `sends`). */
  const sendsOf = async (receipt: string) =>
    (
      await testSql()<{ sends: number }[]>`
        select sends from network_operations
        where network = 'Safaricom' and kind = 'reversal' and subject = ${`reversal-of:${receipt}`}`
    ).map((row) => row.sends);

  /** Each send came a whole window after the one before (the simulator's clock; a few ms of slack). */
  function expectWindowApart(entries: { at: number }[]) {
    for (let index = 1; index < entries.length; index += 1)
      expect(entries[index]!.at - entries[index - 1]!.at).toBeGreaterThanOrEqual(WINDOW_SECONDS * 1000 - 250);
  }

  const REVERSAL_PATH = '/mpesa/reversal/v1/request';

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

  test('processed, answered 500 and its result lost: sent again once the window has passed, answered "already reversed", completed once', async () => {
    const merchant = await fundedMerchant(stack, 'KES', '1');
    const { collectionId, receipt } = await collected(merchant, '230');
    daraja.late({ method: 'POST', path: REVERSAL_PATH, holdMs: 0, process: 'before', answer: 'error' });
    daraja.loseResults('reversal');
    expect(await reversed(merchant, collectionId)).toMatchObject({ state: 'completed' });
    await daraja.settled();
    const entries = reversalsOf(receipt);
    expect(entries.map((entry) => entry.resultCode)).toEqual([0, 'R000001']);
    expectWindowApart(entries);
    expect(await sendsOf(receipt)).toEqual([2]);
    expect(await balanceOf(merchant.organization.id, 'KES')).toBe('1.0000');
    await expectReversedOnce(merchant, receipt, '230');
  }, 45_000);

  test('answers and results lost again and again: sent once per window, not at every poll, until Daraja is heard', async () => {
    const merchant = await fundedMerchant(stack, 'KES', '1');
    const { collectionId, receipt } = await collected(merchant, '235');
    daraja.late({ method: 'POST', path: REVERSAL_PATH, holdMs: 0, process: 'before', answer: 'error', times: 2 });
    daraja.loseResults('reversal', 2);
    expect(await reversed(merchant, collectionId)).toMatchObject({ state: 'completed' });
    await daraja.settled();
    const entries = reversalsOf(receipt);
    // Polled every second meanwhile (PAYOUT_STATUS_POLL_SECONDS): each resend waited a whole window.
    expect(entries.map((entry) => entry.resultCode)).toEqual([0, 'R000001', 'R000001']);
    expectWindowApart(entries);
    expect(await sendsOf(receipt)).toEqual([3]);
    expect(await balanceOf(merchant.organization.id, 'KES')).toBe('1.0000');
    await expectReversedOnce(merchant, receipt, '235');
  }, 60_000);

  test('never reached Daraja (500 before it was processed): sent again once the window has passed, reversed once, completed', async () => {
    const merchant = await fundedMerchant(stack, 'KES', '1');
    const { collectionId, receipt } = await collected(merchant, '240');
    daraja.late({ method: 'POST', path: REVERSAL_PATH, holdMs: 0, process: 'never', answer: 'error' });
    expect(await reversed(merchant, collectionId)).toMatchObject({ state: 'completed' });
    await daraja.settled();
    expect(reversalsOf(receipt).map((entry) => entry.resultCode)).toEqual([0]);
    expect(await sendsOf(receipt)).toEqual([2]);
    expect(await balanceOf(merchant.organization.id, 'KES')).toBe('1.0000');
    await expectReversedOnce(merchant, receipt, '240');
  }, 45_000);

  test('a collection reversed outside the service (the organization portal): the first send is answered "already reversed", the reversal completes, the wallet is debited once', async () => {
    const merchant = await fundedMerchant(stack, 'KES', '1');
    const { collectionId, receipt } = await collected(merchant, '250');
    daraja.reverseOutOfBand(receipt);
    expect(await reversed(merchant, collectionId)).toMatchObject({ state: 'completed' });
    expect(reversalsOf(receipt).map((entry) => [entry.outOfBand, entry.resultCode])).toEqual([
      [true, 0],
      [false, 'R000001'],
    ]);
    expect(await sendsOf(receipt)).toEqual([1]);
    // The money went back to the subscriber once (outside the service): the wallet gives it up once, here.
    expect(await balanceOf(merchant.organization.id, 'KES')).toBe('1.0000');
    await expectReversedOnce(merchant, receipt, '250');
  }, 45_000);
});
