/**
 * The core's rules (src/network/routes.ts) against connectors declared here: objects that fulfil `Connector` with
 * scripted answers and a log of every call they receive; no simulator, no HTTP, no worker. The journal is the test
 * database's (`network_operations`, read back with SQL). Each test has a network of its own (a name no other test
 * uses) and routes' health of its own scope, so nothing another test left behind is seen.
 *
 *   1. recorded before it is sent (with the id `operatorIdFor` chose), accepted after;
 *   2. a subscriber's refusal: refused with no fault, no other route tried;
 *   3. a route fault (answered, or a connection refused before sending): the next route is tried, and the route
 *      that faulted comes last for that reference;
 *   4. in doubt: it stays on its route until its `lookup` says absent after the in-flight window, or present;
 *   5. a retry racing a call under way sends nothing a second time;
 *   6. the operator id first recorded is the one handed back on every later call (`recorded`);
 *   7. a reversal goes only on the route its collection came by, never failed over;
 *   8. `firstTransactionIdStays`: every answer reports the first transaction id learnt.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, test } from 'bun:test';
import { asId } from '../../src/domain/ids';
import type { Network } from '../../src/domain/networks';
import {
  OperationInDoubtError,
  type Connector,
  type JournaledOperation,
  type PaymentPrompt,
  type Payout,
  type PayoutResult,
  type PromptResult,
  type PromptStatus,
  type Recorded,
  type TakenPrompt,
} from '../../src/network/adapter';
import { OperatorUnreachableError } from '../../src/network/operator-http';
import { createRoutedOperations } from '../../src/network/routes';
import { createRouteHealth, pauseRoute, type RouteHealth } from '../../src/services/networks/route-health';
import { eventually, numberSequence, testSql } from '../helpers';

const sql = testSql();
const nextNumber = numberSequence('+255990');
const CURRENCY = 'TZS';

// ---------------------------------------------------------------------------------------------------------------
// Connectors declared here

type Method = 'requestPayment' | 'promptStatus' | 'sendMoney' | 'payoutStatus' | 'lookup';

/** One call a fake connector received: what it was asked about, and what the core handed it. */
type Call = {
  method: Method;
  reference: string;
  /** What the core handed the call (`recorded`); for `lookup`, the journal's operator id as a Recorded's. */
  recorded: Recorded | undefined;
};

/** A scripted answer: given as it is, thrown (an Error), or made from the call (a function, which may wait). */
type Answer<I, O> = O | Error | ((input: I) => O | Promise<O>);

/** Each call takes the next answer of its list; the last one answers every call after it; none: the default. */
type Script = {
  requestPayment: Answer<PaymentPrompt, PromptResult>[];
  promptStatus: Answer<TakenPrompt, PromptStatus>[];
  sendMoney: Answer<Payout, PayoutResult>[];
  payoutStatus: Answer<Payout, PayoutResult>[];
  lookup: Answer<JournaledOperation, 'present' | 'absent'>[];
};

type FakeOptions = {
  /** The in-flight window (seconds) and whether the connector resends in doubt: 60 s and no unless told. */
  windowSeconds?: number;
  resends?: boolean;
  /** Whether it offers `lookup` (its answers in `script.lookup`, 'absent' unless scripted). */
  lookup?: boolean;
  /** Whether it has `operatorIdFor`: then a new random id at every call, so only the journal can keep the first. */
  operatorIds?: boolean;
  firstTransactionIdStays?: boolean;
};

type Fake = Connector & {
  script: Script;
  calls: Call[];
  /** Every id `operatorIdFor` gave, in turn. */
  operatorIds: string[];
  /** The calls that send (requestPayment, sendMoney), of one reference or all. */
  sends(reference?: string): Call[];
};

async function answer<I, O>(answers: Answer<I, O>[], input: I, otherwise: (input: I) => O): Promise<O> {
  const next = answers.length > 1 ? answers.shift() : answers[0];
  if (next === undefined) return otherwise(input);
  if (next instanceof Error) throw next;
  return typeof next === 'function' ? await (next as (input: I) => O | Promise<O>)(input) : next;
}

/**
 * A connector of `network` named `name`. Unless scripted it takes everything: a prompt confirmed under the id it was
 * recorded with (or `<name>-<reference>`), a payout pending under the same, status queries pending.
 */
