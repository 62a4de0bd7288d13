/**
 * The M-Pesa Daraja connector alone, against the project's Daraja simulator on loopback: no database,
 * no worker, no Temporal. Daraja answers transaction status later, at our result URL, so the
 * connector keeps its status queries through the core's records port: here that port is the
 * smallest in-memory stand-in of the methods the calls below use (any other read throws), and the
 * test plays the core around it (it records a prompt before the push, keeps the CheckoutRequestID
 * the push's answer gave, and keeps what a callback woke an operation with as its hint, or as a
 * status query's result). Daraja's callbacks reach the connector's own routes served on loopback.
 * The suite covers what the operator receives (the STK push and its password, B2C, reversals,
 * transaction status), the answers read into paid, failed or pending (a record that does not match
 * is never taken as paid), the callback routes, and the final and in-doubt table.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { isDeepStrictEqual } from 'node:util';
import { daraja, DARAJA_CALLBACK_PATHS, type MpesaSettings } from '../../src/network/daraja';
import type {
  Connector,
  NetworkOperation,
  NetworkRecords,
  PaymentPrompt,
  Payout,
  Recorded,
} from '../../src/network/adapter';
import { startDarajaSimulator, type DarajaSimulator } from '../simulators/daraja';
import {
  callbackContextOf,
  depsOf,
  nextSequence,
  outcomeOf,
  payoutOf,
  promptOf,
  serveCallbacks,
  settingsOf,
  startWiretap,
  takenPrompt,
  until,
  withOperatorTimeout,
  wokenBy,
} from './kit';

const CREDENTIALS = {
  consumerKey: 'daraja-key',
  consumerSecret: 'daraja-secret',
  shortcode: '174379',
  passkey: 'daraja-passkey',
  initiatorName: 'testapi',
  securityCredential: 'daraja-credential',
};
const NETWORK = 'Safaricom';

const envOf = (baseUrl: string, changes: Partial<typeof CREDENTIALS> = {}) => {
  const credentials = { ...CREDENTIALS, ...changes };
  return {
    MPESA_BASE_URL: baseUrl,
    MPESA_CONSUMER_KEY: credentials.consumerKey,
    MPESA_CONSUMER_SECRET: credentials.consumerSecret,
    MPESA_SHORTCODE: credentials.shortcode,
    MPESA_PASSKEY: credentials.passkey,
    MPESA_INITIATOR_NAME: credentials.initiatorName,
    MPESA_SECURITY_CREDENTIAL: credentials.securityCredential,
    MPESA_REGISTER_URLS: 'false',
  };
};

type Held = NetworkOperation & { state: 'live' | 'refused'; sentAt: Date | null };

/**
 * The smallest stand-in of the core's records for Daraja's calls here: its operations in memory, with the methods
 * those calls use, each doing what the core's journal does; a read of any other method throws.
 */
function darajaRecords() {
  const held: Held[] = [];
  let ids = 0;
  const live = (network: string) => held.filter((each) => each.network === network && each.state !== 'refused');
  const byId = (id: number) => held.find((each) => each.id === id)!;
  const port = {
    async recordOperation(fields: {
      network: string;
      kind: NetworkOperation['kind'];
      reference: string;
      workflowId: string;
      subject: string;
      operatorReference?: string | null;
      phoneNumber?: string | null;
      amount?: string | null;
    }) {
      const existing = live(fields.network).find((each) => each.reference === fields.reference);
      if (existing) {
        existing.operatorReference ??= fields.operatorReference ?? null;
        return { ...existing, inserted: false };
      }
      ids += 1;
      const operation: Held = {
        id: ids,
        network: fields.network,
        kind: fields.kind,
        reference: fields.reference,
        operatorReference: fields.operatorReference ?? null,
        workflowId: fields.workflowId,
        subject: fields.subject,
        phoneNumber: fields.phoneNumber ?? null,
        amount: fields.amount ?? null,
        remoteTransactionId: null,
        hint: null,
        result: null,
        created: new Date(),
        state: 'live',
        sentAt: null,
      };
      held.push(operation);
      return { ...operation, inserted: true };
    },
    findOperation: async (network: string, reference: string) =>
      live(network).find((each) => each.reference === reference),
    findOperationByOperatorReference: async (network: string | readonly string[], operatorReference: string) =>
      held
        .filter((each) => (typeof network === 'string' ? [network] : network).includes(each.network))
        .filter((each) => each.operatorReference === operatorReference)
        .at(-1),
    unansweredOperationAbout: async (network: string, kind: NetworkOperation['kind'], subject: string) =>
      live(network)
        .filter((each) => each.kind === kind && each.subject === subject && each.operatorReference === null)
        .at(-1),
    operatorReferenceOf: (operation: NetworkOperation) =>
      operation.operatorReference === null || operation.operatorReference === operation.reference
        ? null
        : operation.operatorReference,
    async setOperatorReference(id: number, operatorReference: string) {
      byId(id).operatorReference ??= operatorReference;
    },
    async markOperationSent(id: number) {
      byId(id).sentAt = new Date();
    },
    async claimResend(id: number, windowSeconds: number) {
      const operation = byId(id);
      if ((operation.sentAt ?? operation.created).getTime() > Date.now() - windowSeconds * 1000) return false;
      operation.sentAt = new Date();
      return true;
    },
    async forgetOperation(id: number) {
      const index = held.findIndex((each) => each.id === id && each.operatorReference === null);
      if (index >= 0) held.splice(index, 1);
    },
    async latestStatusQuery(network: string, subject: string) {
      const queries = live(network).filter((each) => each.kind === 'status_query' && each.subject === subject);
      const last = queries.at(-1);
      return last && { ...last, newestAnswer: queries.filter((each) => each.result !== null).at(-1)?.result ?? null };
    },
    async settlePrompt(id: number, outcome: 'failed') {
      const operation = byId(id);
      if (operation.kind === 'prompt') operation.result ??= { status: outcome };
    },
    async markPromptPaid(id: number, seenHint: Record<string, unknown> | null) {
      const operation = byId(id);
      if (operation.result?.status === 'paid') return true;
      if (operation.result !== null || !isDeepStrictEqual(operation.hint, seenHint)) return false;
      operation.result = { status: 'paid' };
      return true;
    },
    async settleRemoteTransactionId(id: number, candidate: string) {
      const operation = byId(id);
      operation.remoteTransactionId ??= candidate;
      return operation.remoteTransactionId;
    },
    awaitsReceipt: (operation: NetworkOperation) =>
      operation.kind === 'prompt' && operation.remoteTransactionId === null && operation.result?.status === 'paid',
    receiptHeldElsewhere: async (network: string, receipt: string, operationId: number) =>
      live(network).some(
        (each) => each.kind === 'prompt' && each.remoteTransactionId === receipt && each.id !== operationId,
      ),
    // The requests behind the prompts here are open, and none of their receipts is named for another push.
    promptRequestOpen: async () => true,
    pushNamingReceipt: async () => null,
    claimUnanswered: async () => undefined,
  };
  const records = new Proxy(port, {
    get(target, property) {
      if (Object.hasOwn(target, property)) return target[property as keyof typeof target];
      throw new Error(`the Daraja suite's records have no ${String(property)}`);
    },
  }) as unknown as NetworkRecords;
  return {
    records,
    held,
    byId,
    /** What the core does with what a callback woke an operation with: the hint kept, or a status query's answer. */
    keep(operationId: number, said: unknown, asResult: boolean) {
      const operation = byId(operationId);
      if (asResult) operation.result ??= said as Record<string, unknown>;
      else operation.hint = said as Record<string, unknown> | null;
    },
  };
}

