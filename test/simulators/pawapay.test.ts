/**
 * The pawaPay Merchant API v2 simulator over HTTP with plain fetch, as a connector will use it:
 * the bearer token, deposits from initiation to the signed callback (verified with the public key
 * the simulator serves, as a merchant verifies pawaPay's), idempotent ids, pawaPay's rejections,
 * payments held in reconciliation, payouts, refunds, the active configuration and the callback
 * controls tests use to forge and replay.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHash, randomUUID, verify } from 'node:crypto';
import { startPawapaySimulator, type PawapaySimulator } from './pawapay';

const TOKEN = 'pawapay-test-token';
type Received = { path: string; headers: Record<string, string>; body: string };
let pawapay: PawapaySimulator;
let receiver: ReturnType<typeof Bun.serve>;
const received: Received[] = [];
let sequence = 0;
/** A fresh MSISDN in a country: its calling code and nine digits. */
const msisdn = (prefix: string) => `${prefix}7${String(10_000_000 + (sequence += 1)).slice(-8)}`;

beforeAll(async () => {
  receiver = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      received.push({
        path: new URL(request.url).pathname,
        headers: Object.fromEntries(request.headers),
        body: await request.text(),
      });
      return new Response(null, { status: 200 });
    },
  });
  pawapay = await startPawapaySimulator({
    apiToken: TOKEN,
    callbackBase: `http://127.0.0.1:${receiver.port}`,
    decisionDelayMs: 0,
    callbackDelayMs: 0,
    providers: ['TIGO_TZA', 'HALOTEL_TZA', 'VODAFONE_GHA', 'AIRTELTIGO_GHA', 'ORANGE_COD'],
  });
});

afterAll(async () => {
  await pawapay?.stop();
  receiver?.stop(true);
});

async function call(
  path: string,
  options: { method?: string; body?: unknown; token?: string | null } = {},
): Promise<{ status: number; body: any }> {
  const token = options.token === undefined ? TOKEN : options.token;
  const response = await fetch(`${pawapay.url}${path}`, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    headers: { 'Content-Type': 'application/json', ...(token === null ? {} : { Authorization: `Bearer ${token}` }) },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  return { status: response.status, body: await response.json() };
}

async function until<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(10);
  }
}

const callbacksFor = (path: string, id: string) =>
  received.filter((request) => request.path === path && request.body.includes(id));
const callbackFor = (path: string, id: string) => until(`a callback for ${id}`, () => callbacksFor(path, id)[0]);

const deposit = (overrides: Record<string, unknown> = {}, phoneNumber = msisdn('255'), provider = 'TIGO_TZA') => ({
  depositId: randomUUID(),
  amount: '1500',
  currency: 'TZS',
  payer: { type: 'MMO', accountDetails: { phoneNumber, provider } },
  ...overrides,
});

/** A callback checked as a merchant checks pawaPay's: the digest of the body, then the RFC 9421 signature with the served key. */
async function verifiesAsPawapay(request: Received): Promise<boolean> {
  const digest = `sha-512=:${createHash('sha512').update(request.body).digest('base64')}:`;
  if (request.headers['content-digest'] !== digest) return false;
  const input = /^sig-pp=\(([^)]*)\)(.*)$/.exec(request.headers['signature-input'] ?? '');
  const signature = /^sig-pp=:([A-Za-z0-9+/=]+):$/.exec(request.headers.signature ?? '')?.[1];
  if (!input || !signature) return false;
  const components = [...input[1]!.matchAll(/"([^"]+)"/g)].map((match) => match[1]!);
  const derived: Record<string, string> = {
    '@method': 'POST',
    '@authority': request.headers.host ?? '',
    '@path': request.path,
  };
  const lines = components.map((name) => `"${name}": ${derived[name] ?? request.headers[name]}`);
  const base = [...lines, `"@signature-params": (${input[1]})${input[2]}`].join('\n');
  const keyId = /keyid="([^"]+)"/.exec(input[2]!)?.[1];
  const { body: keys } = await call('/v2/public-key/http');
  const key = (keys as { id: string; key: string }[]).find((entry) => entry.id === keyId)?.key;
  return key !== undefined && verify('sha256', Buffer.from(base), key, Buffer.from(signature, 'base64'));
}

