/**
 * The pawaPay connector alone (Merchant API v2), against the project's pawaPay simulator on loopback:
 * no database, no worker, no Temporal. It is built through its unit with a records port that throws on
 * any use, so every call here proves it keeps no records: the id of each deposit, payout or refund is
 * the one the core recorded (`operatorIdFor`, handed back as `recorded`). It builds pawaPay's requests,
 * reads the status query into paid, failed or pending (a record that is not the one asked for is not
 * paid), refuses a callback whose RFC 9421 signature does not verify, and sorts pawaPay's answers
 * into final refusals (with the route's own faults marked), taken (DUPLICATE_IGNORED, a deposit
 * refunded already) and in doubt (thrown).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { pawapay, PAWAPAY_CALLBACK_PATHS, type PawapaySettings } from '../../src/network/pawapay';
import type { Connector, NetworkOperation, PaymentPrompt, Payout } from '../../src/network/adapter';
import { startPawapaySimulator, type PawapaySimulator } from '../simulators/pawapay';
import {
  callbackContextOf,
  depsOf,
  nextSequence,
  operationOf,
  outcomeOf,
  payoutOf,
  promptOf,
  recordedAs,
  serveCallbacks,
  settingsOf,
  startWiretap,
  takenPrompt,
  until,
  withOperatorTimeout,
  wokenBy,
} from './kit';

const TOKEN = 'pawapay-token';
const TIGO = 'Tigo Tanzania';
const TELECEL = 'Telecel Ghana';
const ORANGE = 'Orange DRC';

const envOf = (baseUrl: string, token = TOKEN) => ({
  PAWAPAY_BASE_URL: baseUrl,
  PAWAPAY_API_TOKEN: token,
  // Orange DRC is named here but not enabled on the simulated account: pawaPay refuses its deposits.
  PAWAPAY_PROVIDERS: 'TIGO_TZA,VODAFONE_GHA,ORANGE_COD',
  PAWAPAY_SIGNED_CALLBACKS: 'true',
});

type Built = Omit<Connector, 'name' | 'inFlight'>;
let simulator: PawapaySimulator;
let wiretap: ReturnType<typeof startWiretap>;
let settings: PawapaySettings;
let callbacks: ReturnType<typeof serveCallbacks<PawapaySettings | null>>;
const operations: NetworkOperation[] = [];
let woken: ReturnType<typeof callbackContextOf>['woken'];
/** Built with a records port that throws on any use; `tapped` reaches the simulator through the wiretap. */
let connector: Built;
let tapped: Built;

const digitsOf = (prefix: string) => `${prefix}${String(nextSequence()).padStart(7, '0')}`;
/** A fresh Tigo Tanzania number (`+25565` and seven digits). */
const tigo = () => digitsOf('+25565');
const msisdn = (e164: string) => e164.slice(1);
/** The operation as the core hands it over: with the id it recorded before the first send (`operatorIdFor`). */
const recorded = <T extends PaymentPrompt | Payout>(operation: T): T => ({
  ...operation,
  recorded: recordedAs(
    connector.operatorIdFor!({
      kind: 'promptReference' in operation ? 'prompt' : operation.kind === 'reversal' ? 'reversal' : 'payout',
      network: operation.network,
      reference: 'promptReference' in operation ? operation.promptReference : operation.reference,
    }),
  ),
});
const idOf = (operation: PaymentPrompt | Payout) => operation.recorded!.operatorReference!;
const prompt = (fields: { network?: string; currency?: string; phoneNumber?: string; amount?: string } = {}) =>
  recorded(promptOf({ network: TIGO, currency: 'TZS', phoneNumber: tigo(), amount: '1500.0000', ...fields }));
const payout = (fields: { phoneNumber?: string; amount?: string } = {}) =>
  recorded(payoutOf({ network: TIGO, currency: 'TZS', phoneNumber: tigo(), amount: '2500.0000', ...fields }));
const refundOf = (depositId: string, amount = '1500.0000') =>
  recorded(
    payoutOf({
      network: TIGO,
      currency: 'TZS',
      phoneNumber: tigo(),
      amount,
      kind: 'reversal',
      originalTransactionId: depositId,
    }),
  );
