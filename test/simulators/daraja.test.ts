/**
 * The Daraja simulator's transaction status over HTTP with plain fetch, as the connector asks it:
 * a paid STK push's payment found by its receipt (`TransactionID`) always, by the push's
 * CheckoutRequestID as the `OriginalConversationID` only in the `answered` mode; in the `refused`
 * mode, as for any `OriginalConversationID` it cannot find, the answer is `R000002`. And what it
 * keeps of each push (whether its answer reached the partner, how many callbacks it sent) and the
 * organization's M-PESA statement it exports.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readOperatorStatement } from '../../src/domain/operator-statements';
import { startDarajaSimulator, type DarajaSimulator } from './daraja';

const CREDENTIALS = {
  consumerKey: 'simulator-key',
  consumerSecret: 'simulator-secret',
  shortcode: '174379',
  passkey: 'simulator-passkey',
  initiatorName: 'testapi',
  securityCredential: 'c2VjdXJpdHk=',
};
let daraja: DarajaSimulator;
let receiver: ReturnType<typeof Bun.serve>;
/** What arrived at the result URL, by the ConversationID transaction status answered with. */
const results = new Map<string, { Result: Record<string, unknown> }>();
let sequence = 0;
const msisdn = () => `2547${String(10_000_000 + (sequence += 1)).slice(-8)}`;

beforeAll(async () => {
  receiver = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const body = (await request.json()) as { Result?: Record<string, unknown> };
      // An STK push's callback (Body.stkCallback) is only counted by the simulator here.
      if (body.Result) results.set(String(body.Result.ConversationID), body as { Result: Record<string, unknown> });
      return Response.json({ ResultCode: 0, ResultDesc: 'Accepted' });
    },
  });
  daraja = await startDarajaSimulator({ credentials: CREDENTIALS, decisionDelayMs: 0, callbackDelayMs: 0 });
});

afterAll(async () => {
  await daraja?.stop();
  receiver?.stop(true);
});

const resultUrl = () => `http://127.0.0.1:${receiver.port}/results`;

