/**
 * The operator simulators as one process, for `npm run start:networks`: Daraja, MoMo, Airtel, the
 * M-Pesa OpenAPI (Vodacom Tanzania and the DRC) and pawaPay's Merchant API v2 on loopback with fixed
 * sandbox credentials (MoMo with three markets: MTN Uganda through MoMo's sandbox environment, MTN
 * Ghana and MTN Rwanda through their own). pawaPay's account has every provider the service knows
 * enabled (PAWAPAY_PROVIDERS of src/network/pawapay/limits.ts), those of the networks a direct
 * connector serves too, and the configuration printed names them all: those networks have two
 * routes, the direct one first and pawaPay second.
 * Prints one JSON line with the addresses, the configuration the service needs and the markets
 * file's content (`momoMarkets`, for MTN_MOMO_MARKETS_FILE), then runs until stopped. Airtel and
 * pawaPay call back at the service's PUBLIC_BASE_URL (`--callback-base`), as their portals would be
 * set up (pawaPay at `/network/pawapay/{deposits,payouts,refunds}`, signed with a key it serves at
 * `/v2/public-key/http`). The OpenAPI's key pair is made at its start: its public key is in the
 * configuration printed.
 *   bun test/simulators/run.ts [--port BASE] [--callback-base URL] [--decision-ms MS]
 *   (Daraja on BASE, MoMo on BASE+1, control on BASE+2, Airtel on BASE+3, the M-Pesa OpenAPI on BASE+4,
 *   pawaPay on BASE+5)
 *
 * The control endpoint (BASE+2) takes JSON bodies and answers what it did, or 400 with `detail`:
 *   POST /paybill {"msisdn": "254712345678", "amount": "100", "billRefNumber": "..."}
 *     a Daraja subscriber pays the paybill.
 *   POST /outage {"simulator": "daraja" | "momo" | "airtel" | "vodacom" | "pawapay", "mode": "none" | "refused" | "error" | "hang"}
 *     takes one operator's API down, or brings it back with "none" (the modes: test/simulators/outage.ts).
 *   POST /availability {"provider": "MTN_MOMO_UGA", "operationType": "DEPOSIT" | "PAYOUT" | "REFUND", "status": "OPERATIONAL" | "DELAYED" | "CLOSED"}
 *     what pawaPay's GET /v2/availability (and active-conf) says of a provider's operation; CLOSED
 *     rejects new payments of that type with PROVIDER_TEMPORARILY_UNAVAILABLE.
 *   GET /records
 *     what each operator did (its debits, payouts and reversals), for the exactly-once check of the cluster (test/cluster).
 * --decision-ms sets how long a subscriber takes to answer a prompt (5000 by default); SIMULATOR_HOST
 * the address to listen on (127.0.0.1 by default).
 */
import { parseArgs } from 'node:util';
import { PAWAPAY_PROVIDERS as SERVICE_PAWAPAY_PROVIDERS } from '../../src/network/pawapay/limits';
import { startAirtelSimulator, type AirtelSimulator } from './airtel';
import { startDarajaSimulator, type DarajaSimulator } from './daraja';
import { startMomoSimulator, type MomoSimulator, type MomoSimulatorMarket } from './momo';
import { OUTAGE_MODES, SIMULATOR_HOST, type OutageMode } from './outage';
import {
  startPawapaySimulator,
  type PawapayOperation,
  type PawapayOperationStatus,
  type PawapaySimulator,
} from './pawapay';
import { startVodacomSimulator, type VodacomSimulator } from './vodacom';