function fakeConnector(name: string, network: Network, options: FakeOptions = {}): Fake {
  const script: Script = { requestPayment: [], promptStatus: [], sendMoney: [], payoutStatus: [], lookup: [] };
  const calls: Call[] = [];
  const operatorIds: string[] = [];
  const log = (method: Method, reference: string, recorded: Recorded | undefined) =>
    calls.push({ method, reference, recorded });
  const operatorIdOf = (reference: string, recorded: Recorded | undefined) =>
    recorded?.operatorReference ?? `${name}-${reference}`;
  const fake: Fake = {
    name,
    routes: [{ network: network.name, currency: CURRENCY }],
    inFlight: { windowSeconds: options.windowSeconds ?? 60, resends: options.resends ?? false },
    firstTransactionIdStays: options.firstTransactionIdStays,
    script,
    calls,
    operatorIds,
    sends: (reference) =>
      calls.filter(
        (call) =>
          (call.method === 'requestPayment' || call.method === 'sendMoney') &&
          (reference === undefined || call.reference === reference),
      ),
    async requestPayment(prompt) {
      log('requestPayment', prompt.promptReference, prompt.recorded);
      return await answer(script.requestPayment, prompt, () => ({
        accepted: true,
        confirm: { operatorReference: operatorIdOf(prompt.promptReference, prompt.recorded) },
      }));
    },
    async promptStatus(prompt) {
      log('promptStatus', prompt.promptReference, prompt.recorded);
      return await answer(script.promptStatus, prompt, () => ({ status: 'pending' }));
    },
    async reportedPaymentStatus() {
      return { status: 'refused', reason: 'This connector reports no payment.' };
    },
    async sendMoney(payout) {
      log('sendMoney', payout.reference, payout.recorded);
      return await answer(script.sendMoney, payout, () => ({
        status: 'pending',
        remoteTransactionId: operatorIdOf(payout.reference, payout.recorded),
      }));
    },
    async payoutStatus(payout) {
      log('payoutStatus', payout.reference, payout.recorded);
      return await answer(script.payoutStatus, payout, () => ({ status: 'pending', remoteTransactionId: null }));
    },
    amountProblem: () => null,
  };
  if (options.lookup) {
    fake.lookup = async (operation) => {
      log('lookup', operation.reference, { operatorReference: operation.operatorReference, at: new Date() });
      return await answer(script.lookup, operation, () => 'absent' as const);
    };
  }
  if (options.operatorIds) {
    fake.operatorIdFor = ({ kind }) => {
      const id = `${name}-${kind}-${randomUUID()}`;
      operatorIds.push(id);
      return id;
    };
  }
  return fake;
}

/** No answer in time: our client gave up, and the operator may still carry the call out (operator-http's error). */
const timedOut = () =>
  new OperatorUnreachableError('POST /pay did not answer', {
    cause: new DOMException('The operation timed out.', 'TimeoutError'),
  });
/** The connection refused: the request never left, so the operator did nothing. */
const connectionRefused = () =>
  new OperatorUnreachableError('POST /pay did not answer', {
    cause: Object.assign(new Error('Unable to connect'), { code: 'ECONNREFUSED' }),
  });

/** A promise and what settles it: a call held until the test lets it answer. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

// ---------------------------------------------------------------------------------------------------------------
// A network of routes, the core over them, and its journal

type JournalRow = {
  route: string | null;
  kind: string;
  state: string;
  fault: string | null;
  operatorReference: string | null;
  remoteTransactionId: string | null;
  sends: number;
  created: Date;
};

type HealthRow = { route: string; faultsInRow: number; lastFault: string | null };

const networks: string[] = [];
const scopes: string[] = [];
const healths: RouteHealth[] = [];

afterAll(async () => {
  for (const health of healths) health.stop();
  await sql`delete from network_operations where network in ${sql(networks)}`;
  await sql`delete from network_routes where scope in ${sql(scopes)}`;
  await sql`delete from network_route_outcomes where scope in ${sql(scopes)}`;
});

/**
 * A network of its own whose routes are fake connectors, in the order given (the registry's), and the core over
 * them. `healthOf` may wrap the routes' health the core is given.
 */