describe('authentication', () => {
  test('no token is 401 NO_AUTHENTICATION, a wrong one 403 AUTHENTICATION_ERROR, the configured one passes', async () => {
    const missing = await call('/v2/active-conf', { token: null });
    expect(missing).toEqual({
      status: 401,
      body: { failureReason: { failureCode: 'NO_AUTHENTICATION', failureMessage: expect.any(String) } },
    });
    const wrong = await call('/v2/deposits', { token: 'not-the-token', body: deposit() });
    expect(wrong.status).toBe(403);
    expect(wrong.body.failureReason.failureCode).toBe('AUTHENTICATION_ERROR');
    expect(pawapay.deposits()).toHaveLength(0);
    expect((await call('/v2/active-conf')).status).toBe(200);
  });
});

describe('deposits', () => {
  test('accepted, one PIN prompt, COMPLETED with a callback signed with the served key, and the status check agrees', async () => {
    const request = deposit({
      clientReferenceId: 'INV-1',
      customerMessage: 'Order 1',
      metadata: [{ orderId: 'ORD-1' }, { customerId: 'c@x', isPII: true }],
    });
    const answer = await call('/v2/deposits', { body: request });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      depositId: request.depositId,
      status: 'ACCEPTED',
      nextStep: 'FINAL_STATUS',
      created: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
    });
    expect(pawapay.promptsOf(request.depositId)).toBe(1);
    const callback = await callbackFor('/network/pawapay/deposits', request.depositId);
    const body = JSON.parse(callback.body);
    expect(body).toEqual({
      depositId: request.depositId,
      status: 'COMPLETED',
      amount: '1500.00',
      currency: 'TZS',
      country: 'TZA',
      payer: request.payer,
      customerMessage: 'Order 1',
      created: answer.body.created,
      providerTransactionId: expect.any(String),
      metadata: { orderId: 'ORD-1', customerId: 'c@x' },
    });
    expect(callback.headers['content-type']).toBe('application/json; charset=UTF-8');
    expect(callback.headers['signature-input']).toMatch(
      /^sig-pp=\("@method" "@authority" "@path" "signature-date" "content-digest" "content-type"\);alg="ecdsa-p256-sha256";keyid="[^"]+";created=\d+;expires=\d+$/,
    );
    expect(callback.headers['signature-date']).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await verifiesAsPawapay(callback)).toBe(true);
    const status = await call(`/v2/deposits/${request.depositId}`);
    expect(status.body).toEqual({ status: 'FOUND', data: { ...body, clientReferenceId: 'INV-1' } });
  });

  test('a repeated depositId is DUPLICATE_IGNORED: no second prompt, no second payment', async () => {
    const request = deposit();
    expect((await call('/v2/deposits', { body: request })).body.status).toBe('ACCEPTED');
    const again = await call('/v2/deposits', { body: { ...request, amount: '2000' } });
    expect(again).toEqual({ status: 200, body: { depositId: request.depositId, status: 'DUPLICATE_IGNORED' } });
    expect(pawapay.promptsOf(request.depositId)).toBe(1);
    expect(pawapay.deposits().find((entry) => entry.id === request.depositId)).toMatchObject({
      amount: '1500.00',
      submissions: 2,
    });
    await callbackFor('/network/pawapay/deposits', request.depositId);
    await Bun.sleep(50);
    expect(callbacksFor('/network/pawapay/deposits', request.depositId)).toHaveLength(1);
  });

  test.each([
    ['decimals the provider does not take', { amount: '1500.50' }, 200, 'INVALID_AMOUNT'],
    ['an amount under the minimum', { amount: '50' }, 200, 'AMOUNT_OUT_OF_BOUNDS'],
    ['an amount over the maximum', { amount: '5000001' }, 200, 'AMOUNT_OUT_OF_BOUNDS'],
    ["a currency not the provider's", { currency: 'GHS' }, 200, 'INVALID_CURRENCY'],
    [
      'an unknown provider',
      { payer: { type: 'MMO', accountDetails: { phoneNumber: '255712345678', provider: 'NOPE_TZA' } } },
      200,
      'INVALID_PROVIDER',
    ],
    [
      "another country's number",
      { payer: { type: 'MMO', accountDetails: { phoneNumber: '233241234567', provider: 'TIGO_TZA' } } },
      200,
      'INVALID_PHONE_NUMBER',
    ],
    [
      'a number too short',
      { payer: { type: 'MMO', accountDetails: { phoneNumber: '25571234567', provider: 'TIGO_TZA' } } },
      200,
      'INVALID_PHONE_NUMBER',
    ],
    [
      'a provider not enabled on the account',
      {
        payer: { type: 'MMO', accountDetails: { phoneNumber: '256772345678', provider: 'MTN_MOMO_UGA' } },
        currency: 'UGX',
      },
      403,
      'DEPOSITS_NOT_ALLOWED',
    ],
    ['a customerMessage of 3 characters', { customerMessage: 'abc' }, 400, 'INVALID_PARAMETER'],
    ['a customerMessage of 23 characters', { customerMessage: 'x'.repeat(23) }, 400, 'INVALID_PARAMETER'],
    ['an amount with a leading zero', { amount: '01500' }, 400, 'INVALID_PARAMETER'],
    ['a parameter the endpoint does not know', { correspondent: 'TIGO_TZA' }, 400, 'UNSUPPORTED_PARAMETER'],
    [
      'a payer type other than MMO',
      { payer: { type: 'MSISDN', accountDetails: { phoneNumber: '255712345678', provider: 'TIGO_TZA' } } },
      400,
      'INVALID_PARAMETER',
    ],
  ])('REJECTED: %s', async (_what, overrides, httpStatus, failureCode) => {
    const request = deposit(overrides);
    const answer = await call('/v2/deposits', { body: request });
    expect(answer.status).toBe(httpStatus);
    expect(answer.body).toEqual({
      depositId: request.depositId,
      status: 'REJECTED',
      failureReason: { failureCode, failureMessage: expect.any(String) },
    });
    expect(pawapay.promptsOf(request.depositId)).toBe(0);
    expect((await call(`/v2/deposits/${request.depositId}`)).body).toEqual({ status: 'NOT_FOUND' });
  });

  test('a depositId that is not a UUIDv4 is 400 INVALID_PARAMETER; GHS takes two decimals, not three; ORANGE_COD takes USD', async () => {
    const notUuid = await call('/v2/deposits', { body: deposit({ depositId: 'order-1' }) });
    expect(notUuid.status).toBe(400);
    expect(notUuid.body.failureReason.failureCode).toBe('INVALID_PARAMETER');
    const ghana = (amount: string) => deposit({ amount, currency: 'GHS' }, msisdn('233'), 'VODAFONE_GHA');
    expect((await call('/v2/deposits', { body: ghana('10.55') })).body.status).toBe('ACCEPTED');
    expect((await call('/v2/deposits', { body: ghana('10.555') })).body.failureReason.failureCode).toBe(
      'INVALID_AMOUNT',
    );
    expect(
      (await call('/v2/deposits', { body: deposit({ amount: '12.50', currency: 'USD' }, msisdn('243'), 'ORANGE_COD') }))
        .body.status,
    ).toBe('ACCEPTED');
  });

  test('a closed provider is PROVIDER_TEMPORARILY_UNAVAILABLE until it reopens', async () => {
    pawapay.setOperationStatus('HALOTEL_TZA', 'DEPOSIT', 'CLOSED');
    const closed = await call('/v2/deposits', { body: deposit({}, msisdn('255'), 'HALOTEL_TZA') });
    expect(closed.body.failureReason.failureCode).toBe('PROVIDER_TEMPORARILY_UNAVAILABLE');
    pawapay.setOperationStatus('HALOTEL_TZA', 'DEPOSIT', 'OPERATIONAL');
    expect((await call('/v2/deposits', { body: deposit({}, msisdn('255'), 'HALOTEL_TZA') })).body.status).toBe(
      'ACCEPTED',
    );
  });

  test.each([
    ['declines', 'declines', 'PAYMENT_NOT_APPROVED'],
    ['lacks the funds', 'insufficient', 'INSUFFICIENT_BALANCE'],
    ['has no wallet', 'unknown', 'PAYER_NOT_FOUND'],
  ] as const)('a payer who %s: FAILED with %s', async (_what, behaviour, failureCode) => {
    const phoneNumber = msisdn('255');
    pawapay.setSubscriber(phoneNumber, { deposit: behaviour });
    const request = deposit({}, phoneNumber);
    await call('/v2/deposits', { body: request });
    const body = JSON.parse((await callbackFor('/network/pawapay/deposits', request.depositId)).body);
    expect(body).toMatchObject({
      status: 'FAILED',
      failureReason: { failureCode, failureMessage: expect.any(String) },
    });
    expect(body.providerTransactionId).toBeUndefined();
  });

  test('a payer who never answers leaves the deposit PROCESSING, with no callback', async () => {
    const phoneNumber = msisdn('255');
    pawapay.setSubscriber(phoneNumber, { deposit: 'ignores' });
    const request = deposit({}, phoneNumber);
    await call('/v2/deposits', { body: request });
    await until(
      'PROCESSING',
      async () => (await call(`/v2/deposits/${request.depositId}`)).body.data.status === 'PROCESSING',
    );
    await Bun.sleep(50);
    expect(callbacksFor('/network/pawapay/deposits', request.depositId)).toHaveLength(0);
  });
});

