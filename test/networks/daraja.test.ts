/**
 * Safaricom through the M-Pesa Daraja connector, against the project's Daraja simulator on
 * loopback, a real worker, Temporal and PostgreSQL: STK push (callback as a hint, the STK push query
 * as the truth), paybill validation within Daraja's deadline and confirmation by transaction status,
 * B2C payouts, reversals, and the API's validation rules. The STK push tests run twice: with transaction status
 * finding a push's payment by its CheckoutRequestID, and refusing that look-up (R000002), as Daraja
 * documents only the look-up by receipt.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { startDarajaSimulator, type CheckoutRequestLookup, type DarajaSimulator } from '../simulators/daraja';
import { updateCollectionSettings } from '../../src/services/merchants/organizations';
import { incomingCollectionWorkflowId } from '../../src/contracts/incoming-collection';
import { eventually, numberSequence, requester, testSql } from '../helpers';
import { ConsoleClient, PASSWORD, consoleUser } from '../console-helpers';
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
let daraja: DarajaSimulator;
let stack: Stack;
/** The merchant's verification server: its answer depends on the bill reference's request. */
let verifier: ReturnType<typeof Bun.serve>;
const verifierModes = new Map<string, 'accept' | 'reject' | 'silent'>();
const nextNumber = numberSequence('+254711');
const msisdn = (e164: string) => e164.slice(1);

beforeAll(async () => {
  daraja = await startDarajaSimulator({ credentials: CREDENTIALS, decisionDelayMs: 300, callbackDelayMs: 50 });
  verifier = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const body = (await request.json()) as { reference: string; remote_transaction_id: string };
      const mode = verifierModes.get(body.reference) ?? 'accept';
      if (mode === 'silent') await Bun.sleep(6000);
      return new Response(
        mode === 'reject'
          ? `REJECT ${body.remote_transaction_id} Unknown invoice`
          : `ACCEPT ${body.remote_transaction_id}`,
      );
    },
  });
  stack = await startStack('daraja', {
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
  verifier?.stop(true);
  await daraja?.stop();
});

const pushesTo = (phone: string) => daraja.stkPushes().filter((push) => push.msisdn === msisdn(phone));
const LOOKUPS: readonly CheckoutRequestLookup[] = ['answered', 'refused'];
const lookupName = (lookup: CheckoutRequestLookup) =>
  `transaction status ${lookup === 'answered' ? 'finds a push by its CheckoutRequestID' : 'refuses a CheckoutRequestID (R000002)'}`;
/**
 * What a push paid with no callback is credited under: the receipt transaction status gives for its
 * CheckoutRequestID, or, where it gives none, the CheckoutRequestID until the receipt is learnt.
 */
const creditedUnder = (lookup: CheckoutRequestLookup, push: { receipt: string | null; checkoutRequestId: string }) =>
  lookup === 'answered' ? push.receipt! : push.checkoutRequestId;

describe('STK push', () => {
  test('the worker registers the paybill URLs at start, under paths that name neither Safaricom nor M-Pesa', async () => {
    const registered = await eventually(
      'the paybill URLs to be registered',
      async () => daraja.registeredUrls() ?? undefined,
    );
    expect(registered).toEqual({
      shortCode: CREDENTIALS.shortcode,
      responseType: 'Completed',
      validationUrl: `${stack.env.PUBLIC_BASE_URL}/network/paybill/validation`,
      confirmationUrl: `${stack.env.PUBLIC_BASE_URL}/network/paybill/confirmation`,
    });
  });

  test("the console's Settings page shows how each network is connected, without a secret", async () => {
    const merchant = await fundedMerchant(stack, 'KES');
    const user = await consoleUser(merchant.organization.id);
    const browser = new ConsoleClient(stack.ctx.app);
    expect((await browser.signIn(user.email, PASSWORD)).status).toBe(303);
    const page = (await browser.get('/console/settings')).text;
    expect(page).toContain('id="network-connections"');
    expect(page).toMatch(/<td>Safaricom<\/td><td>KES<\/td><td>M-Pesa Daraja<\/td><td>127\.0\.0\.1:\d+, paybill 174379/);
    expect(page).toMatch(
      /<td>MTN Uganda<\/td><td>UGX<\/td><td><span class="muted">none<\/span><\/td><td>simulated by the sandbox/,
    );
    for (const secret of [CREDENTIALS.consumerSecret, CREDENTIALS.passkey, CREDENTIALS.securityCredential])
      expect(page).not.toContain(secret);
  });

  test('KES with decimals is refused by validation, before M-Pesa sees it', async () => {
    const merchant = await fundedMerchant(stack, 'KES');
    const response = await merchant.request('/api/collectionrequests', {
      form: { phonenumber: nextNumber(), amount: '99.50', currency: 'KES' },
    });
    expect(response.status).toBe(400);
    expect(response.body.amount).toEqual(['M-Pesa takes whole amounts only: enter KES without decimals.']);
  });
});

