/**
 * The MTN MoMo connector alone, against the project's MoMo simulator on loopback: no database, no
 * worker, no Temporal. It is built through its unit with a records port that throws on any use, so
 * every call here proves it keeps no records: it builds MoMo's requests (X-Reference-Id derived from
 * our reference, the callback URL, amounts without trailing zeros, numbers without `+`), reads MoMo's
 * status resource into paid, failed or pending (and a record that is not the one asked for is not
 * paid), wakes an operation from MoMo's callback, and sorts MoMo's answers into final refusals, taken
 * (duplicates included) and in doubt (thrown).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { momo } from '../../src/network/momo';
import type { Connector, NetworkOperation } from '../../src/network/adapter';
import { startMomoSimulator, type MomoSimulator } from '../simulators/momo';
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

const KEYS = {
  collection: {
    subscriptionKey: 'momo-c-key',
    apiUser: '5f0e8c2e-3c1f-4f7e-9a51-6c2b9a1d7e01',
    apiKey: 'momo-c-secret',
  },
  disbursement: {
    subscriptionKey: 'momo-d-key',
    apiUser: '7a1d2c3b-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
    apiKey: 'momo-d-secret',
  },
};
const NETWORK = 'MTN Uganda';
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const envOf = (baseUrl: string) => ({
  MTN_MOMO_BASE_URL: baseUrl,
  MTN_MOMO_TARGET_ENVIRONMENT: 'mtnuganda',
  MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: KEYS.collection.subscriptionKey,
  MTN_MOMO_COLLECTION_API_USER: KEYS.collection.apiUser,
  MTN_MOMO_COLLECTION_API_KEY: KEYS.collection.apiKey,
  MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: KEYS.disbursement.subscriptionKey,
  MTN_MOMO_DISBURSEMENT_API_USER: KEYS.disbursement.apiUser,
  MTN_MOMO_DISBURSEMENT_API_KEY: KEYS.disbursement.apiKey,
});

let simulator: MomoSimulator;
let wiretap: ReturnType<typeof startWiretap>;
let callbacks: ReturnType<typeof serveCallbacks<ReturnType<typeof momo.readSettings>>>;
/** What the core's records hold for MoMo's callbacks to find. */
const operations: NetworkOperation[] = [];
let woken: ReturnType<typeof callbackContextOf>['woken'];
/** Built with a records port that throws on any use; `tapped` reaches the simulator through the wiretap. */
let connector: Omit<Connector, 'name' | 'inFlight'>;
let tapped: Omit<Connector, 'name' | 'inFlight'>;

/** A fresh MTN Uganda number (`+25677` and seven digits). */
const nextNumber = () => `+25677${String(nextSequence()).padStart(7, '0')}`;
const msisdn = (e164: string) => e164.slice(1);
const prompt = (fields: { phoneNumber?: string; amount?: string; promptReference?: string } = {}) =>
  promptOf({ network: NETWORK, currency: 'UGX', phoneNumber: nextNumber(), amount: '1500.0000', ...fields });
const payout = (fields: { phoneNumber?: string; amount?: string; kind?: 'payment' | 'reversal' } = {}) =>
  payoutOf({ network: NETWORK, currency: 'UGX', phoneNumber: nextNumber(), amount: '2500.0000', ...fields });
const referenceOf = (kind: 'prompt' | 'payout' | 'reversal', reference: string) =>
  connector.operatorIdFor!({ kind, network: networkNamed(NETWORK), reference });
/** MoMo's transaction under `referenceId` once it is no longer PENDING. */
const decided = (referenceId: string) =>
  until(`MoMo to decide ${referenceId}`, () =>
    [...simulator.requestsToPay(), ...simulator.transfers()].find(
      (transaction) => transaction.referenceId === referenceId && transaction.status !== 'PENDING',
    ),
  );

beforeAll(async () => {
  simulator = await startMomoSimulator({
    ...KEYS,
    targetEnvironment: 'mtnuganda',
    currency: 'UGX',
    decisionDelayMs: 20,
    callbackDelayMs: 5,
  });
  wiretap = startWiretap(simulator.url);
  const settings = settingsOf(momo, envOf(simulator.url));
  const callbackContext = callbackContextOf(settings, { operations });
  woken = callbackContext.woken;
  callbacks = serveCallbacks(momo.callbacks!.routes, callbackContext.context);
  connector = momo.create(settings, depsOf(callbacks.url));
  tapped = momo.create(settingsOf(momo, envOf(wiretap.url)), depsOf(callbacks.url));
});

