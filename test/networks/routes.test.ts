/**
 * Two roads to one network: Airtel Tanzania through the Airtel Money connector (direct, first) and
 * through pawaPay (provider AIRTEL_TZA, second), against the project's simulators of both, a real
 * worker, Temporal and PostgreSQL. An operation moves to pawaPay only when the operation journal
 * knows nothing happened on Airtel; what Airtel took stays there; traffic returns to Airtel once it
 * answers again. (The routes' health is this file's own: the suite scopes it by task queue.)
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { startAirtelSimulator, type AirtelSimulator } from '../simulators/airtel';
import { startPawapaySimulator, type PawapaySimulator } from '../simulators/pawapay';
import { eventually, numberSequence, testSql } from '../helpers';
import { orderRoutes } from '../../src/services/networks/route-health';
import {
  creditsOf,
  expectBalanced,
  fundedMerchant,
  paidOut,
  promptedRequest,
  requestOutcome,
  startStack,
  type Stack,
} from './stack';

const NETWORK = 'Airtel Tanzania';
const AIRTEL = {
  clientId: 'routes-airtel-client',
  clientSecret: 'routes-airtel-secret',
  pin: '4321',
  callbackKey: 'routes-airtel-callback-key',
};
const PAWAPAY_TOKEN = 'routes-pawapay-token';
let airtel: AirtelSimulator;
let pawapay: PawapaySimulator;
let stack: Stack;
const nextNumber = numberSequence('+255686');
const national = (e164: string) => e164.slice(4);
const digits = (e164: string) => e164.slice(1);
const sql = testSql();

beforeAll(async () => {
  airtel = await startAirtelSimulator({
    ...AIRTEL,
    countries: { TZ: 'TZS' },
    decisionDelayMs: 200,
    callbackDelayMs: 20,
    tokenLifetimeSeconds: 3600,
  });
  pawapay = await startPawapaySimulator({ apiToken: PAWAPAY_TOKEN, decisionDelayMs: 200, callbackDelayMs: 20 });
  stack = await startStack('routes', {
    AIRTEL_BASE_URL: airtel.url,
    AIRTEL_CLIENT_ID: AIRTEL.clientId,
    AIRTEL_CLIENT_SECRET: AIRTEL.clientSecret,
    AIRTEL_COUNTRIES: 'TZ',
    AIRTEL_PIN: AIRTEL.pin,
    AIRTEL_CALLBACK_KEY: AIRTEL.callbackKey,
    PAWAPAY_BASE_URL: pawapay.url,
    PAWAPAY_API_TOKEN: PAWAPAY_TOKEN,
    PAWAPAY_PROVIDERS: 'AIRTEL_TZA',
    // An operation in doubt leaves Airtel only once "not found" comes this long after its last send.
    OPERATOR_IN_FLIGHT_WINDOW_SECONDS: '3',
  });
  airtel.setCallbackUrl(`${stack.env.PUBLIC_BASE_URL}/network/airtel/callback`);
  pawapay.setCallbackBase(stack.env.PUBLIC_BASE_URL!);
});

afterAll(async () => {
  await stack?.stop();
  await airtel?.stop();
  await pawapay?.stop();
});

beforeEach(async () => {
  // Each test starts with both routes healthy and in the registry's order, both simulators up.
  await sql`delete from network_routes where scope = ${stack.taskQueue}`;
  await airtel.outage('none');
  await pawapay.outage('none');
  airtel.failSends(false);
  airtel.setDisbursementBalance(null);
  await routesReadAgain();
});

/** Each process reads the routes' table again once its copy is a second old (src/services/networks/route-health.ts). */
const routesReadAgain = () => Bun.sleep(1_100);

const airtelPushes = (phone: string) => airtel.collections().filter((push) => push.msisdn === national(phone));
const pawapayDeposits = (phone: string) =>
  pawapay.deposits().filter((deposit) => deposit.phoneNumber === digits(phone));

/** A subscriber who pays on either route. */
function payingSubscriber(): string {
  const phone = nextNumber();
  airtel.subscriber(national(phone), { outcome: 'pays', callback: 'truthful' });
  pawapay.setSubscriber(digits(phone), { deposit: 'pays', payout: 'receives', callback: 'once' });
  return phone;
}

/** The journal's entries of a request's first prompt, oldest first. */
const journalOf = (requestId: number) => sql<{ route: string; state: string; fault: string | null }[]>`
  select route, state, fault from network_operations where network = ${NETWORK} and reference = ${`req-${requestId}-1`} order by id`;