function world<Name extends string>(
  routes: Record<Name, FakeOptions>,
  healthOf: (health: RouteHealth) => RouteHealth = (health) => health,
) {
  const id = randomUUID().slice(0, 8);
  const network: Network = {
    id: 0,
    name: `Core test ${id}`,
    country: 'ZZ',
    verification: false,
    nameLookup: false,
    pullsFunds: true,
  };
  const scope = `core-test-${id}`;
  networks.push(network.name);
  scopes.push(scope);
  const health = createRouteHealth(sql, { scope });
  healths.push(health);
  const route = Object.fromEntries(
    Object.entries<FakeOptions>(routes).map(([name, options]) => [name, fakeConnector(name, network, options)]),
  ) as Record<Name, Fake>;
  const core = createRoutedOperations({ sql, health: healthOf(health), connectors: Object.values<Fake>(route) });
  const phoneNumber = nextNumber();
  return {
    network,
    scope,
    route,
    core,
    reference: (what = 'op') => `${what}-${randomUUID().slice(0, 12)}`,
    prompt: (promptReference: string): PaymentPrompt => ({
      requestId: asId('CollectionRequest', 1),
      attempt: 1,
      phoneNumber,
      amount: '1500.0000',
      currency: CURRENCY,
      reference: 'Invoice 42',
      promptReference,
      network,
      workflowId: `core-${promptReference}`,
    }),
    payout: (reference: string, extra: Partial<Payout> = {}): Payout => ({
      reference,
      kind: 'payment',
      phoneNumber,
      amount: '2500.0000',
      currency: CURRENCY,
      network,
      workflowId: `core-${reference}`,
      ...extra,
    }),
    /** The journal's entries of our reference, oldest first. */
    journal: async (reference: string): Promise<JournalRow[]> => [
      ...(await sql<JournalRow[]>`
      select route, kind, state, fault, operator_reference as "operatorReference",
        remote_transaction_id as "remoteTransactionId", sends, created
      from network_operations where network = ${network.name} and reference = ${reference} order by id`),
    ],
    /** What the routes' health holds of this network's routes for `operation`. */
    health: async (operation: 'collect' | 'payout'): Promise<HealthRow[]> => [
      ...(await sql<HealthRow[]>`
      select route, faults_in_row as "faultsInRow", last_fault as "lastFault"
      from network_routes where scope = ${scope} and network = ${network.name} and operation = ${operation}
      order by route`),
    ],
  };
}

/** A journal row as the assertions name it: its route and outcome, the rest as it must be. */
const entry = (fields: Pick<JournalRow, 'route' | 'state'> & Partial<JournalRow>): JournalRow => ({
  kind: 'prompt',
  fault: null,
  operatorReference: null,
  remoteTransactionId: null,
  sends: 1,
  created: expect.any(Date),
  ...fields,
});

/** Every process reads the routes' health again once its copy is a second old (route-health.ts). */
const routesReadAgain = () => Bun.sleep(1_100);

// ---------------------------------------------------------------------------------------------------------------

describe('recorded before it is sent', () => {
  test("the entry exists, recorded with operatorIdFor's id, when the connector sends; accepted after", async () => {
    const w = world({ direct: { operatorIds: true } });
    const reference = w.reference('prompt');
    let atSend: JournalRow[] = [];
    w.route.direct.script.requestPayment = [
      async (prompt) => {
        atSend = await w.journal(reference);
        return { accepted: true, confirm: { operatorReference: prompt.recorded!.operatorReference! } };
      },
    ];
    const result = await w.core.requestPayment(w.prompt(reference));
    const [chosen, ...more] = w.route.direct.operatorIds;
    expect(more).toEqual([]);
    expect(atSend).toEqual([entry({ route: 'direct', state: 'recorded', operatorReference: chosen })]);
    expect(w.route.direct.sends()).toEqual([
      { method: 'requestPayment', reference, recorded: { operatorReference: chosen!, at: atSend[0]!.created } },
    ]);
    expect(result).toEqual({ accepted: true, confirm: { operatorReference: chosen! } });
    expect(await w.journal(reference)).toEqual([
      entry({ route: 'direct', state: 'accepted', operatorReference: chosen }),
    ]);
  });

  test("without operatorIdFor: recorded with no operator id, accepted with the reference the route's answer names", async () => {
    const w = world({ direct: {} });
    const reference = w.reference('prompt');
    let atSend: JournalRow[] = [];
    w.route.direct.script.requestPayment = [
      async () => {
        atSend = await w.journal(reference);
        return { accepted: true, confirm: { operatorReference: 'checkout-77' } };
      },
    ];
    expect(await w.core.requestPayment(w.prompt(reference))).toEqual({
      accepted: true,
      confirm: { operatorReference: 'checkout-77' },
    });
    expect(atSend).toEqual([entry({ route: 'direct', state: 'recorded' })]);
    expect(w.route.direct.sends()[0]!.recorded).toEqual({ operatorReference: null, at: atSend[0]!.created });
    expect(await w.journal(reference)).toEqual([
      entry({ route: 'direct', state: 'accepted', operatorReference: 'checkout-77' }),
    ]);
  });

  test('a payout: recorded (kind payout) before it is sent, accepted with the transaction id answered', async () => {
    const w = world({ direct: {} });
    const reference = w.reference('payout');
    let atSend: JournalRow[] = [];
    w.route.direct.script.sendMoney = [
      async () => {
        atSend = await w.journal(reference);
        return { status: 'pending', remoteTransactionId: 'transfer-9' };
      },
    ];
    expect(await w.core.sendMoney(w.payout(reference))).toEqual({
      status: 'pending',
      remoteTransactionId: 'transfer-9',
    });
    expect(atSend).toEqual([entry({ route: 'direct', kind: 'payout', state: 'recorded' })]);
    expect(await w.journal(reference)).toEqual([
      entry({ route: 'direct', kind: 'payout', state: 'accepted', operatorReference: 'transfer-9' }),
    ]);
  });
});

