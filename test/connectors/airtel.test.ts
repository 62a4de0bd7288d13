/**
 * The Airtel Money connector alone, against the project's Airtel simulator on loopback: no database,
 * no worker, no Temporal. It is built through its unit with a records port that throws on any use, so
 * every call here proves it keeps no records: it builds Airtel's requests (X-Country and X-Currency,
 * transaction ids derived from our references, national numbers, whole amounts, the PIN encrypted
 * under Airtel's key), reads the transaction enquiry into paid, failed or pending, refuses a callback
 * whose hash does not verify (AIRTEL_CALLBACK_KEY), and sorts Airtel's answers into final refusals,
 * taken (duplicates and "already refunded" included) and in doubt (thrown).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHmac } from 'node:crypto';
import { airtel, AIRTEL_CALLBACK_PATH, type AirtelSettings } from '../../src/network/airtel';
import type { Connector, NetworkOperation } from '../../src/network/adapter';
import { startAirtelSimulator, type AirtelSimulator } from '../simulators/airtel';
import {
  callbackContextOf,
  depsOf,
  networkNamed,
  nextSequence,
  operationOf,
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

const CREDENTIALS = { clientId: 'airtel-client', clientSecret: 'airtel-secret', pin: '4321' };
const CALLBACK_KEY = 'airtel-callback-key';
const UGANDA = 'Airtel Uganda';
const KENYA = 'Airtel Kenya';

const envOf = (baseUrl: string, pin = CREDENTIALS.pin) => ({
  AIRTEL_BASE_URL: baseUrl,
  AIRTEL_CLIENT_ID: CREDENTIALS.clientId,
  AIRTEL_CLIENT_SECRET: CREDENTIALS.clientSecret,
  AIRTEL_COUNTRIES: 'UG,KE',
  AIRTEL_PIN: pin,
  AIRTEL_CALLBACK_KEY: CALLBACK_KEY,
});

type Built = Omit<Connector, 'name' | 'inFlight'>;
let simulator: AirtelSimulator;
let wiretap: ReturnType<typeof startWiretap>;
let settings: AirtelSettings;
let callbacks: ReturnType<typeof serveCallbacks<AirtelSettings | null>>;
const operations: NetworkOperation[] = [];
let woken: ReturnType<typeof callbackContextOf>['woken'];
/** Built with a records port that throws on any use; `tapped` reaches the simulator through the wiretap. */
let connector: Built;
let tapped: Built;

/** A fresh Airtel Uganda number (`+25670` and seven digits), or Airtel Kenya's (`+25473`). */
const ugandan = () => `+25670${String(nextSequence()).padStart(7, '0')}`;
const kenyan = () => `+25473${String(nextSequence()).padStart(7, '0')}`;
/** The number as Airtel takes it: without the country code. */
const national = (e164: string) => e164.slice(4);
const prompt = (fields: { phoneNumber?: string; amount?: string } = {}) =>
  promptOf({ network: UGANDA, currency: 'UGX', phoneNumber: ugandan(), amount: '1500.0000', ...fields });
const payout = (fields: { phoneNumber?: string; amount?: string; kind?: 'payment' | 'reversal' } = {}) =>
  payoutOf({ network: UGANDA, currency: 'UGX', phoneNumber: ugandan(), amount: '2500.0000', ...fields });
const transactionIdOf = (kind: 'prompt' | 'payout', reference: string) =>
  connector.operatorIdFor!({ kind, network: networkNamed(UGANDA), reference });
/** Airtel's collection under `id` once the subscriber decided. */
const decided = (id: string) =>
  until(`Airtel to decide ${id}`, () =>
    simulator.collections().find((collection) => collection.id === id && collection.status !== 'TIP'),
  );
/** Base64(HMAC-SHA256(key, the transaction object as sent)), as Airtel signs its callbacks. */
const hashOf = (transaction: unknown, key = CALLBACK_KEY) =>
  createHmac('sha256', key).update(JSON.stringify(transaction)).digest('base64');
/** A paid collection and its Airtel Money id, for a refund to name. */
async function paidCollection(): Promise<string> {
  const asked = prompt();
  await connector.requestPayment(asked);
  return (await decided(transactionIdOf('prompt', asked.promptReference))).airtelMoneyId!;
}