let simulator: DarajaSimulator;
let wiretap: ReturnType<typeof startWiretap>;
let journal: ReturnType<typeof darajaRecords>;
let callbacks: ReturnType<typeof serveCallbacks<MpesaSettings | null>>;
let callbackContext: ReturnType<typeof callbackContextOf<MpesaSettings | null>>;
let connector: Omit<Connector, 'name' | 'inFlight'>;
let tapped: Omit<Connector, 'name' | 'inFlight'>;

/**
 * What the connector is built with: the stand-in records, and a status poll of a tenth of a second, so that a status
 * query Daraja has not answered yet is asked again within the test's own polling.
 */
const darajaDeps = () => ({ ...depsOf(callbacks.url, journal.records), statusPollSeconds: 0.1 });
/** A fresh Safaricom number (`+25470` and seven digits). */
const safaricom = () => `+25470${String(nextSequence()).padStart(7, '0')}`;
const msisdn = (e164: string) => e164.slice(1);
const prompt = (fields: { phoneNumber?: string; amount?: string } = {}) =>
  promptOf({ network: NETWORK, currency: 'KES', phoneNumber: safaricom(), amount: '1500.0000', ...fields });
const payout = (
  fields: {
    phoneNumber?: string;
    amount?: string;
    kind?: Payout['kind'];
    originalTransactionId?: string;
    recorded?: Recorded;
  } = {},
) => payoutOf({ network: NETWORK, currency: 'KES', phoneNumber: safaricom(), amount: '2500.0000', ...fields });
const password = (timestamp: string) =>
  Buffer.from(`${CREDENTIALS.shortcode}${CREDENTIALS.passkey}${timestamp}`).toString('base64');

/**
 * A push as the core makes it: the prompt recorded first, then sent; an answer that named the push keeps its
 * CheckoutRequestID (and one that did not, our own reference) as the operation's operator reference.
 */
async function pushed(asked: PaymentPrompt, through = connector) {
  const operation = await journal.records.recordOperation({
    network: NETWORK,
    kind: 'prompt',
    reference: asked.promptReference,
    workflowId: asked.workflowId,
    subject: asked.promptReference,
    phoneNumber: asked.phoneNumber,
    amount: asked.amount,
  });
  const result = await through.requestPayment(asked);
  if (result.accepted && result.confirm)
    await journal.records.setOperatorReference(operation.id, result.confirm.operatorReference);
  return { operation: journal.byId(operation.id), result };
}
/** Asks the prompt's status until it is no longer pending (the answers Daraja gives at the result URL come later). */
const settledStatus = (asked: PaymentPrompt, checkoutRequestId: string) =>
  until(`${asked.promptReference} to settle`, async () => {
    const status = await connector.promptStatus(takenPrompt(asked, checkoutRequestId));
    return status.status === 'pending' ? undefined : status;
  });
const settledPayout = (paid: Payout) =>
  until(`${paid.reference} to settle`, async () => {
    const status = await connector.payoutStatus(paid);
    return status.status === 'pending' ? undefined : status;
  });
