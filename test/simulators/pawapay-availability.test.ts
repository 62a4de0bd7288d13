/**
 * pawaPay's provider availability: the simulator's `GET /v2/availability` (countries, their
 * providers, each operation type's status), what a CLOSED or DELAYED provider does to new payments,
 * the service's `readAvailability` reading it (no database needed), and run.ts's control endpoint
 * and configuration giving `npm run start:networks` a pawaPay route for every provider the service knows.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../src/config';
import { readAvailability, type ProviderAvailability } from '../../src/network/pawapay/availability';
import { PAWAPAY_PROVIDERS as SERVICE_PROVIDERS } from '../../src/network/pawapay/limits';
import type { PawapaySettings } from '../../src/network/pawapay/settings';
import { OperatorUnreachableError } from '../../src/network/operator-http';
import type { OutageMode } from './outage';
import { PAWAPAY_PROVIDERS as SIMULATED_PROVIDERS, startPawapaySimulator, type PawapaySimulator } from './pawapay';
import { simulatorKeyPair } from './rsa';
import { controlHandler, SIMULATOR_CREDENTIALS, simulatorEnvironment } from './run';

const TOKEN = 'availability-test-token';
const ENABLED = ['TIGO_TZA', 'VODACOM_TZA', 'MTN_MOMO_UGA', 'AIRTEL_OAPI_UGA', 'MPESA_KEN', 'VODACOM_MPESA_COD'];
let pawapay: PawapaySimulator;
let sequence = 0;
/** A fresh number in a country: its calling code and nine digits. */
const msisdn = (prefix: string) => `${prefix}7${String(10_000_000 + (sequence += 1)).slice(-8)}`;

beforeAll(async () => {
  pawapay = await startPawapaySimulator({
    apiToken: TOKEN,
    providers: ENABLED,
    decisionDelayMs: 0,
    callbackDelayMs: 0,
  });
});

afterAll(async () => {
  await pawapay?.stop();
});

async function call(
  path: string,
  options: { body?: unknown; token?: string | null } = {},
): Promise<{ status: number; body: any }> {
  const token = options.token === undefined ? TOKEN : options.token;
  const response = await fetch(`${pawapay.url}${path}`, {
    method: options.body === undefined ? 'GET' : 'POST',
    headers: { 'Content-Type': 'application/json', ...(token === null ? {} : { Authorization: `Bearer ${token}` }) },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  return { status: response.status, body: await response.json() };
}

const payment = (kind: 'deposit' | 'payout', provider: string, prefix: string, currency: string, amount = '1500') => ({
  [`${kind}Id`]: randomUUID(),
  amount,
  currency,
  [kind === 'deposit' ? 'payer' : 'recipient']: {
    type: 'MMO',
    accountDetails: { phoneNumber: msisdn(prefix), provider },
  },
});

/** Settings of the service naming these providers, as readPawapaySettings makes them from PAWAPAY_PROVIDERS. */
function settings(codes: string[], overrides: Partial<PawapaySettings> = {}): PawapaySettings {
  return {
    baseUrl: pawapay.url,
    apiToken: TOKEN,
    signedCallbacks: false,
    confRefreshMs: 300_000,
    providers: codes.map((code) => ({
      code,
      network: SERVICE_PROVIDERS[code]!.network,
      currencies: SERVICE_PROVIDERS[code]!.currencies,
      name: SERVICE_PROVIDERS[code]!.name,
    })),
    ...overrides,
  };
}

/** A stand-in for pawaPay answering `body` with `status`, for answers the simulator never gives. */
async function withAnswer<T>(status: number, body: unknown, use: (url: string) => Promise<T>): Promise<T> {
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => Response.json(body, { status }) });
  try {
    return await use(`http://127.0.0.1:${server.port}`);
  } finally {
    await server.stop(true);
  }
}