describe("a subscriber's refusal", () => {
  test('refused with no fault; no other route is tried, and the route counts no fault', async () => {
    const w = world({ first: {}, second: {} });
    const reference = w.reference('prompt');
    const declined: PromptResult = { accepted: false, error: 'The subscriber declined the payment.' };
    w.route.first.script.requestPayment = [declined, { accepted: true, confirm: { operatorReference: 'push-2' } }];
    expect(await w.core.requestPayment(w.prompt(reference))).toEqual(declined);
    expect(await w.journal(reference)).toEqual([entry({ route: 'first', state: 'refused' })]);
    expect(w.route.second.calls).toEqual([]);
    expect(await w.health('collect')).toEqual([]);
    // Asked again, the reference is recorded anew on the same route: a subscriber's refusal moves nothing.
    expect(await w.core.requestPayment(w.prompt(reference))).toMatchObject({ accepted: true });
    expect(await w.journal(reference)).toEqual([
      entry({ route: 'first', state: 'refused' }),
      entry({ route: 'first', state: 'accepted', operatorReference: 'push-2' }),
    ]);
    expect(w.route.second.calls).toEqual([]);
  });

  test('a payout the recipient cannot take: refused with no fault, not sent on the next route', async () => {
    const w = world({ first: {}, second: {} });
    const reference = w.reference('payout');
    const unregistered: PayoutResult = {
      status: 'rejected',
      error: 'The recipient is not registered.',
      remoteTransactionId: null,
    };
    w.route.first.script.sendMoney = [unregistered];
    expect(await w.core.sendMoney(w.payout(reference))).toEqual(unregistered);
    expect(await w.journal(reference)).toEqual([entry({ route: 'first', kind: 'payout', state: 'refused' })]);
    expect(w.route.second.calls).toEqual([]);
  });
});

describe('a route fault', () => {
  test('answered by the route: the next route takes it; for that reference the route that faulted comes last', async () => {
    const w = world({ first: {}, second: {} });
    const reference = w.reference('prompt');
    w.route.first.script.requestPayment = [{ accepted: false, error: 'System busy', routeFault: true }];
    const declined: PromptResult = { accepted: false, error: 'The subscriber declined the payment.' };
    w.route.second.script.requestPayment = [declined, { accepted: true, confirm: { operatorReference: 'second-1' } }];
    // The first route faults, the second is refused by the subscriber: that answer is the operation's.
    expect(await w.core.requestPayment(w.prompt(reference))).toEqual(declined);
    expect(await w.journal(reference)).toEqual([
      entry({ route: 'first', state: 'refused', fault: 'System busy' }),
      entry({ route: 'second', state: 'refused' }),
    ]);
    expect(await w.health('collect')).toEqual([{ route: 'first', faultsInRow: 1, lastFault: 'System busy' }]);
    // Asked again: the second route first, and it takes it; the first is not asked.
    expect(await w.core.requestPayment(w.prompt(reference))).toEqual({
      accepted: true,
      confirm: { operatorReference: 'second-1' },
    });
    expect(w.route.first.sends()).toHaveLength(1);
    expect(w.route.second.sends()).toHaveLength(2);
    expect((await w.journal(reference)).at(-1)).toEqual(
      entry({ route: 'second', state: 'accepted', operatorReference: 'second-1' }),
    );
  });

  test('a connection refused before sending: refused with the fault, paid on the next route; that route comes last next time', async () => {
    const w = world({ first: {}, second: {} });
    const reference = w.reference('payout');
    w.route.first.script.sendMoney = [connectionRefused()];
    const unregistered: PayoutResult = {
      status: 'rejected',
      error: 'The recipient is not registered.',
      remoteTransactionId: null,
    };
    w.route.second.script.sendMoney = [unregistered, { status: 'completed', remoteTransactionId: 'second-tx' }];
    expect(await w.core.sendMoney(w.payout(reference))).toEqual(unregistered);
    const fault = 'connection refused: POST /pay did not answer';
    expect(await w.journal(reference)).toEqual([
      entry({ route: 'first', kind: 'payout', state: 'refused', fault }),
      entry({ route: 'second', kind: 'payout', state: 'refused' }),
    ]);
    expect(await w.health('payout')).toEqual([{ route: 'first', faultsInRow: 1, lastFault: fault }]);
    expect(await w.core.sendMoney(w.payout(reference))).toEqual({
      status: 'completed',
      remoteTransactionId: 'second-tx',
    });
    expect(w.route.first.sends()).toHaveLength(1);
    expect(w.route.second.sends()).toHaveLength(2);
  });

  test('every route faulting: "unavailable on every route", nothing taken anywhere', async () => {
    const w = world({ first: {}, second: {} });
    const reference = w.reference('prompt');
    w.route.first.script.requestPayment = [connectionRefused()];
    w.route.second.script.requestPayment = [{ accepted: false, error: 'Network down', routeFault: true }];
    expect(await w.core.requestPayment(w.prompt(reference))).toEqual({
      accepted: false,
      error: `${w.network.name} is unavailable on every route right now (Network down); nothing was sent, try again later.`,
      routeFault: true,
    });
    expect((await w.journal(reference)).map((row) => [row.route, row.state])).toEqual([
      ['first', 'refused'],
      ['second', 'refused'],
    ]);
  });
});