for (const lookup of LOOKUPS) {
  describe(`STK push, ${lookupName(lookup)}`, () => {
    beforeAll(() => daraja.checkoutRequestLookup(lookup));

    test('the callback wakes the request, the STK push query confirms it, credited once under the receipt; a repeated callback changes nothing', async () => {
      const merchant = await fundedMerchant(stack, 'KES');
      const phone = nextNumber();
      const requestId = await promptedRequest(merchant, {
        phonenumber: phone,
        amount: '250',
        currency: 'KES',
        reason: 'Invoice #1042 for May',
      });
      expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
      const [push] = pushesTo(phone);
      expect(push).toMatchObject({
        amount: 250,
        accountReference: 'Invoice 1042',
        callbackUrl: `${stack.env.PUBLIC_BASE_URL}/network/prompts/result`,
        charged: true,
      });
      expect(await creditsOf(merchant.organization.id)).toEqual([
        { collectionId: expect.any(Number), amount: '250.0000', remoteTransactionId: push!.receipt! },
      ]);
      const repeat = await requester(stack.ctx.app, null)('/network/prompts/result', {
        body: {
          Body: {
            stkCallback: {
              MerchantRequestID: push!.merchantRequestId,
              CheckoutRequestID: push!.checkoutRequestId,
              ResultCode: 0,
              ResultDesc: 'The service request is processed successfully.',
              CallbackMetadata: {
                Item: [
                  { Name: 'Amount', Value: 250 },
                  { Name: 'MpesaReceiptNumber', Value: push!.receipt },
                  { Name: 'PhoneNumber', Value: Number(msisdn(phone)) },
                ],
              },
            },
          },
        },
      });
      expect(repeat.body).toEqual({ ResultCode: 0, ResultDesc: 'Accepted' });
      await callbackSettled(stack, requestId, 'Safaricom', push!.receipt!);
      expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
      await expectBalanced(merchant.organization.id);
    });

    test("a callback that lies (success while the subscriber cancelled) credits nothing; the query's reason is the request's error", async () => {
      const merchant = await fundedMerchant(stack, 'KES');
      const phone = nextNumber();
      daraja.subscriber(msisdn(phone), { outcome: 'cancel', callback: 'lie' });
      const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '300', currency: 'KES' });
      expect(await requestOutcome(stack, requestId)).toMatchObject({
        status: 'failed',
        errorMessage: 'The subscriber cancelled the payment prompt.',
      });
      await recordHistory(stack, `collection-request-${requestId}`, 'collection-request-operator-failed');
      expect(await creditsOf(merchant.organization.id)).toEqual([]);
      expect(await testSql()`select id from collections where phone_number = ${phone}`).toHaveLength(0);
    });

    test('no callback: the STK push query finds it paid, and it is credited once, under the receipt transaction status gives for the push or else under the push', async () => {
      const merchant = await fundedMerchant(stack, 'KES');
      const phone = nextNumber();
      daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'none' });
      const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '120', currency: 'KES' });
      expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
      const credits = await creditsOf(merchant.organization.id);
      expect(credits).toHaveLength(1);
      expect(credits[0]!.remoteTransactionId).toBe(creditedUnder(lookup, pushesTo(phone)[0]!));
    });

    test("a callback naming another payment's real receipt: transaction status refutes it for this push, which is credited once, never under that receipt", async () => {
      const earlier = await fundedMerchant(stack, 'KES');
      const phone = nextNumber();
      daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'truthful' });
      const earlierRequest = await promptedRequest(earlier, { phonenumber: phone, amount: '130', currency: 'KES' });
      expect(await requestOutcome(stack, earlierRequest)).toMatchObject({ status: 'successful' });
      const stolen = pushesTo(phone)[0]!.receipt!;
      const merchant = await fundedMerchant(stack, 'KES');
      daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'none', decideAfterMs: 1500 });
      const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '130', currency: 'KES' });
      const push = await eventually('the second push', async () => pushesTo(phone)[1]);
      await requester(stack.ctx.app, null)('/network/prompts/result', {
        body: {
          Body: {
            stkCallback: {
              MerchantRequestID: push.merchantRequestId,
              CheckoutRequestID: push.checkoutRequestId,
              ResultCode: 0,
              ResultDesc: 'The service request is processed successfully.',
              CallbackMetadata: {
                Item: [
                  { Name: 'Amount', Value: 130 },
                  { Name: 'MpesaReceiptNumber', Value: stolen },
                  { Name: 'PhoneNumber', Value: Number(msisdn(phone)) },
                ],
              },
            },
          },
        },
      });
      expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
      expect(await creditsOf(merchant.organization.id)).toEqual([
        {
          collectionId: expect.any(Number),
          amount: '130.0000',
          remoteTransactionId: creditedUnder(lookup, pushesTo(phone)[1]!),
        },
      ]);
      expect(await creditsOf(earlier.organization.id)).toEqual([
        { collectionId: expect.any(Number), amount: '130.0000', remoteTransactionId: stolen },
      ]);
    }, 30_000);

    test('the worker killed between the push and its callback: credited once', async () => {
      const merchant = await fundedMerchant(stack, 'KES');
      const phone = nextNumber();
      daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'truthful', decideAfterMs: 4000 });
      const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '450', currency: 'KES' });
      await eventually('the push to reach M-Pesa', async () => pushesTo(phone).length === 1);
      await stack.killWorker();
      await stack.startWorker();
      expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
      expect(pushesTo(phone)).toHaveLength(1);
      expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
      await expectBalanced(merchant.organization.id);
    }, 60_000);

    test('an access token Daraja stops honouring is fetched again, and the push goes through once', async () => {
      const merchant = await fundedMerchant(stack, 'KES');
      const phone = nextNumber();
      daraja.expireTokens();
      const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '75', currency: 'KES' });
      expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
      expect(pushesTo(phone)).toHaveLength(1);
      expect(daraja.calls().some((call) => call.api === 'stkpush' && call.status === 401)).toBe(true);
    });
  });
}