/** A push the subscriber paid: its prompt, its CheckoutRequestID and its receipt. */
async function paidPush(): Promise<{ asked: PaymentPrompt; checkoutRequestId: string; receipt: string }> {
  const asked = prompt();
  const { result } = await pushed(asked);
  const checkoutRequestId = (result as { confirm: { operatorReference: string } }).confirm.operatorReference;
  const push = await until('the subscriber to pay', () =>
    simulator.stkPushes().find((each) => each.checkoutRequestId === checkoutRequestId && each.receipt !== null),
  );
  return { asked, checkoutRequestId, receipt: push.receipt! };
}

beforeAll(async () => {
  simulator = await startDarajaSimulator({ credentials: CREDENTIALS, decisionDelayMs: 20, callbackDelayMs: 5 });
  wiretap = startWiretap(simulator.url);
  journal = darajaRecords();
  const settings = settingsOf(daraja, envOf(simulator.url));
  callbackContext = callbackContextOf<MpesaSettings | null>(settings, {
    records: journal.records,
    onWake: ({ operation, said, asResult }) => journal.keep(operation.id, said, asResult),
  });
  callbacks = serveCallbacks(daraja.callbacks!.routes, callbackContext.context);
  connector = daraja.create(settings, darajaDeps());
  tapped = daraja.create(settingsOf(daraja, envOf(wiretap.url)), darajaDeps());
});

afterAll(async () => {
  await simulator?.stop();
  wiretap?.stop();
  callbacks?.stop();
});

describe('request building', () => {
  test("a prompt is an STK push with the shortcode, the password of its timestamp, whole shillings, the number without `+`, our callback URL and the account reference Daraja's 12 characters allow", async () => {
    const asked = { ...prompt({ amount: '1500.0000' }), reference: 'Invoice #2024-001/B' };
    const { result } = await pushed(asked, tapped);
    const [token] = wiretap.seen('/oauth/v1/generate');
    expect(token).toMatchObject({ method: 'GET' });
    expect(token!.query.get('grant_type')).toBe('client_credentials');
    expect(token!.headers.authorization).toBe(
      `Basic ${Buffer.from(`${CREDENTIALS.consumerKey}:${CREDENTIALS.consumerSecret}`).toString('base64')}`,
    );
    const [sent] = wiretap.seen('/mpesa/stkpush/v1/processrequest');
    expect(sent!.headers.authorization).toMatch(/^Bearer \S+$/);
    const body = sent!.json as Record<string, unknown>;
    // Kenya's time (EAT, UTC+3), YYYYMMDDHHmmss.
    const stamp = String(body.Timestamp);
    expect(stamp).toMatch(/^\d{14}$/);
    const at = Date.UTC(
      +stamp.slice(0, 4),
      +stamp.slice(4, 6) - 1,
      +stamp.slice(6, 8),
      +stamp.slice(8, 10) - 3,
      +stamp.slice(10, 12),
      +stamp.slice(12, 14),
    );
    expect(Math.abs(at - Date.now())).toBeLessThan(5000);
    expect(body).toEqual({
      BusinessShortCode: Number(CREDENTIALS.shortcode),
      Password: password(body.Timestamp as string),
      Timestamp: body.Timestamp,
      TransactionType: 'CustomerPayBillOnline',
      Amount: 1500,
      PartyA: Number(msisdn(asked.phoneNumber)),
      PartyB: Number(CREDENTIALS.shortcode),
      PhoneNumber: Number(msisdn(asked.phoneNumber)),
      CallBackURL: `${callbacks.url}${DARAJA_CALLBACK_PATHS.stkResult}`,
      AccountReference: 'Invoice 2024',
      TransactionDesc: asked.promptReference.slice(0, 13),
    });
    const [push] = simulator.stkPushes().filter((each) => each.msisdn === msisdn(asked.phoneNumber));
    expect(result).toEqual({ accepted: true, confirm: { operatorReference: push!.checkoutRequestId } });
  });

  test('the STK push query names the push by its CheckoutRequestID, with a password of its own timestamp', async () => {
    const asked = prompt();
    const { result } = await pushed(asked, tapped);
    const checkoutRequestId = (result as { confirm: { operatorReference: string } }).confirm.operatorReference;
    await tapped.promptStatus(takenPrompt(asked, checkoutRequestId));
    const body = wiretap.seen('/mpesa/stkpushquery/v1/query').at(-1)!.json as Record<string, unknown>;
    expect(body).toEqual({
      BusinessShortCode: Number(CREDENTIALS.shortcode),
      Password: password(body.Timestamp as string),
      Timestamp: body.Timestamp,
      CheckoutRequestID: checkoutRequestId,
    });
  });

  test('a payout is a B2C BusinessPayment under an OriginatorConversationID derived from its reference, with our result and time-out URLs', async () => {
    const paid = payout();
    expect(await tapped.sendMoney(paid)).toEqual({ status: 'pending', remoteTransactionId: null });
    const body = wiretap.seen('/mpesa/b2c/v3/paymentrequest').at(-1)!.json as Record<string, unknown>;
    expect(body).toEqual({
      OriginatorConversationID: expect.stringMatching(new RegExp(`^${paid.reference}-[0-9a-f]{10}$`)),
      InitiatorName: CREDENTIALS.initiatorName,
      SecurityCredential: CREDENTIALS.securityCredential,
      CommandID: 'BusinessPayment',
      Amount: 2500,
      PartyA: CREDENTIALS.shortcode,
      PartyB: msisdn(paid.phoneNumber),
      Remarks: 'Payment',
      QueueTimeOutURL: `${callbacks.url}${DARAJA_CALLBACK_PATHS.timeout}`,
      ResultURL: `${callbacks.url}${DARAJA_CALLBACK_PATHS.result}`,
      Occassion: paid.reference,
    });
    // The ConversationID of Daraja's answer is kept with the payout, for its result and status to find it.
    const operation = journal.held.find((each) => each.reference === body.OriginatorConversationID);
    const [sent] = simulator
      .payouts()
      .filter((each) => each.originatorConversationId === body.OriginatorConversationID);
    expect(operation).toMatchObject({ kind: 'payout', operatorReference: sent!.conversationId });
  });

  test("a reversal of an M-Pesa receipt goes to the Reversal API; transaction status asks about the reversal by Daraja's ids for it", async () => {
    const { receipt } = await paidPush();
    const returned = payout({ kind: 'reversal', amount: '1500', originalTransactionId: receipt });
    expect(await tapped.sendMoney(returned)).toEqual({ status: 'pending', remoteTransactionId: null });
    expect(wiretap.seen('/mpesa/reversal/v1/request').at(-1)!.json).toEqual({
      Initiator: CREDENTIALS.initiatorName,
      SecurityCredential: CREDENTIALS.securityCredential,
      CommandID: 'TransactionReversal',
      TransactionID: receipt,
      Amount: 1500,
      ReceiverParty: CREDENTIALS.shortcode,
      RecieverIdentifierType: '11',
      ResultURL: `${callbacks.url}${DARAJA_CALLBACK_PATHS.result}`,
      QueueTimeOutURL: `${callbacks.url}${DARAJA_CALLBACK_PATHS.timeout}`,
      Remarks: 'Payment returned',
    });
    const status = await until('the reversal to settle', async () => {
      const answer = await tapped.payoutStatus(returned);
      return answer.status === 'pending' ? undefined : answer;
    });
    const [reversal] = simulator.reversals().filter((each) => each.transactionId === receipt);
    expect(status).toEqual({ status: 'completed', remoteTransactionId: reversal!.receipt! });
    // Asked by the ConversationID Daraja's answer gave the reversal (and by its own transaction once its result names
    // it).
    expect(wiretap.seen('/mpesa/transactionstatus/v1/query').at(-1)!.json).toMatchObject({
      Initiator: CREDENTIALS.initiatorName,
      SecurityCredential: CREDENTIALS.securityCredential,
      CommandID: 'TransactionStatusQuery',
      OriginalConversationID: reversal!.conversationId,
      PartyA: CREDENTIALS.shortcode,
      IdentifierType: '4',
      ResultURL: `${callbacks.url}${DARAJA_CALLBACK_PATHS.result}`,
      QueueTimeOutURL: `${callbacks.url}${DARAJA_CALLBACK_PATHS.timeout}`,
      Remarks: 'Status check',
      // The query's own reference, recorded before it was sent: a result that comes before this answer finds it.
      Occasion: expect.stringMatching(/^status:[0-9a-f-]{36}$/),
    });
  });
});