describe('reconciliation', () => {
  test('a held deposit stays IN_RECONCILIATION, without a callback, until released to COMPLETED', async () => {
    const request = deposit();
    pawapay.holdInReconciliation(request.depositId);
    await call('/v2/deposits', { body: request });
    await until(
      'IN_RECONCILIATION',
      async () => (await call(`/v2/deposits/${request.depositId}`)).body.data.status === 'IN_RECONCILIATION',
    );
    await Bun.sleep(50);
    expect(callbacksFor('/network/pawapay/deposits', request.depositId)).toHaveLength(0);
    expect(pawapay.release(request.depositId, 'COMPLETED')).toBe(true);
    expect(JSON.parse((await callbackFor('/network/pawapay/deposits', request.depositId)).body).status).toBe(
      'COMPLETED',
    );
    expect(pawapay.release(request.depositId, 'FAILED')).toBe(false);
  });

  test("released to a failure, or reconciled by the subscriber's own schedule", async () => {
    const held = deposit();
    pawapay.holdInReconciliation(held.depositId);
    await call('/v2/deposits', { body: held });
    await until(
      'IN_RECONCILIATION',
      () => pawapay.deposits().find((entry) => entry.id === held.depositId)?.status === 'IN_RECONCILIATION',
    );
    pawapay.release(held.depositId, {
      failureCode: 'PAYMENT_NOT_APPROVED',
      failureMessage: 'Declined after reconciliation.',
    });
    expect(
      JSON.parse((await callbackFor('/network/pawapay/deposits', held.depositId)).body).failureReason.failureCode,
    ).toBe('PAYMENT_NOT_APPROVED');
    const phoneNumber = msisdn('255');
    pawapay.setSubscriber(phoneNumber, { deposit: 'reconciles', reconcilesTo: 'FAILED', reconcileAfterMs: 30 });
    const scheduled = deposit({}, phoneNumber);
    await call('/v2/deposits', { body: scheduled });
    expect(JSON.parse((await callbackFor('/network/pawapay/deposits', scheduled.depositId)).body).status).toBe(
      'FAILED',
    );
  });
});