const TRANSACTION_STATUS_PATH = '/mpesa/transactionstatus/v1/query';

describe('paybill (C2B)', () => {
  async function openRequest(acceptByDefault: boolean, mode: 'accept' | 'reject' | 'silent') {
    const merchant = await fundedMerchant(stack, 'KES');
    await updateCollectionSettings(
      testSql(),
      { organizationId: merchant.organization.id },
      { verificationUrl: `http://127.0.0.1:${verifier.port}/verify`, acceptByDefault },
    );
    const phone = nextNumber();
    const created = await merchant.request('/api/collectionrequests', {
      form: { phonenumber: phone, amount: '640', currency: 'KES', expiry_date: '2 minutes' },
    });
    expect(created.status).toBe(201);
    verifierModes.set(created.body.svccode, mode);
    return { merchant, phone, requestId: created.body.id as number, code: created.body.svccode as string };
  }

  test("validation asks the merchant within Daraja's deadline; the confirmation is confirmed by transaction status and credited to the named request", async () => {
    const { merchant, phone, requestId, code } = await openRequest(false, 'accept');
    const paid = await daraja.payBill({ msisdn: msisdn(phone), amount: '640', billRefNumber: code });
    expect(paid.validation?.answer).toMatchObject({ ResultCode: '0' });
    expect(paid.validation!.elapsedMs).toBeLessThan(5000);
    expect(paid.completed).toBe(true);
    expect(paid.confirmation?.status).toBe(200);
    const result = await stack.ctx.client.workflow
      .getHandle(incomingCollectionWorkflowId('Safaricom', paid.transId))
      .result();
    expect(result).toMatchObject({ outcome: 'accepted', requestId });
    await recordHistory(
      stack,
      incomingCollectionWorkflowId('Safaricom', paid.transId),
      'incoming-collection-confirmed',
    );
    const credits = await creditsOf(merchant.organization.id);
    expect(credits).toEqual([
      { collectionId: result.collectionId, amount: '640.0000', remoteTransactionId: paid.transId },
    ]);
    const [collection] = await testSql()<
      { phoneNumber: string }[]
    >`select phone_number as "phoneNumber" from collections where id = ${result.collectionId}`;
    // The masked number stood for the request's, which it fits.
    expect(collection!.phoneNumber).toBe(phone);
  });

  test("a transaction status result that comes before Daraja's answer to the query (a slow link) is that query's: the payment is confirmed on the first query", async () => {
    const { merchant, phone, requestId, code } = await openRequest(true, 'accept');
    // Daraja answers each query 1.5 s after it took it, and sends its result at once.
    daraja.late({
      method: 'POST',
      path: TRANSACTION_STATUS_PATH,
      holdMs: 1_500,
      process: 'before',
      answer: 'real',
      times: 50,
    });
    const asked = daraja.calls().filter((call) => call.api === 'transactionstatus').length;
    try {
      const paid = await daraja.payBill({ msisdn: msisdn(phone), amount: '640', billRefNumber: code });
      expect(paid.completed).toBe(true);
      const result = await stack.ctx.client.workflow
        .getHandle(incomingCollectionWorkflowId('Safaricom', paid.transId))
        .result();
      expect(result).toMatchObject({ outcome: 'accepted', requestId });
      expect(daraja.calls().filter((call) => call.api === 'transactionstatus').length - asked).toBe(1);
      expect(await creditsOf(merchant.organization.id)).toEqual([
        { collectionId: result.collectionId, amount: '640.0000', remoteTransactionId: paid.transId },
      ]);
    } finally {
      daraja.clearLate();
    }
  }, 20_000);

  test("the merchant's REJECT is Daraja's rejection: the payment does not complete, nothing is credited", async () => {
    const { merchant, phone, code } = await openRequest(true, 'reject');
    const paid = await daraja.payBill({ msisdn: msisdn(phone), amount: '640', billRefNumber: code });
    expect(paid.validation?.answer).toMatchObject({ ResultCode: 'C2B00016', ResultDesc: 'Rejected' });
    expect(paid.completed).toBe(false);
    expect(await creditsOf(merchant.organization.id)).toEqual([]);
  });

  test("a merchant too slow for Daraja's deadline: its accept-by-default answers in time", async () => {
    const refusing = await openRequest(false, 'silent');
    const refused = await daraja.payBill({
      msisdn: msisdn(refusing.phone),
      amount: '640',
      billRefNumber: refusing.code,
    });
    expect(refused.validation?.answer).toMatchObject({ ResultCode: 'C2B00016' });
    expect(refused.validation!.elapsedMs).toBeLessThan(5000);
    const accepting = await openRequest(true, 'silent');
    const accepted = await daraja.payBill({
      msisdn: msisdn(accepting.phone),
      amount: '640',
      billRefNumber: accepting.code,
    });
    expect(accepted.validation?.answer).toMatchObject({ ResultCode: '0' });
    expect(accepted.validation!.elapsedMs).toBeLessThan(5000);
  }, 30_000);

  test('a confirmation M-Pesa never made (a lie) is refused by transaction status: nothing is stored or credited', async () => {
    const { merchant, phone, code } = await openRequest(true, 'accept');
    const fake = {
      TransactionType: 'Pay Bill',
      TransID: 'FAKE000001',
      TransTime: '20240101120000',
      TransAmount: '640',
      BusinessShortCode: CREDENTIALS.shortcode,
      BillRefNumber: code,
      InvoiceNumber: '',
      OrgAccountBalance: '',
      ThirdPartyTransID: '',
      MSISDN: msisdn(phone),
      FirstName: 'Eve',
      MiddleName: '',
      LastName: '',
    };
    const answer = await requester(stack.ctx.app, null)('/network/paybill/confirmation', { body: fake });
    expect(answer.body).toEqual({ ResultCode: 0, ResultDesc: 'Accepted' });
    const result = await stack.ctx.client.workflow
      .getHandle(incomingCollectionWorkflowId('Safaricom', 'FAKE000001'))
      .result();
    expect(result).toMatchObject({ outcome: 'unconfirmed', collectionId: null });
    await recordHistory(
      stack,
      incomingCollectionWorkflowId('Safaricom', 'FAKE000001'),
      'incoming-collection-unconfirmed',
    );
    expect(await testSql()`select id from collections where remote_transaction_id = 'FAKE000001'`).toHaveLength(0);
    expect(await creditsOf(merchant.organization.id)).toEqual([]);
  });
});