beforeAll(async () => {
  simulator = await startAirtelSimulator({
    ...CREDENTIALS,
    countries: { UG: 'UGX', KE: 'KES' },
    callbackKey: CALLBACK_KEY,
    decisionDelayMs: 20,
    callbackDelayMs: 5,
  });
  wiretap = startWiretap(simulator.url);
  settings = settingsOf(airtel, envOf(simulator.url))!;
  const callbackContext = callbackContextOf<AirtelSettings | null>(settings, { operations });
  woken = callbackContext.woken;
  callbacks = serveCallbacks(airtel.callbacks!.routes, callbackContext.context);
  simulator.setCallbackUrl(`${callbacks.url}${AIRTEL_CALLBACK_PATH}`);
  connector = airtel.create(settings, depsOf(callbacks.url));
  tapped = airtel.create(settingsOf(airtel, envOf(wiretap.url)), depsOf(callbacks.url));
});

afterAll(async () => {
  await simulator?.stop();
  wiretap?.stop();
  callbacks?.stop();
});

describe('request building', () => {
  test('a prompt is a USSD push under a transaction id derived from our reference, naming its country and currency, the number without its country code and a whole amount', async () => {
    const asked = prompt({ amount: '1500.0000' });
    const id = transactionIdOf('prompt', asked.promptReference);
    expect(id).toMatch(/^C[0-9a-f]{23}$/);
    expect(await tapped.requestPayment(asked)).toEqual({ accepted: true, confirm: { operatorReference: id } });
    const [token] = wiretap.seen('/auth/oauth2/token');
    expect(token!.json).toEqual({
      client_id: CREDENTIALS.clientId,
      client_secret: CREDENTIALS.clientSecret,
      grant_type: 'client_credentials',
    });
    const [push] = wiretap.seen('/merchant/v1/payments/');
    expect(push).toMatchObject({ method: 'POST' });
    expect(push!.headers).toMatchObject({ 'x-country': 'UG', 'x-currency': 'UGX' });
    expect(push!.headers.authorization).toMatch(/^Bearer \S+$/);
    expect(push!.json).toEqual({
      reference: asked.reference,
      subscriber: { country: 'UG', currency: 'UGX', msisdn: national(asked.phoneNumber) },
      transaction: { amount: 1500, country: 'UG', currency: 'UGX', id },
    });
  });

  test('a prompt on Airtel Kenya names KE and KES', async () => {
    const asked = promptOf({ network: KENYA, currency: 'KES', phoneNumber: kenyan(), amount: '300' });
    expect(await tapped.requestPayment(asked)).toMatchObject({ accepted: true });
    const push = wiretap.seen('/merchant/v1/payments/').at(-1)!;
    expect(push.headers).toMatchObject({ 'x-country': 'KE', 'x-currency': 'KES' });
    expect(push.json).toMatchObject({
      subscriber: { country: 'KE', currency: 'KES', msisdn: national(asked.phoneNumber) },
    });
  });

  test("a payout is a B2C disbursement whose PIN is encrypted under Airtel's current key, never sent in clear", async () => {
    const paid = payout();
    const id = transactionIdOf('payout', paid.reference);
    expect(id).toMatch(/^D[0-9a-f]{23}$/);
    expect(await tapped.sendMoney(paid)).toEqual({ status: 'pending', remoteTransactionId: null });
    expect(wiretap.seen('/v1/rsa/encryption-keys')).toMatchObject([{ method: 'GET' }]);
    const [sent] = wiretap.seen('/standard/v2/disbursements/');
    expect(sent!.headers).toMatchObject({ 'x-country': 'UG', 'x-currency': 'UGX' });
    const body = sent!.json as Record<string, unknown> & { pin: string };
    expect(body).toEqual({
      payee: { msisdn: national(paid.phoneNumber), wallet_type: 'NORMAL' },
      reference: 'Payment',
      pin: body.pin,
      transaction: { amount: 2500, id, type: 'B2C' },
    });
    expect(body.pin).not.toContain(CREDENTIALS.pin);
    expect(Buffer.from(body.pin, 'base64')).toHaveLength(256);
    // The simulator decrypted the PIN with its private key and took the disbursement.
    expect(simulator.disbursements().find((each) => each.id === id)).toMatchObject({ status: 'TS', submissions: 1 });
  });

  test("a reversal is a refund of the collection's Airtel Money id, answered at once", async () => {
    const airtelMoneyId = await paidCollection();
    const returned = payout({ kind: 'reversal' });
    const result = await tapped.sendMoney({ ...returned, originalTransactionId: airtelMoneyId });
    const [refund] = simulator.refunds().filter((each) => each.airtelMoneyId === airtelMoneyId);
    expect(result).toEqual({ status: 'completed', remoteTransactionId: refund!.refundId });
    const [sent] = wiretap.seen('/standard/v1/payments/refund');
    expect(sent!.json).toEqual({ transaction: { airtel_money_id: airtelMoneyId } });
  });
});