describe("the simulator's GET /v2/availability", () => {
  test('every enabled provider, grouped by country, with a status per operation type', async () => {
    const { status, body } = await call('/v2/availability');
    expect(status).toBe(200);
    expect(body.map((country: any) => country.country).sort()).toEqual(['COD', 'KEN', 'TZA', 'UGA']);
    const uganda = body.find((country: any) => country.country === 'UGA');
    expect(uganda).toEqual({
      country: 'UGA',
      providers: ['MTN_MOMO_UGA', 'AIRTEL_OAPI_UGA'].map((provider) => ({
        provider,
        operationTypes: [
          { operationType: 'DEPOSIT', status: 'OPERATIONAL' },
          { operationType: 'PAYOUT', status: 'OPERATIONAL' },
          { operationType: 'REFUND', status: 'OPERATIONAL' },
        ],
      })),
    });
    const providers = body
      .flatMap((country: any) => country.providers.map((provider: any) => provider.provider))
      .sort();
    expect(providers).toEqual([...ENABLED].sort());
  });

  test('narrowed by ?country= and ?operationType=; an unknown operation type is INVALID_PARAMETER; no token is NO_AUTHENTICATION', async () => {
    const { body } = await call('/v2/availability?country=TZA&operationType=PAYOUT');
    expect(body).toEqual([
      {
        country: 'TZA',
        providers: [
          { provider: 'TIGO_TZA', operationTypes: [{ operationType: 'PAYOUT', status: 'OPERATIONAL' }] },
          { provider: 'VODACOM_TZA', operationTypes: [{ operationType: 'PAYOUT', status: 'OPERATIONAL' }] },
        ],
      },
    ]);
    expect((await call('/v2/availability?country=GHA')).body).toEqual([]);
    const wrong = await call('/v2/availability?operationType=REMITTANCE');
    expect(wrong.status).toBe(400);
    expect(wrong.body.failureReason.failureCode).toBe('INVALID_PARAMETER');
    const anonymous = await call('/v2/availability', { token: null });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.failureReason.failureCode).toBe('NO_AUTHENTICATION');
  });

  test('setAvailability: CLOSED deposits reject new deposits with PROVIDER_TEMPORARILY_UNAVAILABLE, record none, and leave payouts open', async () => {
    pawapay.setAvailability('MTN_MOMO_UGA', 'DEPOSIT', 'CLOSED');
    try {
      const { body } = await call('/v2/availability?country=UGA&operationType=DEPOSIT');
      expect(body[0].providers).toEqual([
        { provider: 'MTN_MOMO_UGA', operationTypes: [{ operationType: 'DEPOSIT', status: 'CLOSED' }] },
        { provider: 'AIRTEL_OAPI_UGA', operationTypes: [{ operationType: 'DEPOSIT', status: 'OPERATIONAL' }] },
      ]);
      const deposits = pawapay.deposits().length;
      const request = payment('deposit', 'MTN_MOMO_UGA', '256', 'UGX');
      const refused = await call('/v2/deposits', { body: request });
      expect(refused).toEqual({
        status: 200,
        body: {
          depositId: request.depositId,
          status: 'REJECTED',
          failureReason: { failureCode: 'PROVIDER_TEMPORARILY_UNAVAILABLE', failureMessage: expect.any(String) },
        },
      });
      expect(pawapay.deposits()).toHaveLength(deposits);
      expect(
        (await call('/v2/deposits', { body: payment('deposit', 'AIRTEL_OAPI_UGA', '256', 'UGX') })).body.status,
      ).toBe('ACCEPTED');
      expect((await call('/v2/payouts', { body: payment('payout', 'MTN_MOMO_UGA', '256', 'UGX') })).body.status).toBe(
        'ACCEPTED',
      );
      // The active configuration tells the same.
      const conf = await call('/v2/active-conf?country=UGA');
      const mtn = conf.body.countries[0].providers.find((provider: any) => provider.provider === 'MTN_MOMO_UGA');
      expect(mtn.currencies[0].operationTypes.DEPOSIT.status).toBe('CLOSED');
    } finally {
      pawapay.setAvailability('MTN_MOMO_UGA', 'DEPOSIT', 'OPERATIONAL');
    }
    expect((await call('/v2/deposits', { body: payment('deposit', 'MTN_MOMO_UGA', '256', 'UGX') })).body.status).toBe(
      'ACCEPTED',
    );
  });

  test('setAvailability: CLOSED payouts reject payouts; DELAYED ones hold them ENQUEUED until OPERATIONAL again', async () => {
    pawapay.setAvailability('MPESA_KEN', 'PAYOUT', 'CLOSED');
    const closed = await call('/v2/payouts', { body: payment('payout', 'MPESA_KEN', '254', 'KES', '100') });
    expect(closed.body).toMatchObject({
      status: 'REJECTED',
      failureReason: { failureCode: 'PROVIDER_TEMPORARILY_UNAVAILABLE' },
    });
    pawapay.setAvailability('MPESA_KEN', 'PAYOUT', 'DELAYED');
    const request = payment('payout', 'MPESA_KEN', '254', 'KES', '100');
    expect((await call('/v2/payouts', { body: request })).body.status).toBe('ACCEPTED');
    expect((await call(`/v2/payouts/${request.payoutId}`)).body.data.status).toBe('ENQUEUED');
    pawapay.setAvailability('MPESA_KEN', 'PAYOUT', 'OPERATIONAL');
    const deadline = Date.now() + 5_000;
    while ((await call(`/v2/payouts/${request.payoutId}`)).body.data.status !== 'COMPLETED') {
      if (Date.now() > deadline) throw new Error('the enqueued payout never completed');
      await Bun.sleep(10);
    }
  });

  test('setAvailability refuses a provider the account does not have, and values pawaPay does not use', () => {
    expect(() => pawapay.setAvailability('ORANGE_COD', 'DEPOSIT', 'CLOSED')).toThrow(/not enabled/);
    expect(() => pawapay.setAvailability('TIGO_TZA', 'REMITTANCE' as never, 'CLOSED')).toThrow(/operationType/);
    expect(() => pawapay.setAvailability('TIGO_TZA', 'DEPOSIT', 'DOWN' as never)).toThrow(/status/);
  });

  test('knows every provider of the service, in the country and currencies the service has for it', () => {
    for (const [code, provider] of Object.entries(SERVICE_PROVIDERS)) {
      const simulated = SIMULATED_PROVIDERS.find((spec) => spec.provider === code);
      expect(simulated, code).toBeDefined();
      expect(simulated!.country).toBe(provider.pawapayCountry);
      expect(simulated!.currencies.map((currency) => currency.currency)).toEqual([...provider.currencies]);
    }
  });
});

