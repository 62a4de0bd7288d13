/**
 * The operation journal's rules for every connector, through one shared suite (src/network/routes.ts,
 * src/services/networks/journal.ts): each connector's simulator on loopback, its network adapter
 * built directly (`createNetworks`, no worker) with only that connector on, and the same rules asked
 * of each:
 *
 *   1. recorded before it is sent, accepted after, on the connector's route, with the operator's reference;
 *   2. a refusal that is no fault of the route leaves its entry refused (fault null), and a new call
 *      for the same reference records a new entry;
 *   3. the route's connection refused: "unavailable on every route", the entry refused with the fault,
 *      the route's health counting it;
 *   4. a repeat of an accepted operation sends nothing new;
 *   5. payouts are journaled the same way (kind `payout`).
 *
 * The routes' health is this file's own (NETWORK_ROUTES_SCOPE=task-queue under a task queue of its own).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { asId } from '../../src/domain/ids';
import { networkByName, type Network } from '../../src/domain/networks';
import type { NetworkAdapter, PaymentPrompt, Payout, PromptResult } from '../../src/network/adapter';
import { createConnectors, createNetworks } from '../../src/network/connections';
import { createRouteHealth, type RouteHealth } from '../../src/services/networks/route-health';
import { startAirtelSimulator } from '../simulators/airtel';
import { startDarajaSimulator } from '../simulators/daraja';
import { startMomoSimulator } from '../simulators/momo';
import type { OutageMode } from '../simulators/outage';
import { startPawapaySimulator } from '../simulators/pawapay';
import { startVodacomSimulator } from '../simulators/vodacom';
import { eventually, numberSequence, testConfig, testSql, uniqueTaskQueue } from '../helpers';
import { FAST_ENV } from './stack';

const sql = testSql();
const TASK_QUEUE = uniqueTaskQueue('journal');

type Rule = 'recorded' | 'refusal' | 'connection-refused' | 'repeat' | 'payout';

/** A connector's simulator as the shared rules drive it. */
type Harness = {
  /** The connector's environment variables (its simulator's address and credentials). */
  env: Record<string, string>;
  stop(): Promise<void>;
  outage(mode: OutageMode): Promise<void>;
  /** Scripts the number as a subscriber who pays a prompt and takes a payout. */
  pays(phone: string): void;
  /** The prompts (pushes, requests to pay, deposits) the simulator received for the number. */
  prompts(phone: string): number;
  /** The payouts the simulator received for the number. */
  payouts(phone: string): number;
  /**
   * A refusal that is no fault of the route: `arrange` scripts it (and returns what the refused
   * prompt carries differently, if anything); `clear` undoes it, so the next prompt is taken.
   * `send` prompts the same number under another reference (a prompt still open on the phone).
   */
  refusal: {
    arrange(phone: string, send: (reference: string) => Promise<PromptResult>): Promise<Partial<PaymentPrompt>>;
    clear(phone: string): Promise<void>;
  };
};

type Case = {
  /** The connector's name: its route in the journal and in the routes' health. */
  connector: string;
  network: string;
  currency: string;
  amount: string;
  nextNumber: () => string;
  start(): Promise<Harness>;
  /** Rules the connector's simulator makes impossible, and why. */
  skip?: Partial<Record<Rule, string>>;
};

/** Digits with the country code, as most operators take a number. */
const digits = (e164: string) => e164.slice(1);
/** Without the country code (Airtel). */
const national = (e164: string) => e164.slice(4);
const secret = (what: string) => `journal-${what}-${randomUUID().slice(0, 8)}`;