describe('in doubt', () => {
  test('no answer: OperationInDoubtError, in_doubt; "absent" within the window keeps it in doubt on its route, sent once', async () => {
    const w = world({ first: { lookup: true, operatorIds: true }, second: {} });
    const reference = w.reference('payout');
    w.route.first.script.sendMoney = [timedOut()];
    await expect(w.core.sendMoney(w.payout(reference))).rejects.toBeInstanceOf(OperationInDoubtError);
    const [id] = w.route.first.operatorIds;
    const inDoubt = entry({
      route: 'first',
      kind: 'payout',
      state: 'in_doubt',
      fault: 'POST /pay did not answer',
      operatorReference: id,
    });
    expect(await w.journal(reference)).toEqual([inDoubt]);
    // Asked again: its route's lookup finds nothing, which proves nothing yet; this connector does not resend.
    for (let retry = 0; retry < 2; retry += 1)
      await expect(w.core.sendMoney(w.payout(reference))).rejects.toBeInstanceOf(OperationInDoubtError);
    expect(await w.journal(reference)).toEqual([inDoubt]);
    expect(w.route.first.sends()).toHaveLength(1);
    expect(
      w.route.first.calls.filter((call) => call.method === 'lookup').map((call) => call.recorded?.operatorReference),
    ).toEqual([id, id]);
    expect(w.route.second.calls).toEqual([]);
  });

  test('"absent" within the window, where the connector resends: sent once more under the same reference and id, never a third time', async () => {
    const w = world({ first: { lookup: true, resends: true, operatorIds: true }, second: {} });
    const reference = w.reference('prompt');
    w.route.first.script.requestPayment = [timedOut()];
    await expect(w.core.requestPayment(w.prompt(reference))).rejects.toBeInstanceOf(OperationInDoubtError);
    // The resend gets no answer either, and neither do the retries after it.
    for (let retry = 0; retry < 3; retry += 1)
      await expect(w.core.requestPayment(w.prompt(reference))).rejects.toBeInstanceOf(OperationInDoubtError);
    const [id, ...more] = w.route.first.operatorIds;
    expect(more).toEqual([]);
    const sends = w.route.first.sends(reference);
    expect(sends).toHaveLength(2);
    expect(sends.map((call) => call.recorded?.operatorReference)).toEqual([id, id]);
    expect(await w.journal(reference)).toEqual([
      entry({ route: 'first', state: 'in_doubt', fault: 'POST /pay did not answer', operatorReference: id, sends: 2 }),
    ]);
    expect(w.route.second.calls).toEqual([]);
  });

  test('"absent" once the window has passed since the last send: refused with its fault, and sent on the next route', async () => {
    const w = world({ first: { lookup: true, windowSeconds: 1 }, second: {} });
    const reference = w.reference('prompt');
    w.route.first.script.requestPayment = [timedOut()];
    await expect(w.core.requestPayment(w.prompt(reference))).rejects.toBeInstanceOf(OperationInDoubtError);
    await Bun.sleep(1_200);
    expect(await w.core.requestPayment(w.prompt(reference))).toEqual({
      accepted: true,
      confirm: { operatorReference: `second-${reference}` },
    });
    expect(await w.journal(reference)).toEqual([
      entry({ route: 'first', state: 'refused', fault: 'POST /pay did not answer' }),
      entry({ route: 'second', state: 'accepted', operatorReference: `second-${reference}` }),
    ]);
    expect(w.route.first.sends()).toHaveLength(1);
    expect(w.route.second.sends()).toHaveLength(1);
  });

  test('"present": sent again under the same reference and operator id, and accepted there', async () => {
    const w = world({ first: { lookup: true, resends: true, operatorIds: true }, second: {} });
    const reference = w.reference('prompt');
    w.route.first.script.requestPayment = [
      timedOut(),
      (prompt) => ({
        accepted: true,
        confirm: { operatorReference: prompt.recorded!.operatorReference! },
      }),
    ];
    w.route.first.script.lookup = ['present'];
    await expect(w.core.requestPayment(w.prompt(reference))).rejects.toBeInstanceOf(OperationInDoubtError);
    const [id] = w.route.first.operatorIds;
    expect(await w.core.requestPayment(w.prompt(reference))).toEqual({
      accepted: true,
      confirm: { operatorReference: id! },
    });
    expect(w.route.first.sends().map((call) => [call.reference, call.recorded?.operatorReference])).toEqual([
      [reference, id],
      [reference, id],
    ]);
    const [only, ...others] = await w.journal(reference);
    expect(others).toEqual([]);
    expect(only).toMatchObject({ route: 'first', state: 'accepted', operatorReference: id, sends: 2 });
    expect(w.route.second.calls).toEqual([]);
  });

  // MAX_SENDS (src/network/routes.ts): sent that many times under one entry, then only its status is asked. Found
  // there ("present") after that, it is taken: the status query decides, and nothing is sent again.
  test('"present" while every send goes unanswered: never more than 2 sends, then taken', async () => {
    const w = world({ first: { lookup: true, resends: true }, second: {} });
    const reference = w.reference('payout');
    w.route.first.script.sendMoney = [timedOut()];
    w.route.first.script.lookup = ['present'];
    for (let call = 0; call < 2; call += 1)
      await expect(w.core.sendMoney(w.payout(reference))).rejects.toBeInstanceOf(OperationInDoubtError);
    for (let call = 0; call < 2; call += 1)
      expect(await w.core.sendMoney(w.payout(reference))).toEqual({ status: 'pending', remoteTransactionId: null });
    expect(w.route.first.sends()).toHaveLength(2);
    expect((await w.journal(reference)).map((row) => [row.state, row.sends])).toEqual([['accepted', 2]]);
    expect(w.route.second.calls).toEqual([]);
  });

  // A connector that does not resend (`inFlight.resends`, src/network/adapter.ts): found there, the operation is not
  // sent again under its reference; it is taken, and its status tells what became of it.
  test('"present" on a connector that does not resend: not sent again, taken, its status decides', async () => {
    const w = world({ first: { lookup: true, resends: false }, second: {} });
    const reference = w.reference('payout');
    w.route.first.script.sendMoney = [timedOut(), { status: 'pending', remoteTransactionId: 'first-tx' }];
    w.route.first.script.lookup = ['present'];
    await expect(w.core.sendMoney(w.payout(reference))).rejects.toBeInstanceOf(OperationInDoubtError);
    expect(await w.core.sendMoney(w.payout(reference))).toEqual({ status: 'pending', remoteTransactionId: null });
    expect(w.route.first.sends()).toHaveLength(1);
    expect((await w.journal(reference)).map((row) => row.state)).toEqual(['accepted']);
    expect(w.route.second.calls).toEqual([]);
  });
});