afterAll(async () => {
  await simulator?.stop();
  wiretap?.stop();
  callbacks?.stop();
});

describe('request building', () => {
  test('a prompt is a request to pay under an X-Reference-Id derived from our reference, with the callback URL, the collection keys and the amount without its trailing zeros', async () => {
    const asked = prompt({ amount: '1500.0000' });
    const result = await tapped.requestPayment(asked);
    const referenceId = referenceOf('prompt', asked.promptReference);
    expect(referenceId).toMatch(UUID_V4);
    expect(result).toEqual({ accepted: true, confirm: { operatorReference: referenceId } });
    const [token] = wiretap.seen('/collection/token/');
    expect(token).toMatchObject({ method: 'POST' });
    expect(token!.headers.authorization).toBe(
      `Basic ${Buffer.from(`${KEYS.collection.apiUser}:${KEYS.collection.apiKey}`).toString('base64')}`,
    );
    expect(token!.headers['ocp-apim-subscription-key']).toBe(KEYS.collection.subscriptionKey);
    const sent = wiretap.seen('/collection/v1_0/requesttopay').find((each) => each.method === 'POST')!;
    expect(sent.headers).toMatchObject({
      'x-reference-id': referenceId,
      'x-callback-url': `${callbacks.url}/network/momo/${referenceId}`,
      'x-target-environment': 'mtnuganda',
      'ocp-apim-subscription-key': KEYS.collection.subscriptionKey,
      'content-type': 'application/json',
    });
    expect(sent.headers.authorization).toMatch(/^Bearer \S+$/);
    expect(sent.json).toEqual({
      amount: '1500',
      currency: 'UGX',
      externalId: asked.promptReference,
      payer: { partyIdType: 'MSISDN', partyId: msisdn(asked.phoneNumber) },
      payerMessage: asked.reference,
      payeeNote: asked.reference,
    });
  });

  test('a fraction keeps its digits and drops its zeros: 1500.5000 goes out as 1500.5', async () => {
    const asked = prompt({ amount: '1500.5000' });
    await tapped.requestPayment(asked);
    const sent = wiretap.seen('/collection/v1_0/requesttopay').at(-1)!;
    expect(sent.json).toMatchObject({ amount: '1500.5' });
  });

  test('a payout and a reversal are transfers to the payee with the disbursement keys, each under its own X-Reference-Id', async () => {
    const paid = payout();
    const returned = payout({ kind: 'reversal' });
    expect(await tapped.sendMoney(paid)).toEqual({ status: 'pending', remoteTransactionId: null });
    expect(await tapped.sendMoney(returned)).toEqual({ status: 'pending', remoteTransactionId: null });
    const [first, second] = wiretap.seen('/disbursement/v1_0/transfer').filter((each) => each.method === 'POST');
    for (const [sent, asked, message] of [
      [first!, paid, 'Payment'],
      [second!, returned, 'Payment returned'],
    ] as const) {
      const referenceId = referenceOf(asked.kind === 'reversal' ? 'reversal' : 'payout', asked.reference);
      expect(sent.headers).toMatchObject({
        'x-reference-id': referenceId,
        'x-callback-url': `${callbacks.url}/network/momo/${referenceId}`,
        'ocp-apim-subscription-key': KEYS.disbursement.subscriptionKey,
        'x-target-environment': 'mtnuganda',
      });
      expect(sent.json).toEqual({
        amount: '2500',
        currency: 'UGX',
        externalId: asked.reference,
        payee: { partyIdType: 'MSISDN', partyId: msisdn(asked.phoneNumber) },
        payerMessage: message,
        payeeNote: message,
      });
    }
    expect(wiretap.seen('/disbursement/token/')).toHaveLength(1);
  });

  test('a repeat sends the same X-Reference-Id, which MoMo refuses as a duplicate: one request to pay, taken', async () => {
    const asked = prompt();
    const referenceId = referenceOf('prompt', asked.promptReference);
    expect(await connector.requestPayment(asked)).toMatchObject({ accepted: true });
    expect(await connector.requestPayment(asked)).toEqual({
      accepted: true,
      confirm: { operatorReference: referenceId },
    });
    const held = simulator.requestsToPay().filter((transaction) => transaction.referenceId === referenceId);
    expect(held).toHaveLength(1);
    expect(held[0]!.submissions).toBe(2);
  });
});