const CASES: Case[] = [
  {
    connector: 'daraja',
    network: 'Safaricom',
    currency: 'KES',
    amount: '100.0000',
    nextNumber: numberSequence('+254712'),
    async start() {
      const credentials = {
        consumerKey: secret('consumer-key'),
        consumerSecret: secret('consumer-secret'),
        shortcode: '174379',
        passkey: 'bfb279f9aa9bdbcf158e97dd71a467cd2e0c893059b10f78e6b72ada1ed2c919',
        initiatorName: 'journalapi',
        securityCredential: 'am91cm5hbC1jcmVkZW50aWFs',
      };
      const daraja = await startDarajaSimulator({ credentials, decisionDelayMs: 300, callbackDelayMs: 50 });
      const pushesTo = (phone: string) => daraja.stkPushes().filter((push) => push.msisdn === digits(phone));
      return {
        env: {
          MPESA_BASE_URL: daraja.url,
          MPESA_CONSUMER_KEY: credentials.consumerKey,
          MPESA_CONSUMER_SECRET: credentials.consumerSecret,
          MPESA_SHORTCODE: credentials.shortcode,
          MPESA_PASSKEY: credentials.passkey,
          MPESA_INITIATOR_NAME: credentials.initiatorName,
          MPESA_SECURITY_CREDENTIAL: credentials.securityCredential,
        },
        stop: () => daraja.stop(),
        outage: (mode) => daraja.outage(mode),
        pays(phone) {
          daraja.subscriber(digits(phone), { outcome: 'pay', callback: 'none' });
          daraja.payee(digits(phone), { outcome: 'complete', callback: 'none' });
        },
        prompts: (phone) => pushesTo(phone).length,
        payouts: (phone) => daraja.payouts().filter((payout) => payout.msisdn === digits(phone)).length,
        refusal: {
          // Daraja's STK push has no refusal for an unregistered number; it refuses a push to a phone
          // with another prompt still open ("Unable to lock subscriber"): the subscriber's, not the route's.
          async arrange(phone, send) {
            daraja.subscriber(digits(phone), { outcome: 'pay', callback: 'none', decideAfterMs: 2_000 });
            expect(await send(`open-${randomUUID().slice(0, 8)}`)).toMatchObject({ accepted: true });
            return {};
          },
          async clear(phone) {
            await eventually('the open prompt to be decided', async () =>
              pushesTo(phone).every((push) => push.decided),
            );
            daraja.subscriber(digits(phone), { outcome: 'pay', callback: 'none', decideAfterMs: 300 });
          },
        },
      };
    },
  },
  {
    connector: 'momo',
    network: 'MTN Uganda',
    currency: 'UGX',
    amount: '1500.0000',
    nextNumber: numberSequence('+256777'),
    async start() {
      const credentials = {
        collection: {
          subscriptionKey: secret('collection-key'),
          apiUser: randomUUID(),
          apiKey: secret('collection-secret'),
        },
        disbursement: {
          subscriptionKey: secret('disbursement-key'),
          apiUser: randomUUID(),
          apiKey: secret('disbursement-secret'),
        },
      };
      const momo = await startMomoSimulator({
        ...credentials,
        targetEnvironment: 'sandbox',
        decisionDelayMs: 300,
        callbackDelayMs: 50,
      });
      return {
        env: {
          MTN_MOMO_BASE_URL: momo.url,
          MTN_MOMO_TARGET_ENVIRONMENT: 'sandbox',
          MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: credentials.collection.subscriptionKey,
          MTN_MOMO_COLLECTION_API_USER: credentials.collection.apiUser,
          MTN_MOMO_COLLECTION_API_KEY: credentials.collection.apiKey,
          MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: credentials.disbursement.subscriptionKey,
          MTN_MOMO_DISBURSEMENT_API_USER: credentials.disbursement.apiUser,
          MTN_MOMO_DISBURSEMENT_API_KEY: credentials.disbursement.apiKey,
        },
        stop: () => momo.stop(),
        outage: (mode) => momo.outage(mode),
        pays: (phone) => momo.party(digits(phone), { outcome: 'SUCCESSFUL', callback: 'none' }),
        prompts: (phone) => momo.requestsToPay().filter((request) => request.payer === digits(phone)).length,
        payouts: (phone) => momo.transfers().filter((transfer) => transfer.payee === digits(phone)).length,
        refusal: {
          // MoMo takes every well-formed request to pay (202) and the subscriber's answer comes after:
          // its simulator has no refusal at once for the subscriber. The refusal here is MoMo's 400 for the
          // request's own amount (INVALID_AMOUNT: more decimals than MoMo takes), no fault of the route either.
          arrange: async () => ({ amount: '1500.125' }),
          clear: async () => {},
        },
      };
    },
  },
  {
    connector: 'airtel',
    network: 'Airtel Uganda',
    currency: 'UGX',
    amount: '1500.0000',
    nextNumber: numberSequence('+256702'),
    async start() {
      const credentials = {
        clientId: secret('airtel-client'),
        clientSecret: secret('airtel-secret'),
        pin: '2468',
        callbackKey: secret('airtel-callback'),
      };
      const airtel = await startAirtelSimulator({
        ...credentials,
        countries: { UG: 'UGX' },
        decisionDelayMs: 300,
        callbackDelayMs: 50,
        tokenLifetimeSeconds: 3600,
      });
      return {
        env: {
          AIRTEL_BASE_URL: airtel.url,
          AIRTEL_CLIENT_ID: credentials.clientId,
          AIRTEL_CLIENT_SECRET: credentials.clientSecret,
          AIRTEL_COUNTRIES: 'UG',
          AIRTEL_PIN: credentials.pin,
          AIRTEL_CALLBACK_KEY: credentials.callbackKey,
        },
        stop: () => airtel.stop(),
        outage: (mode) => airtel.outage(mode),
        pays: (phone) => airtel.subscriber(national(phone), { outcome: 'pays', callback: 'none', registered: true }),
        prompts: (phone) => airtel.collections().filter((push) => push.msisdn === national(phone)).length,
        payouts: (phone) => airtel.disbursements().filter((payout) => payout.msisdn === national(phone)).length,
        refusal: {
          // A number with no Airtel Money account: refused at once (DP00800001010).
          arrange: async (phone) => {
            airtel.subscriber(national(phone), { outcome: 'pays', callback: 'none', registered: false });
            return {};
          },
          clear: async (phone) =>
            airtel.subscriber(national(phone), { outcome: 'pays', callback: 'none', registered: true }),
        },
      };
    },
  },
  {
    connector: 'vodacom',
    network: 'Vodacom Tanzania',
    currency: 'TZS',
    amount: '1500.0000',
    nextNumber: numberSequence('+255742'),
    async start() {
      const credentials = {
        apiKey: secret('vodacom-api-key'),
        serviceProviderCode: '000000',
        origin: 'journal.example',
      };
      const vodacom = await startVodacomSimulator({
        ...credentials,
        markets: { TZN: ['TZS'] },
        activationMs: 1000,
        pinWindowMs: 2000,
        decisionDelayMs: 200,
      });
      const ofKind = (kind: 'c2b' | 'b2c', phone: string) =>
        vodacom.transactions(kind).filter((made) => made.msisdn === digits(phone)).length;
      return {
        env: {
          VODACOM_BASE_URL: vodacom.url,
          VODACOM_API_KEY: credentials.apiKey,
          VODACOM_PUBLIC_KEY: vodacom.publicKey,
          VODACOM_SERVICE_PROVIDER_CODE: credentials.serviceProviderCode,
          VODACOM_MARKETS: 'TZN',
          VODACOM_ORIGIN: credentials.origin,
          VODACOM_SESSION_ACTIVATION_SECONDS: '1',
        },
        stop: () => vodacom.stop(),
        outage: (mode) => vodacom.outage(mode),
        pays: (phone) => vodacom.subscriber(digits(phone), { outcome: 'pays', answer: 'on-time', registered: true }),
        prompts: (phone) => ofKind('c2b', phone),
        payouts: (phone) => ofKind('b2c', phone),
        refusal: {
          // A number with no M-Pesa account: refused at once (INS-2051).
          arrange: async (phone) => {
            vodacom.subscriber(digits(phone), { outcome: 'pays', answer: 'on-time', registered: false });
            return {};
          },
          clear: async (phone) =>
            vodacom.subscriber(digits(phone), { outcome: 'pays', answer: 'on-time', registered: true }),
        },
      };
    },
  },
  {
    connector: 'pawapay',
    network: 'Tigo Tanzania',
    currency: 'TZS',
    amount: '1500.0000',
    nextNumber: numberSequence('+25567'),
    async start() {
      const token = secret('pawapay-token');
      const pawapay = await startPawapaySimulator({ apiToken: token, decisionDelayMs: 200, callbackDelayMs: 20 });
      return {
        env: { PAWAPAY_BASE_URL: pawapay.url, PAWAPAY_API_TOKEN: token, PAWAPAY_PROVIDERS: 'TIGO_TZA' },
        stop: () => pawapay.stop(),
        outage: (mode) => pawapay.outage(mode),
        pays: (phone) =>
          pawapay.setSubscriber(digits(phone), { deposit: 'pays', payout: 'receives', callback: 'none' }),
        prompts: (phone) => pawapay.deposits().filter((deposit) => deposit.phoneNumber === digits(phone)).length,
        payouts: (phone) => pawapay.payouts().filter((payout) => payout.phoneNumber === digits(phone)).length,
        refusal: {
          // pawaPay decides the subscriber's answer after ACCEPTED (PAYER_NOT_FOUND, declined: all FAILED later);
          // what it REJECTED at once here is the request's own amount, below Tigo's minimum (AMOUNT_OUT_OF_BOUNDS),
          // no fault of the route either.
          arrange: async () => ({ amount: '50.0000' }),
          clear: async () => {},
        },
      };
    },
  },
];