describe('answer reading', () => {
  test('a paid push is paid under the receipt transaction status states for the receipt its callback named', async () => {
    const { asked, checkoutRequestId, receipt } = await paidPush();
    const status = await settledStatus(asked, checkoutRequestId);
    expect(status).toMatchObject({ status: 'paid', remoteTransactionId: receipt });
    const operation = journal.held.find((each) => each.reference === asked.promptReference)!;
    expect(operation.remoteTransactionId).toBe(receipt);
    expect(journal.held.filter((each) => each.subject === `stk-receipt:${receipt}`)).toHaveLength(1);
  });

  test('with no callback, the push itself is asked by its CheckoutRequestID, and paid under the receipt stated for it', async () => {
    const asked = prompt();
    simulator.subscriber(msisdn(asked.phoneNumber), { callback: 'none' });
    const { result } = await pushed(asked);
    const checkoutRequestId = (result as { confirm: { operatorReference: string } }).confirm.operatorReference;
    const push = await until('the subscriber to pay', () =>
      simulator.stkPushes().find((each) => each.checkoutRequestId === checkoutRequestId && each.receipt !== null),
    );
    expect(await settledStatus(asked, checkoutRequestId)).toMatchObject({
      status: 'paid',
      remoteTransactionId: push.receipt!,
    });
    expect(journal.held.filter((each) => each.subject === `stk-push:${checkoutRequestId}`)).toHaveLength(1);
  });

  test.each([
    { outcome: 'cancel', words: 'The subscriber cancelled the payment prompt.' },
    { outcome: 'insufficient', words: "The subscriber's M-Pesa balance is not enough." },
    { outcome: 'unreachable', words: "The subscriber's phone could not be reached." },
    { outcome: 'wrong-pin', words: 'The subscriber entered a wrong M-Pesa PIN.' },
  ] as const)('STK result $outcome is failed: "$words"', async ({ outcome, words }) => {
    const asked = prompt();
    simulator.subscriber(msisdn(asked.phoneNumber), { outcome, callback: 'none' });
    const { operation, result } = await pushed(asked);
    const checkoutRequestId = (result as { confirm: { operatorReference: string } }).confirm.operatorReference;
    expect(await settledStatus(asked, checkoutRequestId)).toEqual({ status: 'failed', error: words });
    expect(operation.result).toEqual({ status: 'failed' });
  });

  test('a push still being processed is pending', async () => {
    const asked = prompt();
    simulator.subscriber(msisdn(asked.phoneNumber), { decideAfterMs: 60_000, callback: 'none' });
    const { result } = await pushed(asked);
    const checkoutRequestId = (result as { confirm: { operatorReference: string } }).confirm.operatorReference;
    expect(await connector.promptStatus(takenPrompt(asked, checkoutRequestId))).toEqual({ status: 'pending' });
  });

  test('a push whose answer was lost is pending while its callback may still name it, then failed; a prompt never recorded never reached M-Pesa', async () => {
    const asked = prompt();
    simulator.failNext('stkpush', '500-after-recording');
    const { operation, result } = await pushed(asked);
    expect(result).toEqual({ accepted: true, confirm: { operatorReference: asked.promptReference } });
    expect(await connector.promptStatus(takenPrompt(asked, asked.promptReference))).toEqual({ status: 'pending' });
    operation.created = new Date(Date.now() - 121_000);
    expect(await connector.promptStatus(takenPrompt(asked, asked.promptReference))).toEqual({
      status: 'failed',
      error: 'M-Pesa did not confirm the prompt.',
    });
    const unrecorded = prompt();
    expect(await connector.promptStatus(takenPrompt(unrecorded, 'ws_CO_unknown'))).toEqual({
      status: 'failed',
      error: 'The prompt never reached M-Pesa.',
    });
  });

  test('a reported payment is confirmed only by transaction status: one M-Pesa does not know, or of another amount, is refused', async () => {
    const { asked, receipt } = await paidPush();
    const reported = (remoteTransactionId: string, amount: string) =>
      until(`the report of ${remoteTransactionId}`, async () => {
        const status = await connector.reportedPaymentStatus({
          network: asked.network,
          remoteTransactionId,
          amount,
          currency: 'KES',
          phoneNumber: asked.phoneNumber,
          workflowId: `collection-${remoteTransactionId}`,
        });
        return status.status === 'pending' ? undefined : status;
      });
    expect(await reported(receipt, '1600')).toEqual({
      status: 'refused',
      reason: 'M-Pesa reports the transaction Completed for 1500 KES.',
    });
    expect(await reported('QQQ0000000', '1500')).toEqual({
      status: 'refused',
      reason: 'M-Pesa does not know this transaction (SFC_IC0003: The operator does not exist.).',
    });
  });

  test("a B2C: completed under its receipt once transaction status states it; a failed one rejected in Daraja's words, our float short being the route's fault", async () => {
    const paid = payout();
    await connector.sendMoney(paid);
    const completed = await settledPayout(paid);
    const [sent] = simulator.payouts().filter((each) => each.msisdn === msisdn(paid.phoneNumber));
    expect(completed).toEqual({ status: 'completed', remoteTransactionId: sent!.receipt! });

    const refused = payout();
    simulator.payee(msisdn(refused.phoneNumber), { outcome: 'fail' });
    await connector.sendMoney(refused);
    expect(await settledPayout(refused)).toEqual({
      status: 'rejected',
      error:
        "M-Pesa did not pay it out: Credit Party customer type (Unregistered or Registered Customer) can't be " +
        'supported by the service..',
      remoteTransactionId: expect.any(String),
    });

    // Daraja's B2C result 1: our utility account held too little (kept as the payout's hint, as the core keeps it).
    const short = payout();
    simulator.payee(msisdn(short.phoneNumber), { outcome: 'fail', callback: 'none' });
    await connector.sendMoney(short);
    const operation = await until('the short payout to be recorded', () =>
      journal.held.find((each) => each.kind === 'payout' && each.reference.startsWith(`${short.reference}-`)),
    );
    journal.keep(
      operation.id,
      { Result: { ResultCode: 1, ResultDesc: 'The balance is insufficient for the transaction.' } },
      false,
    );
    expect(await settledPayout(short)).toEqual({
      status: 'rejected',
      error: 'M-Pesa did not pay it out: The balance is insufficient for the transaction..',
      remoteTransactionId: expect.any(String),
      routeFault: true,
    });
  });

  test('a reversal Daraja answers "already reversed" (R000001) is completed: the subscriber has the money back', async () => {
    const { receipt } = await paidPush();
    simulator.reverseOutOfBand(receipt);
    const returned = payout({ kind: 'reversal', amount: '1500', originalTransactionId: receipt });
    await connector.sendMoney(returned);
    expect(await settledPayout(returned)).toEqual({
      status: 'completed',
      remoteTransactionId: `reversal:${returned.reference}`,
    });
  });

  test('a reversal sent by B2C (its collection had no receipt yet) stays a B2C one once the collection is named by its receipt: never sent again by the Reversal API', async () => {
    const { checkoutRequestId, receipt } = await paidPush();
    const first = payout({ kind: 'reversal', amount: '1500', originalTransactionId: checkoutRequestId });
    expect(await connector.sendMoney(first)).toEqual({ status: 'pending', remoteTransactionId: null });
    // The collection is renamed by its receipt; the send is retried, then its status asked, under that receipt.
    const renamed = { ...first, originalTransactionId: receipt };
    expect(await connector.sendMoney(renamed)).toEqual({ status: 'pending', remoteTransactionId: null });
    expect(await settledPayout(renamed)).toMatchObject({ status: 'completed' });
    expect(simulator.reversals().filter((each) => each.transactionId === receipt)).toEqual([]);
    // One B2C payout, paid once (a repeat of its OriginatorConversationID while M-Pesa did not know it yet is
    // deduplicated by Daraja).
    expect(simulator.payouts().filter((each) => each.msisdn === msisdn(first.phoneNumber))).toMatchObject([
      { amount: 1500, completed: true },
    ]);
  });

  test('a reversal the core recorded but this connector never sent (the worker stopped between): pending within its window, then sent once by the Reversal API', async () => {
    const { receipt } = await paidPush();
    const windowSeconds = darajaDeps().inFlightWindowSeconds;
    const recordedNow = payout({
      kind: 'reversal',
      amount: '1500',
      originalTransactionId: receipt,
      recorded: { operatorReference: null, at: new Date() },
    });
    expect(await connector.payoutStatus(recordedNow)).toEqual({ status: 'pending', remoteTransactionId: null });
    expect(simulator.reversals().filter((each) => each.transactionId === receipt)).toEqual([]);
    const recordedLongAgo = {
      ...recordedNow,
      recorded: { operatorReference: null, at: new Date(Date.now() - (windowSeconds + 1) * 1000) },
    };
    expect(await settledPayout(recordedLongAgo)).toMatchObject({ status: 'completed' });
    expect(simulator.reversals().filter((each) => each.transactionId === receipt)).toMatchObject([
      { amount: 1500, completed: true },
    ]);
  });
});