/** Credentials of the local simulators only: they guard nothing real. */
export const SIMULATOR_CREDENTIALS = {
  daraja: {
    consumerKey: 'local-consumer-key',
    consumerSecret: 'local-consumer-secret',
    shortcode: '174379',
    passkey: 'local-lipa-na-mpesa-passkey',
    initiatorName: 'localapi',
    securityCredential: 'bG9jYWwtc2VjdXJpdHktY3JlZGVudGlhbA==',
  },
  momo: {
    collection: {
      subscriptionKey: 'local-collection-key',
      apiUser: 'c8a9e0b1-2d3f-4a5b-8c6d-7e8f9a0b1c2d',
      apiKey: 'local-collection-secret',
    },
    disbursement: {
      subscriptionKey: 'local-disbursement-key',
      apiUser: 'd1e2f3a4-b5c6-4d7e-8f9a-0b1c2d3e4f5a',
      apiKey: 'local-disbursement-secret',
    },
  },
  airtel: {
    clientId: 'local-airtel-client',
    clientSecret: 'local-airtel-secret',
    pin: '1234',
    callbackKey: 'local-airtel-callback-key',
    countries: { UG: 'UGX', KE: 'KES' },
  },
  vodacom: {
    apiKey: 'local-vodacom-api-key',
    serviceProviderCode: '000000',
    origin: '*',
    markets: { TZN: ['TZS'], DRC: ['USD'] },
    activationSeconds: 2,
  },
  pawapay: { apiToken: 'local-pawapay-api-token', providers: Object.keys(SERVICE_PAWAPAY_PROVIDERS) },
  momoMarkets: [
    {
      targetEnvironment: 'mtnghana',
      currency: 'GHS',
      collection: {
        subscriptionKey: 'local-ghana-collection-key',
        apiUser: '0b6f3e1a-7c2d-4e8f-9a1b-2c3d4e5f6a7b',
        apiKey: 'local-ghana-collection-secret',
      },
      disbursement: {
        subscriptionKey: 'local-ghana-disbursement-key',
        apiUser: '1c7a4f2b-8d3e-4f9a-8b2c-3d4e5f6a7b8c',
        apiKey: 'local-ghana-disbursement-secret',
      },
    },
    {
      targetEnvironment: 'mtnrwanda',
      currency: 'RWF',
      collection: {
        subscriptionKey: 'local-rwanda-collection-key',
        apiUser: '2d8b5a3c-9e4f-4a0b-9c3d-4e5f6a7b8c9d',
        apiKey: 'local-rwanda-collection-secret',
      },
      disbursement: {
        subscriptionKey: 'local-rwanda-disbursement-key',
        apiUser: '3e9c6b4d-0f5a-4b1c-8d4e-5f6a7b8c9d0e',
        apiKey: 'local-rwanda-disbursement-secret',
      },
    },
  ] satisfies MomoSimulatorMarket[],
};

/** MTN_MOMO_MARKETS_FILE's content for markets of the simulator at `momoUrl` (the format docs/configuration.md describes). */
export function momoMarketsFile(momoUrl: string, markets: MomoSimulatorMarket[]): unknown[] {
  const product = (credentials: MomoSimulatorMarket['collection']) => ({
    subscription_key: credentials.subscriptionKey,
    api_user: credentials.apiUser,
    api_key: credentials.apiKey,
  });
  return markets.map((market) => ({
    target_environment: market.targetEnvironment,
    base_url: momoUrl,
    currency: market.currency,
    collection: product(market.collection),
    disbursement: product(market.disbursement),
  }));
}

