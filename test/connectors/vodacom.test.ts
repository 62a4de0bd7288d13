/**
 * The Vodacom M-Pesa connector alone (the M-Pesa OpenAPI), against the project's simulator on
 * loopback: no database, no worker, no Temporal. It is built through its unit with a records port
 * that throws on any use, so every call here proves it keeps no records. It builds the OpenAPI's
 * requests (the API key and each session id encrypted under the portal's key, the Origin, the
 * `input_*` fields with a ThirdPartyConversationID derived from our reference), reads the
 * transaction status query into paid, failed or pending, and sorts M-Pesa's answers into final
 * refusals (our own account short being the route's fault), taken, and in doubt. The OpenAPI
 * answers every call itself and calls nothing back, so an answer that says nothing (INS-1, INS-9,
 * INS-10, no answer in time) is taken for the status query to decide, and only a connection
 * refused or a status query that fails throws.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { vodacom } from '../../src/network/vodacom';
import type { Connector, PaymentPrompt } from '../../src/network/adapter';
import { startVodacomSimulator, type VodacomSimulator } from '../simulators/vodacom';
import {
  depsOf,
  networkNamed,
  nextSequence,
  outcomeOf,
  payoutOf,
  promptOf,
  recordedAs,
  settingsOf,
  startWiretap,
  takenPrompt,
  until,
  withOperatorTimeout,
} from './kit';

const CREDENTIALS = { apiKey: 'vodacom-api-key', serviceProviderCode: '000000', origin: 'collections.example' };
const TANZANIA = 'Vodacom Tanzania';
const DRC = 'Vodacom DRC';

const envOf = (baseUrl: string, publicKey: string) => ({
  VODACOM_BASE_URL: baseUrl,
  VODACOM_API_KEY: CREDENTIALS.apiKey,
  VODACOM_PUBLIC_KEY: publicKey,
  VODACOM_SERVICE_PROVIDER_CODE: CREDENTIALS.serviceProviderCode,
  VODACOM_MARKETS: 'TZN,DRC',
  VODACOM_ORIGIN: CREDENTIALS.origin,
  // The simulator's sessions are active at once: no call here waits for one.
  VODACOM_SESSION_ACTIVATION_SECONDS: '0',
});

type Built = Omit<Connector, 'name' | 'inFlight'> & { stop?: () => void };
let simulator: VodacomSimulator;
let wiretap: ReturnType<typeof startWiretap>;
/** Built with a records port that throws on any use; `tapped` reaches the simulator through the wiretap. */
let connector: Built;
let tapped: Built;

/** A fresh Vodacom Tanzania number (`+25574` and seven digits), or Vodacom DRC's (`+24381`). */
const tanzanian = () => `+25574${String(nextSequence()).padStart(7, '0')}`;
const congolese = () => `+24381${String(nextSequence()).padStart(7, '0')}`;
const msisdn = (e164: string) => e164.slice(1);
const prompt = (fields: { phoneNumber?: string; amount?: string } = {}) =>
  promptOf({ network: TANZANIA, currency: 'TZS', phoneNumber: tanzanian(), amount: '1500.0000', ...fields });
const payout = (fields: { phoneNumber?: string; amount?: string } = {}) =>
  payoutOf({ network: TANZANIA, currency: 'TZS', phoneNumber: tanzanian(), amount: '2500.0000', ...fields });
const conversationOf = (kind: 'prompt' | 'payout' | 'reversal', reference: string, network = TANZANIA) =>
  connector.operatorIdFor!({ kind, network: networkNamed(network), reference });
/** M-Pesa's transaction under our conversation id, once `ready` says it is. */
const transactionOf = (conversationId: string, ready: (status: string) => boolean = () => true) =>
  until(`M-Pesa's ${conversationId}`, () =>
    simulator.transactions().find((each) => each.thirdPartyConversationId === conversationId && ready(each.status)),
  );
/** A customer payment M-Pesa completed: its M-Pesa transaction id. */
async function paidCollection(): Promise<string> {
  const result = await connector.requestPayment(prompt());
  return (result as { paid: { remoteTransactionId: string } }).paid.remoteTransactionId;
}