for (const lookup of LOOKUPS) {
  describe(`one receipt, one credit, ${lookupName(lookup)}`, () => {
    beforeAll(() => daraja.checkoutRequestLookup(lookup));

    /** Reports of a real receipt that anyone can send: a paybill confirmation naming `code`, and an STK callback for a push that never was. */
    function forgeries(receipt: string, phone: string, amount: string, code: string) {
      const confirmation = {
        TransactionType: 'Pay Bill',
        TransID: receipt,
        TransTime: '20261127120000',
        TransAmount: amount,
        BusinessShortCode: CREDENTIALS.shortcode,
        BillRefNumber: code,
        InvoiceNumber: '',
        OrgAccountBalance: '',
        ThirdPartyTransID: '',
        MSISDN: msisdn(phone),
        FirstName: 'Eve',
        MiddleName: '',
        LastName: '',
      };
      const callback = {
        Body: {
          stkCallback: {
            MerchantRequestID: '9999-9999-1',
            CheckoutRequestID: `ws_CO_FORGED${Math.floor(Math.random() * 1e9)}`,
            ResultCode: 0,
            ResultDesc: 'The service request is processed successfully.',
            CallbackMetadata: {
              Item: [
                { Name: 'Amount', Value: Number(amount) },
                { Name: 'MpesaReceiptNumber', Value: receipt },
                { Name: 'PhoneNumber', Value: Number(msisdn(phone)) },
              ],
            },
          },
        },
      };
      const send = requester(stack.ctx.app, null);
      return {
        paybill: async () =>
          expect((await send('/network/paybill/confirmation', { body: confirmation })).body).toEqual({
            ResultCode: 0,
            ResultDesc: 'Accepted',
          }),
        stk: async () =>
          expect((await send('/network/prompts/result', { body: callback })).body).toEqual({
            ResultCode: 0,
            ResultDesc: 'Accepted',
          }),
      };
    }

    /** A second organization's look-alike request for the same number and amount, waiting for a payment by its code. */
    async function lookAlike(phone: string, amount: string) {
      const merchant = await fundedMerchant(stack, 'KES');
      const created = await merchant.request('/api/collectionrequests', {
        form: { phonenumber: phone, amount, currency: 'KES', send_instructions: 'false' },
      });
      expect(created.status).toBe(201);
      return { merchant, code: created.body.svccode as string };
    }

    /** Every credit of `receipt` in the whole service. */
    const creditsOfReceipt = async (receipt: string): Promise<{ organizationId: number }[]> => [
      ...(await testSql()<{ organizationId: number }[]>`
      select a.organization_id as "organizationId" from transactions t join accounts a on a.id = t.account_id join collections c on c.id = t.collection_id
      where c.network = 'Safaricom' and c.remote_transaction_id = ${receipt} and t.type = 'mobile_collection'`),
    ];

    /** The report's workflow has ended (confirmed and found credited, or given up), so nothing more can come of it. */
    const reportSettled = async (receipt: string) =>
      await stack.ctx.client.workflow.getHandle(incomingCollectionWorkflowId('Safaricom', receipt)).result();

    /** The push's own callback, as Daraja sends it: success with the push's receipt. */
    async function pushCallback(
      push: { merchantRequestId: string; checkoutRequestId: string; receipt: string | null },
      phone: string,
      amount: string,
    ) {
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
                  { Name: 'Amount', Value: Number(amount) },
                  { Name: 'MpesaReceiptNumber', Value: push.receipt },
                  { Name: 'PhoneNumber', Value: Number(msisdn(phone)) },
                ],
              },
            },
          },
        },
      });
      expect(answer.body).toEqual({ ResultCode: 0, ResultDesc: 'Accepted' });
    }

    /** What the merchant sees of a collection (its remote transaction id), and the request it paid holds the same. */
    async function shownAs(
      merchant: Awaited<ReturnType<typeof fundedMerchant>>,
      collectionId: number,
      remoteTransactionId: string,
    ) {
      const shown = await merchant.request(`/api/collections/${collectionId}`);
      expect(shown.body).toMatchObject({ id: collectionId, remote_transaction_id: remoteTransactionId });
      expect(
        await testSql()`select id from collection_requests where collection_id = ${collectionId} and remote_transaction_id = ${remoteTransactionId}`,
      ).toHaveLength(1);
    }

    test("a push paid with no callback, then its real receipt reported for another organization by paybill and by STK callback: credited once, to the push's request", async () => {
      const payer = await fundedMerchant(stack, 'KES');
      const phone = nextNumber();
      daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'none' });
      const requestId = await promptedRequest(payer, { phonenumber: phone, amount: '50', currency: 'KES' });
      expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
      const receipt = pushesTo(phone)[0]!.receipt!;
      const other = await lookAlike(phone, '50');
      const forged = forgeries(receipt, phone, '50', other.code);
      await forged.paybill();
      await forged.stk();
      expect(await reportSettled(receipt)).toMatchObject({ requestId });
      expect(await creditsOf(other.merchant.organization.id)).toEqual([]);
      expect(await creditsOfReceipt(receipt)).toEqual([{ organizationId: payer.organization.id }]);
      await expectBalanced(payer.organization.id);
      await expectBalanced(other.merchant.organization.id);
    }, 30_000);

    test("the real receipt reported for another organization while the push is still being settled, both forgeries at once: credited once, to the push's request", async () => {
      const payer = await fundedMerchant(stack, 'KES');
      const phone = nextNumber();
      const other = await lookAlike(phone, '70');
      daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'none' });
      const requestId = await promptedRequest(payer, { phonenumber: phone, amount: '70', currency: 'KES' });
      // The forgeries come as soon as the subscriber has paid (the receipt is on their phone), before the push is settled.
      const receipt = await eventually(
        'the subscriber to pay',
        async () => pushesTo(phone)[0]?.receipt ?? undefined,
        15_000,
      );
      const forged = forgeries(receipt, phone, '70', other.code);
      await Promise.all([forged.paybill(), forged.stk(), forged.paybill()]);
      expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
      expect(await reportSettled(receipt)).toMatchObject({ requestId });
      expect(await creditsOf(other.merchant.organization.id)).toEqual([]);
      expect(await creditsOfReceipt(receipt)).toEqual([{ organizationId: payer.organization.id }]);
      await expectBalanced(payer.organization.id);
    }, 45_000);

    test("one real receipt reported for three other organizations at once while its push settles: credited once, to the push's request", async () => {
      const payer = await fundedMerchant(stack, 'KES');
      const phone = nextNumber();
      const others = await Promise.all([lookAlike(phone, '90'), lookAlike(phone, '90'), lookAlike(phone, '90')]);
      daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'truthful', decideAfterMs: 500 });
      const requestId = await promptedRequest(payer, { phonenumber: phone, amount: '90', currency: 'KES' });
      const receipt = await eventually(
        'the subscriber to pay',
        async () => pushesTo(phone)[0]?.receipt ?? undefined,
        15_000,
      );
      await Promise.all(
        others.flatMap(({ code }) => {
          const forged = forgeries(receipt, phone, '90', code);
          return [forged.paybill(), forged.stk()];
        }),
      );
      expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
      await reportSettled(receipt);
      expect(await creditsOfReceipt(receipt)).toEqual([{ organizationId: payer.organization.id }]);
      for (const { merchant } of others) {
        expect(await creditsOf(merchant.organization.id)).toEqual([]);
        await expectBalanced(merchant.organization.id);
      }
    }, 45_000);

    test("a paid push whose callback is lost is credited once; its receipt, then reported at once by paybill for another organization, by the push's late callback and by a callback for no push, attaches to that credit and credits nothing more", async () => {
      const payer = await fundedMerchant(stack, 'KES');
      const phone = nextNumber();
      const other = await lookAlike(phone, '60');
      daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'none' });
      const requestId = await promptedRequest(payer, { phonenumber: phone, amount: '60', currency: 'KES' });
      const outcome = await requestOutcome(stack, requestId);
      expect(outcome).toMatchObject({ status: 'successful' });
      const push = pushesTo(phone)[0]!;
      const receipt = push.receipt!;
      // Before the receipt is learnt, the merchant sees what the push was credited under.
      await shownAs(payer, outcome.collectionId!, creditedUnder(lookup, push));
      const forged = forgeries(receipt, phone, '60', other.code);
      await Promise.all([
        forged.paybill(),
        pushCallback(push, phone, '60'),
        forged.stk(),
        forged.paybill(),
        pushCallback(push, phone, '60'),
      ]);
      expect(await reportSettled(receipt)).toMatchObject({ requestId });
      expect(await creditsOfReceipt(receipt)).toEqual([{ organizationId: payer.organization.id }]);
      expect(await creditsOf(payer.organization.id)).toEqual([
        { collectionId: outcome.collectionId!, amount: '60.0000', remoteTransactionId: receipt },
      ]);
      expect(await creditsOf(other.merchant.organization.id)).toEqual([]);
      await shownAs(payer, outcome.collectionId!, receipt);
      expect(await testSql()`select id from collections where phone_number = ${phone}`).toHaveLength(1);
      await expectBalanced(payer.organization.id);
      await expectBalanced(other.merchant.organization.id);
    }, 45_000);

    test("the push's callback comes after its credit: the receipt it names, confirmed by transaction status, attaches to that credit", async () => {
      const payer = await fundedMerchant(stack, 'KES');
      const phone = nextNumber();
      daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'truthful', callbackAfterMs: 5000 });
      const requestId = await promptedRequest(payer, { phonenumber: phone, amount: '65', currency: 'KES' });
      const outcome = await requestOutcome(stack, requestId);
      expect(outcome).toMatchObject({ status: 'successful' });
      const push = pushesTo(phone)[0]!;
      await shownAs(payer, outcome.collectionId!, creditedUnder(lookup, push));
      await eventually(
        'the receipt to attach to the credit',
        async () => (await creditsOf(payer.organization.id))[0]?.remoteTransactionId === push.receipt,
        20_000,
      );
      await callbackSettled(stack, requestId, 'Safaricom', push.receipt!);
      expect(await creditsOf(payer.organization.id)).toEqual([
        { collectionId: outcome.collectionId!, amount: '65.0000', remoteTransactionId: push.receipt! },
      ]);
      await shownAs(payer, outcome.collectionId!, push.receipt!);
      await expectBalanced(payer.organization.id);
    }, 45_000);

    test('transaction status answering only after the push was credited without its receipt: a receipt the answer states attaches to that credit', async () => {
      const payer = await fundedMerchant(stack, 'KES');
      const phone = nextNumber();
      daraja.subscriber(msisdn(phone), { outcome: 'pay', callback: 'none' });
      daraja.transactionStatusDelay(2500);
      try {
        const requestId = await promptedRequest(payer, { phonenumber: phone, amount: '55', currency: 'KES' });
        const outcome = await requestOutcome(stack, requestId);
        expect(outcome).toMatchObject({ status: 'successful' });
        const push = pushesTo(phone)[0]!;
        // A poll went by with no answer: credited under the push.
        await shownAs(payer, outcome.collectionId!, push.checkoutRequestId);
        if (lookup === 'answered') {
          await eventually(
            'the receipt to attach to the credit',
            async () => (await creditsOf(payer.organization.id))[0]?.remoteTransactionId === push.receipt,
            20_000,
          );
          expect(await reportSettled(push.receipt!)).toMatchObject({ requestId });
        } else {
          // The answer (R000002) states no receipt: the credit stays under the push.
          await Bun.sleep(4000);
        }
        expect(await creditsOf(payer.organization.id)).toEqual([
          { collectionId: outcome.collectionId!, amount: '55.0000', remoteTransactionId: creditedUnder(lookup, push) },
        ]);
        await expectBalanced(payer.organization.id);
      } finally {
        daraja.transactionStatusDelay(null);
      }
    }, 45_000);
  });
}