/** pawaPay's record under `id` once it is final (COMPLETED or FAILED) or, with `status`, in that status. */
const reached = (id: string, status?: string) =>
  until(`pawaPay's ${id} to be ${status ?? 'final'}`, () =>
    [...simulator.deposits(), ...simulator.payouts(), ...simulator.refunds()].find(
      (each) =>
        each.id === id && (status ? each.status === status : each.status === 'COMPLETED' || each.status === 'FAILED'),
    ),
  );
/** A deposit pawaPay completed, and the prompt that asked for it. */
async function paidDeposit(): Promise<PaymentPrompt> {
  const asked = prompt();
  await connector.requestPayment(asked);
  await reached(idOf(asked), 'COMPLETED');
  return asked;
}

beforeAll(async () => {
  simulator = await startPawapaySimulator({
    apiToken: TOKEN,
    providers: ['TIGO_TZA', 'VODAFONE_GHA'],
    decisionDelayMs: 20,
    callbackDelayMs: 5,
    // Callbacks only where a test asks for them, so that none arrives in another test.
    defaultSubscriber: { callback: 'none' },
  });
  wiretap = startWiretap(simulator.url);
  settings = settingsOf(pawapay, envOf(simulator.url))!;
  const callbackContext = callbackContextOf<PawapaySettings | null>(settings, { operations });
  woken = callbackContext.woken;
  callbacks = serveCallbacks(pawapay.callbacks!.routes, callbackContext.context);
  simulator.setCallbackBase(callbacks.url);
  connector = pawapay.create(settings, depsOf(callbacks.url));
  tapped = pawapay.create(settingsOf(pawapay, envOf(wiretap.url)), depsOf(callbacks.url));
});

afterAll(async () => {
  await simulator?.stop();
  wiretap?.stop();
  callbacks?.stop();
});