describe('readAvailability', () => {
  test('each configured provider in order, with its network and its deposit (collect) and payout statuses', async () => {
    pawapay.setAvailability('VODACOM_TZA', 'DEPOSIT', 'CLOSED');
    pawapay.setAvailability('VODACOM_MPESA_COD', 'PAYOUT', 'DELAYED');
    try {
      const expected: ProviderAvailability[] = [
        { network: 'Vodacom Tanzania', provider: 'VODACOM_TZA', collect: 'closed', payout: 'operational' },
        { network: 'Tigo Tanzania', provider: 'TIGO_TZA', collect: 'operational', payout: 'operational' },
        { network: 'Vodacom DRC', provider: 'VODACOM_MPESA_COD', collect: 'operational', payout: 'delayed' },
        { network: 'Safaricom', provider: 'MPESA_KEN', collect: 'operational', payout: 'operational' },
      ];
      expect(await readAvailability(settings(['VODACOM_TZA', 'TIGO_TZA', 'VODACOM_MPESA_COD', 'MPESA_KEN']))).toEqual(
        expected,
      );
    } finally {
      pawapay.setAvailability('VODACOM_TZA', 'DEPOSIT', 'OPERATIONAL');
      pawapay.setAvailability('VODACOM_MPESA_COD', 'PAYOUT', 'OPERATIONAL');
    }
  });

  test('a configured provider pawaPay does not list is closed both ways: nothing is sent where pawaPay has not said it takes it', async () => {
    expect(await readAvailability(settings(['ORANGE_COD', 'TIGO_TZA']))).toEqual([
      { network: 'Orange DRC', provider: 'ORANGE_COD', collect: 'closed', payout: 'closed' },
      { network: 'Tigo Tanzania', provider: 'TIGO_TZA', collect: 'operational', payout: 'operational' },
    ]);
  });

  test('operation types other than deposits and payouts are ignored; a missing or undocumented status counts as closed', async () => {
    const body = [
      {
        country: 'GHA',
        providers: [
          {
            provider: 'MTN_MOMO_GHA',
            operationTypes: [
              { operationType: 'REMITTANCE', status: 'CLOSED' },
              { operationType: 'DEPOSIT', status: 'DELAYED' },
              { operationType: 'PAYOUT', status: 'OPERATIONAL' },
            ],
          },
          { provider: 'VODAFONE_GHA', operationTypes: [{ operationType: 'DEPOSIT', status: 'MAINTENANCE' }] },
          { operationTypes: [] },
        ],
      },
    ];
    const answer = await withAnswer(200, body, (url) =>
      readAvailability(settings(['MTN_MOMO_GHA', 'VODAFONE_GHA'], { baseUrl: url })),
    );
    expect(answer).toEqual([
      { network: 'MTN Ghana', provider: 'MTN_MOMO_GHA', collect: 'delayed', payout: 'operational' },
      { network: 'Telecel Ghana', provider: 'VODAFONE_GHA', collect: 'closed', payout: 'closed' },
    ]);
  });

  test("throws on a refused token, an answer that is not a list, pawaPay's system error and a refused connection", async () => {
    await expect(readAvailability(settings(['TIGO_TZA'], { apiToken: 'not-the-token' }))).rejects.toThrow(/HTTP 403/);
    await expect(
      withAnswer(200, { countries: [] }, (url) => readAvailability(settings(['TIGO_TZA'], { baseUrl: url }))),
    ).rejects.toThrow(/other than a list of countries/);
    await pawapay.outage('error');
    try {
      await expect(readAvailability(settings(['TIGO_TZA']))).rejects.toThrow(/HTTP 500/);
      await pawapay.outage('refused');
      await expect(readAvailability(settings(['TIGO_TZA']))).rejects.toBeInstanceOf(OperatorUnreachableError);
    } finally {
      await pawapay.outage('none');
    }
    expect(await readAvailability(settings(['TIGO_TZA']))).toEqual([
      { network: 'Tigo Tanzania', provider: 'TIGO_TZA', collect: 'operational', payout: 'operational' },
    ]);
  });
});