describe('callbacks', () => {
  const wokenAbout = (reference: string) =>
    callbackContext.woken.filter((each) => each.operation.reference === reference);

  test('the STK callback wakes the push its CheckoutRequestID names, with what Daraja said', async () => {
    const { asked, checkoutRequestId } = await paidPush();
    const call = await until('the STK callback', () => wokenAbout(asked.promptReference)[0]);
    expect(call).toMatchObject({
      asResult: false,
      said: { Body: { stkCallback: { CheckoutRequestID: checkoutRequestId, ResultCode: 0 } } },
    });
    // Answered once the wake is done: the delivery is listed a moment after.
    const delivered = await until('the callback to be answered', () =>
      callbacks.deliveries.find(
        (each) =>
          each.path === DARAJA_CALLBACK_PATHS.stkResult &&
          (each.body as { Body?: { stkCallback?: { CheckoutRequestID?: string } } }).Body?.stkCallback
            ?.CheckoutRequestID === checkoutRequestId,
      ),
    );
    expect(delivered).toMatchObject({
      status: 200,
      answer: { ResultCode: 0, ResultDesc: 'Accepted' },
    });
  });

  test('a callback that lies wakes the push, and the STK push query still says what happened', async () => {
    const asked = prompt();
    simulator.subscriber(msisdn(asked.phoneNumber), { outcome: 'cancel', callback: 'lie' });
    const { result } = await pushed(asked);
    const checkoutRequestId = (result as { confirm: { operatorReference: string } }).confirm.operatorReference;
    const call = await until('the lying callback', () => wokenAbout(asked.promptReference)[0]);
    expect(call.said).toMatchObject({ Body: { stkCallback: { ResultCode: 0 } } });
    expect(await settledStatus(asked, checkoutRequestId)).toEqual({
      status: 'failed',
      error: 'The subscriber cancelled the payment prompt.',
    });
  });

  test('an STK callback naming no push of ours wakes nothing; a payment it claims is only reported for confirmation', async () => {
    const declined = {
      Body: {
        stkCallback: { CheckoutRequestID: 'ws_CO_nobody', ResultCode: 1032, ResultDesc: 'Request cancelled by user' },
      },
    };
    expect(await callbacks.post(DARAJA_CALLBACK_PATHS.stkResult, declined)).toEqual({
      status: 200,
      body: { ResultCode: 0, ResultDesc: 'Accepted' },
    });
    const claimed = {
      Body: {
        stkCallback: {
          CheckoutRequestID: 'ws_CO_nobody_paid',
          ResultCode: 0,
          CallbackMetadata: {
            Item: [
              { Name: 'Amount', Value: 700 },
              { Name: 'MpesaReceiptNumber', Value: 'RKT0000NOB' },
              { Name: 'PhoneNumber', Value: 254700000001 },
            ],
          },
        },
      },
    };
    expect((await callbacks.post(DARAJA_CALLBACK_PATHS.stkResult, claimed)).status).toBe(200);
    expect([...wokenBy(callbackContext.woken, declined), ...wokenBy(callbackContext.woken, claimed)]).toEqual([]);
    expect(callbackContext.reported.find((each) => each.remoteTransactionId === 'RKT0000NOB')).toMatchObject({
      network: NETWORK,
      remoteTransactionId: 'RKT0000NOB',
      phoneNumber: '+254700000001',
      amount: '700',
      promptReference: null,
      namedOnly: true,
    });
  });

  test("a body that is not Daraja's is refused (400) and wakes nothing", async () => {
    const unnamed = { Body: { stkCallback: { ResultCode: 0 } } };
    const lowercase = { result: {} };
    expect((await callbacks.post(DARAJA_CALLBACK_PATHS.stkResult, unnamed)).status).toBe(400);
    expect((await callbacks.post(DARAJA_CALLBACK_PATHS.result, lowercase)).status).toBe(400);
    expect([...wokenBy(callbackContext.woken, unnamed), ...wokenBy(callbackContext.woken, lowercase)]).toEqual([]);
  });

  test("a B2C result wakes its payout as a hint; a transaction status answer is kept as its query's result; a result for nobody wakes nothing", async () => {
    const paid = payout();
    await connector.sendMoney(paid);
    const operation = journal.held.find(
      (each) => each.kind === 'payout' && each.reference.startsWith(`${paid.reference}-`),
    )!;
    const hint = await until('the B2C result', () =>
      callbackContext.woken.find((each) => each.operation.id === operation.id),
    );
    expect(hint).toMatchObject({ asResult: false, said: { Result: { ResultCode: 0 } } });
    await connector.payoutStatus(paid);
    const query = journal.held.find((each) => each.kind === 'status_query' && each.subject === operation.reference)!;
    const answer = await until('the status answer', () =>
      callbackContext.woken.find((each) => each.operation.id === query.id),
    );
    expect(answer).toMatchObject({ asResult: true, said: { Result: { ResultCode: 0 } } });
    const nobody = { Result: { ResultCode: 0, ConversationID: 'AG_nobody', OriginatorConversationID: 'nobody' } };
    expect(await callbacks.post(DARAJA_CALLBACK_PATHS.result, nobody)).toEqual({
      status: 200,
      body: { ResultCode: 0, ResultDesc: 'Accepted' },
    });
    expect(wokenBy(callbackContext.woken, nobody)).toEqual([]);
  });

  test("a queue time-out wakes the operation it names, and a status query's with nothing said", async () => {
    const paid = payout();
    simulator.payee(msisdn(paid.phoneNumber), { callback: 'none' });
    await connector.sendMoney(paid);
    const operation = journal.held.find(
      (each) => each.kind === 'payout' && each.reference.startsWith(`${paid.reference}-`),
    )!;
    // Transaction status asked about the payout: a status query of its own, under the ConversationID Daraja gave it.
    await connector.payoutStatus(paid);
    const query = journal.held.find((each) => each.kind === 'status_query' && each.subject === operation.reference)!;
    for (const [named, said] of [
      [operation, 'the time-out'],
      [query, null],
    ] as const) {
      const timedOut = { Result: { ResultCode: 1, ConversationID: named.operatorReference } };
      expect((await callbacks.post(DARAJA_CALLBACK_PATHS.timeout, timedOut)).status).toBe(200);
      const hints = callbackContext.woken.filter((each) => each.operation.id === named.id && !each.asResult);
      expect(hints.map((each) => each.said)).toEqual([said === null ? null : timedOut]);
    }
  });

  test('a paybill validation: one that cannot be read is rejected (C2B00016), one of a fraction of a shilling too (C2B00013), one nobody decides is accepted; a confirmation is reported for confirmation', async () => {
    const payment = {
      TransactionType: 'Pay Bill',
      TransID: 'RKTQDM7W6S',
      TransAmount: '10',
      BusinessShortCode: CREDENTIALS.shortcode,
      BillRefNumber: '3-901',
      MSISDN: '254708374149',
    };
    const validate = (body: unknown) => callbacks.post(DARAJA_CALLBACK_PATHS.validation, body);
    expect(await validate({ ...payment, TransID: undefined })).toEqual({
      status: 200,
      body: { ResultCode: 'C2B00016', ResultDesc: 'Rejected' },
    });
    expect(await validate({ ...payment, TransAmount: '10.50' })).toEqual({
      status: 200,
      body: { ResultCode: 'C2B00013', ResultDesc: 'Rejected' },
    });
    expect(await validate(payment)).toEqual({ status: 200, body: { ResultCode: '0', ResultDesc: 'Accepted' } });
    expect(await callbacks.post(DARAJA_CALLBACK_PATHS.confirmation, payment)).toEqual({
      status: 200,
      body: { ResultCode: 0, ResultDesc: 'Accepted' },
    });
    expect(callbackContext.reported.find((each) => each.remoteTransactionId === 'RKTQDM7W6S')).toMatchObject({
      network: NETWORK,
      remoteTransactionId: 'RKTQDM7W6S',
      phoneNumber: '+254708374149',
      amount: '10',
      reference: '3-901',
      namedOnly: true,
    });
  });
});