describe('answer reading', () => {
  test("TS is paid under Airtel's money id; TF is failed in a merchant's words; TIP is pending", async () => {
    const paid = prompt();
    const declined = prompt();
    simulator.subscriber(national(declined.phoneNumber), { outcome: 'declines' });
    const short = prompt();
    simulator.subscriber(national(short.phoneNumber), { outcome: 'insufficient' });
    const silent = prompt();
    simulator.subscriber(national(silent.phoneNumber), { outcome: 'ignores' });
    for (const asked of [paid, declined, short, silent]) await connector.requestPayment(asked);
    const [paidId, declinedId, shortId, silentId] = [paid, declined, short, silent].map((asked) =>
      transactionIdOf('prompt', asked.promptReference),
    );
    const collection = await decided(paidId!);
    await decided(declinedId!);
    await decided(shortId!);
    expect(await connector.promptStatus(takenPrompt(paid, paidId!))).toMatchObject({
      status: 'paid',
      remoteTransactionId: collection.airtelMoneyId!,
    });
    expect(await connector.promptStatus(takenPrompt(declined, declinedId!))).toEqual({
      status: 'failed',
      error: 'The payment was refused (the subscriber declined it, or Airtel Money refused it).',
    });
    expect(await connector.promptStatus(takenPrompt(short, shortId!))).toEqual({
      status: 'failed',
      error: "The subscriber's Airtel Money balance is not enough.",
    });
    expect(await connector.promptStatus(takenPrompt(silent, silentId!))).toEqual({ status: 'pending' });
  });

  test('a paid collection is not taken as paid for a prompt in another country and currency: the enquiry there finds nothing of it', async () => {
    const asked = prompt();
    const id = transactionIdOf('prompt', asked.promptReference);
    await connector.requestPayment(asked);
    await decided(id);
    const elsewhere = { ...asked, network: networkNamed(KENYA), currency: 'KES', phoneNumber: kenyan() };
    expect(await connector.promptStatus(takenPrompt(elsewhere, id))).toMatchObject({ status: 'failed' });
    expect(await connector.promptStatus(takenPrompt({ ...asked, currency: 'KES' }, id))).toEqual({
      status: 'failed',
      error: 'Airtel Money in UG moves UGX here, not KES.',
    });
  });

  test('a push Airtel never received is sent now under the same id, and is pending', async () => {
    const asked = prompt();
    const id = transactionIdOf('prompt', asked.promptReference);
    const journaled = { kind: 'prompt' as const, network: asked.network, reference: asked.promptReference };
    expect(await connector.lookup!({ ...journaled, operatorReference: id })).toBe('absent');
    expect(await connector.promptStatus(takenPrompt(asked, id))).toEqual({ status: 'pending' });
    expect(simulator.collections().filter((collection) => collection.id === id)).toHaveLength(1);
    expect(await connector.lookup!({ ...journaled, operatorReference: id })).toBe('present');
  });

  test("a disbursement's enquiry: TS is completed under Airtel's money id", async () => {
    const paid = payout();
    await connector.sendMoney(paid);
    const disbursement = simulator
      .disbursements()
      .find((each) => each.id === transactionIdOf('payout', paid.reference));
    expect(await connector.payoutStatus(paid)).toEqual({
      status: 'completed',
      remoteTransactionId: disbursement!.airtelMoneyId!,
    });
  });
});