describe('run.ts (npm run start:networks)', () => {
  test('the pawaPay account and PAWAPAY_PROVIDERS name every provider the service knows, and the configuration takes them', () => {
    expect([...SIMULATOR_CREDENTIALS.pawapay.providers].sort()).toEqual(Object.keys(SERVICE_PROVIDERS).sort());
    const { publicKey } = simulatorKeyPair();
    const env = simulatorEnvironment(
      'http://127.0.0.1:8101',
      'http://127.0.0.1:8102',
      'http://127.0.0.1:8104',
      { url: 'http://127.0.0.1:8105/sandbox', publicKey },
      'http://127.0.0.1:8106',
    );
    expect(env.PAWAPAY_PROVIDERS!.split(',').sort()).toEqual(Object.keys(SERVICE_PROVIDERS).sort());
    const config = loadConfig({ ...env, PUBLIC_BASE_URL: 'http://localhost:8000' });
    expect(config.pawapay?.providers.map((provider) => provider.network).sort()).toEqual(
      Object.values(SERVICE_PROVIDERS)
        .map((provider) => provider.network)
        .sort(),
    );
  });

  test("the control endpoint sets an outage per simulator and pawaPay's availability, and refuses what it does not know", async () => {
    const outages: [string, OutageMode][] = [];
    const stand = (name: string) => ({ outage: async (mode: OutageMode) => void outages.push([name, mode]) });
    const handle = controlHandler({
      daraja: { ...stand('daraja'), payBill: () => Promise.reject(new Error('not in this test')) },
      momo: stand('momo'),
      airtel: stand('airtel'),
      vodacom: stand('vodacom'),
      pawapay,
    });
    const post = async (path: string, body: unknown) => {
      const response = await handle(
        new Request(`http://control${path}`, { method: 'POST', body: JSON.stringify(body) }),
      );
      return { status: response.status, body: (await response.json()) as any };
    };
    expect(await post('/outage', { simulator: 'momo', mode: 'refused' })).toEqual({
      status: 200,
      body: { simulator: 'momo', mode: 'refused' },
    });
    expect(await post('/outage', { simulator: 'vodacom', mode: 'none' })).toEqual({
      status: 200,
      body: { simulator: 'vodacom', mode: 'none' },
    });
    expect(outages).toEqual([
      ['momo', 'refused'],
      ['vodacom', 'none'],
    ]);
    expect((await post('/outage', { simulator: 'mtn', mode: 'error' })).status).toBe(400);
    expect((await post('/outage', { simulator: 'momo', mode: 'down' })).status).toBe(400);

    expect(await post('/outage', { simulator: 'pawapay', mode: 'error' })).toEqual({
      status: 200,
      body: { simulator: 'pawapay', mode: 'error' },
    });
    expect((await call('/v2/availability')).status).toBe(500);
    await post('/outage', { simulator: 'pawapay', mode: 'none' });

    const closing = { provider: 'AIRTEL_OAPI_UGA', operationType: 'PAYOUT', status: 'CLOSED' };
    expect(await post('/availability', closing)).toEqual({ status: 200, body: closing });
    expect((await readAvailability(settings(['AIRTEL_OAPI_UGA'])))[0]).toMatchObject({
      collect: 'operational',
      payout: 'closed',
    });
    expect(await post('/availability', { ...closing, status: 'OPERATIONAL' })).toEqual({
      status: 200,
      body: { ...closing, status: 'OPERATIONAL' },
    });
    expect((await post('/availability', { ...closing, provider: 'ORANGE_COD' })).status).toBe(400);
    expect((await post('/availability', { ...closing, status: 'SHUT' })).status).toBe(400);
    expect((await handle(new Request('http://control/nothing', { method: 'POST', body: '{}' }))).status).toBe(404);
    expect((await handle(new Request('http://control/outage', { method: 'POST', body: 'not json' }))).status).toBe(400);
  });
});