/** What the core reads as "in doubt": the call threw. */
const IN_DOUBT = 'in doubt (thrown)';
type Row = { answer: string; send: () => Promise<unknown>; expected: object | typeof IN_DOUBT };
/** A push that may have gone out: taken under our own reference, never pushed again for the attempt. */
const TAKEN_UNDER_OUR_REFERENCE = { accepted: true, confirm: { operatorReference: expect.stringMatching(/^req-/) } };

describe('final and in-doubt table', () => {
  const push = (asked = prompt()) => pushed(asked).then(({ result }) => result);
  const rows: Row[] = [
    {
      answer: 'STK push accepted (ResponseCode 0): taken under its CheckoutRequestID',
      send: () => push(),
      expected: { accepted: true, confirm: { operatorReference: expect.stringMatching(/^ws_CO_/) } },
    },
    {
      answer: '"Unable to lock subscriber" (500): refused, another prompt is open on the phone',
      send: async () => {
        const phoneNumber = safaricom();
        simulator.subscriber(msisdn(phoneNumber), { decideAfterMs: 60_000, callback: 'none' });
        await push(prompt({ phoneNumber }));
        return await push(prompt({ phoneNumber }));
      },
      expected: { accepted: false, error: 'Another M-Pesa prompt is still open on this phone.' },
    },
    {
      answer: "Bad Request (400, a number that is not Safaricom's): refused",
      send: () => push(prompt({ phoneNumber: '+254000000001' })),
      expected: { accepted: false, error: 'M-Pesa refused the prompt (400.002.02: Bad Request - Invalid PartyA).' },
    },
    {
      answer: '"Wrong credentials" (500, a passkey Daraja does not take): refused',
      send: () =>
        daraja
          .create(settingsOf(daraja, envOf(simulator.url, { passkey: 'wrong' })), darajaDeps())
          .requestPayment(prompt()),
      expected: { accepted: false, error: 'M-Pesa refused the prompt (500.001.1001: Wrong credentials).' },
    },
    {
      answer: 'a push answered 500 after Daraja took it: taken under our reference, never pushed again',
      send: async () => {
        await push();
        simulator.failNext('stkpush', '500-after-recording');
        return await push();
      },
      expected: TAKEN_UNDER_OUR_REFERENCE,
    },
    {
      answer: 'a push with no answer within OPERATOR_TIMEOUT_MS: taken under our reference',
      send: async () => {
        await push();
        simulator.late({
          method: 'POST',
          path: '/mpesa/stkpush/v1/processrequest',
          holdMs: 400,
          process: 'before',
          answer: 'real',
        });
        try {
          return await withOperatorTimeout(100, () => push());
        } finally {
          await simulator.settled();
        }
      },
      expected: TAKEN_UNDER_OUR_REFERENCE,
    },
    {
      answer: 'a push whose connection is refused: nothing sent, thrown',
      send: async () => {
        await push();
        await simulator.outage('refused');
        try {
          return await push();
        } finally {
          await simulator.outage('none');
        }
      },
      expected: IN_DOUBT,
    },
    {
      answer: 'a token Daraja refuses (400, a wrong consumer secret): thrown, nothing pushed',
      send: () =>
        daraja
          .create(settingsOf(daraja, envOf(simulator.url, { consumerSecret: 'wrong' })), darajaDeps())
          .requestPayment(prompt()),
      expected: IN_DOUBT,
    },
    {
      answer: "the STK push query's own 500: thrown",
      send: async () => {
        const asked = prompt();
        const { result } = await pushed(asked);
        const checkoutRequestId = (result as { confirm: { operatorReference: string } }).confirm.operatorReference;
        await simulator.outage('error');
        try {
          return await connector.promptStatus(takenPrompt(asked, checkoutRequestId));
        } finally {
          await simulator.outage('none');
        }
      },
      expected: IN_DOUBT,
    },
    {
      answer: 'B2C accepted: pending',
      send: () => connector.sendMoney(payout()),
      expected: { status: 'pending', remoteTransactionId: null },
    },
    {
      answer:
        'a B2C whose answer was lost, sent again ("Duplicate OriginatorConversationID"): pending, never paid twice',
      send: async () => {
        const paid = payout();
        simulator.failNext('b2c', '500-after-recording');
        await outcomeOf(() => connector.sendMoney(paid));
        const again = await connector.sendMoney(paid);
        return {
          ...again,
          payouts: simulator.payouts().filter((each) => each.msisdn === msisdn(paid.phoneNumber)).length,
        };
      },
      expected: { status: 'pending', remoteTransactionId: null, payouts: 1 },
    },
    {
      answer: 'B2C Bad Request (400): rejected',
      send: () => connector.sendMoney(payout({ phoneNumber: '+254000000002' })),
      expected: {
        status: 'rejected',
        error: 'M-Pesa refused the payout (400.002.02: Bad Request - Invalid PartyB).',
        remoteTransactionId: null,
      },
    },
    {
      answer: 'B2C answered 500: thrown',
      send: async () => {
        simulator.failNext('b2c', '500-before-recording');
        return await connector.sendMoney(payout());
      },
      expected: IN_DOUBT,
    },
    {
      answer: 'a reversal Daraja refuses (400): rejected, and forgotten so that it may be asked again',
      send: async () => {
        const { receipt } = await paidPush();
        const returned = payout({ kind: 'reversal', amount: '0', originalTransactionId: receipt });
        const result = await connector.sendMoney(returned);
        return { ...result, kept: journal.held.some((each) => each.reference === `reversal:${returned.reference}`) };
      },
      expected: {
        status: 'rejected',
        error: 'M-Pesa refused the reversal (400.002.02: Bad Request - Invalid Amount).',
        remoteTransactionId: null,
        kept: false,
      },
    },
    {
      answer: 'a reversal with no answer (500): pending, its result or a resend settles it',
      send: async () => {
        const { receipt } = await paidPush();
        await simulator.outage('error');
        try {
          return await connector.sendMoney(
            payout({ kind: 'reversal', amount: '1500', originalTransactionId: receipt }),
          );
        } finally {
          await simulator.outage('none');
        }
      },
      expected: { status: 'pending', remoteTransactionId: null },
    },
  ];

  test.each(rows)('$answer', async ({ send, expected }) => {
    const outcome = await outcomeOf(send);
    if (expected === IN_DOUBT) expect(outcome).toHaveProperty('thrown');
    else expect(outcome).toEqual(expected);
  });
});