describe('payouts', () => {
  const payout = (phoneNumber: string, overrides: Record<string, unknown> = {}) => ({
    payoutId: randomUUID(),
    amount: '25.50',
    currency: 'GHS',
    recipient: { type: 'MMO', accountDetails: { phoneNumber, provider: 'AIRTELTIGO_GHA' } },
    ...overrides,
  });

  test('accepted, then COMPLETED with a signed callback to the payouts URL; the status check agrees', async () => {
    const request = payout(msisdn('233'));
    const answer = await call('/v2/payouts', { body: request });
    expect(answer.body).toEqual({ payoutId: request.payoutId, status: 'ACCEPTED', created: expect.any(String) });
    const callback = await callbackFor('/network/pawapay/payouts', request.payoutId);
    expect(JSON.parse(callback.body)).toMatchObject({
      payoutId: request.payoutId,
      status: 'COMPLETED',
      amount: '25.50',
      currency: 'GHS',
      country: 'GHA',
      recipient: request.recipient,
    });
    expect(await verifiesAsPawapay(callback)).toBe(true);
    expect((await call(`/v2/payouts/${request.payoutId}`)).body.data.status).toBe('COMPLETED');
    expect((await call('/v2/payouts', { body: request })).body.status).toBe('DUPLICATE_IGNORED');
  });

  test('an unknown recipient FAILS with RECIPIENT_NOT_FOUND; a DELAYED provider keeps payouts ENQUEUED until it is operational', async () => {
    const unknown = msisdn('233');
    pawapay.setSubscriber(unknown, { payout: 'unknown' });
    const failed = payout(unknown);
    await call('/v2/payouts', { body: failed });
    expect(
      JSON.parse((await callbackFor('/network/pawapay/payouts', failed.payoutId)).body).failureReason.failureCode,
    ).toBe('RECIPIENT_NOT_FOUND');
    pawapay.setOperationStatus('AIRTELTIGO_GHA', 'PAYOUT', 'DELAYED');
    const queued = payout(msisdn('233'));
    expect((await call('/v2/payouts', { body: queued })).body.status).toBe('ACCEPTED');
    expect((await call(`/v2/payouts/${queued.payoutId}`)).body.data.status).toBe('ENQUEUED');
    pawapay.setOperationStatus('AIRTELTIGO_GHA', 'PAYOUT', 'OPERATIONAL');
    expect(JSON.parse((await callbackFor('/network/pawapay/payouts', queued.payoutId)).body).status).toBe('COMPLETED');
  });

  test('a payout is validated like a deposit', async () => {
    const answer = await call('/v2/payouts', { body: payout(msisdn('233'), { amount: '0.50' }) });
    expect(answer.body.failureReason.failureCode).toBe('AMOUNT_OUT_OF_BOUNDS');
  });
});