describe('a retry racing a call under way', () => {
  test('the entry already recorded: the retry answers what was sent before, and sends nothing', async () => {
    const w = world({ first: { operatorIds: true }, second: {} });
    const reference = w.reference('prompt');
    const held = gate();
    w.route.first.script.requestPayment = [
      async (prompt) => {
        await held.opened;
        return { accepted: true, confirm: { operatorReference: prompt.recorded!.operatorReference! } };
      },
    ];
    const first = w.core.requestPayment(w.prompt(reference));
    await eventually('the first call to send', async () => w.route.first.sends().length > 0);
    const [id] = w.route.first.operatorIds;
    expect(await w.core.requestPayment(w.prompt(reference))).toEqual({
      accepted: true,
      confirm: { operatorReference: id! },
    });
    held.open();
    expect(await first).toEqual({ accepted: true, confirm: { operatorReference: id! } });
    expect(w.route.first.sends()).toHaveLength(1);
    expect(w.route.second.calls).toEqual([]);
    expect(await w.journal(reference)).toEqual([entry({ route: 'first', state: 'accepted', operatorReference: id })]);
  });

  test('two calls recording at once: one sends, the other answers what the first recorded', async () => {
    // Both calls find no entry, then wait for each other before choosing a route: both record.
    let arrived = 0;
    const bothArrived = gate();
    const w = world({ first: { operatorIds: true }, second: {} }, (health) => ({
      ...health,
      async usable(...args: Parameters<RouteHealth['usable']>) {
        arrived += 1;
        if (arrived === 2) bothArrived.open();
        await bothArrived.opened;
        return await health.usable(...args);
      },
    }));
    const reference = w.reference('payout');
    const results = await Promise.all([w.core.sendMoney(w.payout(reference)), w.core.sendMoney(w.payout(reference))]);
    expect(w.route.first.operatorIds).toHaveLength(2);
    const [sent] = w.route.first.sends();
    expect(w.route.first.sends()).toHaveLength(1);
    const id = sent!.recorded!.operatorReference!;
    expect(results).toContainEqual({ status: 'pending', remoteTransactionId: id });
    expect(results).toContainEqual({ status: 'pending', remoteTransactionId: null });
    expect(await w.journal(reference)).toEqual([
      entry({ route: 'first', kind: 'payout', state: 'accepted', operatorReference: id }),
    ]);
    expect(w.route.second.calls).toEqual([]);
  });
});