/** The configuration that points the service at the simulators (the OpenAPI's by its root and public key). */
export function simulatorEnvironment(
  darajaUrl: string,
  momoUrl: string,
  airtelUrl: string,
  openApi: { url: string; publicKey: string },
  pawapayUrl: string,
): Record<string, string> {
  const { daraja, momo, airtel, vodacom, pawapay } = SIMULATOR_CREDENTIALS;
  return {
    MPESA_BASE_URL: darajaUrl,
    MPESA_CONSUMER_KEY: daraja.consumerKey,
    MPESA_CONSUMER_SECRET: daraja.consumerSecret,
    MPESA_SHORTCODE: daraja.shortcode,
    MPESA_PASSKEY: daraja.passkey,
    MPESA_INITIATOR_NAME: daraja.initiatorName,
    MPESA_SECURITY_CREDENTIAL: daraja.securityCredential,
    MTN_MOMO_BASE_URL: momoUrl,
    MTN_MOMO_TARGET_ENVIRONMENT: 'sandbox',
    MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: momo.collection.subscriptionKey,
    MTN_MOMO_COLLECTION_API_USER: momo.collection.apiUser,
    MTN_MOMO_COLLECTION_API_KEY: momo.collection.apiKey,
    MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: momo.disbursement.subscriptionKey,
    MTN_MOMO_DISBURSEMENT_API_USER: momo.disbursement.apiUser,
    MTN_MOMO_DISBURSEMENT_API_KEY: momo.disbursement.apiKey,
    AIRTEL_BASE_URL: airtelUrl,
    AIRTEL_CLIENT_ID: airtel.clientId,
    AIRTEL_CLIENT_SECRET: airtel.clientSecret,
    AIRTEL_COUNTRIES: Object.keys(airtel.countries).join(','),
    AIRTEL_PIN: airtel.pin,
    AIRTEL_CALLBACK_KEY: airtel.callbackKey,
    VODACOM_BASE_URL: openApi.url,
    VODACOM_API_KEY: vodacom.apiKey,
    VODACOM_PUBLIC_KEY: openApi.publicKey,
    VODACOM_SERVICE_PROVIDER_CODE: vodacom.serviceProviderCode,
    VODACOM_MARKETS: Object.keys(vodacom.markets).join(','),
    VODACOM_ORIGIN: vodacom.origin,
    VODACOM_SESSION_ACTIVATION_SECONDS: String(vodacom.activationSeconds),
    PAWAPAY_BASE_URL: pawapayUrl,
    PAWAPAY_API_TOKEN: pawapay.apiToken,
    PAWAPAY_PROVIDERS: pawapay.providers.join(','),
  };
}

const SIMULATOR_NAMES = ['daraja', 'momo', 'airtel', 'vodacom', 'pawapay'] as const;
type SimulatorName = (typeof SIMULATOR_NAMES)[number];
/** What the control endpoint uses of each simulator. */
type ControlledSimulators = Record<SimulatorName, { outage(mode: OutageMode): Promise<void> }> & {
  daraja: Pick<DarajaSimulator, 'payBill'>;
  pawapay: Pick<PawapaySimulator, 'setAvailability'>;
};

/** What the five operators did, as their simulators recorded it: the exactly-once checker's side of the books (GET /records). */
export function operatorRecords(simulators: {
  daraja: Pick<DarajaSimulator, 'stkPushes' | 'payouts' | 'reversals'>;
  momo: Pick<MomoSimulator, 'requestsToPay' | 'transfers'>;
  airtel: Pick<AirtelSimulator, 'collections' | 'disbursements' | 'refunds'>;
  vodacom: Pick<VodacomSimulator, 'transactions'>;
  pawapay: Pick<PawapaySimulator, 'deposits' | 'payouts' | 'refunds'>;
}) {
  const { daraja, momo, airtel, vodacom, pawapay } = simulators;
  return {
    daraja: { stkPushes: daraja.stkPushes(), payouts: daraja.payouts(), reversals: daraja.reversals() },
    momo: { requestsToPay: momo.requestsToPay(), transfers: momo.transfers() },
    airtel: { collections: airtel.collections(), disbursements: airtel.disbursements(), refunds: airtel.refunds() },
    vodacom: { transactions: vodacom.transactions() },
    pawapay: { deposits: pawapay.deposits(), payouts: pawapay.payouts(), refunds: pawapay.refunds() },
  };
}
export type OperatorRecords = ReturnType<typeof operatorRecords>;