describe('refunds', () => {
  const refund = (depositId: string, overrides: Record<string, unknown> = {}) => ({
    refundId: randomUUID(),
    depositId,
    ...overrides,
  });

  test('only a COMPLETED deposit is refunded: partly, then the rest, then never again', async () => {
    const phoneNumber = msisdn('255');
    pawapay.setSubscriber(phoneNumber, { deposit: 'ignores' });
    const pending = deposit({}, phoneNumber);
    await call('/v2/deposits', { body: pending });
    expect((await call('/v2/refunds', { body: refund(pending.depositId) })).status).toBe(400);
    expect((await call('/v2/refunds', { body: refund(randomUUID()) })).body.status).toBe('REJECTED');
    const paid = deposit({ amount: '1000' });
    await call('/v2/deposits', { body: paid });
    await callbackFor('/network/pawapay/deposits', paid.depositId);
    expect(
      (await call('/v2/refunds', { body: refund(paid.depositId, { amount: '1001', currency: 'TZS' }) })).body
        .failureReason.failureCode,
    ).toBe('AMOUNT_TOO_LARGE');
    expect(
      (await call('/v2/refunds', { body: refund(paid.depositId, { amount: '300', currency: 'GHS' }) })).body
        .failureReason.failureCode,
    ).toBe('INVALID_CURRENCY');
    const part = refund(paid.depositId, { amount: '300', currency: 'TZS' });
    expect((await call('/v2/refunds', { body: part })).body).toEqual({
      refundId: part.refundId,
      status: 'ACCEPTED',
      created: expect.any(String),
    });
    const partCallback = await callbackFor('/network/pawapay/refunds', part.refundId);
    expect(JSON.parse(partCallback.body)).toMatchObject({
      refundId: part.refundId,
      status: 'COMPLETED',
      amount: '300.00',
      currency: 'TZS',
      recipient: paid.payer,
    });
    expect(await verifiesAsPawapay(partCallback)).toBe(true);
    const rest = refund(paid.depositId);
    await call('/v2/refunds', { body: rest });
    expect(JSON.parse((await callbackFor('/network/pawapay/refunds', rest.refundId)).body).amount).toBe('700.00');
    expect((await call('/v2/refunds', { body: refund(paid.depositId) })).body.failureReason.failureCode).toBe(
      'DEPOSIT_ALREADY_REFUNDED',
    );
    expect((await call(`/v2/refunds/${rest.refundId}`)).body.data.status).toBe('COMPLETED');
  });

  test('one refund at a time per deposit', async () => {
    const paid = deposit({ amount: '1000' });
    await call('/v2/deposits', { body: paid });
    await callbackFor('/network/pawapay/deposits', paid.depositId);
    const first = refund(paid.depositId, { amount: '100', currency: 'TZS' });
    pawapay.holdInReconciliation(first.refundId);
    await call('/v2/refunds', { body: first });
    expect(
      (await call('/v2/refunds', { body: refund(paid.depositId, { amount: '100', currency: 'TZS' }) })).body
        .failureReason.failureCode,
    ).toBe('REFUND_IN_PROGRESS');
    await until(
      'IN_RECONCILIATION',
      () => pawapay.refunds().find((entry) => entry.id === first.refundId)?.status === 'IN_RECONCILIATION',
    );
    pawapay.release(first.refundId, 'COMPLETED');
    await callbackFor('/network/pawapay/refunds', first.refundId);
  });
});