describe('answer reading', () => {
  test("SUCCESSFUL with the prompt's amount, number and currency is paid under MoMo's financial transaction id", async () => {
    const asked = prompt();
    const { confirm } = (await connector.requestPayment(asked)) as { confirm: { operatorReference: string } };
    const transaction = await decided(confirm.operatorReference);
    const status = await connector.promptStatus(takenPrompt(asked, confirm.operatorReference));
    expect(status).toMatchObject({ status: 'paid', remoteTransactionId: transaction.financialTransactionId! });
  });

  test('FAILED is failed with a reason a merchant reads; PENDING is pending', async () => {
    const declined = prompt();
    simulator.party(msisdn(declined.phoneNumber), { outcome: 'FAILED', reason: 'APPROVAL_REJECTED' });
    const waiting = prompt();
    simulator.party(msisdn(waiting.phoneNumber), { outcome: 'PENDING' });
    for (const asked of [declined, waiting]) await connector.requestPayment(asked);
    const declinedId = referenceOf('prompt', declined.promptReference);
    await decided(declinedId);
    expect(await connector.promptStatus(takenPrompt(declined, declinedId))).toEqual({
      status: 'failed',
      error: 'The subscriber declined the payment.',
    });
    const waitingId = referenceOf('prompt', waiting.promptReference);
    expect(await connector.promptStatus(takenPrompt(waiting, waitingId))).toEqual({ status: 'pending' });
  });

  test.each([
    { differs: 'amount', change: { amount: '1600' } },
    { differs: 'number', change: { phoneNumber: '+256770000009' } },
    { differs: 'currency', change: { currency: 'GHS' } },
  ])("a SUCCESSFUL record whose $differs is not the prompt's is never paid", async ({ change }) => {
    const asked = prompt();
    const referenceId = referenceOf('prompt', asked.promptReference);
    await connector.requestPayment(asked);
    await decided(referenceId);
    const status = await connector.promptStatus(takenPrompt({ ...asked, ...change }, referenceId));
    expect(status).toEqual({
      status: 'failed',
      error: "MTN MoMo's record of the payment does not match the request (amount, number or currency).",
    });
  });

  test('a request to pay MoMo never received (404) is sent now under the same reference, and is pending', async () => {
    const asked = prompt();
    const referenceId = referenceOf('prompt', asked.promptReference);
    expect(
      await connector.lookup!({
        kind: 'prompt',
        network: asked.network,
        reference: asked.promptReference,
        operatorReference: referenceId,
      }),
    ).toBe('absent');
    expect(await connector.promptStatus(takenPrompt(asked, referenceId))).toEqual({ status: 'pending' });
    expect(simulator.requestsToPay().filter((transaction) => transaction.referenceId === referenceId)).toHaveLength(1);
    expect(
      await connector.lookup!({
        kind: 'prompt',
        network: asked.network,
        reference: asked.promptReference,
        operatorReference: referenceId,
      }),
    ).toBe('present');
  });

  test("a transfer: SUCCESSFUL is completed, FAILED rejected (our float short is the route's fault), a record not ours is pending", async () => {
    const paid = payout();
    const refused = payout();
    simulator.party(msisdn(refused.phoneNumber), { outcome: 'FAILED', reason: 'PAYEE_NOT_FOUND' });
    const short = payout();
    simulator.party(msisdn(short.phoneNumber), { outcome: 'FAILED', reason: 'NOT_ENOUGH_FUNDS' });
    for (const asked of [paid, refused, short]) await connector.sendMoney(asked);
    const [paidId, refusedId, shortId] = [paid, refused, short].map((asked) => referenceOf('payout', asked.reference));
    const transfer = await decided(paidId!);
    await decided(refusedId!);
    await decided(shortId!);
    expect(await connector.payoutStatus(paid)).toEqual({
      status: 'completed',
      remoteTransactionId: transfer.financialTransactionId!,
    });
    expect(await connector.payoutStatus(refused)).toEqual({
      status: 'rejected',
      error: 'This number has no MTN MoMo account.',
      remoteTransactionId: null,
    });
    expect(await connector.payoutStatus(short)).toEqual({
      status: 'rejected',
      error: 'Our MTN MoMo disbursement account does not hold enough for this; nothing was sent.',
      routeFault: true,
      remoteTransactionId: null,
    });
    expect(await connector.payoutStatus({ ...paid, amount: '2600' })).toEqual({
      status: 'pending',
      remoteTransactionId: transfer.financialTransactionId!,
    });
  });
});