describe('callbacks', () => {
  test("Airtel's signed callback wakes the operation its transaction id names", async () => {
    const asked = prompt();
    const id = transactionIdOf('prompt', asked.promptReference);
    const operation = operationOf({ network: UGANDA, reference: asked.promptReference, operatorReference: id });
    operations.push(operation);
    await connector.requestPayment(asked);
    const call = await until('the callback to wake the prompt', () =>
      woken.find((each) => each.operation.id === operation.id),
    );
    expect(call).toMatchObject({ asResult: false, said: { transaction: { id, status_code: 'TS' } } });
    // Answered once the wake is done: the delivery is listed a moment after.
    const delivered = await until('the callback to be answered', () =>
      callbacks.deliveries.find((each) => (each.body as { transaction?: { id?: string } }).transaction?.id === id),
    );
    expect(delivered).toMatchObject({
      body: { hash: expect.any(String) },
      status: 200,
      answer: { status: 'received' },
    });
  });

  const transactionOf = (id: string) => ({
    id,
    message: 'Paid',
    status_code: 'TS',
    airtel_money_id: 'MP210603.1234.L06941',
  });
  const forgeries = [
    { forgery: 'a hash under another key', body: (t: object) => ({ transaction: t, hash: hashOf(t, 'not-the-key') }) },
    { forgery: 'no hash', body: (t: object) => ({ transaction: t }) },
    {
      forgery: 'a transaction changed after it was signed',
      body: (t: object) => ({ transaction: { ...t, status_code: 'TF' }, hash: hashOf(t) }),
    },
    {
      forgery: 'the same fields signed in another order',
      body: (t: object) => ({ transaction: t, hash: hashOf(Object.fromEntries(Object.entries(t).reverse())) }),
    },
  ];

  test.each(forgeries)('a callback with $forgery is refused (403) and wakes nothing', async ({ body }) => {
    const id = transactionIdOf('prompt', `req-${nextSequence()}-1`);
    operations.push(operationOf({ network: UGANDA, reference: `forged-${id}`, operatorReference: id }));
    const forged = body(transactionOf(id));
    expect(await callbacks.post(AIRTEL_CALLBACK_PATH, forged)).toEqual({
      status: 403,
      body: { detail: "The callback's hash does not match." },
    });
    expect(woken.filter((each) => each.operation.reference === `forged-${id}`)).toEqual([]);
  });

  test('a well-signed callback for no operation of ours wakes nothing', async () => {
    const transaction = transactionOf(`C${'0'.repeat(23)}`);
    const signed = { transaction, hash: hashOf(transaction) };
    expect(await callbacks.post(AIRTEL_CALLBACK_PATH, signed)).toEqual({
      status: 200,
      body: { status: 'received' },
    });
    expect(wokenBy(woken, signed)).toEqual([]);
  });

  test('without AIRTEL_CALLBACK_KEY a callback carries no hash, and wakes the operation it names', async () => {
    const unsigned = callbackContextOf<AirtelSettings>(
      { ...settings, callbackKey: null },
      { operations: [operationOf({ network: KENYA, reference: 'req-7-1', operatorReference: 'C7' })] },
    );
    const route = airtel.callbacks!.routes[0]!;
    const request = new Request(`http://127.0.0.1${AIRTEL_CALLBACK_PATH}`, { method: 'POST' });
    const body = { transaction: { id: 'C7', status_code: 'TF' } };
    route.received?.(body, request);
    const handled = await route.handle({ body, params: {}, request, rawBody: new Uint8Array() }, unsigned.context);
    expect(handled).toEqual({ status: 'received' });
    expect(unsigned.woken).toMatchObject([{ operation: { operatorReference: 'C7' }, said: body }]);
  });
});

/** What the core reads as "in doubt": the call threw. */
const IN_DOUBT = 'in doubt (thrown)';
type Row = { answer: string; send: () => Promise<unknown>; expected: object | typeof IN_DOUBT };