describe('active configuration', () => {
  test("the account's countries and providers, each currency with its limits, decimals and status per operation", async () => {
    const { status, body } = await call('/v2/active-conf');
    expect(status).toBe(200);
    expect(body.signatureConfiguration).toEqual({ signedRequestsOnly: false, signedCallbacks: true });
    expect(body.countries.map((country: any) => country.country).sort()).toEqual(['COD', 'GHA', 'TZA']);
    const tanzania = body.countries.find((country: any) => country.country === 'TZA');
    expect(tanzania).toMatchObject({ prefix: '255', displayName: { en: 'Tanzania' } });
    const tigo = tanzania.providers.find((provider: any) => provider.provider === 'TIGO_TZA');
    expect(tigo.currencies).toEqual([
      {
        currency: 'TZS',
        displayName: 'TSh',
        operationTypes: {
          DEPOSIT: expect.objectContaining({
            authType: 'PROVIDER_AUTH',
            minAmount: '100',
            maxAmount: '5000000',
            decimalsInAmount: 'NONE',
            status: 'OPERATIONAL',
            callbackUrl: expect.stringMatching(/\/network\/pawapay\/deposits$/),
          }),
          PAYOUT: expect.objectContaining({
            decimalsInAmount: 'NONE',
            status: 'OPERATIONAL',
            callbackUrl: expect.stringMatching(/\/network\/pawapay\/payouts$/),
          }),
          REFUND: expect.objectContaining({
            decimalsInAmount: 'NONE',
            status: 'OPERATIONAL',
            callbackUrl: expect.stringMatching(/\/network\/pawapay\/refunds$/),
          }),
        },
      },
    ]);
    const congo = body.countries.find((country: any) => country.country === 'COD').providers[0];
    expect(congo.currencies.map((currency: any) => currency.currency)).toEqual(['CDF', 'USD']);
    expect(congo.currencies[0].operationTypes.DEPOSIT.decimalsInAmount).toBe('TWO_PLACES');
  });

  test('filtered by country and operationType', async () => {
    pawapay.setOperationStatus('VODAFONE_GHA', 'PAYOUT', 'CLOSED');
    const { body } = await call('/v2/active-conf?country=GHA&operationType=PAYOUT');
    pawapay.setOperationStatus('VODAFONE_GHA', 'PAYOUT', 'OPERATIONAL');
    expect(body.countries).toHaveLength(1);
    const providers = body.countries[0].providers;
    expect(providers.map((provider: any) => provider.provider).sort()).toEqual(['AIRTELTIGO_GHA', 'VODAFONE_GHA']);
    const vodafone = providers.find((provider: any) => provider.provider === 'VODAFONE_GHA').currencies[0];
    expect(Object.keys(vodafone.operationTypes)).toEqual(['PAYOUT']);
    expect(vodafone.operationTypes.PAYOUT).toMatchObject({
      status: 'CLOSED',
      decimalsInAmount: 'TWO_PLACES',
      minAmount: '1',
      maxAmount: '10000',
    });
  });
});