beforeAll(async () => {
  simulator = await startVodacomSimulator({
    ...CREDENTIALS,
    markets: { TZN: ['TZS'], DRC: ['USD'] },
    activationMs: 0,
    pinWindowMs: 300,
    decisionDelayMs: 20,
  });
  wiretap = startWiretap(simulator.url);
  connector = vodacom.create(settingsOf(vodacom, envOf(simulator.url, simulator.publicKey)), depsOf('http://unused'));
  tapped = vodacom.create(settingsOf(vodacom, envOf(wiretap.url, simulator.publicKey)), depsOf('http://unused'));
});

afterAll(async () => {
  connector?.stop?.();
  tapped?.stop?.();
  await simulator?.stop();
  wiretap?.stop();
});

describe('request building', () => {
  test("a prompt is a customer payment in its market's context, with an encrypted session as the bearer, the Origin, and the input fields under a conversation id derived from our reference", async () => {
    const asked = prompt({ amount: '1500.0000' });
    const conversationId = conversationOf('prompt', asked.promptReference);
    expect(conversationId).toMatch(/^C[0-9a-f]{31}$/);
    const result = await tapped.requestPayment(asked);
    const transaction = await transactionOf(conversationId);
    expect(result).toMatchObject({ accepted: true, paid: { remoteTransactionId: transaction.transactionId } });
    const [session] = wiretap.seen('/ipg/v2/vodacomTZN/getSession/');
    expect(session).toMatchObject({ method: 'GET', headers: { origin: CREDENTIALS.origin } });
    const apiKeyBearer = session!.headers.authorization!;
    expect(apiKeyBearer).toMatch(/^Bearer [A-Za-z0-9+/=]{344}$/);
    expect(apiKeyBearer).not.toContain(CREDENTIALS.apiKey);
    const [sent] = wiretap.seen('/ipg/v2/vodacomTZN/c2bPayment/singleStage/');
    expect(sent).toMatchObject({ method: 'POST', headers: { origin: CREDENTIALS.origin } });
    expect(sent!.headers.authorization).toMatch(/^Bearer [A-Za-z0-9+/=]{344}$/);
    expect(sent!.headers.authorization).not.toBe(apiKeyBearer);
    expect(sent!.json).toEqual({
      input_Amount: '1500',
      input_Currency: 'TZS',
      input_CustomerMSISDN: msisdn(asked.phoneNumber),
      input_TransactionReference: conversationId.slice(0, 20),
      input_PurchasedItemsDesc: asked.reference,
      input_Country: 'TZN',
      input_ServiceProviderCode: CREDENTIALS.serviceProviderCode,
      input_ThirdPartyConversationID: conversationId,
    });
  });

  test("a prompt in the DRC goes to its own context, with USD's two decimals", async () => {
    const asked = promptOf({ network: DRC, currency: 'USD', phoneNumber: congolese(), amount: '12.5000' });
    expect(await tapped.requestPayment(asked)).toMatchObject({ accepted: true });
    // Its own sessions: the one in use and its spare.
    expect(wiretap.seen('/ipg/v2/vodacomDRC/getSession/').length).toBeGreaterThan(0);
    expect(wiretap.seen('/ipg/v2/vodacomDRC/c2bPayment/singleStage/').at(-1)!.json).toMatchObject({
      input_Amount: '12.50',
      input_Currency: 'USD',
      input_Country: 'DRC',
      input_ThirdPartyConversationID: conversationOf('prompt', asked.promptReference, DRC),
    });
  });

  test('a payout is a B2C payment; a reversal a PUT naming the collection and the amount sent back', async () => {
    const paid = payout();
    const b2c = await tapped.sendMoney(paid);
    const sent = wiretap.seen('/b2cPayment/').at(-1)!;
    const conversationId = conversationOf('payout', paid.reference);
    expect(sent.json).toEqual({
      input_Amount: '2500',
      input_Currency: 'TZS',
      input_CustomerMSISDN: msisdn(paid.phoneNumber),
      input_TransactionReference: conversationId.slice(0, 20),
      input_PaymentItemsDesc: 'Payment',
      input_Country: 'TZN',
      input_ServiceProviderCode: CREDENTIALS.serviceProviderCode,
      input_ThirdPartyConversationID: conversationId,
    });
    expect(b2c).toEqual({
      status: 'completed',
      remoteTransactionId: (await transactionOf(conversationId)).transactionId,
    });
    const original = await paidCollection();
    const returned = payoutOf({
      network: TANZANIA,
      currency: 'TZS',
      phoneNumber: tanzanian(),
      amount: '1500',
      kind: 'reversal',
      originalTransactionId: original,
    });
    expect(await tapped.sendMoney(returned)).toMatchObject({ status: 'completed' });
    const reversal = wiretap.seen('/reversal/').at(-1)!;
    expect(reversal.method).toBe('PUT');
    expect(reversal.json).toEqual({
      input_ReversalAmount: '1500',
      input_TransactionID: original,
      input_Country: 'TZN',
      input_ServiceProviderCode: CREDENTIALS.serviceProviderCode,
      input_ThirdPartyConversationID: conversationOf('reversal', returned.reference),
    });
  });

  test('the status query asks by our conversation id, under a query conversation id of its own', async () => {
    const asked = prompt();
    await tapped.requestPayment(asked);
    await tapped.promptStatus(takenPrompt(asked, conversationOf('prompt', asked.promptReference)));
    const query = wiretap.seen('/queryTransactionStatus/').at(-1)!;
    expect(query.method).toBe('GET');
    expect(Object.fromEntries(query.query)).toEqual({
      input_QueryReference: conversationOf('prompt', asked.promptReference),
      input_Country: 'TZN',
      input_ServiceProviderCode: CREDENTIALS.serviceProviderCode,
      input_ThirdPartyConversationID: expect.stringMatching(/^Q[0-9a-f]{30}$/),
    });
  });
});