describe('what the journal holds is handed back (recorded)', () => {
  test('the operator id first recorded, on every later call, though operatorIdFor would choose a new one', async () => {
    const w = world({ direct: { operatorIds: true } });
    const prompt = w.prompt(w.reference('prompt'));
    expect(await w.core.requestPayment(prompt)).toMatchObject({ accepted: true });
    const id = w.route.direct.operatorIds[0]!;
    const [recorded] = await w.journal(prompt.promptReference);
    expect(recorded).toEqual(entry({ route: 'direct', state: 'accepted', operatorReference: id }));
    expect(
      w.route.direct.operatorIdFor!({ kind: 'prompt', network: w.network, reference: prompt.promptReference }),
    ).not.toBe(id);
    // A retry of the prompt, and its status queries.
    expect(await w.core.requestPayment(prompt)).toEqual({ accepted: true, confirm: { operatorReference: id! } });
    await w.core.promptStatus({ ...prompt, operatorReference: id! });
    await w.core.promptStatus({ ...prompt, operatorReference: id! });

    const payout = w.payout(w.reference('payout'));
    w.route.direct.script.sendMoney = [{ status: 'pending', remoteTransactionId: null }];
    expect(await w.core.sendMoney(payout)).toEqual({ status: 'pending', remoteTransactionId: null });
    const payoutId = w.route.direct.operatorIds.at(-1)!;
    await w.core.payoutStatus(payout);
    await w.core.payoutStatus(payout);
    const [payoutEntry] = await w.journal(payout.reference);
    expect(payoutEntry).toEqual(
      entry({ route: 'direct', kind: 'payout', state: 'accepted', operatorReference: payoutId }),
    );

    const handed = (reference: string) =>
      w.route.direct.calls.filter((call) => call.reference === reference).map((call) => [call.method, call.recorded]);
    expect(handed(prompt.promptReference)).toEqual([
      ['requestPayment', { operatorReference: id, at: recorded!.created }],
      ['promptStatus', { operatorReference: id, at: recorded!.created }],
      ['promptStatus', { operatorReference: id, at: recorded!.created }],
    ]);
    expect(handed(payout.reference)).toEqual([
      ['sendMoney', { operatorReference: payoutId, at: payoutEntry!.created }],
      ['payoutStatus', { operatorReference: payoutId, at: payoutEntry!.created }],
      ['payoutStatus', { operatorReference: payoutId, at: payoutEntry!.created }],
    ]);
  });
});

describe('reversals', () => {
  test("only on the route its collection came by, whatever that route's health or answer; journaled as a reversal", async () => {
    const w = world({ first: {}, second: {} });
    // The collection came by the second route (the first was busy), which named it `second-<reference>`.
    const prompt = w.prompt(w.reference('prompt'));
    w.route.first.script.requestPayment = [{ accepted: false, error: 'System busy', routeFault: true }];
    expect(await w.core.requestPayment(prompt)).toMatchObject({ accepted: true });
    const collection = `second-${prompt.promptReference}`;
    expect((await w.journal(prompt.promptReference)).at(-1)).toMatchObject({
      route: 'second',
      operatorReference: collection,
    });
    // The second route paused: payments go by the first, reversals of its collections still by the second.
    await pauseRoute(sql, w.network.name, 'second', null, true, w.scope);
    await routesReadAgain();
    const payment = w.reference('payment');
    expect(await w.core.sendMoney(w.payout(payment))).toMatchObject({ status: 'pending' });
    expect((await w.journal(payment)).map((row) => row.route)).toEqual(['first']);
    w.route.first.calls.length = 0;

    const reversal = w.payout(w.reference('reversal'), { kind: 'reversal', originalTransactionId: collection });
    // Its route refuses it for its own reasons: that answer is the reversal's, never failed over.
    const floatEmpty: PayoutResult = {
      status: 'rejected',
      error: 'Float empty',
      remoteTransactionId: null,
      routeFault: true,
    };
    w.route.second.script.sendMoney = [
      floatEmpty,
      connectionRefused(),
      { status: 'pending', remoteTransactionId: 'refund-1' },
    ];
    w.route.second.script.payoutStatus = [{ status: 'completed', remoteTransactionId: 'refund-1' }];
    expect(await w.core.sendMoney(reversal)).toEqual(floatEmpty);
    // Its connection refused: nothing was sent, and the call fails (the activity asks again), on no other route.
    await expect(w.core.sendMoney(reversal)).rejects.toThrow(
      `reversal ${reversal.reference} not sent on second: connection refused: POST /pay did not answer`,
    );
    expect(await w.core.sendMoney(reversal)).toEqual({ status: 'pending', remoteTransactionId: 'refund-1' });
    expect(await w.core.payoutStatus(reversal)).toEqual({ status: 'completed', remoteTransactionId: 'refund-1' });
    expect(w.route.first.calls).toEqual([]);
    expect(
      w.route.second.calls.filter((call) => call.reference === reversal.reference).map((call) => call.method),
    ).toEqual(['sendMoney', 'sendMoney', 'sendMoney', 'payoutStatus']);
    expect(await w.journal(reversal.reference)).toEqual([
      entry({ route: 'second', kind: 'reversal', state: 'refused', fault: 'Float empty' }),
      entry({
        route: 'second',
        kind: 'reversal',
        state: 'refused',
        fault: 'connection refused: POST /pay did not answer',
      }),
      entry({ route: 'second', kind: 'reversal', state: 'accepted', operatorReference: 'refund-1' }),
    ]);
  });

  test('of a collection whose receipt the journal holds: by its route; of one the journal does not know: the first route', async () => {
    const w = world({ first: {}, second: {} });
    const prompt = w.prompt(w.reference('prompt'));
    w.route.first.script.requestPayment = [connectionRefused()];
    const receipt = `receipt-${randomUUID().slice(0, 8)}`;
    w.route.second.script.requestPayment = [
      { accepted: true, paid: { remoteTransactionId: receipt, paymentDate: '2026-01-05T10:00:00Z' } },
    ];
    expect(await w.core.requestPayment(prompt)).toMatchObject({
      accepted: true,
      paid: { remoteTransactionId: receipt },
    });
    w.route.first.calls.length = 0;
    const known = w.payout(w.reference('reversal'), { kind: 'reversal', originalTransactionId: receipt });
    expect(await w.core.sendMoney(known)).toMatchObject({ status: 'pending' });
    expect(w.route.first.calls).toEqual([]);
    expect((await w.journal(known.reference)).map((row) => [row.route, row.kind])).toEqual([['second', 'reversal']]);
    const unknown = w.payout(w.reference('reversal'), { kind: 'reversal', originalTransactionId: 'receipt-unknown' });
    expect(await w.core.sendMoney(unknown)).toMatchObject({ status: 'pending' });
    expect((await w.journal(unknown.reference)).map((row) => [row.route, row.kind])).toEqual([['first', 'reversal']]);
  });
});