describe('callbacks', () => {
  test("MoMo's callback wakes the operation its X-Reference-Id names, with what MoMo said", async () => {
    const asked = prompt();
    const referenceId = referenceOf('prompt', asked.promptReference);
    const operation = operationOf({
      network: NETWORK,
      reference: asked.promptReference,
      operatorReference: referenceId,
    });
    operations.push(operation);
    await connector.requestPayment(asked);
    const call = await until('the callback to wake the prompt', () =>
      woken.find((each) => each.operation.id === operation.id),
    );
    expect(call.asResult).toBe(false);
    expect(call.said).toMatchObject({ externalId: asked.promptReference, status: 'SUCCESSFUL' });
    // Answered once the wake is done: the delivery is listed a moment after.
    const delivered = await until('the callback to be answered', () =>
      callbacks.deliveries.find((each) => each.path.endsWith(referenceId)),
    );
    expect(delivered).toMatchObject({
      method: 'PUT',
      body: { status: 'SUCCESSFUL' },
      status: 200,
      answer: { status: 'received' },
    });
  });

  test('a callback that lies wakes the operation, and the status query still says what happened', async () => {
    const asked = prompt();
    simulator.party(msisdn(asked.phoneNumber), { outcome: 'FAILED', reason: 'EXPIRED', callback: 'lie' });
    const referenceId = referenceOf('prompt', asked.promptReference);
    const operation = operationOf({
      network: NETWORK,
      reference: asked.promptReference,
      operatorReference: referenceId,
    });
    operations.push(operation);
    await connector.requestPayment(asked);
    const call = await until('the lying callback', () => woken.find((each) => each.operation.id === operation.id));
    expect(call.said).toMatchObject({ status: 'SUCCESSFUL' });
    expect(await connector.promptStatus(takenPrompt(asked, referenceId))).toEqual({
      status: 'failed',
      error: 'The subscriber did not approve the payment in time.',
    });
  });

  test.each(momo.callbacks!.routes.map((route) => ({ method: route.method })))(
    '$method: a reference of ours wakes its operation; a reference of nobody wakes nothing; a path that is no reference is not found',
    async ({ method }) => {
      const referenceId = crypto.randomUUID();
      const operation = operationOf({
        network: NETWORK,
        reference: `req-${nextSequence()}-1`,
        operatorReference: referenceId,
      });
      operations.push(operation);
      const said = { externalId: operation.reference, status: 'FAILED', reason: 'APPROVAL_REJECTED' };
      expect(await callbacks.post(`/network/momo/${referenceId}`, said, {}, method)).toEqual({
        status: 200,
        body: { status: 'received' },
      });
      expect(wokenBy(woken, said)).toEqual([{ operation, said, asResult: false }]);
      expect(await callbacks.post(`/network/momo/${crypto.randomUUID()}`, said, {}, method)).toEqual({
        status: 200,
        body: { status: 'received' },
      });
      expect((await callbacks.post('/network/momo/not-a-reference', said, {}, method)).status).toBe(404);
      expect(wokenBy(woken, said)).toHaveLength(1);
    },
  );
});

/** What the core reads as "in doubt": the call threw. */
const IN_DOUBT = 'in doubt (thrown)';
type Row = { answer: string; send: () => Promise<unknown>; expected: object | typeof IN_DOUBT };