describe('answer reading', () => {
  test("Completed is paid under M-Pesa's transaction id; Cancelled, Failed and Expired are failed in a merchant's words", async () => {
    const cases = [
      { outcome: 'pays', expected: 'paid' },
      { outcome: 'cancels', expected: 'The subscriber cancelled the payment or did not approve it in time.' },
      { outcome: 'insufficient', expected: 'M-Pesa could not complete the transaction.' },
      { outcome: 'ignores', expected: 'The payment request expired before the subscriber approved it.' },
    ] as const;
    for (const { outcome, expected } of cases) {
      const asked = prompt();
      simulator.subscriber(msisdn(asked.phoneNumber), { outcome });
      const conversationId = conversationOf('prompt', asked.promptReference);
      await connector.requestPayment(asked);
      const transaction = await transactionOf(conversationId, (status) => status !== 'Pending');
      const status = await connector.promptStatus(takenPrompt(asked, conversationId));
      if (expected === 'paid')
        expect(status).toMatchObject({ status: 'paid', remoteTransactionId: transaction.transactionId });
      else expect(status).toEqual({ status: 'failed', error: expected });
    }
  });

  test('Pending is pending', async () => {
    const asked = prompt();
    // The PIN window closes (INS-9) before the subscriber pays.
    simulator.subscriber(msisdn(asked.phoneNumber), { decideAfterMs: 1500 });
    const conversationId = conversationOf('prompt', asked.promptReference);
    expect(await connector.requestPayment(asked)).toEqual({
      accepted: true,
      confirm: { operatorReference: conversationId },
    });
    expect(await connector.promptStatus(takenPrompt(asked, conversationId))).toEqual({ status: 'pending' });
  });

  test('a payment request M-Pesa has no record of is pending, and failed once it has long had none; never sent again', async () => {
    const asked = prompt();
    const conversationId = conversationOf('prompt', asked.promptReference);
    const journaled = { kind: 'prompt' as const, network: asked.network, reference: asked.promptReference };
    expect(await connector.lookup!({ ...journaled, operatorReference: conversationId })).toBe('absent');
    const recent: PaymentPrompt = { ...asked, recorded: recordedAs(conversationId) };
    expect(await connector.promptStatus(takenPrompt(recent, conversationId))).toEqual({ status: 'pending' });
    const old: PaymentPrompt = { ...asked, recorded: recordedAs(conversationId, new Date(Date.now() - 181_000)) };
    expect(await connector.promptStatus(takenPrompt(old, conversationId))).toEqual({
      status: 'failed',
      error: 'M-Pesa has no record of the payment request (it never reached the subscriber).',
    });
    expect(simulator.transactions().filter((each) => each.thirdPartyConversationId === conversationId)).toEqual([]);
  });

  test('a prompt in a currency its market does not move, or on a network it does not serve, is failed without a call', async () => {
    const asked = prompt();
    const conversationId = conversationOf('prompt', asked.promptReference);
    const before = simulator.calls().length;
    expect(await connector.promptStatus(takenPrompt({ ...asked, currency: 'USD' }, conversationId))).toEqual({
      status: 'failed',
      error: 'Vodacom M-Pesa in TZN moves TZS here, not USD.',
    });
    const elsewhere = { ...asked, network: networkNamed('Tigo Tanzania') };
    expect(await connector.promptStatus(takenPrompt(elsewhere, conversationId))).toEqual({
      status: 'failed',
      error: "Tigo Tanzania is not served by this deployment's Vodacom M-Pesa connection.",
    });
    expect(simulator.calls()).toHaveLength(before);
  });

  test('a B2C M-Pesa never received is sent again under the same conversation id, and completes', async () => {
    const paid = payout();
    const conversationId = conversationOf('payout', paid.reference);
    const result = await connector.payoutStatus(paid);
    const [transaction] = simulator
      .transactions('b2c')
      .filter((each) => each.thirdPartyConversationId === conversationId);
    expect(result).toEqual({ status: 'completed', remoteTransactionId: transaction!.transactionId });
    expect(await connector.payoutStatus(paid)).toEqual(result);
  });
});