describe('firstTransactionIdStays', () => {
  test('two transaction ids answered for one operation: every answer reports the first', async () => {
    const w = world({ direct: { firstTransactionIdStays: true } });
    const prompt = w.prompt(w.reference('prompt'));
    const paymentDate = '2026-01-05T10:00:00Z';
    w.route.direct.script.requestPayment = [{ accepted: true, paid: { remoteTransactionId: 'call-tx', paymentDate } }];
    w.route.direct.script.promptStatus = [{ status: 'paid', remoteTransactionId: 'query-tx', paymentDate }];
    expect(await w.core.requestPayment(prompt)).toEqual({
      accepted: true,
      paid: { remoteTransactionId: 'call-tx', paymentDate },
    });
    expect(await w.core.promptStatus({ ...prompt, operatorReference: 'call-tx' })).toEqual({
      status: 'paid',
      remoteTransactionId: 'call-tx',
      paymentDate,
    });
    expect((await w.journal(prompt.promptReference))[0]).toMatchObject({ remoteTransactionId: 'call-tx' });

    const payout = w.payout(w.reference('payout'));
    w.route.direct.script.sendMoney = [{ status: 'completed', remoteTransactionId: 'payout-call-tx' }];
    w.route.direct.script.payoutStatus = [{ status: 'completed', remoteTransactionId: 'payout-query-tx' }];
    expect(await w.core.sendMoney(payout)).toEqual({ status: 'completed', remoteTransactionId: 'payout-call-tx' });
    expect(await w.core.payoutStatus(payout)).toEqual({ status: 'completed', remoteTransactionId: 'payout-call-tx' });
    expect(await w.core.payoutStatus(payout)).toEqual({ status: 'completed', remoteTransactionId: 'payout-call-tx' });
    expect((await w.journal(payout.reference))[0]).toMatchObject({ remoteTransactionId: 'payout-call-tx' });
  });

  test('a connector that does not declare it: each answer reports its own id, and the journal keeps none', async () => {
    const w = world({ direct: {} });
    const payout = w.payout(w.reference('payout'));
    w.route.direct.script.sendMoney = [{ status: 'completed', remoteTransactionId: 'payout-call-tx' }];
    w.route.direct.script.payoutStatus = [{ status: 'completed', remoteTransactionId: 'payout-query-tx' }];
    expect(await w.core.sendMoney(payout)).toEqual({ status: 'completed', remoteTransactionId: 'payout-call-tx' });
    expect(await w.core.payoutStatus(payout)).toEqual({ status: 'completed', remoteTransactionId: 'payout-query-tx' });
    expect((await w.journal(payout.reference))[0]).toMatchObject({ remoteTransactionId: null });
  });
});