describe('final and in-doubt table', () => {
  const sends: Row[] = [
    { answer: 'taken (202)', send: () => connector.requestPayment(prompt()), expected: { accepted: true } },
    {
      answer: 'a duplicate X-Reference-Id (409 RESOURCE_ALREADY_EXIST): taken',
      send: async () => {
        const asked = prompt();
        await connector.requestPayment(asked);
        return await connector.requestPayment(asked);
      },
      expected: { accepted: true },
    },
    {
      answer: 'a transfer repeated (409): pending, never refused',
      send: async () => {
        const asked = payout();
        await connector.sendMoney(asked);
        return await connector.sendMoney(asked);
      },
      expected: { status: 'pending', remoteTransactionId: null },
    },
    {
      answer: "INVALID_AMOUNT (400): refused, not the route's fault",
      send: () => connector.requestPayment(prompt({ amount: '1500.125' })),
      expected: { accepted: false, error: 'MTN MoMo refused the transaction (INVALID_AMOUNT).' },
    },
    {
      answer: "INVALID_PARTY (400) on a transfer: rejected, not the route's fault",
      send: () => connector.sendMoney(payout({ phoneNumber: '+2567' })),
      expected: {
        status: 'rejected',
        error: 'MTN MoMo refused the transaction (INVALID_PARTY).',
        remoteTransactionId: null,
      },
    },
    {
      answer: '500 after MoMo recorded it',
      send: async () => {
        simulator.failNext('requesttopay', '500-after-recording');
        return await connector.requestPayment(prompt());
      },
      expected: IN_DOUBT,
    },
    {
      answer: '500 before MoMo recorded it',
      send: async () => {
        // A token first: a refused token would take the fault, and the retry with a fresh one would be taken.
        await connector.sendMoney(payout());
        simulator.failNext('transfer', '500-before-recording');
        return await connector.sendMoney(payout());
      },
      expected: IN_DOUBT,
    },
    {
      answer: "503 SERVICE_UNAVAILABLE from MoMo's gateway",
      send: async () => {
        await simulator.outage('error');
        try {
          return await connector.requestPayment(prompt());
        } finally {
          await simulator.outage('none');
        }
      },
      expected: IN_DOUBT,
    },
    {
      answer: 'no answer within OPERATOR_TIMEOUT_MS (MoMo processed it)',
      send: async () => {
        await connector.requestPayment(prompt());
        simulator.late({
          method: 'POST',
          path: '/collection/v1_0/requesttopay',
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
          return await connector.sendMoney(payout());
        } finally {
          await simulator.outage('none');
        }
      },
      expected: IN_DOUBT,
    },
    {
      answer: "the status query's own 500",
      send: async () => {
        const asked = prompt();
        const referenceId = referenceOf('prompt', asked.promptReference);
        await connector.requestPayment(asked);
        simulator.failNext('requesttopay-status', '500-after-recording');
        return await connector.promptStatus(takenPrompt(asked, referenceId));
      },
      expected: IN_DOUBT,
    },
    {
      answer: 'an expired token (401): a fresh token, then taken',
      send: async () => {
        simulator.expireTokens();
        return await connector.requestPayment(prompt());
      },
      expected: { accepted: true },
    },
  ];

  test.each(sends)('$answer', async ({ send, expected }) => {
    const outcome = await outcomeOf(send);
    if (expected === IN_DOUBT) expect(outcome).toHaveProperty('thrown');
    else if ('accepted' in expected && expected.accepted === true) expect(outcome).toMatchObject(expected);
    else expect(outcome).toEqual(expected);
  });

  /** MoMo's FAILED reasons: the words a merchant reads, and whether a transfer's failure is the route's own. */
  const reasons = [
    { reason: 'APPROVAL_REJECTED', words: 'The subscriber declined the payment.', routeFault: false },
    { reason: 'EXPIRED', words: 'The subscriber did not approve the payment in time.', routeFault: false },
    { reason: 'PAYER_NOT_FOUND', words: 'This number has no MTN MoMo account.', routeFault: false },
    { reason: 'PAYER_LIMIT_REACHED', words: 'The subscriber has reached a MoMo transaction limit.', routeFault: false },
    { reason: 'NOT_ALLOWED', words: 'MTN MoMo did not allow this transaction.', routeFault: false },
    { reason: 'SERVICE_UNAVAILABLE', words: 'MTN MoMo was unavailable.', routeFault: true },
    { reason: 'INTERNAL_PROCESSING_ERROR', words: 'MTN MoMo could not process the transaction.', routeFault: true },
    { reason: 'SOMETHING_NEW', words: 'MTN MoMo refused the transaction (SOMETHING_NEW).', routeFault: false },
  ];

  test.each(reasons)(
    'FAILED $reason: the prompt failed and the transfer rejected in those words (route fault: $routeFault)',
    async ({ reason, words, routeFault }) => {
      const asked = prompt();
      const paid = payout();
      for (const phoneNumber of [asked.phoneNumber, paid.phoneNumber])
        simulator.party(msisdn(phoneNumber), { outcome: 'FAILED', reason, callback: 'none' });
      await connector.requestPayment(asked);
      await connector.sendMoney(paid);
      const promptId = referenceOf('prompt', asked.promptReference);
      await decided(promptId);
      await decided(referenceOf('payout', paid.reference));
      expect(await connector.promptStatus(takenPrompt(asked, promptId))).toEqual({ status: 'failed', error: words });
      expect(await connector.payoutStatus(paid)).toEqual({
        status: 'rejected',
        error: words,
        ...(routeFault ? { routeFault: true } : {}),
        remoteTransactionId: null,
      });
    },
  );
});
