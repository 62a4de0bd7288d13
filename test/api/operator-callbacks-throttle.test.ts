/**
 * The operator callback routes' throttle: per source address and per operator, counted in
 * PostgreSQL before the body is read. Each test makes its own app with tiny limits, its own
 * shortcode (the operator's count is per operator account) and its own addresses, so no count of
 * another test or file reaches it.
 */
import { beforeAll, expect, test } from 'bun:test';
import { DARAJA_CALLBACK_PATHS } from '../../src/network/daraja';
import { MOMO_CALLBACK_PATH } from '../../src/network/momo';
import { recordOperation } from '../../src/services/networks/journal';
import { incomingCollectionWorkflowId } from '../../src/contracts/incoming-collection';
import { awayFromWindowEdge, BASE_URL, testApp, testSql, uniqueNumber, type TestApp } from '../helpers';
import { prepareContracts } from '../openapi-contract';

const WINDOW_SECONDS = 60;
let shortcodes = 0;
const run = Math.floor(Math.random() * 9000) + 1000;

/** An app with the connectors on, the given limits, a shortcode of its own, and X-Forwarded-For believed. */
async function throttledApp(perAddress: number, perOperator: number): Promise<TestApp> {
  const ctx = await testApp(undefined, {
    PUBLIC_BASE_URL: 'http://127.0.0.1:9',
    TRUST_PROXY: 'true',
    OPERATOR_CALLBACK_LIMIT_PER_ADDRESS: String(perAddress),
    OPERATOR_CALLBACK_LIMIT_PER_OPERATOR: String(perOperator),
    MPESA_BASE_URL: 'http://127.0.0.1:9',
    MPESA_CONSUMER_KEY: 'throttle-key',
    MPESA_CONSUMER_SECRET: 'throttle-secret',
    MPESA_SHORTCODE: `${run}${String(++shortcodes).padStart(3, '0')}`,
    MPESA_PASSKEY: 'passkey',
    MPESA_INITIATOR_NAME: 'throttle',
    MPESA_SECURITY_CREDENTIAL: 'credential',
    MTN_MOMO_BASE_URL: 'http://127.0.0.1:9',
    MTN_MOMO_TARGET_ENVIRONMENT: `throttle${run}${shortcodes}`,
    MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: 'k',
    MTN_MOMO_COLLECTION_API_USER: 'u',
    MTN_MOMO_COLLECTION_API_KEY: 'k',
    MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: 'k',
    MTN_MOMO_DISBURSEMENT_API_USER: 'u',
    MTN_MOMO_DISBURSEMENT_API_KEY: 'k',
  });
  // A test's requests land in one window.
  await awayFromWindowEdge(WINDOW_SECONDS, 5_000);
  return ctx;
}

let addresses = 0;
/** A source address no other test uses: an IPv6 /64 of the documentation prefix of its own. */
const newAddress = () => `2001:db8:${run.toString(16)}:${(++addresses).toString(16)}::1`;

type Sent = { status: number; body: unknown; retryAfter: string | null };

async function callback(ctx: TestApp, path: string, from: string, body: unknown = {}, method = 'POST'): Promise<Sent> {
  const response = await ctx.app.handle(
    new Request(`${BASE_URL}${path}`, {
      method,
      headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': `203.0.113.9, ${from}` },
      body: JSON.stringify(body),
    }),
  );
  return { status: response.status, body: await response.json(), retryAfter: response.headers.get('retry-after') };
}

const stkCallback = (checkoutRequestId: string, receipt: string, phone: string) => ({
  Body: {
    stkCallback: {
      MerchantRequestID: '1-1-1',
      CheckoutRequestID: checkoutRequestId,
      ResultCode: 0,
      ResultDesc: 'The service request is processed successfully.',
      CallbackMetadata: {
        Item: [
          { Name: 'Amount', Value: 100 },
          { Name: 'MpesaReceiptNumber', Value: receipt },
          { Name: 'PhoneNumber', Value: Number(phone.slice(1)) },
        ],
      },
    },
  },
});