describe('request building', () => {
  test('a prompt is a deposit under the id the core recorded, with the bearer token, the number with its country code, the provider and the amount as the provider takes it', async () => {
    const asked = prompt({ amount: '1500.0000' });
    const depositId = idOf(asked);
    expect(depositId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await tapped.requestPayment(asked)).toEqual({
      accepted: true,
      confirm: { operatorReference: depositId },
    });
    const [sent] = wiretap.seen('/v2/deposits');
    expect(sent).toMatchObject({ method: 'POST' });
    expect(sent!.headers).toMatchObject({ authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' });
    expect(sent!.json).toEqual({
      depositId,
      amount: '1500',
      currency: 'TZS',
      payer: { type: 'MMO', accountDetails: { phoneNumber: msisdn(asked.phoneNumber), provider: 'TIGO_TZA' } },
      clientReferenceId: asked.promptReference,
      customerMessage: asked.reference,
    });
  });

  test('a GHS amount keeps its decimals without trailing zeros; the customer message keeps letters, digits and spaces', async () => {
    const asked = {
      ...prompt({ network: TELECEL, currency: 'GHS', phoneNumber: digitsOf('+23320'), amount: '10.5000' }),
      reference: 'Order #42/B (paid)',
    };
    expect(await tapped.requestPayment(asked)).toMatchObject({ accepted: true });
    expect(wiretap.seen('/v2/deposits').at(-1)!.json).toMatchObject({
      amount: '10.5',
      currency: 'GHS',
      payer: { accountDetails: { provider: 'VODAFONE_GHA' } },
      customerMessage: 'Order 42 B paid',
    });
  });

  test('a payout goes to the recipient under its recorded id; a reversal is a refund of the deposit it names', async () => {
    const paid = payout();
    expect(await tapped.sendMoney(paid)).toEqual({ status: 'pending', remoteTransactionId: null });
    expect(wiretap.seen('/v2/payouts').at(-1)!.json).toEqual({
      payoutId: idOf(paid),
      amount: '2500',
      currency: 'TZS',
      recipient: { type: 'MMO', accountDetails: { phoneNumber: msisdn(paid.phoneNumber), provider: 'TIGO_TZA' } },
      clientReferenceId: paid.reference,
      customerMessage: 'Payment',
    });
    const deposit = await paidDeposit();
    const returned = refundOf(idOf(deposit));
    expect(await tapped.sendMoney(returned)).toEqual({ status: 'pending', remoteTransactionId: null });
    expect(wiretap.seen('/v2/refunds').at(-1)!.json).toEqual({
      refundId: idOf(returned),
      depositId: idOf(deposit),
      amount: '1500',
      currency: 'TZS',
      clientReferenceId: returned.reference,
    });
  });

  test('each operation gets a fresh id, and a call with no id recorded sends nothing', async () => {
    const network = prompt().network;
    const ids = new Set(
      [1, 2, 3].map(() => connector.operatorIdFor!({ kind: 'prompt', network, reference: 'req-1-1' })),
    );
    expect(ids.size).toBe(3);
    const before = wiretap.seen().length;
    const { recorded: _none, ...unrecorded } = prompt();
    expect(await outcomeOf(() => tapped.requestPayment(unrecorded))).toEqual({
      thrown: `pawaPay: no id recorded for ${unrecorded.promptReference}; it was never sent here.`,
    });
    expect(wiretap.seen()).toHaveLength(before);
  });
});

describe('answer reading', () => {
  test("COMPLETED with the prompt's amount, number and currency is paid under the depositId", async () => {
    const asked = await paidDeposit();
    expect(await connector.promptStatus(takenPrompt(asked, idOf(asked)))).toMatchObject({
      status: 'paid',
      remoteTransactionId: idOf(asked),
    });
  });

  test("FAILED is failed in a merchant's words; PROCESSING and IN_RECONCILIATION are pending", async () => {
    const declined = prompt();
    simulator.setSubscriber(msisdn(declined.phoneNumber), { deposit: 'declines', callback: 'none' });
    const silent = prompt();
    simulator.setSubscriber(msisdn(silent.phoneNumber), { deposit: 'ignores', callback: 'none' });
    const reconciling = prompt();
    simulator.setSubscriber(msisdn(reconciling.phoneNumber), { deposit: 'reconciles', callback: 'none' });
    for (const asked of [declined, silent, reconciling]) await connector.requestPayment(asked);
    await reached(idOf(declined));
    await reached(idOf(reconciling), 'IN_RECONCILIATION');
    expect(await connector.promptStatus(takenPrompt(declined, idOf(declined)))).toEqual({
      status: 'failed',
      error: 'The customer did not approve the payment (declined it, or did not enter the PIN in time).',
    });
    expect(await connector.promptStatus(takenPrompt(silent, idOf(silent)))).toEqual({ status: 'pending' });
    expect(await connector.promptStatus(takenPrompt(reconciling, idOf(reconciling)))).toEqual({ status: 'pending' });
  });

  test.each([
    { differs: 'amount', change: { amount: '1600' } },
    { differs: 'number', change: { phoneNumber: '+255650000009' } },
    { differs: 'currency', change: { currency: 'KES' } },
  ])("a COMPLETED record whose $differs is not the prompt's is never paid", async ({ change }) => {
    const asked = await paidDeposit();
    expect(await connector.promptStatus(takenPrompt({ ...asked, ...change }, idOf(asked)))).toEqual({
      status: 'failed',
      error: "pawaPay's record of the payment does not match the request (amount, number or currency).",
    });
  });

  test('a deposit pawaPay never received (NOT_FOUND) is sent now under the same id, and is pending', async () => {
    const asked = prompt();
    const journaled = { kind: 'prompt' as const, network: asked.network, reference: asked.promptReference };
    expect(await connector.lookup!({ ...journaled, operatorReference: idOf(asked) })).toBe('absent');
    expect(await connector.lookup!({ ...journaled, operatorReference: null })).toBe('absent');
    expect(await connector.promptStatus(takenPrompt(asked, idOf(asked)))).toEqual({ status: 'pending' });
    expect(simulator.promptsOf(idOf(asked))).toBe(1);
    expect(await connector.lookup!({ ...journaled, operatorReference: idOf(asked) })).toBe('present');
  });

  test("a payout: COMPLETED is completed under the provider's transaction id; FAILED is failed, our wallet short being the route's fault; a record not ours is pending", async () => {
    const paid = payout();
    const unknown = payout();
    simulator.setSubscriber(msisdn(unknown.phoneNumber), { payout: 'unknown', callback: 'none' });
    const short = payout();
    simulator.setSubscriber(msisdn(short.phoneNumber), {
      payout: 'fails',
      failureCode: 'PAWAPAY_WALLET_OUT_OF_FUNDS',
      callback: 'none',
    });
    for (const asked of [paid, unknown, short]) await connector.sendMoney(asked);
    const completed = await reached(idOf(paid), 'COMPLETED');
    await reached(idOf(unknown));
    await reached(idOf(short));
    expect(await connector.payoutStatus(paid)).toEqual({
      status: 'completed',
      remoteTransactionId: completed.providerTransactionId!,
    });
    expect(await connector.payoutStatus(unknown)).toEqual({
      status: 'failed',
      error: 'This number has no mobile money account on the chosen network.',
      remoteTransactionId: null,
    });
    expect(await connector.payoutStatus(short)).toEqual({
      status: 'failed',
      error: 'Our pawaPay wallet does not hold enough for this; nothing was sent.',
      routeFault: true,
      remoteTransactionId: null,
    });
    expect(await connector.payoutStatus({ ...paid, amount: '2600' })).toEqual({
      status: 'pending',
      remoteTransactionId: null,
    });
  });

  test('a payout held ENQUEUED (payouts DELAYED at the provider) is pending', async () => {
    simulator.setOperationStatus('TIGO_TZA', 'PAYOUT', 'DELAYED');
    try {
      const held = payout();
      expect(await connector.sendMoney(held)).toEqual({ status: 'pending', remoteTransactionId: null });
      await reached(idOf(held), 'ENQUEUED');
      expect(await connector.payoutStatus(held)).toEqual({ status: 'pending', remoteTransactionId: null });
    } finally {
      simulator.setOperationStatus('TIGO_TZA', 'PAYOUT', 'OPERATIONAL');
    }
  });

  test('a refund COMPLETED for its amount is completed', async () => {
    const deposit = await paidDeposit();
    const returned = refundOf(idOf(deposit));
    await connector.sendMoney(returned);
    const refund = await reached(idOf(returned), 'COMPLETED');
    expect(await connector.payoutStatus(returned)).toEqual({
      status: 'completed',
      remoteTransactionId: refund.providerTransactionId!,
    });
  });
});

describe('callbacks', () => {
  test("pawaPay's signed callback wakes the operation its id names", async () => {
    const asked = prompt();
    simulator.setSubscriber(msisdn(asked.phoneNumber), { callback: 'once' });
    const operation = operationOf({ network: TIGO, reference: asked.promptReference, operatorReference: idOf(asked) });
    operations.push(operation);
    await connector.requestPayment(asked);
    const call = await until('the callback to wake the deposit', () =>
      woken.find((each) => each.operation.id === operation.id),
    );
    expect(call).toMatchObject({ asResult: false, said: { depositId: idOf(asked), status: 'COMPLETED' } });
    // Answered once the wake is done: pawaPay hears the answer a moment after.
    const delivered = await until('the callback to be answered', () =>
      simulator.callbacks().find((each) => each.body.includes(idOf(asked)) && each.status !== null),
    );
    expect(delivered).toMatchObject({ kind: 'deposit', status: 200 });
    expect(delivered!.headers['Signature-Input']).toContain('keyid="HTTP_EC_P256_KEY:1"');
  });

  const forgeries = [
    {
      forgery: 'signed with a key pawaPay does not publish',
      options: { wrongKey: true },
      detail: "The callback's signature does not verify.",
    },
    {
      forgery: 'changed after it was signed',
      options: { tamper: true },
      detail: "The callback's signature does not verify.",
    },
    {
      forgery: 'not signed at all (signatures required)',
      options: { sign: false },
      detail: 'The callback is not signed.',
    },
  ];

  test.each(forgeries)('a callback $forgery is refused (403) and wakes nothing', async ({ options, detail }) => {
    // The signature is checked before anything is looked up: the operation need not be at pawaPay at all.
    const depositId = crypto.randomUUID();
    operations.push(operationOf({ network: TIGO, reference: `req-${nextSequence()}-1`, operatorReference: depositId }));
    const body = { depositId, status: 'COMPLETED', amount: '1500.00', currency: 'TZS' };
    const sent = await simulator.sendCallback('deposit', body, options);
    expect(sent.status).toBe(403);
    const delivered = callbacks.deliveries.filter((each) => each.path === PAWAPAY_CALLBACK_PATHS.deposit);
    expect(delivered.at(-1)).toMatchObject({ body: { depositId }, status: 403, answer: { detail } });
    // By its id: a tampered callback arrives with another body than the one signed.
    expect(woken.filter((each) => (each.said as { depositId?: string }).depositId === depositId)).toEqual([]);
  });

  test.each(Object.entries(PAWAPAY_CALLBACK_PATHS).map(([movement, path]) => ({ movement, path })))(
    'a well-signed $movement callback for no operation of ours wakes nothing',
    async ({ movement }) => {
      const idField = { deposit: 'depositId', payout: 'payoutId', refund: 'refundId' }[movement]!;
      const said = { [idField]: crypto.randomUUID(), status: 'FAILED' };
      const sent = await simulator.sendCallback(movement as 'deposit' | 'payout' | 'refund', said);
      expect(sent.status).toBe(200);
      expect(wokenBy(woken, said)).toEqual([]);
    },
  );

  test("a signed callback that cannot be checked (pawaPay's keys out of reach) is refused (503) and wakes nothing", async () => {
    const unchecked = callbackContextOf<PawapaySettings | null>({ ...settings }, { operations });
    const elsewhere = serveCallbacks(pawapay.callbacks!.routes, unchecked.context);
    simulator.setCallbackBase(elsewhere.url);
    await simulator.outage('error');
    try {
      const asked = prompt();
      const sent = await simulator.sendCallback('deposit', { depositId: idOf(asked), status: 'COMPLETED' });
      expect(sent.status).toBe(503);
      expect(unchecked.woken).toEqual([]);
    } finally {
      await simulator.outage('none');
      simulator.setCallbackBase(callbacks.url);
      elsewhere.stop();
    }
  });
});

/** What the core reads as "in doubt": the call threw. */
const IN_DOUBT = 'in doubt (thrown)';
type Row = { answer: string; send: () => Promise<unknown>; expected: object | typeof IN_DOUBT };

describe('final and in-doubt table', () => {
  const rows: Row[] = [
    { answer: 'ACCEPTED: taken', send: () => connector.requestPayment(prompt()), expected: { accepted: true } },
    {
      answer: 'DUPLICATE_IGNORED (the same id again): taken, one PIN prompt',
      send: async () => {
        const asked = prompt();
        await connector.requestPayment(asked);
        const again = await connector.requestPayment(asked);
        return { ...again, prompts: simulator.promptsOf(idOf(asked)) };
      },
      expected: { accepted: true, prompts: 1 },
    },
    {
      answer: 'a payout DUPLICATE_IGNORED: pending',
      send: async () => {
        const paid = payout();
        await connector.sendMoney(paid);
        return await connector.sendMoney(paid);
      },
      expected: { status: 'pending', remoteTransactionId: null },
    },
    {
      answer: "REJECTED INVALID_PHONE_NUMBER: refused, not the route's fault",
      send: () => connector.requestPayment(prompt({ phoneNumber: '+2556512' })),
      expected: { accepted: false, error: 'The phone number is not a valid number for this network.' },
    },
    {
      answer: "REJECTED AMOUNT_OUT_OF_BOUNDS: refused, not the route's fault",
      send: () => connector.requestPayment(prompt({ amount: '50' })),
      expected: { accepted: false, error: "The amount is outside this network's limits for this operation." },
    },
    {
      answer: "REJECTED PROVIDER_TEMPORARILY_UNAVAILABLE (deposits CLOSED): refused as the route's fault",
      send: async () => {
        simulator.setOperationStatus('TIGO_TZA', 'DEPOSIT', 'CLOSED');
        try {
          return await connector.requestPayment(prompt());
        } finally {
          simulator.setOperationStatus('TIGO_TZA', 'DEPOSIT', 'OPERATIONAL');
        }
      },
      expected: {
        accepted: false,
        error: 'The mobile network is unavailable at pawaPay right now; nothing was sent, try again later.',
        routeFault: true,
      },
    },
    {
      answer: "a payout REJECTED PROVIDER_TEMPORARILY_UNAVAILABLE (payouts CLOSED): rejected as the route's fault",
      send: async () => {
        simulator.setOperationStatus('TIGO_TZA', 'PAYOUT', 'CLOSED');
        try {
          return await connector.sendMoney(payout());
        } finally {
          simulator.setOperationStatus('TIGO_TZA', 'PAYOUT', 'OPERATIONAL');
        }
      },
      expected: {
        status: 'rejected',
        error: 'The mobile network is unavailable at pawaPay right now; nothing was sent, try again later.',
        routeFault: true,
        remoteTransactionId: null,
      },
    },
    {
      answer: 'DEPOSITS_NOT_ALLOWED (403, the provider not enabled on the account): refused',
      send: () =>
        connector.requestPayment(prompt({ network: ORANGE, currency: 'CDF', phoneNumber: digitsOf('+24384') })),
      expected: { accepted: false, error: 'Collections through this network are not enabled on our pawaPay account.' },
    },
    {
      answer: 'a refund of a deposit pawaPay does not know (400 INVALID_PARAMETER): rejected',
      send: () => connector.sendMoney(refundOf(crypto.randomUUID())),
      expected: {
        status: 'rejected',
        error: expect.stringMatching(
          /^pawaPay refused the request as malformed; nothing was sent\. \(pawaPay: Deposit with ID #.* not found\.\)$/,
        ),
        remoteTransactionId: null,
      },
    },
    {
      answer: 'a refund while another refund of its deposit is under way (REFUND_IN_PROGRESS): taken, pending',
      send: async () => {
        const deposit = await paidDeposit();
        simulator.setSubscriber(msisdn(deposit.phoneNumber), { payout: 'ignores', callback: 'none' });
        await connector.sendMoney(refundOf(idOf(deposit)));
        const second = refundOf(idOf(deposit));
        await connector.sendMoney(second);
        return await connector.payoutStatus(second);
      },
      expected: { status: 'pending', remoteTransactionId: null },
    },
    {
      answer: 'a refund of a deposit refunded already (DEPOSIT_ALREADY_REFUNDED): completed, never failed',
      send: async () => {
        const deposit = await paidDeposit();
        const first = refundOf(idOf(deposit));
        await connector.sendMoney(first);
        await reached(idOf(first), 'COMPLETED');
        const second = refundOf(idOf(deposit));
        const sent = await connector.sendMoney(second);
        const status = await connector.payoutStatus(second);
        return { sent, status, underTheDeposit: status.remoteTransactionId === idOf(deposit) };
      },
      expected: {
        sent: { status: 'pending', remoteTransactionId: null },
        status: { status: 'completed' },
        underTheDeposit: true,
      },
    },
    {
      answer: 'AUTHENTICATION_ERROR (403, a token pawaPay does not take): our configuration, thrown',
      send: () =>
        pawapay
          .create(settingsOf(pawapay, envOf(simulator.url, 'not-the-token')), depsOf(callbacks.url))
          .requestPayment(prompt()),
      expected: IN_DOUBT,
    },
    {
      answer: 'UNKNOWN_ERROR (500)',
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
      answer: 'no answer within OPERATOR_TIMEOUT_MS (pawaPay processed it)',
      send: async () => {
        simulator.late({ method: 'POST', path: '/v2/payouts', holdMs: 400, process: 'before', answer: 'real' });
        try {
          return await withOperatorTimeout(100, () => connector.sendMoney(payout()));
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
      answer: "the status query's own 500",
      send: async () => {
        const asked = prompt();
        await connector.requestPayment(asked);
        await simulator.outage('error');
        try {
          return await connector.promptStatus(takenPrompt(asked, idOf(asked)));
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
    else if ('sent' in expected) expect(outcome).toMatchObject(expected);
    else expect(outcome).toEqual(expected);
  });
});