describe('B2C and reversals', () => {
  test("a payment goes out by B2C and completes on transaction status's word", async () => {
    const merchant = await fundedMerchant(stack, 'KES', '5000');
    const phone = nextNumber();
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '1000', currency: 'KES' })).toMatchObject({
      state: 'completed',
    });
    expect(daraja.payouts().filter((payout) => payout.msisdn === msisdn(phone))).toMatchObject([
      { amount: 1000, completed: true, submissions: 1, commandId: 'BusinessPayment' },
    ]);
    expect(await balanceOf(merchant.organization.id, 'KES')).toBe('4000.0000');
  });

  test('Daraja answers 500 after recording: the payout stays on Daraja (the journal knows it may have been taken), its status query settles it, one payout', async () => {
    const merchant = await fundedMerchant(stack, 'KES', '5000');
    const phone = nextNumber();
    daraja.failNext('b2c', '500-after-recording');
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '700', currency: 'KES' })).toMatchObject({
      state: 'completed',
    });
    const payouts = daraja.payouts().filter((payout) => payout.msisdn === msisdn(phone));
    expect(payouts).toHaveLength(1);
    expect(payouts[0]!.submissions).toBe(1);
    expect(await balanceOf(merchant.organization.id, 'KES')).toBe('4300.0000');
  });

  test('a result callback that lies (failed while M-Pesa paid): transaction status says completed, nothing is given back', async () => {
    const merchant = await fundedMerchant(stack, 'KES', '5000');
    const phone = nextNumber();
    daraja.payee(msisdn(phone), { outcome: 'complete', callback: 'lie' });
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '300', currency: 'KES' })).toMatchObject({
      state: 'completed',
    });
    expect(await balanceOf(merchant.organization.id, 'KES')).toBe('4700.0000');
    await expectBalanced(merchant.organization.id);
  });

  test('M-Pesa refuses a payout (recipient not registered): the amount is given back once', async () => {
    const merchant = await fundedMerchant(stack, 'KES', '5000');
    const phone = nextNumber();
    daraja.payee(msisdn(phone), { outcome: 'fail', callback: 'truthful' });
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '200', currency: 'KES' })).toMatchObject({
      state: 'rejected',
    });
    expect(await balanceOf(merchant.organization.id, 'KES')).toBe('5000.0000');
    await expectBalanced(merchant.organization.id);
  });

  test('a reversal of an M-Pesa payment goes through the Reversal API', async () => {
    const merchant = await fundedMerchant(stack, 'KES', '1');
    const phone = nextNumber();
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '500', currency: 'KES' });
    const outcome = await requestOutcome(stack, requestId);
    expect(outcome.status).toBe('successful');
    const receipt = pushesTo(phone)[0]!.receipt!;
    const reversal = await merchant.request('/api/reversals', { form: { collection: String(outcome.collectionId) } });
    expect(reversal.status).toBe(201);
    expect(await stack.ctx.client.workflow.getHandle(`reversal-${reversal.body.id}`).result()).toMatchObject({
      state: 'completed',
    });
    await recordHistory(stack, `reversal-${reversal.body.id}`, 'reversal-operator-completed');
    expect(daraja.reversals()).toContainEqual(
      expect.objectContaining({ transactionId: receipt, amount: 500, completed: true }),
    );
    expect(await balanceOf(merchant.organization.id, 'KES')).toBe('1.0000');
    await expectBalanced(merchant.organization.id);
  });
});