describe('final and in-doubt table', () => {
  const rows: Row[] = [
    { answer: 'a push taken', send: () => connector.requestPayment(prompt()), expected: { accepted: true } },
    {
      answer: 'a push repeated (DP00800001008 "Duplicate transaction id"): the enquiry finds it, taken',
      send: async () => {
        const asked = prompt();
        await connector.requestPayment(asked);
        return await connector.requestPayment(asked);
      },
      expected: { accepted: true },
    },
    {
      answer: 'DP00800001010 (payer not registered): refused',
      send: async () => {
        const asked = prompt();
        simulator.subscriber(national(asked.phoneNumber), { registered: false });
        return await connector.requestPayment(asked);
      },
      expected: { accepted: false, error: 'This number may not pay by Airtel Money (not registered, or barred).' },
    },
    {
      answer: 'a currency Airtel does not move on the network: refused, nothing sent',
      send: () => connector.requestPayment({ ...prompt(), currency: 'KES' }),
      expected: { accepted: false, error: 'Airtel Money in UG moves UGX here, not KES.' },
    },
    {
      answer: 'a disbursement repeated (DP00900001014 "Duplicate transaction id"): pending',
      send: async () => {
        const paid = payout();
        await connector.sendMoney(paid);
        return await connector.sendMoney(paid);
      },
      expected: { status: 'pending', remoteTransactionId: null },
    },
    {
      answer: "DP00900001010 (payee not registered): rejected, not the route's fault",
      send: async () => {
        const paid = payout();
        simulator.subscriber(national(paid.phoneNumber), { registered: false });
        return await connector.sendMoney(paid);
      },
      expected: {
        status: 'rejected',
        error: 'This number may not receive Airtel Money (not registered, or barred).',
        remoteTransactionId: null,
      },
    },
    {
      answer: "DP00900001007 (our disbursement wallet short): rejected as the route's fault",
      send: async () => {
        simulator.setDisbursementBalance(100);
        try {
          return await connector.sendMoney(payout());
        } finally {
          simulator.setDisbursementBalance(null);
        }
      },
      expected: {
        status: 'rejected',
        error: "The merchant's Airtel Money disbursement balance is not enough.",
        routeFault: true,
        remoteTransactionId: null,
      },
    },
    {
      answer: 'DP00900001013 (a PIN Airtel does not take): rejected',
      send: () =>
        airtel.create(settingsOf(airtel, envOf(simulator.url, '9999')), depsOf(callbacks.url)).sendMoney(payout()),
      expected: {
        status: 'rejected',
        error: 'Airtel Money refused the transaction (DP00900001013: Invalid PIN).',
        remoteTransactionId: null,
      },
    },
    {
      answer: 'a refund of a collection refunded already (HTTP 400 "already refunded"): completed',
      send: async () => {
        const airtelMoneyId = await paidCollection();
        const returned = { ...payout({ kind: 'reversal' }), originalTransactionId: airtelMoneyId };
        await connector.sendMoney(returned);
        return await connector.payoutStatus(returned);
      },
      expected: { status: 'completed' },
    },
    {
      answer: 'a refund of a collection Airtel does not know (DP00800001025): rejected',
      send: () =>
        connector.sendMoney({ ...payout({ kind: 'reversal' }), originalTransactionId: 'MP000000.0000.A00000' }),
      expected: {
        status: 'rejected',
        error: 'Airtel Money refused the transaction (DP00800001025: Transaction Not Found).',
        remoteTransactionId: null,
      },
    },
    {
      answer: 'an expired token (401): a fresh token, then taken',
      send: async () => {
        simulator.expireTokens();
        return await connector.requestPayment(prompt());
      },
      expected: { accepted: true },
    },
    {
      answer: 'a push answered 500 (nothing recorded)',
      send: async () => {
        simulator.failSends(true);
        try {
          return await connector.requestPayment(prompt());
        } finally {
          simulator.failSends(false);
        }
      },
      expected: IN_DOUBT,
    },
    {
      answer: "a disbursement answered with the gateway's system error (500)",
      send: async () => {
        await connector.sendMoney(payout());
        await simulator.outage('error');
        try {
          return await connector.sendMoney(payout());
        } finally {
          await simulator.outage('none');
        }
      },
      expected: IN_DOUBT,
    },
    {
      answer: 'a refund answered 500',
      send: async () => {
        const airtelMoneyId = await paidCollection();
        await simulator.outage('error');
        try {
          return await connector.sendMoney({ ...payout({ kind: 'reversal' }), originalTransactionId: airtelMoneyId });
        } finally {
          await simulator.outage('none');
        }
      },
      expected: IN_DOUBT,
    },
    {
      answer: 'no answer within OPERATOR_TIMEOUT_MS (Airtel processed it)',
      send: async () => {
        await connector.requestPayment(prompt());
        simulator.late({
          method: 'POST',
          path: '/merchant/v1/payments/',
          holdMs: 400,
          process: 'before',
          answer: 'real',
        });
        try {
          return await withOperatorTimeout(100, () => connector.requestPayment(prompt()));
        } finally {
          await simulator.settled();
        }
      },
      expected: IN_DOUBT,
    },
    {
      answer: 'a connection refused',
      send: async () => {
        await simulator.outage('refused');
        try {
          return await connector.requestPayment(prompt());
        } finally {
          await simulator.outage('none');
        }
      },
      expected: IN_DOUBT,
    },
    {
      answer: "the enquiry's own 500",
      send: async () => {
        const asked = prompt();
        await connector.requestPayment(asked);
        await simulator.outage('error');
        try {
          return await connector.promptStatus(takenPrompt(asked, transactionIdOf('prompt', asked.promptReference)));
        } finally {
          await simulator.outage('none');
        }
      },
      expected: IN_DOUBT,
    },
  ];

  test.each(rows)('$answer', async ({ send, expected }) => {
    const outcome = await outcomeOf(send);
    if (expected === IN_DOUBT) expect(outcome).toHaveProperty('thrown');
    else if ('accepted' in expected && expected.accepted === true) expect(outcome).toMatchObject(expected);
    else if ('status' in expected && expected.status === 'completed') expect(outcome).toMatchObject(expected);
    else expect(outcome).toEqual(expected);
  });
});