beforeAll(async () => {
  // The OpenAPI validators every answer is checked with are made now, not during a test's burst.
  await prepareContracts((await testApp()).app);
});

test('past the limit of one address: 429 with Retry-After before the body is read, while another address (and its /64 neighbours) are counted apart', async () => {
  const ctx = await throttledApp(3, 1000);
  const flooding = newAddress();
  const statuses = [];
  for (let sent = 0; sent < 3; sent += 1)
    statuses.push((await callback(ctx, DARAJA_CALLBACK_PATHS.result, flooding)).status);
  // An empty body breaks the schema (400): refused requests count too.
  expect(statuses).toEqual([400, 400, 400]);

  const over = await callback(ctx, DARAJA_CALLBACK_PATHS.result, flooding);
  expect(over.status).toBe(429);
  const retryAfter = Number(over.retryAfter);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(WINDOW_SECONDS);
  expect(over.body).toEqual({
    detail: `Request was throttled. Expected available in ${retryAfter} second${retryAfter === 1 ? '' : 's'}.`,
  });

  // Counted per address, whatever the path or method: a neighbour in the same /64 is the same source.
  expect((await callback(ctx, DARAJA_CALLBACK_PATHS.stkResult, flooding)).status).toBe(429);
  expect((await callback(ctx, `${MOMO_CALLBACK_PATH}/${crypto.randomUUID()}`, flooding, {}, 'PUT')).status).toBe(429);
  expect((await callback(ctx, DARAJA_CALLBACK_PATHS.result, flooding.replace(/::1$/, '::2'))).status).toBe(429);

  // The body of a throttled request is never read (with no queue to fill, the stream is pulled only when read).
  let read = false;
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        read = true;
        controller.enqueue(new TextEncoder().encode('{}'));
        controller.close();
      },
    },
    { highWaterMark: 0 },
  );
  const unread = await ctx.app.handle(
    new Request(`${BASE_URL}${DARAJA_CALLBACK_PATHS.confirmation}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': flooding },
      body,
      duplex: 'half',
    } as RequestInit),
  );
  expect(unread.status).toBe(429);
  expect(read).toBe(false);

  // Another address is within its own limit.
  const other = await callback(ctx, DARAJA_CALLBACK_PATHS.result, newAddress(), {
    Result: { ResultCode: 0, ConversationID: 'AG_nobody' },
  });
  expect(other).toMatchObject({ status: 200, body: { ResultCode: 0, ResultDesc: 'Accepted' } });
});

test('the per-operator limit bounds all addresses together; another operator is counted apart', async () => {
  const ctx = await throttledApp(1000, 4);
  const statuses = [];
  for (let sent = 0; sent < 4; sent += 1)
    statuses.push(
      (await callback(ctx, DARAJA_CALLBACK_PATHS.timeout, newAddress(), { Result: { ResultCode: 1 } })).status,
    );
  expect(statuses).toEqual([200, 200, 200, 200]);
  const fresh = newAddress();
  const over = await callback(ctx, DARAJA_CALLBACK_PATHS.stkResult, fresh);
  expect(over.status).toBe(429);
  expect(Number(over.retryAfter)).toBeGreaterThanOrEqual(1);
  // A paybill validation past the limit is refused like any callback: Daraja then applies the shortcode's default action.
  expect(
    (
      await callback(ctx, DARAJA_CALLBACK_PATHS.validation, newAddress(), {
        TransID: 'RKTQDM7W6S',
        TransAmount: '10',
        MSISDN: '254711000001',
      })
    ).status,
  ).toBe(429);
  // MoMo's count is its own.
  const momo = await callback(
    ctx,
    `${MOMO_CALLBACK_PATH}/${crypto.randomUUID()}`,
    fresh,
    { status: 'SUCCESSFUL' },
    'PUT',
  );
  expect(momo).toMatchObject({ status: 200, body: { status: 'received' } });
});

test("nothing over the limit wakes a workflow, records a hint or starts a payment's confirmation", async () => {
  const ctx = await throttledApp(2, 1000);
  const signals: string[] = [];
  const starts: string[] = [];
  const { launcher } = ctx;
  const signal = launcher.signalNetworkHint.bind(launcher);
  const start = launcher.startIncomingCollection.bind(launcher);
  launcher.signalNetworkHint = async (workflowId, hint) => {
    signals.push(workflowId);
    return await signal(workflowId, hint);
  };
  launcher.startIncomingCollection = async (payment, options) => {
    starts.push(payment.remoteTransactionId);
    return await start(payment, options);
  };
  const checkoutRequestId = `ws_CO_throttle${run}${crypto.randomUUID().slice(0, 8)}`;
  const operation = await recordOperation(testSql(), {
    network: 'Safaricom',
    kind: 'prompt',
    reference: `throttle-${checkoutRequestId}`,
    operatorReference: checkoutRequestId,
    workflowId: `throttle-${checkoutRequestId}`,
    subject: `throttle-${checkoutRequestId}`,
    phoneNumber: uniqueNumber('+254711'),
    amount: '100',
  });
  const hintOf = async () =>
    (await testSql()<{ hint: unknown }[]>`select hint from network_operations where id = ${operation.id}`)[0]!.hint;
  const receipt = `QX${run}${Date.now().toString(36).toUpperCase().slice(-6)}`;
  const forged = stkCallback(`ws_CO_forged${run}${crypto.randomUUID().slice(0, 8)}`, receipt, uniqueNumber('+254711'));

  const flooding = newAddress();
  for (let sent = 0; sent < 2; sent += 1)
    expect((await callback(ctx, DARAJA_CALLBACK_PATHS.stkResult, flooding)).status).toBe(400);
  expect(
    (
      await callback(
        ctx,
        DARAJA_CALLBACK_PATHS.stkResult,
        flooding,
        stkCallback(checkoutRequestId, 'QX0000000A', '+254711000001'),
      )
    ).status,
  ).toBe(429);
  expect((await callback(ctx, DARAJA_CALLBACK_PATHS.stkResult, flooding, forged)).status).toBe(429);
  expect(await hintOf()).toBeNull();
  expect({ signals, starts }).toEqual({ signals: [], starts: [] });
  const workflow = ctx.client.workflow.getHandle(incomingCollectionWorkflowId('Safaricom', receipt));
  expect(
    await workflow.describe().then(
      () => 'started',
      () => 'never started',
    ),
  ).toBe('never started');

  // The same callbacks from an address within its limit do what a callback does.
  const other = newAddress();
  expect(
    (
      await callback(
        ctx,
        DARAJA_CALLBACK_PATHS.stkResult,
        other,
        stkCallback(checkoutRequestId, 'QX0000000A', '+254711000001'),
      )
    ).status,
  ).toBe(200);
  expect(await hintOf()).not.toBeNull();
  expect((await callback(ctx, DARAJA_CALLBACK_PATHS.stkResult, other, forged)).status).toBe(200);
  // The push belongs to no open request, so the payment its callback claims is also reported on its own (confirmed
  // by transaction status before anything is credited, and then only where Daraja's identifiers name).
  expect({ signals, starts }).toEqual({ signals: [operation.workflowId], starts: ['QX0000000A', receipt] });
  await workflow.terminate('throttle test: nothing runs it');
  await ctx.client.workflow
    .getHandle(incomingCollectionWorkflowId('Safaricom', 'QX0000000A'))
    .terminate('throttle test: nothing runs it')
    .catch(() => {});
});

test("the first callback of an operator's window clears the address counts of past windows", async () => {
  const ctx = await throttledApp(1000, 1000);
  const stale = `callback-address:2001:db8:${run.toString(16)}:ffff::/64`;
  await testSql()`insert into request_counters (key, window_start, count) values (${stale}, now() - interval '5 minutes', 7)
                  on conflict (key) do update set window_start = excluded.window_start`;
  expect((await callback(ctx, DARAJA_CALLBACK_PATHS.result, newAddress(), { Result: { ResultCode: 0 } })).status).toBe(
    200,
  );
  expect(await testSql()`select key from request_counters where key = ${stale}`).toHaveLength(0);
});