describe('failover', () => {
  test('Airtel refusing connections: new requests are prompted through pawaPay and credited once, within seconds of the POST', async () => {
    await airtel.outage('refused');
    const merchant = await fundedMerchant(stack, 'TZS', '1');
    for (const amount of ['1500', '2500', '3500']) {
      const phone = payingSubscriber();
      const posted = Date.now();
      const requestId = await promptedRequest(merchant, { phonenumber: phone, amount, currency: 'TZS' });
      expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
      expect(Date.now() - posted).toBeLessThan(30_000);
      expect(airtelPushes(phone)).toHaveLength(0);
      expect(pawapayDeposits(phone)).toHaveLength(1);
      expect((await journalOf(requestId)).at(-1)).toMatchObject({ route: 'pawapay', state: 'accepted' });
    }
    const credits = await creditsOf(merchant.organization.id);
    expect(credits.map((credit) => credit.amount)).toEqual(['1500.0000', '2500.0000', '3500.0000']);
    // The day's settlement says which route moved each: pawaPay's statement lists them, Airtel's does not.
    const settlement = await merchant.request(`/api/settlements?network=${encodeURIComponent(NETWORK)}`);
    expect(settlement.status).toBe(200);
    expect(settlement.body.lines.map((line: { route: string }) => line.route)).toEqual([
      'pawapay',
      'pawapay',
      'pawapay',
    ]);
    expect(new Set(credits.map((credit) => credit.remoteTransactionId)).size).toBe(3);
    await expectBalanced(merchant.organization.id);
  });

  test('Airtel answering 500 to new pushes while its enquiry says it holds none: moved to pawaPay, credited once', async () => {
    airtel.failSends(true);
    const merchant = await fundedMerchant(stack, 'TZS', '1');
    const phone = payingSubscriber();
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '1200', currency: 'TZS' });
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    expect(airtelPushes(phone)).toHaveLength(0);
    expect(pawapayDeposits(phone)).toHaveLength(1);
    expect([...(await journalOf(requestId))]).toEqual([
      { route: 'airtel', state: 'refused', fault: expect.stringContaining('HTTP 500') },
      { route: 'pawapay', state: 'accepted', fault: null },
    ]);
    expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
  });

  test('traffic returns to Airtel within 60 s of its recovery', async () => {
    await airtel.outage('refused');
    const merchant = await fundedMerchant(stack, 'TZS', '1');
    // Three faults in a row leave the route.
    for (let i = 0; i < 3; i += 1) {
      const requestId = await promptedRequest(merchant, {
        phonenumber: payingSubscriber(),
        amount: '1000',
        currency: 'TZS',
      });
      expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    }
    const [left] = await sql<{ leftUntil: Date | null }[]>`
      select left_until as "leftUntil" from network_routes where scope = ${stack.taskQueue} and network = ${NETWORK} and route = 'airtel' and operation = 'collect'`;
    expect(left?.leftUntil).not.toBeNull();
    await airtel.outage('none');
    const recovered = Date.now();
    const backOnAirtel = await eventually(
      'a request to go through Airtel again',
      async () => {
        const phone = payingSubscriber();
        const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '1000', currency: 'TZS' });
        expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
        return airtelPushes(phone).length === 1 ? Date.now() : undefined;
      },
      60_000,
    );
    expect(backOnAirtel - recovered).toBeLessThan(60_000);
  });

  test('a prompt Airtel took stays on Airtel while it is down: no second prompt on pawaPay, credited once when Airtel answers again', async () => {
    const merchant = await fundedMerchant(stack, 'TZS', '1');
    const phone = nextNumber();
    airtel.subscriber(national(phone), { outcome: 'pays', callback: 'none', decideAfterMs: 3_000 });
    pawapay.setSubscriber(digits(phone), { deposit: 'pays', payout: 'receives', callback: 'once' });
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '1800', currency: 'TZS' });
    await eventually('the push to reach Airtel', async () => airtelPushes(phone).length === 1);
    await airtel.outage('refused');
    // The request's status queries fail against Airtel for a while (the workflow polls every second).
    await eventually(
      'the status queries to fail',
      async () => {
        const [row] = await sql<{ faults: number }[]>`
        select faults_in_row as faults from network_routes where scope = ${stack.taskQueue} and network = ${NETWORK} and route = 'airtel' and operation = 'collect'`;
        return (row?.faults ?? 0) >= 2;
      },
      15_000,
    );
    await airtel.outage('none');
    expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
    expect(pawapayDeposits(phone)).toHaveLength(0);
    expect(airtelPushes(phone)).toHaveLength(1);
    expect(await creditsOf(merchant.organization.id)).toEqual([
      {
        collectionId: expect.any(Number),
        amount: '1800.0000',
        remoteTransactionId: airtelPushes(phone)[0]!.airtelMoneyId!,
      },
    ]);
  });

  test('both routes down: the attempt fails saying the network is unavailable, and nothing was sent', async () => {
    await airtel.outage('refused');
    await pawapay.outage('refused');
    const merchant = await fundedMerchant(stack, 'TZS', '1');
    const phone = payingSubscriber();
    const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '900', currency: 'TZS' });
    const outcome = await requestOutcome(stack, requestId);
    expect(outcome).toMatchObject({ status: 'failed' });
    expect(outcome.errorMessage).toContain('Airtel Tanzania is unavailable on every route right now');
    expect(airtelPushes(phone)).toHaveLength(0);
    expect(pawapayDeposits(phone)).toHaveLength(0);
    expect(await creditsOf(merchant.organization.id)).toEqual([]);
  });

  test('a payout Airtel refuses for an empty float is paid once through pawaPay; the wallet is debited once', async () => {
    airtel.setDisbursementBalance(0);
    const merchant = await fundedMerchant(stack, 'TZS', '10000');
    const phone = payingSubscriber();
    expect(await paidOut(stack, merchant, { phonenumber: phone, amount: '4000', currency: 'TZS' })).toMatchObject({
      state: 'completed',
    });
    expect(airtel.disbursements().filter((payout) => payout.msisdn === national(phone))).toHaveLength(0);
    expect(pawapay.payouts().filter((payout) => payout.phoneNumber === digits(phone))).toHaveLength(1);
    await expectBalanced(merchant.organization.id);
    const [wallet] = await sql<{ balance: string }[]>`
      select balance::text as balance from accounts where organization_id = ${merchant.organization.id} and currency = 'TZS'`;
    expect(Number(wallet!.balance)).toBe(6000);
  });
});