/** The control endpoint's routes (see the header): each checks its body and says what it changed. */
export function controlHandler(simulators: ControlledSimulators): (request: Request) => Promise<Response> {
  const refuse = (detail: string, status = 400) => Response.json({ detail }, { status });
  const routes: Record<string, (body: Record<string, unknown>) => Promise<Response>> = {
    async '/paybill'(body) {
      if (typeof body.msisdn !== 'string' || body.msisdn === '' || !body.amount)
        return refuse('msisdn and amount are required');
      const billRefNumber = typeof body.billRefNumber === 'string' ? body.billRefNumber : '';
      return Response.json(
        await simulators.daraja.payBill({
          msisdn: body.msisdn.replace(/^\+/, ''),
          amount: String(body.amount),
          billRefNumber,
        }),
      );
    },
    async '/outage'(body) {
      const { simulator, mode } = body;
      if (!SIMULATOR_NAMES.includes(simulator as SimulatorName))
        return refuse(`simulator must be one of ${SIMULATOR_NAMES.join(', ')}`);
      if (!OUTAGE_MODES.includes(mode as OutageMode)) return refuse(`mode must be one of ${OUTAGE_MODES.join(', ')}`);
      await simulators[simulator as SimulatorName].outage(mode as OutageMode);
      return Response.json({ simulator, mode });
    },
    async '/availability'(body) {
      const { provider, operationType, status } = body;
      try {
        simulators.pawapay.setAvailability(
          String(provider),
          operationType as PawapayOperation,
          status as PawapayOperationStatus,
        );
      } catch (error) {
        return refuse(error instanceof Error ? error.message : String(error));
      }
      return Response.json({ provider, operationType, status });
    },
  };
  return async (request) => {
    const route = routes[new URL(request.url).pathname];
    if (request.method !== 'POST' || !route) return refuse(`POST ${Object.keys(routes).join(', ')} only`, 404);
    const body = (await request.json().catch(() => null)) as unknown;
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return refuse('the body must be a JSON object');
    return await route(body as Record<string, unknown>);
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '8101' },
      'callback-base': { type: 'string', default: 'http://localhost:8000' },
      'decision-ms': { type: 'string', default: '5000' },
    },
  });
  const base = Number(values.port);
  const decisionDelayMs = Number(values['decision-ms']);
  const daraja = await startDarajaSimulator({
    credentials: SIMULATOR_CREDENTIALS.daraja,
    port: base,
    decisionDelayMs,
  });
  const momo = await startMomoSimulator({
    ...SIMULATOR_CREDENTIALS.momo,
    markets: SIMULATOR_CREDENTIALS.momoMarkets,
    port: base + 1,
    decisionDelayMs,
  });
  const airtel = await startAirtelSimulator({
    ...SIMULATOR_CREDENTIALS.airtel,
    port: base + 3,
    decisionDelayMs,
    callbackUrl: `${values['callback-base'].replace(/\/+$/, '')}/network/airtel/callback`,
  });
  const { activationSeconds, ...openApiCredentials } = SIMULATOR_CREDENTIALS.vodacom;
  const openApi = await startVodacomSimulator({
    ...openApiCredentials,
    port: base + 4,
    decisionDelayMs,
    activationMs: activationSeconds * 1000,
  });
  const pawapay = await startPawapaySimulator({
    apiToken: SIMULATOR_CREDENTIALS.pawapay.apiToken,
    providers: SIMULATOR_CREDENTIALS.pawapay.providers,
    port: base + 5,
    decisionDelayMs,
    callbackBase: values['callback-base'],
  });
  const handleControl = controlHandler({ daraja, momo, airtel, vodacom: openApi, pawapay });
  const control = Bun.serve({
    hostname: SIMULATOR_HOST,
    port: base + 2,
    fetch: (request) =>
      request.method === 'GET' && new URL(request.url).pathname === '/records'
        ? Response.json(operatorRecords({ daraja, momo, airtel, vodacom: openApi, pawapay }))
        : handleControl(request),
  });
  process.stdout.write(
    `${JSON.stringify({
      darajaUrl: daraja.url,
      momoUrl: momo.url,
      airtelUrl: airtel.url,
      vodacomUrl: openApi.url,
      pawapayUrl: pawapay.url,
      controlUrl: `http://${SIMULATOR_HOST}:${control.port}`,
      env: simulatorEnvironment(daraja.url, momo.url, airtel.url, openApi, pawapay.url),
      momoMarkets: momoMarketsFile(momo.url, SIMULATOR_CREDENTIALS.momoMarkets),
    })}\n`,
  );
  const stop = async () => {
    control.stop(true);
    await Promise.all([daraja.stop(), momo.stop(), airtel.stop(), openApi.stop(), pawapay.stop()]);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}