type JournalRow = {
  route: string | null;
  kind: string;
  state: string;
  fault: string | null;
  operatorReference: string | null;
};

/** The journal's entries of a reference, oldest first. */
async function journalOf(network: string, reference: string): Promise<JournalRow[]> {
  const rows = await sql<JournalRow[]>`
    select route, kind, state, fault, operator_reference as "operatorReference"
    from network_operations where network = ${network} and reference = ${reference} order by id`;
  return [...rows];
}

/** Each process reads the routes' table again once its copy is a second old (src/services/networks/route-health.ts). */
const routesReadAgain = () => Bun.sleep(1_100);

/** A sink for the operators' callbacks: the rules call the adapter directly, nothing here listens for them. */
let sink: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  sink = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('ok') });
});
afterAll(async () => {
  await sql`delete from network_routes where scope = ${TASK_QUEUE}`;
  sink?.stop(true);
});

describe.each(CASES)('$connector ($network, $currency)', (each) => {
  let simulator: Harness;
  let networks: NetworkAdapter;
  let health: RouteHealth;
  let connectors: ReturnType<typeof createConnectors>;
  const network: Network = networkByName(each.network)!;

  beforeAll(async () => {
    simulator = await each.start();
    const config = testConfig({
      ...FAST_ENV,
      PUBLIC_BASE_URL: `http://127.0.0.1:${sink.port}`,
      NETWORK_ROUTES_SCOPE: 'task-queue',
      TASK_QUEUE,
      ...simulator.env,
    });
    connectors = createConnectors(config, sql);
    expect(connectors.map((connector) => connector.name)).toEqual([each.connector]);
    health = createRouteHealth(sql, { scope: config.routesScope });
    networks = createNetworks(config, sql, connectors, health);
  });

  afterAll(async () => {
    health?.stop();
    for (const connector of connectors ?? []) (connector as { stop?: () => void }).stop?.();
    await simulator?.stop();
  });

  beforeEach(async () => {
    await simulator.outage('none');
    await sql`delete from network_routes where scope = ${TASK_QUEUE} and network = ${each.network}`;
    await routesReadAgain();
  });

  const reference = () => `req-${randomUUID().slice(0, 12)}-1`;
  const promptFor = (
    phone: string,
    promptReference: string,
    overrides: Partial<PaymentPrompt> = {},
  ): PaymentPrompt => ({
    requestId: asId('CollectionRequest', 1),
    attempt: 1,
    phoneNumber: phone,
    amount: each.amount,
    currency: each.currency,
    reference: 'Invoice 42',
    promptReference,
    network,
    workflowId: `journal-${promptReference}`,
    ...overrides,
  });
  const payingSubscriber = () => {
    const phone = each.nextNumber();
    simulator.pays(phone);
    return phone;
  };

  /** One rule for this connector: run, or skipped where its simulator makes it impossible. */
  const rule = (id: Rule, title: string, body: () => Promise<void>) => {
    if (each.skip?.[id]) test.skip(`${title} [skipped: ${each.skip[id]}]`, body);
    else test(title, body, 30_000);
  };

  rule(
    'recorded',
    "recorded before it is sent, accepted after: on the connector's route, with the operator's reference",
    async () => {
      const phone = payingSubscriber();
      const promptReference = reference();
      expect(await networks.requestPayment(promptFor(phone, promptReference))).toMatchObject({ accepted: true });
      const [entry, ...more] = await journalOf(each.network, promptReference);
      expect(more).toEqual([]);
      expect(entry).toMatchObject({ route: each.connector, kind: 'prompt', state: 'accepted', fault: null });
      expect(entry!.operatorReference).toEqual(expect.any(String));
      expect(simulator.prompts(phone)).toBe(1);
    },
  );

  rule(
    'refusal',
    "a refusal for the subscriber's own reason leaves the entry refused (no fault); a new call for the reference records a new entry",
    async () => {
      const phone = payingSubscriber();
      const promptReference = reference();
      const overrides = await simulator.refusal.arrange(phone, (other) =>
        networks.requestPayment(promptFor(phone, other)),
      );
      const refused = await networks.requestPayment(promptFor(phone, promptReference, overrides));
      expect(refused).toMatchObject({ accepted: false });
      expect(refused).not.toHaveProperty('routeFault');
      expect(await journalOf(each.network, promptReference)).toEqual([
        expect.objectContaining({ route: each.connector, kind: 'prompt', state: 'refused', fault: null }),
      ]);
      // The subscriber's refusal is no fault of the route.
      const [routeRow] = await sql<{ faults: number }[]>`
      select faults_in_row as faults from network_routes where scope = ${TASK_QUEUE} and network = ${each.network} and route = ${each.connector} and operation = 'collect'`;
      expect(routeRow?.faults ?? 0).toBe(0);
      await simulator.refusal.clear(phone);
      expect(await networks.requestPayment(promptFor(phone, promptReference))).toMatchObject({ accepted: true });
      expect(await journalOf(each.network, promptReference)).toEqual([
        expect.objectContaining({ route: each.connector, kind: 'prompt', state: 'refused', fault: null }),
        expect.objectContaining({ route: each.connector, kind: 'prompt', state: 'accepted', fault: null }),
      ]);
    },
  );

  rule(
    'connection-refused',
    "the route's connection refused: unavailable on every route, the entry refused with the fault, the route's health counting it",
    async () => {
      // The route was answering (its token or session held), then its connection is refused.
      expect(await networks.requestPayment(promptFor(payingSubscriber(), reference()))).toMatchObject({
        accepted: true,
      });
      const phone = payingSubscriber();
      const promptReference = reference();
      await simulator.outage('refused');
      try {
        const result = await networks.requestPayment(promptFor(phone, promptReference));
        expect(result).toMatchObject({ accepted: false, routeFault: true });
        expect((result as { error: string }).error).toContain(
          `${each.network} is unavailable on every route right now`,
        );
        expect(await journalOf(each.network, promptReference)).toEqual([
          expect.objectContaining({
            route: each.connector,
            kind: 'prompt',
            state: 'refused',
            fault: expect.stringContaining('connection refused'),
          }),
        ]);
        const [routeRow] = await sql<{ faults: number; lastFault: string | null }[]>`
        select faults_in_row as faults, last_fault as "lastFault" from network_routes
        where scope = ${TASK_QUEUE} and network = ${each.network} and route = ${each.connector} and operation = 'collect'`;
        expect(routeRow?.faults).toBeGreaterThanOrEqual(1);
        expect(routeRow?.lastFault).toContain('connection refused');
      } finally {
        await simulator.outage('none');
      }
      expect(simulator.prompts(phone)).toBe(0);
    },
  );

  rule('repeat', 'a repeat of an accepted operation sends nothing new and answers accepted', async () => {
    const phone = payingSubscriber();
    const prompt = promptFor(phone, reference());
    expect(await networks.requestPayment(prompt)).toMatchObject({ accepted: true });
    expect(simulator.prompts(phone)).toBe(1);
    expect(await networks.requestPayment(prompt)).toMatchObject({ accepted: true });
    expect(simulator.prompts(phone)).toBe(1);
    expect(await journalOf(each.network, prompt.promptReference)).toEqual([
      expect.objectContaining({ route: each.connector, kind: 'prompt', state: 'accepted' }),
    ]);
  });

  rule('payout', "a payout is journaled the same way: kind payout, on the connector's route, accepted", async () => {
    const phone = payingSubscriber();
    const payout: Payout = {
      reference: `payment-${randomUUID().slice(0, 12)}`,
      kind: 'payment',
      phoneNumber: phone,
      amount: each.amount,
      currency: each.currency,
      network,
      workflowId: 'journal-payment',
    };
    const sent = await networks.sendMoney(payout);
    expect(['completed', 'pending']).toContain(sent.status);
    expect(await journalOf(each.network, payout.reference)).toEqual([
      expect.objectContaining({ route: each.connector, kind: 'payout', state: 'accepted', fault: null }),
    ]);
    expect(simulator.payouts(phone)).toBe(1);
  });
});