async function call(path: string, body: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const token = await fetch(`${daraja.url}/oauth/v1/generate?grant_type=client_credentials`, {
    headers: {
      Authorization: `Basic ${Buffer.from(`${CREDENTIALS.consumerKey}:${CREDENTIALS.consumerSecret}`).toString('base64')}`,
    },
  }).then(async (response) => ((await response.json()) as { access_token: string }).access_token);
  const response = await fetch(`${daraja.url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** An STK push the subscriber pays (no callback: nobody listens for one here), and its receipt once paid. */
async function paidPush(): Promise<{ checkoutRequestId: string; receipt: string }> {
  const phone = msisdn();
  daraja.subscriber(phone, { outcome: 'pay', callback: 'none' });
  const timestamp = '20261128120000';
  const pushed = await call('/mpesa/stkpush/v1/processrequest', {
    BusinessShortCode: Number(CREDENTIALS.shortcode),
    Password: Buffer.from(`${CREDENTIALS.shortcode}${CREDENTIALS.passkey}${timestamp}`).toString('base64'),
    Timestamp: timestamp,
    TransactionType: 'CustomerPayBillOnline',
    Amount: 40,
    PartyA: Number(phone),
    PartyB: Number(CREDENTIALS.shortcode),
    PhoneNumber: Number(phone),
    CallBackURL: resultUrl(),
    AccountReference: 'Invoice',
    TransactionDesc: 'Invoice',
  });
  expect(pushed.body).toMatchObject({ ResponseCode: '0' });
  const checkoutRequestId = pushed.body.CheckoutRequestID as string;
  const deadline = Date.now() + 5000;
  for (;;) {
    const receipt = daraja.stkPushes().find((push) => push.checkoutRequestId === checkoutRequestId)?.receipt;
    if (receipt) return { checkoutRequestId, receipt };
    if (Date.now() > deadline) throw new Error('the push was never paid');
    await Bun.sleep(20);
  }
}

/** Asks transaction status and waits for its answer at the result URL. */
async function transactionStatus(keys: {
  TransactionID?: string;
  OriginalConversationID?: string;
}): Promise<Record<string, unknown>> {
  const asked = await call('/mpesa/transactionstatus/v1/query', {
    Initiator: CREDENTIALS.initiatorName,
    SecurityCredential: CREDENTIALS.securityCredential,
    CommandID: 'TransactionStatusQuery',
    ...keys,
    PartyA: CREDENTIALS.shortcode,
    IdentifierType: '4',
    ResultURL: resultUrl(),
    QueueTimeOutURL: resultUrl(),
    Remarks: 'Status check',
    Occasion: '',
  });
  expect(asked.body).toMatchObject({ ResponseCode: '0' });
  const deadline = Date.now() + 5000;
  for (;;) {
    const answer = results.get(asked.body.ConversationID);
    if (answer) return answer.Result;
    if (Date.now() > deadline) throw new Error('transaction status never answered');
    await Bun.sleep(20);
  }
}

const receiptOf = (result: Record<string, unknown>) =>
  (result.ResultParameters as { ResultParameter: { Key: string; Value: unknown }[] }).ResultParameter.find(
    (parameter) => parameter.Key === 'ReceiptNo',
  )?.Value;

describe('transaction status of a paid STK push', () => {
  test('answered mode (the default): found by its receipt and by its CheckoutRequestID', async () => {
    daraja.checkoutRequestLookup('answered');
    const push = await paidPush();
    const byReceipt = await transactionStatus({ TransactionID: push.receipt });
    expect(byReceipt).toMatchObject({ ResultCode: 0 });
    expect(receiptOf(byReceipt)).toBe(push.receipt);
    const byPush = await transactionStatus({ OriginalConversationID: push.checkoutRequestId });
    expect(byPush).toMatchObject({ ResultCode: 0 });
    expect(receiptOf(byPush)).toBe(push.receipt);
  });

  test('refused mode: found by its receipt only; its CheckoutRequestID answers R000002, as any unknown OriginalConversationID does', async () => {
    daraja.checkoutRequestLookup('refused');
    const push = await paidPush();
    const byReceipt = await transactionStatus({ TransactionID: push.receipt });
    expect(byReceipt).toMatchObject({ ResultCode: 0 });
    expect(receiptOf(byReceipt)).toBe(push.receipt);
    expect(await transactionStatus({ OriginalConversationID: push.checkoutRequestId })).toMatchObject({
      ResultCode: 'R000002',
      ResultDesc: 'The OriginalTransactionID is invalid.',
    });
    expect(await transactionStatus({ OriginalConversationID: 'AG_20261128_unknown' })).toMatchObject({
      ResultCode: 'R000002',
    });
    daraja.checkoutRequestLookup('answered');
  });
});

/** Asks the Reversal API to reverse `transactionId`; its synchronous answer. */
const requestReversal = async (transactionId: string, amount: number) =>
  await call('/mpesa/reversal/v1/request', {
    Initiator: CREDENTIALS.initiatorName,
    SecurityCredential: CREDENTIALS.securityCredential,
    CommandID: 'TransactionReversal',
    TransactionID: transactionId,
    Amount: amount,
    ReceiverParty: CREDENTIALS.shortcode,
    RecieverIdentifierType: '11',
    ResultURL: resultUrl(),
    QueueTimeOutURL: resultUrl(),
    Remarks: 'Payment returned',
  });

/** The result that arrived for `conversationId`, waited for until `deadlineMs` from now; null when none came. */
async function resultOf(conversationId: string, deadlineMs = 2000): Promise<Record<string, unknown> | null> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const answer = results.get(conversationId);
    if (answer) return answer.Result;
    if (Date.now() > deadline) return null;
    await Bun.sleep(20);
  }
}

describe('the Reversal API reverses a transaction once', () => {
  test('a second reversal of a reversed transaction is taken and answered R000001 at the ResultURL; nothing more is sent back', async () => {
    const push = await paidPush();
    const first = await requestReversal(push.receipt, 40);
    expect(first.body).toMatchObject({ ResponseCode: '0' });
    expect(await resultOf(first.body.ConversationID)).toMatchObject({ ResultCode: 0 });
    const second = await requestReversal(push.receipt, 40);
    expect(second.body).toMatchObject({ ResponseCode: '0' });
    expect(await resultOf(second.body.ConversationID)).toMatchObject({
      ResultCode: 'R000001',
      ResultDesc: 'The transaction has already been reversed',
      ConversationID: second.body.ConversationID,
    });
    const entries = daraja.reversals().filter((entry) => entry.transactionId === push.receipt);
    expect(entries.map((entry) => [entry.resultCode, entry.completed])).toEqual([
      [0, true],
      ['R000001', false],
    ]);
  });

  test('a transaction reversed outside the API (the organization portal): the first API reversal is answered R000001', async () => {
    const push = await paidPush();
    daraja.reverseOutOfBand(push.receipt);
    const asked = await requestReversal(push.receipt, 40);
    expect(asked.body).toMatchObject({ ResponseCode: '0' });
    expect(await resultOf(asked.body.ConversationID)).toMatchObject({ ResultCode: 'R000001' });
    const entries = daraja.reversals().filter((entry) => entry.transactionId === push.receipt);
    expect(entries.map((entry) => [entry.outOfBand, entry.completed])).toEqual([
      [true, true],
      [false, false],
    ]);
  });

  test('a lost result: the reversal is carried out, its result never arrives, and the next result does', async () => {
    const push = await paidPush();
    daraja.loseResults('reversal');
    const first = await requestReversal(push.receipt, 40);
    expect(first.body).toMatchObject({ ResponseCode: '0' });
    expect(await resultOf(first.body.ConversationID, 500)).toBeNull();
    expect(daraja.reversals().filter((entry) => entry.transactionId === push.receipt && entry.completed)).toHaveLength(
      1,
    );
    // Transaction status finds the reversal by its ConversationID all the same.
    const status = await transactionStatus({ OriginalConversationID: first.body.ConversationID });
    expect(status).toMatchObject({ ResultCode: 0 });
    const again = await requestReversal(push.receipt, 40);
    expect(await resultOf(again.body.ConversationID)).toMatchObject({ ResultCode: 'R000001' });
  });
});

/** Sends an STK push for `phone`, the client giving up after `timeoutMs`: its HTTP status, or null when it gave up. */
async function pushWithin(phone: string, timeoutMs: number): Promise<number | null> {
  const token = await fetch(`${daraja.url}/oauth/v1/generate?grant_type=client_credentials`, {
    headers: {
      Authorization: `Basic ${Buffer.from(`${CREDENTIALS.consumerKey}:${CREDENTIALS.consumerSecret}`).toString('base64')}`,
    },
  }).then(async (response) => ((await response.json()) as { access_token: string }).access_token);
  const timestamp = '20261128120000';
  try {
    const response = await fetch(`${daraja.url}/mpesa/stkpush/v1/processrequest`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
      body: JSON.stringify({
        BusinessShortCode: Number(CREDENTIALS.shortcode),
        Password: Buffer.from(`${CREDENTIALS.shortcode}${CREDENTIALS.passkey}${timestamp}`).toString('base64'),
        Timestamp: timestamp,
        TransactionType: 'CustomerPayBillOnline',
        Amount: 25,
        PartyA: Number(phone),
        PartyB: Number(CREDENTIALS.shortcode),
        PhoneNumber: Number(phone),
        CallBackURL: resultUrl(),
        AccountReference: 'Invoice',
        TransactionDesc: 'Invoice',
      }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.text();
    return response.status;
  } catch {
    return null;
  }
}

/** The push of `phone` once the simulator settled it (decided, its callbacks sent). */
async function settledPush(phone: string) {
  const deadline = Date.now() + 3000;
  for (;;) {
    await daraja.settled();
    const push = daraja.stkPushes().find((each) => each.msisdn === phone);
    if (push?.decided) {
      await Bun.sleep(50);
      return daraja.stkPushes().find((each) => each.msisdn === phone)!;
    }
    if (Date.now() > deadline) throw new Error(`no push of ${phone} was decided`);
    await Bun.sleep(20);
  }
}

const PUSH_PATH = '/mpesa/stkpush/v1/processrequest';

describe("what became of a push's answer and callbacks, and the statement", () => {
  test("an answer the partner received is 'sent'; one replaced by a 500, or ready after the partner gave up, is 'lost'", async () => {
    const [onTime, errored, tooLate] = [msisdn(), msisdn(), msisdn()];
    daraja.subscriber(onTime, { outcome: 'pay', callback: 'truthful' });
    daraja.subscriber(errored, { outcome: 'pay', callback: 'twice' });
    daraja.subscriber(tooLate, { outcome: 'pay', callback: 'none' });
    expect(await pushWithin(onTime, 2000)).toBe(200);
    daraja.late({ method: 'POST', path: PUSH_PATH, holdMs: 0, process: 'before', answer: 'error' });
    expect(await pushWithin(errored, 2000)).toBe(500);
    daraja.late({ method: 'POST', path: PUSH_PATH, holdMs: 400, process: 'before', answer: 'real' });
    expect(await pushWithin(tooLate, 100)).toBeNull();
    const pushes = await Promise.all([onTime, errored, tooLate].map(settledPush));
    expect(pushes.map((push) => [push.charged, push.answer, push.callbacksSent])).toEqual([
      [true, 'sent', 1],
      [true, 'lost', 2],
      [true, 'lost', 0],
    ]);
  });

  test("the M-PESA statement lists a paid push as Paid In and its reversal as Withdrawn, linked to it, as the project's reader reads it", async () => {
    const push = await paidPush();
    const reversed = await requestReversal(push.receipt, 40);
    expect(await resultOf(reversed.body.ConversationID)).toMatchObject({ ResultCode: 0 });
    const reversal = daraja.reversals().find((entry) => entry.transactionId === push.receipt)!;
    const lines = readOperatorStatement('mpesa', daraja.statement());
    const paidIn = lines.find((line) => line.operatorId === push.receipt);
    const sentBack = lines.find((line) => line.operatorId === reversal.receipt);
    expect(paidIn).toMatchObject({ completed: true, direction: 'in', amount: '40.0000', currency: 'KES' });
    expect(sentBack).toMatchObject({ completed: true, direction: 'out', amount: '40.0000', linkedId: push.receipt });
    expect(Math.abs(paidIn!.time!.getTime() - Date.now())).toBeLessThan(60_000);
  });
});