describe("pawaPay's availability", () => {
  test('a provider pawaPay reports CLOSED for deposits is no route for collections: with Airtel down too, nothing is sent', async () => {
    pawapay.setAvailability('AIRTEL_TZA', 'DEPOSIT', 'CLOSED');
    try {
      // A worker reads the availability at its start (then every minute).
      await stack.killWorker();
      await stack.startWorker();
      await eventually("the closed provider to reach the routes' health", async () => {
        const [row] = await sql<{ availability: string | null }[]>`
          select availability from network_routes where scope = ${stack.taskQueue} and network = ${NETWORK} and route = 'pawapay' and operation = 'collect'`;
        return row?.availability === 'closed';
      });
      await routesReadAgain();
      await airtel.outage('refused');
      const merchant = await fundedMerchant(stack, 'TZS', '1');
      const phone = payingSubscriber();
      const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '700', currency: 'TZS' });
      expect((await requestOutcome(stack, requestId)).errorMessage).toContain('unavailable on every route');
      expect(pawapayDeposits(phone)).toHaveLength(0);
    } finally {
      pawapay.setAvailability('AIRTEL_TZA', 'DEPOSIT', 'OPERATIONAL');
    }
  }, 60_000);
});

describe('a worker killed between "recorded" and "accepted"', () => {
  for (const route of ['airtel', 'pawapay'] as const) {
    test(`on ${route}: the retry asks ${route} first, and the subscriber is prompted and credited once`, async () => {
      if (route === 'pawapay') {
        await orderRoutes(sql, NETWORK, 'collect', ['pawapay', 'airtel'], stack.taskQueue);
        await routesReadAgain();
      }
      const simulator = route === 'airtel' ? airtel : pawapay;
      await simulator.outage('hang');
      const merchant = await fundedMerchant(stack, 'TZS', '1');
      const phone = payingSubscriber();
      const requestId = await promptedRequest(merchant, { phonenumber: phone, amount: '2100', currency: 'TZS' });
      await eventually('the prompt to be recorded and sent', async () =>
        (await journalOf(requestId)).some((entry) => entry.route === route && entry.state === 'recorded'),
      );
      await stack.killWorker();
      await simulator.outage('none');
      await stack.startWorker();
      expect(await requestOutcome(stack, requestId)).toMatchObject({ status: 'successful' });
      expect(airtelPushes(phone).length + pawapayDeposits(phone).length).toBe(1);
      expect(route === 'airtel' ? airtelPushes(phone) : pawapayDeposits(phone)).toHaveLength(1);
      expect(await creditsOf(merchant.organization.id)).toHaveLength(1);
      await expectBalanced(merchant.organization.id);
    }, 90_000);
  }
});