describe('callback controls', () => {
  test("suppressed callbacks are not sent; pawaPay's resend-callback sends the final one", async () => {
    pawapay.suppressCallbacks(true);
    const request = deposit();
    await call('/v2/deposits', { body: request });
    await until(
      'COMPLETED',
      () => pawapay.deposits().find((entry) => entry.id === request.depositId)?.status === 'COMPLETED',
    );
    await Bun.sleep(50);
    expect(callbacksFor('/network/pawapay/deposits', request.depositId)).toHaveLength(0);
    pawapay.suppressCallbacks(false);
    expect((await call(`/v2/deposits/resend-callback/${request.depositId}`, { method: 'POST' })).body).toEqual({
      depositId: request.depositId,
      status: 'ACCEPTED',
    });
    expect(await verifiesAsPawapay(await callbackFor('/network/pawapay/deposits', request.depositId))).toBe(true);
  });

  test('a forged callback: tampered after signing or signed with another key fails verification; a replay is the same bytes', async () => {
    const body = { depositId: randomUUID(), status: 'FAILED', amount: '1500.00', currency: 'TZS' };
    const genuine = await pawapay.sendCallback('deposit', body);
    expect(genuine.status).toBe(200);
    const tampered = await pawapay.sendCallback('deposit', { ...body, depositId: randomUUID() }, { tamper: true });
    const otherKey = await pawapay.sendCallback('deposit', { ...body, depositId: randomUUID() }, { wrongKey: true });
    const unsigned = await pawapay.sendCallback('deposit', { ...body, depositId: randomUUID() }, { sign: false });
    const receivedOf = (sent: { body: string }) => received.find((request) => request.body === sent.body)!;
    expect(await verifiesAsPawapay(receivedOf(genuine))).toBe(true);
    expect(JSON.parse(tampered.body).status).toBe('COMPLETED');
    expect(await verifiesAsPawapay(receivedOf(tampered))).toBe(false);
    expect(await verifiesAsPawapay(receivedOf(otherKey))).toBe(false);
    expect(receivedOf(unsigned).headers.signature).toBeUndefined();
    const index = pawapay.callbacks().findIndex((sent) => sent.body === genuine.body);
    await pawapay.replayCallback(index);
    const copies = callbacksFor('/network/pawapay/deposits', body.depositId);
    expect(copies).toHaveLength(2);
    expect(copies[1]!.headers.signature).toBe(copies[0]!.headers.signature);
  });
});