describe('callbacks', () => {
  test('the OpenAPI calls nothing back: the unit declares no callback route', () => {
    expect(vodacom.callsBack).toBe(false);
    expect(vodacom.callbacks).toBeUndefined();
  });
});

/** What the core reads as "in doubt": the call threw. */
const IN_DOUBT = 'in doubt (thrown)';
type Row = { answer: string; send: () => Promise<unknown>; expected: object | typeof IN_DOUBT };
/** Taken, with our conversation id for the status query to settle: an answer that said nothing about the payment. */
const TAKEN_FOR_THE_STATUS = { accepted: true, confirm: { operatorReference: expect.stringMatching(/^C/) } };

describe('final and in-doubt table', () => {
  const rows: Row[] = [
    {
      answer: 'INS-0 (the subscriber paid): paid at once',
      send: () => connector.requestPayment(prompt()),
      expected: { accepted: true, paid: { remoteTransactionId: expect.any(String), paymentDate: expect.any(String) } },
    },
    {
      answer: 'INS-10 (a duplicate conversation id): taken, the status decides',
      send: async () => {
        const asked = prompt();
        await connector.requestPayment(asked);
        return await connector.requestPayment(asked);
      },
      expected: TAKEN_FOR_THE_STATUS,
    },
    {
      answer: 'a B2C repeated (INS-10): pending',
      send: async () => {
        const paid = payout();
        await connector.sendMoney(paid);
        return await connector.sendMoney(paid);
      },
      expected: { status: 'pending', remoteTransactionId: null },
    },
    {
      answer: 'INS-5 (HTTP 401, the subscriber cancelled): refused, not a session refusal',
      send: async () => {
        const asked = prompt();
        simulator.subscriber(msisdn(asked.phoneNumber), { outcome: 'cancels' });
        return await connector.requestPayment(asked);
      },
      expected: { accepted: false, error: 'The subscriber cancelled the payment (or did not enter the PIN).' },
    },
    {
      answer: "INS-2006 on a customer payment (the subscriber's balance): refused, not the route's fault",
      send: async () => {
        const asked = prompt();
        simulator.subscriber(msisdn(asked.phoneNumber), { outcome: 'insufficient' });
        return await connector.requestPayment(asked);
      },
      expected: { accepted: false, error: "The subscriber's M-Pesa balance is not enough." },
    },
    {
      answer: "INS-2006 on a B2C (our own account short): rejected as the route's fault",
      send: async () => {
        simulator.setB2cBalance(100);
        try {
          return await connector.sendMoney(payout());
        } finally {
          simulator.setB2cBalance(null);
        }
      },
      expected: {
        status: 'rejected',
        error: "The merchant's M-Pesa account balance is not enough.",
        remoteTransactionId: null,
        routeFault: true,
      },
    },
    {
      answer: 'INS-2051 (not an M-Pesa number): refused',
      send: async () => {
        const asked = prompt();
        simulator.subscriber(msisdn(asked.phoneNumber), { registered: false });
        return await connector.requestPayment(asked);
      },
      expected: { accepted: false, error: 'This is not a valid M-Pesa number (not registered).' },
    },
    {
      answer: 'INS-15 (an amount M-Pesa does not take): refused',
      send: () => connector.sendMoney(payout({ amount: '0.0000' })),
      expected: { status: 'rejected', error: 'M-Pesa does not take this amount.', remoteTransactionId: null },
    },
    {
      answer: 'INS-18 (a reversal of a transaction M-Pesa does not know): rejected',
      send: () =>
        connector.sendMoney(
          payoutOf({
            network: TANZANIA,
            currency: 'TZS',
            phoneNumber: tanzanian(),
            amount: '1500',
            kind: 'reversal',
            originalTransactionId: 'NOSUCHTX0000',
          }),
        ),
      expected: {
        status: 'rejected',
        error: 'M-Pesa does not know the transaction to reverse.',
        remoteTransactionId: null,
      },
    },
    {
      answer: 'INS-6 (HTTP 401, a reversal of a transaction reversed already): rejected, not a session refusal',
      send: async () => {
        const original = await paidCollection();
        const reversalOf = () =>
          payoutOf({
            network: TANZANIA,
            currency: 'TZS',
            phoneNumber: tanzanian(),
            amount: '1500',
            kind: 'reversal',
            originalTransactionId: original,
          });
        await connector.sendMoney(reversalOf());
        return await connector.sendMoney(reversalOf());
      },
      expected: { status: 'rejected', error: 'M-Pesa could not complete the transaction.', remoteTransactionId: null },
    },
    {
      answer: 'a currency the market does not move: refused, nothing sent',
      send: () => connector.requestPayment({ ...prompt(), currency: 'USD' }),
      expected: { accepted: false, error: 'Vodacom M-Pesa in TZN moves TZS here, not USD.' },
    },
    {
      answer: 'a revoked session (HTTP 401 INS-2): a new session, then taken',
      send: async () => {
        simulator.revokeSessions();
        return await connector.requestPayment(prompt());
      },
      expected: { accepted: true, paid: { remoteTransactionId: expect.any(String) } },
    },
    {
      answer: 'INS-9 (the PIN window closed first): taken, the status decides',
      send: async () => {
        const asked = prompt();
        simulator.subscriber(msisdn(asked.phoneNumber), { outcome: 'ignores' });
        return await connector.requestPayment(asked);
      },
      expected: TAKEN_FOR_THE_STATUS,
    },
    {
      answer: 'INS-1 (HTTP 500): taken, the status decides',
      send: async () => {
        await connector.requestPayment(prompt());
        await simulator.outage('error');
        try {
          return await connector.requestPayment(prompt());
        } finally {
          await simulator.outage('none');
        }
      },
      expected: TAKEN_FOR_THE_STATUS,
    },
    {
      answer: 'a B2C answered HTTP 500: pending, the status decides',
      send: async () => {
        await connector.sendMoney(payout());
        await simulator.outage('error');
        try {
          return await connector.sendMoney(payout());
        } finally {
          await simulator.outage('none');
        }
      },
      expected: { status: 'pending', remoteTransactionId: null },
    },
    {
      answer: 'no answer within OPERATOR_TIMEOUT_MS (M-Pesa paid it out): pending, the status decides',
      send: async () => {
        await connector.sendMoney(payout());
        simulator.late({ method: 'POST', path: /\/b2cPayment\/?$/, holdMs: 400, process: 'before', answer: 'real' });
        try {
          return await withOperatorTimeout(100, () => connector.sendMoney(payout()));
        } finally {
          await simulator.settled();
        }
      },
      expected: { status: 'pending', remoteTransactionId: null },
    },
    {
      answer: 'a connection refused: nothing sent, thrown',
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
      answer: "the status query's own INS-1 (HTTP 500): thrown",
      send: async () => {
        const asked = prompt();
        await connector.requestPayment(asked);
        await simulator.outage('error');
        try {
          return await connector.promptStatus(takenPrompt(asked, conversationOf('prompt', asked.promptReference)));
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
    else if ('paid' in expected) expect(outcome).toMatchObject(expected);
    else expect(outcome).toEqual(expected);
  });
});
