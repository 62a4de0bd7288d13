/** The connectors' pure rules: validation checks, references, operator formats, configuration, the token cache and the session pool. */
import { asId } from '../../src/domain/ids';
import { afterEach, beforeEach, describe, expect, jest, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { loadConfig } from '../../src/config';
import {
  networkByName,
  networkForMoney,
  networkForNumber,
  operatorAmountProblem,
  reportedPaymentNetwork,
} from '../../src/domain/networks';
import { fullNumberOf, numberFitsMask } from '../../src/domain/phone';
import {
  accountReference,
  callbackItems,
  darajaTimestamp,
  numberOfParty,
  readResult,
  stkFailure,
} from '../../src/network/daraja';
import { momoFailure, referenceUuid } from '../../src/network/momo';
import { createTokenCache, field, wholeAmount } from '../../src/network/operator-http';
import { createSessionPool, SessionUnavailableError } from '../../src/network/session-pool';
import { describeConnections } from '../../src/network/connections';
import { connectedNetworks, connectionsOf, createConnectors, IN_FLIGHT_WINDOWS } from '../../src/network/registry';
import { readFileSync } from 'node:fs';
import { airtelFailure, callbackHashMatches } from '../../src/network/airtel';
import { vodacomAmount, vodacomFailure } from '../../src/network/vodacom';
import { generateKeyPairSync } from 'node:crypto';
import { createNetworkRouter } from '../../src/network/router';
import type { Connector, SandboxNetwork } from '../../src/network/adapter';
import type { NetworkRecords } from '../../src/network/adapter';
import { createHmac, randomUUID } from 'node:crypto';
import { createRouteHealth } from '../../src/services/networks/route-health';
import { testSql } from '../helpers';

/** The router's journal and routes' health, on the test database. */
/** A prompt reference no other test file's journal holds (the journal is the test database's, shared). */
const uniqueReference = () => `unit-${randomUUID()}`;
const routing = () => ({ sql: testSql(), health: createRouteHealth(testSql(), { scope: 'unit-networks' }) });

const MPESA = {
  MPESA_CONSUMER_KEY: 'key',
  MPESA_CONSUMER_SECRET: 'secret',
  MPESA_SHORTCODE: '174379',
  MPESA_PASSKEY: 'passkey',
  MPESA_INITIATOR_NAME: 'testapi',
  MPESA_SECURITY_CREDENTIAL: 'credential',
};
const MOMO = {
  MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: 'c-key',
  MTN_MOMO_COLLECTION_API_USER: 'c-user',
  MTN_MOMO_COLLECTION_API_KEY: 'c-api-key',
  MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: 'd-key',
  MTN_MOMO_DISBURSEMENT_API_USER: 'd-user',
  MTN_MOMO_DISBURSEMENT_API_KEY: 'd-api-key',
};
const AIRTEL = {
  AIRTEL_CLIENT_ID: 'a-client',
  AIRTEL_CLIENT_SECRET: 'a-secret',
  AIRTEL_COUNTRIES: 'UG,KE',
  AIRTEL_PIN: '1234',
};
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('configuration', () => {
  test('a connector is on when its switch variable is set, and then needs every variable and PUBLIC_BASE_URL', () => {
    const config = loadConfig({ ...MPESA, ...MOMO, PUBLIC_BASE_URL: 'https://pay.example' });
    expect(config.mpesa).toMatchObject({
      baseUrl: 'https://api.safaricom.co.ke',
      shortcode: '174379',
      validationTimeoutMs: 3000,
      registerUrlsAtStart: true,
    });
    expect(config.momoMarkets).toMatchObject([
      {
        baseUrl: 'https://proxy.momoapi.mtn.com',
        targetEnvironment: 'mtnuganda',
        network: 'MTN Uganda',
        currency: 'UGX',
        disbursement: { apiUser: 'd-user' },
      },
    ]);
    expect(loadConfig({}).mpesa).toBeNull();
    expect(() => loadConfig({ MPESA_CONSUMER_KEY: 'key', PUBLIC_BASE_URL: 'https://pay.example' })).toThrow(
      /MPESA_PASSKEY: required when MPESA_CONSUMER_KEY is set/,
    );
    expect(() => loadConfig({ ...MOMO })).toThrow(/PUBLIC_BASE_URL: required when a network connector/);
    expect(() => loadConfig({ ...MPESA, MPESA_SHORTCODE: '12', PUBLIC_BASE_URL: 'https://pay.example' })).toThrow(
      /MPESA_SHORTCODE/,
    );
    expect(() =>
      loadConfig({ ...MPESA, MPESA_VALIDATION_TIMEOUT_MS: '9000', PUBLIC_BASE_URL: 'https://pay.example' }),
    ).toThrow(/MPESA_VALIDATION_TIMEOUT_MS/);
  });

  test('the connections shown to operators carry no secret', () => {
    const config = loadConfig({ ...MPESA, ...MOMO, PUBLIC_BASE_URL: 'https://pay.example' });
    expect([...connectedNetworks(config)]).toEqual(['Safaricom', 'MTN Uganda']);
    const shown = JSON.stringify(describeConnections(config));
    for (const secret of ['secret', 'passkey', 'credential', 'c-api-key', 'd-api-key', 'c-key'])
      expect(shown).not.toContain(`"${secret}`);
    expect(shown).toContain('paybill 174379');
    expect(describeConnections(loadConfig({}))[1]).toMatchObject({ network: 'Safaricom', connector: 'none' });
  });
});

describe('Airtel Money', () => {
  test('AIRTEL_COUNTRIES names the countries served, each with its currency; unknown ones are refused', () => {
    const config = loadConfig({
      ...AIRTEL,
      AIRTEL_COUNTRIES: 'ug, KE,TZ,RW,CD:CDF',
      PUBLIC_BASE_URL: 'https://pay.example',
    });
    expect(config.airtel).toMatchObject({
      baseUrl: 'https://openapi.airtel.africa',
      callbackKey: null,
      countries: [
        { country: 'UG', currency: 'UGX' },
        { country: 'KE', currency: 'KES' },
        { country: 'TZ', currency: 'TZS' },
        { country: 'RW', currency: 'RWF' },
        { country: 'CD', currency: 'CDF' },
      ],
    });
    expect(
      loadConfig({ ...AIRTEL, AIRTEL_COUNTRIES: 'CD', PUBLIC_BASE_URL: 'https://pay.example' }).airtel?.countries,
    ).toEqual([{ country: 'CD', currency: 'USD' }]);
    expect(loadConfig({}).airtel).toBeNull();
    expect(() => loadConfig({ ...AIRTEL, AIRTEL_COUNTRIES: 'UG,NG', PUBLIC_BASE_URL: 'https://pay.example' })).toThrow(
      /AIRTEL_COUNTRIES: NG has no Airtel network this service knows/,
    );
    expect(() => loadConfig({ ...AIRTEL, AIRTEL_COUNTRIES: 'UG:KES', PUBLIC_BASE_URL: 'https://pay.example' })).toThrow(
      /Airtel Money in UG moves UGX, not KES/,
    );
    expect(() => loadConfig({ AIRTEL_CLIENT_ID: 'a-client', PUBLIC_BASE_URL: 'https://pay.example' })).toThrow(
      /AIRTEL_PIN: required when AIRTEL_CLIENT_ID is set/,
    );
    expect(() => loadConfig({ ...AIRTEL })).toThrow(/PUBLIC_BASE_URL: required when a network connector/);
    expect([...connectedNetworks(loadConfig({ ...AIRTEL, PUBLIC_BASE_URL: 'https://pay.example' }))]).toEqual([
      'Airtel Uganda',
      'Airtel Kenya',
    ]);
    const shown = JSON.stringify(
      describeConnections(loadConfig({ ...AIRTEL, PUBLIC_BASE_URL: 'https://pay.example' })),
    );
    expect(shown).not.toContain('a-secret');
    expect(shown).toContain('"network":"Airtel Uganda","currency":"UGX","connector":"Airtel Money"');
  });

  test("each number goes to its own operator's connector: Airtel never gets an MTN or Safaricom number, nor they an Airtel one", async () => {
    const calls: string[] = [];
    const fake = (name: string, fields: object = {}) =>
      new Proxy(fields, {
        // A fake declares no operator id chosen ahead nor transaction ids to keep: the router asks, and gets none.
        get: (target, method) =>
          method === 'operatorIdFor' || method === 'firstTransactionIdStays'
            ? undefined
            : method in target
              ? (target as Record<string | symbol, unknown>)[method]
              : async (item: { phoneNumber: string }) => {
                  calls.push(`${name} ${String(method)} ${item.phoneNumber}`);
                  return { accepted: false, error: name };
                },
      });
    const connectors = [
      fake('daraja', { name: 'daraja', routes: [{ network: 'Safaricom', currency: 'KES' }] }),
      fake('momo', { name: 'momo', routes: [{ network: 'MTN Uganda', currency: 'UGX' }] }),
      fake('airtel', {
        name: 'airtel',
        routes: [
          { network: 'Airtel Uganda', currency: 'UGX' },
          { network: 'Airtel Kenya', currency: 'KES' },
        ],
      }),
    ];
    const router = createNetworkRouter(
      fake('sandbox') as SandboxNetwork,
      connectors as unknown as Connector[],
      true,
      routing(),
    );
    const prompt = (phoneNumber: string, currency: string) =>
      router.requestPayment({
        requestId: asId('CollectionRequest', 1),
        attempt: 1,
        phoneNumber,
        amount: '100',
        currency,
        reference: 'x',
        promptReference: uniqueReference(),
        network: networkForNumber(phoneNumber)!,
        workflowId: 'w',
      });
    for (const [phone, currency] of [
      ['+256701000001', 'UGX'],
      ['+254733000001', 'KES'],
      ['+256772000001', 'UGX'],
      ['+254712000001', 'KES'],
      ['+255681000001', 'TZS'],
    ] as const) {
      await prompt(phone, currency);
    }
    expect(calls).toEqual([
      'airtel requestPayment +256701000001',
      'airtel requestPayment +254733000001',
      'momo requestPayment +256772000001',
      'daraja requestPayment +254712000001',
    ]);
  });

  test('Airtel Tanzania, Rwanda and the DRC go to Airtel in their own currencies once their countries are configured', async () => {
    const calls: string[] = [];
    const fake = (name: string, fields: object = {}) =>
      new Proxy(fields, {
        // A fake declares no operator id chosen ahead nor transaction ids to keep: the router asks, and gets none.
        get: (target, method) =>
          method === 'operatorIdFor' || method === 'firstTransactionIdStays'
            ? undefined
            : method in target
              ? (target as Record<string | symbol, unknown>)[method]
              : async (item: { phoneNumber: string; currency: string }) => {
                  calls.push(`${name} ${item.phoneNumber} ${item.currency}`);
                  return { accepted: false, error: name };
                },
      });
    const routes = [
      { network: 'Airtel Tanzania', currency: 'TZS' },
      { network: 'Airtel Rwanda', currency: 'RWF' },
      { network: 'Airtel DRC', currency: 'USD' },
    ];
    const router = createNetworkRouter(
      fake('sandbox') as SandboxNetwork,
      [fake('airtel', { name: 'airtel', routes })] as unknown as Connector[],
      false,
      routing(),
    );
    for (const [phoneNumber, currency] of [
      ['+255681000001', 'TZS'],
      ['+250721000001', 'RWF'],
      ['+243971000001', 'USD'],
    ] as const) {
      await router.requestPayment({
        requestId: asId('CollectionRequest', 1),
        attempt: 1,
        phoneNumber,
        amount: '100',
        currency,
        reference: 'x',
        promptReference: uniqueReference(),
        network: networkForNumber(phoneNumber)!,
        workflowId: 'w',
      });
    }
    expect(calls).toEqual(['airtel +255681000001 TZS', 'airtel +250721000001 RWF', 'airtel +243971000001 USD']);
  });

  test("refusal codes in a merchant's words; callbacks signed over their transaction as received", () => {
    expect(airtelFailure('DP00800001007')).toBe("The subscriber's Airtel Money balance is not enough.");
    expect(airtelFailure('DP00900001010')).toBe(
      'This number may not receive Airtel Money (not registered, or barred).',
    );
    expect(airtelFailure('XX1', 'Odd')).toBe('Airtel Money refused the transaction (XX1: Odd).');
    expect(airtelFailure(undefined)).toBe('Airtel Money refused the transaction.');
    const transaction = '{"id":"C1","message":"Paid","status_code":"TS","airtel_money_id":"MP1"}';
    const hash = createHmac('sha256', 'key').update(transaction).digest('base64');
    expect(callbackHashMatches('key', transaction, hash)).toBe(true);
    expect(callbackHashMatches('other', transaction, hash)).toBe(false);
    expect(
      callbackHashMatches('key', '{"status_code":"TS","id":"C1","message":"Paid","airtel_money_id":"MP1"}', hash),
    ).toBe(false);
    for (const odd of [undefined, null, 7, '', 'not base64!', hash.slice(1)])
      expect(callbackHashMatches('key', transaction, odd)).toBe(false);
  });
});

describe('Vodacom M-Pesa', () => {
  const publicKey = generateKeyPairSync('rsa', { modulusLength: 1024 })
    .publicKey.export({ type: 'spki', format: 'der' })
    .toString('base64');
  const VODACOM = {
    VODACOM_API_KEY: 'v-api-key',
    VODACOM_PUBLIC_KEY: publicKey,
    VODACOM_SERVICE_PROVIDER_CODE: '000000',
    VODACOM_MARKETS: 'TZN,DRC',
  };

  test('VODACOM_MARKETS names the markets served, each with its currency; the public key must be one', () => {
    const config = loadConfig({ ...VODACOM, VODACOM_MARKETS: 'tzn, DRC:CDF' });
    expect(config.vodacom).toMatchObject({
      baseUrl: 'https://openapi.m-pesa.com/openapi',
      origin: '*',
      sessionActivationMs: 30_000,
      sessionLifetimeMs: 3_600_000,
      serviceProviderCode: '000000',
      markets: [
        { market: 'TZN', context: 'vodacomTZN', network: 'Vodacom Tanzania', currency: 'TZS' },
        { market: 'DRC', context: 'vodacomDRC', network: 'Vodacom DRC', currency: 'CDF' },
      ],
    });
    expect(
      loadConfig({ ...VODACOM, VODACOM_BASE_URL: 'https://openapi.m-pesa.com/sandbox/' }).vodacom?.markets.map(
        (market) => market.currency,
      ),
    ).toEqual(['TZS', 'USD']);
    expect(loadConfig({ ...VODACOM }).vodacom?.baseUrl).toBe('https://openapi.m-pesa.com/openapi');
    expect(loadConfig({}).vodacom).toBeNull();
    expect(() => loadConfig({ ...VODACOM, VODACOM_MARKETS: 'TZN,KEN' })).toThrow(
      /VODACOM_MARKETS: KEN is not a Vodacom market this service knows/,
    );
    expect(() => loadConfig({ ...VODACOM, VODACOM_MARKETS: 'TZN:USD' })).toThrow(
      /Vodacom M-Pesa in TZN moves TZS, not USD/,
    );
    expect(() => loadConfig({ ...VODACOM, VODACOM_PUBLIC_KEY: 'bm90IGEga2V5' })).toThrow(
      /VODACOM_PUBLIC_KEY: not a base64 DER public key/,
    );
    expect(() => loadConfig({ VODACOM_API_KEY: 'v-api-key' })).toThrow(
      /VODACOM_PUBLIC_KEY: required when VODACOM_API_KEY is set/,
    );
    expect(
      loadConfig({ ...VODACOM, VODACOM_SESSION_LIFETIME_SECONDS: '7200', VODACOM_SESSION_ACTIVATION_SECONDS: '10' })
        .vodacom,
    ).toMatchObject({ sessionLifetimeMs: 7_200_000, sessionActivationMs: 10_000 });
    // A session must outlast its successor's activation: more than twice the activation delay.
    expect(() => loadConfig({ ...VODACOM, VODACOM_SESSION_LIFETIME_SECONDS: '60' })).toThrow(
      /VODACOM_SESSION_LIFETIME_SECONDS: must be more than twice VODACOM_SESSION_ACTIVATION_SECONDS \(30\)/,
    );
    expect(() => loadConfig({ ...VODACOM, VODACOM_SESSION_LIFETIME_SECONDS: '0' })).toThrow(
      /VODACOM_SESSION_LIFETIME_SECONDS/,
    );
    expect([...connectedNetworks(loadConfig({ ...VODACOM }))]).toEqual(['Vodacom Tanzania', 'Vodacom DRC']);
    const shown = JSON.stringify(describeConnections(loadConfig({ ...VODACOM })));
    expect(shown).not.toContain('v-api-key');
    expect(shown).toContain('"network":"Vodacom DRC","currency":"USD","connector":"Vodacom M-Pesa"');
  });

  test('Vodacom numbers go to Vodacom, and only they: an Airtel Tanzania number goes to Airtel, a Vodacom one never does', async () => {
    const calls: string[] = [];
    const fake = (name: string, fields: object = {}) =>
      new Proxy(fields, {
        // A fake declares no operator id chosen ahead nor transaction ids to keep: the router asks, and gets none.
        get: (target, method) =>
          method === 'operatorIdFor' || method === 'firstTransactionIdStays'
            ? undefined
            : method in target
              ? (target as Record<string | symbol, unknown>)[method]
              : async (item: { phoneNumber: string; currency: string }) => {
                  calls.push(`${name} ${item.phoneNumber} ${item.currency}`);
                  return { accepted: false, error: name };
                },
      });
    const connectors = [
      fake('airtel', { name: 'airtel', routes: [{ network: 'Airtel Tanzania', currency: 'TZS' }] }),
      fake('vodacom', {
        name: 'vodacom',
        routes: [
          { network: 'Vodacom Tanzania', currency: 'TZS' },
          { network: 'Vodacom DRC', currency: 'USD' },
        ],
      }),
    ];
    const router = createNetworkRouter(
      fake('sandbox') as SandboxNetwork,
      connectors as unknown as Connector[],
      false,
      routing(),
    );
    for (const [phoneNumber, currency] of [
      ['+255741000001', 'TZS'],
      ['+255681000001', 'TZS'],
      ['+243811000001', 'USD'],
    ] as const) {
      await router.requestPayment({
        requestId: asId('CollectionRequest', 1),
        attempt: 1,
        phoneNumber,
        amount: '100',
        currency,
        reference: 'x',
        promptReference: uniqueReference(),
        network: networkForNumber(phoneNumber)!,
        workflowId: 'w',
      });
    }
    expect(calls).toEqual(['vodacom +255741000001 TZS', 'airtel +255681000001 TZS', 'vodacom +243811000001 USD']);
  });

  test("INS codes in a merchant's words; amounts in the currency's minor units", () => {
    expect(vodacomFailure('INS-2006')).toBe("The subscriber's M-Pesa balance is not enough.");
    expect(vodacomFailure('INS-2006', undefined, 'merchant')).toBe(
      "The merchant's M-Pesa account balance is not enough.",
    );
    expect(vodacomFailure('INS-5')).toBe('The subscriber cancelled the payment (or did not enter the PIN).');
    expect(vodacomFailure('INS-77', 'Odd')).toBe('M-Pesa refused the transaction (INS-77: Odd).');
    expect(vodacomFailure(undefined)).toBe('M-Pesa refused the transaction.');
    expect(vodacomAmount('1500.0000', 'TZS')).toBe('1500');
    expect(vodacomAmount('12.5000', 'USD')).toBe('12.50');
    expect(vodacomAmount('7', 'USD')).toBe('7.00');
    expect(vodacomAmount('0100.0500', 'CDF')).toBe('100.05');
  });
});

describe("the API's validation", () => {
  const connected = new Set(['Safaricom']);
  test('outside sandbox mode a real currency needs its network connected; BXC and sandbox mode need nothing', () => {
    expect(networkForMoney('+254712345678', 'KES', { sandboxMode: false, connected }).network?.name).toBe('Safaricom');
    const airtel = networkForMoney('+256701234567', 'UGX', { sandboxMode: false, connected });
    expect(airtel.problem).toContain('Airtel Uganda is not connected');
    expect(networkForMoney('+256701234567', 'UGX', { sandboxMode: true, connected: new Set() }).network?.name).toBe(
      'Airtel Uganda',
    );
    expect(networkForMoney('+256701234567', 'BXC', { sandboxMode: false, connected }).network?.name).toBe(
      'Airtel Uganda',
    );
  });

  test('while any connector is on, the sandbox simulates BXC only, even in sandbox mode', () => {
    const sandboxMode = true;
    expect(networkForMoney('+256701234567', 'UGX', { sandboxMode, connected }).problem).toContain(
      'the sandbox simulates BXC only',
    );
    expect(networkForMoney('+256701234567', 'BXC', { sandboxMode, connected }).network?.name).toBe('Airtel Uganda');
    expect(networkForMoney('+254712345678', 'KES', { sandboxMode, connected }).network?.name).toBe('Safaricom');
    const sandbox = networkByName('Sandbox')!;
    const simulated = reportedPaymentNetwork(sandbox, '+256701234567', 'UGX', '1000', { sandboxMode, connected });
    expect(simulated.problems?.currency?.[0]).toContain('the sandbox simulates BXC only');
    expect(
      reportedPaymentNetwork(sandbox, '+254712345678', 'KES', '1000', { sandboxMode, connected }).problems
        ?.currency?.[0],
    ).toContain('Safaricom is connected');
    expect(
      reportedPaymentNetwork(sandbox, '+256701234567', 'UGX', '1000', { sandboxMode, connected: new Set() }).network
        ?.name,
    ).toBe('Airtel Uganda');
    expect(
      reportedPaymentNetwork(sandbox, '+256701234567', 'BXC', '1000', { sandboxMode, connected }).network?.name,
    ).toBe('Airtel Uganda');
  });

  test('a network with no connector reports its currency only in sandbox mode with no connector on, in its minor units', () => {
    const tigo = networkByName('Tigo Tanzania')!;
    const simulated = { sandboxMode: true, connected: new Set<string>() };
    expect(reportedPaymentNetwork(tigo, '+255651234567', 'TZS', '1000', simulated).network?.name).toBe('Tigo Tanzania');
    expect(reportedPaymentNetwork(tigo, '+255651234567', 'TZS', '10.5', simulated).problems).toEqual({
      amount: ['TZS has no minor unit: enter TZS without decimals.'],
    });
    for (const connections of [
      { sandboxMode: true, connected: new Set(['Vodacom Tanzania']) },
      { sandboxMode: false, connected: new Set<string>() },
    ]) {
      const refused = reportedPaymentNetwork(tigo, '+255651234567', 'TZS', '1000', connections);
      expect(refused.problems?.currency?.[0]).toContain('Tigo Tanzania has no connector here');
    }
    // The sandbox's own reports follow the same minor units: BXC takes four decimals, UGX none.
    const sandbox = networkByName('Sandbox')!;
    expect(reportedPaymentNetwork(sandbox, '+80000000042', 'BXC', '10.5', simulated).network?.name).toBe('Sandbox');
    expect(reportedPaymentNetwork(sandbox, '+256701234567', 'UGX', '10.5', simulated).problems).toEqual({
      amount: ['UGX has no minor unit: enter UGX without decimals.'],
    });
  });

  test('M-Pesa and MoMo take whole shillings', () => {
    const safaricom = networkForNumber('+254712345678')!;
    // the API's validation rules as the router gives them: the connectors of a configuration, none of them called.
    const connections = (env: Record<string, string>) =>
      connectionsOf(
        false,
        createConnectors(loadConfig({ ...env, PUBLIC_BASE_URL: 'https://pay.example' }), {} as NetworkRecords),
      );
    const connected = connections(MPESA);
    expect(operatorAmountProblem(safaricom, 'KES', '100.50', connected)).toBe(
      'M-Pesa takes whole amounts only: enter KES without decimals.',
    );
    expect(operatorAmountProblem(safaricom, 'KES', '100.0000', connected)).toBeNull();
    expect(operatorAmountProblem(safaricom, 'BXC', '100.50', connected)).toBeNull();
    expect(operatorAmountProblem(networkForNumber('+256772123456')!, 'UGX', '1.5', connections(MOMO))).toContain(
      'MTN MoMo takes whole amounts',
    );
    expect(operatorAmountProblem(safaricom, 'KES', '100.50', connections({}))).toBeNull();
    expect(wholeAmount('1500.0000')).toBe('1500');
    expect(wholeAmount('1500.5')).toBeNull();
  });
});

describe('operator formats', () => {
  test('X-Reference-Id: a version-4 UUID derived from our ids, the same for a retry', () => {
    const reference = referenceUuid('user:requesttopay:req-12-1');
    expect(reference).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(referenceUuid('user:requesttopay:req-12-1')).toBe(reference);
    expect(referenceUuid('user:requesttopay:req-12-2')).not.toBe(reference);
  });

  test('Daraja: EAT timestamps, 12-character account references, result parameters, parties', () => {
    expect(darajaTimestamp(new Date('2024-07-01T21:30:05Z'))).toBe('20240702003005');
    expect(accountReference('Invoice #1042 for May')).toBe('Invoice 1042');
    expect(accountReference('###')).toBe('Payment');
    const result = readResult({
      Result: {
        ResultCode: 0,
        ResultDesc: 'ok',
        ConversationID: 'AG_1',
        ResultParameters: {
          ResultParameter: [
            { Key: 'TransactionStatus', Value: 'Completed' },
            { Key: 'Amount', Value: 300 },
            { Key: 'DebitPartyName', Value: '254708374149 - John Doe' },
            { Key: 'DebitPartyName', Value: '600310 - Safaricom333' },
          ],
        },
      },
    });
    expect(result).toMatchObject({
      resultCode: '0',
      conversationId: 'AG_1',
      parameters: { TransactionStatus: 'Completed', Amount: '300', DebitPartyName: '254708374149 - John Doe' },
    });
    expect(readResult({ nothing: true })).toBeNull();
    expect(numberOfParty('254708374149 - John Doe')).toBe('+254708374149');
    expect(numberOfParty('600310 - Safaricom333')).toBeNull();
    expect(stkFailure('1032', 'Request cancelled by user')).toBe('The subscriber cancelled the payment prompt.');
    expect(stkFailure('9999', 'Odd')).toBe('M-Pesa refused the payment (9999: Odd).');
    expect(momoFailure('APPROVAL_REJECTED')).toBe('The subscriber declined the payment.');
    expect(momoFailure(undefined)).toBe('MTN MoMo refused the transaction.');
  });

  test('callbacks are read whatever their shape: lists that are not lists, items that are not items, inherited names', () => {
    const items = (metadata: unknown) => ({ ...callbackItems({ CallbackMetadata: metadata }) });
    expect(
      items({
        Item: [
          { Name: 'Amount', Value: 250 },
          { Name: 'Balance' },
          { Name: 'PhoneNumber', Value: 254708374149 },
          { Name: 'Amount', Value: 1 },
        ],
      }),
    ).toEqual({ Amount: '250', PhoneNumber: '254708374149' });
    for (const odd of [
      'notalist',
      [null],
      [1, 'a', [], true],
      { Name: 'Amount', Value: 5 },
      null,
      7,
      { Item: { Name: 'Amount', Value: { deep: 1 } } },
    ]) {
      expect(() => items({ Item: odd })).not.toThrow();
      expect(() => items(odd)).not.toThrow();
    }
    expect(items({ Item: [null, { Name: 'Amount', Value: 5 }] })).toEqual({ Amount: '5' });
    // A lone item comes bare; a value that is not text is no value.
    expect(items({ Item: { Name: 'Amount', Value: 5 } })).toEqual({ Amount: '5' });
    expect(
      items({
        Item: [
          { Name: 'Amount', Value: [5] },
          { Name: 'Receipt', Value: { a: 1 } },
        ],
      }),
    ).toEqual({});
    // Names are data, never an object's own machinery.
    const named = callbackItems({
      CallbackMetadata: JSON.parse('{"Item":[{"Name":"toString","Value":"x"},{"Name":"__proto__","Value":"y"}]}'),
    });
    expect([named.toString, Object.getOwnPropertyDescriptor(named, '__proto__')?.value]).toEqual(['x', 'y']);
    expect(callbackItems(null).constructor).toBeUndefined();
    for (const body of [
      null,
      'text',
      [],
      { Result: 'x' },
      { Result: [] },
      { Result: { ResultParameters: { ResultParameter: 'x' } } },
      { Result: { ResultParameters: [null] } },
    ]) {
      expect(() => readResult(body)).not.toThrow();
    }
    expect(readResult({ Result: [] })).toBeNull();
    expect(
      readResult({
        Result: { ResultCode: { a: 1 }, ResultParameters: { ResultParameter: [null, { Key: 'Amount', Value: 3 }] } },
      }),
    ).toMatchObject({ resultCode: '', parameters: { Amount: '3' } });
    expect(field({}, 'constructor')).toBeUndefined();
    expect(field({ a: { b: 1 } }, 'a')).toBeUndefined();
    expect(field(['x'], '0')).toBeUndefined();
    expect(field({ a: 0, b: false }, 'a')).toBe('0');
  });

  test('a masked or hashed payer number stands for a number only when it fits it', () => {
    expect(numberFitsMask('+254708374149', '25470****149', sha256)).toBe(true);
    expect(numberFitsMask('+254708374149', '2547 ***** 149', sha256)).toBe(true);
    expect(numberFitsMask('+254708374149', '25471****149', sha256)).toBe(false);
    expect(numberFitsMask('+254708374149', '254708374149', sha256)).toBe(true);
    expect(numberFitsMask('+254708374149', sha256('254708374149'), sha256)).toBe(true);
    expect(numberFitsMask('+254708374149', sha256('254708374140'), sha256)).toBe(false);
    expect(numberFitsMask('+254708374149', '****', sha256)).toBe(false);
    expect(fullNumberOf('254708374149')).toBe('+254708374149');
    expect(fullNumberOf('25470****149')).toBeNull();
  });
});

describe('the token cache', () => {
  test('one refresh in flight; cached until shortly before expiry; a refused token is dropped', async () => {
    let issued = 0;
    const cache = createTokenCache(async () => {
      issued += 1;
      await Bun.sleep(10);
      return { value: `token-${issued}`, expiresAt: Date.now() + (issued === 1 ? 3_600_000 : 30_000) };
    }, 60_000);
    expect(await Promise.all([cache.get(), cache.get(), cache.get()])).toEqual(['token-1', 'token-1', 'token-1']);
    expect(issued).toBe(1);
    cache.invalidate('token-1');
    expect(await cache.get()).toBe('token-2');
    // token-2 expires within the margin: the next call refreshes.
    expect(await cache.get()).toBe('token-3');
    expect(issued).toBe(3);
  });

  test('a failed refresh is not cached: the next call tries again', async () => {
    let calls = 0;
    const cache = createTokenCache(async () => {
      calls += 1;
      if (calls === 1) throw new Error('down');
      return { value: 'fresh', expiresAt: Date.now() + 3_600_000 };
    });
    await expect(cache.get()).rejects.toThrow('down');
    expect(await cache.get()).toBe('fresh');
  });
});

describe("the session pool (Vodacom's sessions: a spare always active)", () => {
  // The pool's timing is read on a clock the test moves (Date.now and setTimeout faked), a millisecond at a time with
  // the promises ready run after each step: a loaded machine cannot late a timer past the operator's activation.
  beforeEach(() => {
    jest.useFakeTimers();
  });
  afterEach(() => {
    jest.useRealTimers();
  });
  /** Runs every promise callback ready (the pool's awaits chain a few deep), the clock standing still. */
  const settle = async () => {
    for (let turn = 0; turn < 20; turn += 1) await Promise.resolve();
  };
  /** Moves the clock one millisecond forward, and settles. */
  const step = async () => {
    jest.advanceTimersByTime(1);
    await settle();
  };
  /** Moves the clock `ms` forward, a millisecond at a time. */
  const tick = async (ms: number) => {
    for (let moved = 0; moved < ms; moved += 1) await step();
  };
  /** What `promise` settles to, the clock moved a millisecond at a time until it does (at most a minute). */
  const run = async <T>(promise: Promise<T>): Promise<T> => {
    let settled = false;
    promise.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    await settle();
    for (let moved = 0; !settled && moved < 60_000; moved += 1) await step();
    return promise;
  };
  /** A session request that takes `takesMs` to be answered and issues `session-N`; it records when each was asked and how many were in flight at once. */
  const sessionIssuer = (takesMs: number, fails: (n: number) => boolean = () => false) => {
    const asked: number[] = [];
    let inFlight = 0;
    let mostInFlight = 0;
    const issue = async () => {
      const askedAt = Date.now();
      asked.push(askedAt);
      const n = asked.length;
      inFlight += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      await new Promise((resolve) => setTimeout(resolve, takesMs));
      inFlight -= 1;
      if (fails(n)) throw new Error(`request ${n} failed`);
      return { bearer: `session-${n}`, askedAt };
    };
    return { asked, issue, mostInFlight: () => mostInFlight };
  };
  const poolOf = (
    issuer: ReturnType<typeof sessionIssuer>,
    times: { activationMs: number; lifetimeMs: number },
    failures: unknown[] = [],
  ) =>
    createSessionPool({
      name: 'Test',
      issue: issuer.issue,
      ...times,
      retryMs: 50,
      onRequestFailure: (error) => failures.push(error),
    });
  const within = (ms: number) => Date.now() + ms;

  test('warm: the session in use and its spare are asked for, one request at a time; calls wait for the first activation', async () => {
    const issuer = sessionIssuer(20);
    const pool = poolOf(issuer, { activationMs: 100, lifetimeMs: 60_000 });
    pool.warm();
    pool.warm();
    expect(issuer.asked).toHaveLength(1);
    const started = Date.now();
    expect(await run(Promise.all([pool.active(within(1000)), pool.active(within(1000))]))).toEqual([
      'session-1',
      'session-1',
    ]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(115);
    expect(issuer.asked).toHaveLength(2);
    expect(issuer.mostInFlight()).toBe(1);
    pool.stop();
  });

  test('a refused session: the spare, already active, serves the next call at once, and one new spare is asked for', async () => {
    const issuer = sessionIssuer(5);
    const pool = poolOf(issuer, { activationMs: 50, lifetimeMs: 60_000 });
    pool.warm();
    expect(await run(pool.active(within(1000)))).toBe('session-1');
    await tick(60);
    const started = Date.now();
    pool.refused('session-1');
    pool.refused('session-1');
    expect(await run(pool.active(within(1000)))).toBe('session-2');
    expect(Date.now() - started).toBeLessThan(20);
    await tick(30);
    expect(issuer.asked).toHaveLength(3);
    expect(await run(pool.active(within(1000)))).toBe('session-2');
    pool.stop();
  });

  test('with no active session a call waits for an activation that comes before its deadline, and is refused at once when it comes after', async () => {
    const issuer = sessionIssuer(5);
    const pool = poolOf(issuer, { activationMs: 300, lifetimeMs: 60_000 });
    pool.warm();
    const started = Date.now();
    await expect(run(pool.active(within(100)))).rejects.toThrow(SessionUnavailableError);
    expect(Date.now() - started).toBeLessThan(50);
    expect(await run(pool.active(within(1000)))).toBe('session-1');
    expect(issuer.asked).toHaveLength(2);
    pool.stop();
  });

  test("renewal ahead: each session's replacement is asked for an activation delay before it retires, and is active when it does", async () => {
    // Lifetime 1.2 s, activation 0.2 s: retired 0.4 s before the end (half of what it serves beyond two activations), replaced at 0.6 s.
    const issuer = sessionIssuer(5);
    const pool = poolOf(issuer, { activationMs: 200, lifetimeMs: 1200 });
    pool.warm();
    expect(await run(pool.active(within(1000)))).toBe('session-1');
    await tick(issuer.asked[0]! + 700 - Date.now());
    expect(issuer.asked).toHaveLength(4);
    expect(issuer.asked[2]! - issuer.asked[0]!).toBeGreaterThanOrEqual(600);
    expect(await run(pool.active(within(1000)))).toBe('session-1');
    await tick(issuer.asked[0]! + 900 - Date.now());
    const started = Date.now();
    expect(await run(pool.active(within(1000)))).toBe('session-3');
    expect(Date.now() - started).toBeLessThan(20);
    expect(issuer.mostInFlight()).toBe(1);
    pool.stop();
  });

  test("a failed request is reported; a call with no session asks again, and fails with that request's error when it fails too", async () => {
    const failures: unknown[] = [];
    const issuer = sessionIssuer(5, (n) => n <= 2);
    const pool = poolOf(issuer, { activationMs: 20, lifetimeMs: 60_000 }, failures);
    pool.warm();
    await tick(30);
    expect(failures).toHaveLength(1);
    expect(issuer.asked).toHaveLength(1);
    await expect(run(pool.active(within(1000)))).rejects.toThrow('request 2 failed');
    expect(await run(pool.active(within(1000)))).toBe('session-3');
    expect(failures).toHaveLength(2);
    pool.stop();
  });

  /**
   * An operator that activates each session `activatesAfterMs` after issuing it and answers a call
   * with a session it does not take (not active yet, or revoked) exactly as it answers one revoked.
   */
  const operatorOf = (issuer: ReturnType<typeof sessionIssuer>, activatesAfterMs: number) => {
    const revoked = new Set<string>();
    const tries: { bearer: string; taken: boolean; at: number }[] = [];
    const takes = (bearer: string) => {
      const issuedAt = issuer.asked[Number(bearer.slice('session-'.length)) - 1]!;
      const taken = !revoked.has(bearer) && Date.now() >= issuedAt + activatesAfterMs;
      tries.push({ bearer, taken, at: Date.now() });
      return taken;
    };
    /** A call as the connector makes it: a session from the pool, told whether the operator took it, until it does or the deadline comes. */
    const call = async (pool: ReturnType<typeof createSessionPool>, deadline: number): Promise<string> => {
      for (;;) {
        const bearer = await pool.active(deadline);
        if (takes(bearer)) {
          pool.taken(bearer);
          return bearer;
        }
        pool.refused(bearer);
      }
    };
    const revokeAll = () => {
      for (const index of issuer.asked.keys()) revoked.add(`session-${index + 1}`);
    };
    return { tries, call, revokeAll };
  };
  const poolUpTo = (
    issuer: ReturnType<typeof sessionIssuer>,
    times: { activationMs: number; upToMs: number; lifetimeMs: number },
  ) =>
    createSessionPool({
      name: 'Test',
      issue: issuer.issue,
      activationMs: times.activationMs,
      activationUpToMs: times.upToMs,
      lifetimeMs: times.lifetimeMs,
      retryMs: 50,
      onRequestFailure: () => {},
    });

  test('activation "up to" a most: a call that cannot wait for the whole delay tries the new session early, again after growing pauses, until it is taken', async () => {
    const issuer = sessionIssuer(5);
    const operator = operatorOf(issuer, 300);
    const pool = poolUpTo(issuer, { activationMs: 30_000, upToMs: 30_000, lifetimeMs: 3_600_000 });
    pool.warm();
    const started = Date.now();
    expect(await run(operator.call(pool, within(2000)))).toBe('session-1');
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(300);
    expect(took).toBeLessThan(1000);
    // Tried at once, after 250 ms, then 500 ms later: refused twice (not active yet), kept, and taken.
    expect(operator.tries.map((tried) => [tried.bearer, tried.taken])).toEqual([
      ['session-1', false],
      ['session-1', false],
      ['session-1', true],
    ]);
    expect(operator.tries[2]!.at - operator.tries[1]!.at).toBeGreaterThanOrEqual(450);
    // Taken, it serves at once; the spare was asked for, no more.
    expect(await run(operator.call(pool, within(100)))).toBe('session-1');
    expect(issuer.asked).toHaveLength(2);
    pool.stop();
  });

  test('every session revoked: the one that served and the spare issued before it are dropped; the new session is tried until the operator takes it', async () => {
    const issuer = sessionIssuer(5);
    const operator = operatorOf(issuer, 300);
    // A session used in the ordinary course at once (a delay set too short): its refusals alone say it is not active yet.
    const pool = poolUpTo(issuer, { activationMs: 0, upToMs: 30_000, lifetimeMs: 3_600_000 });
    pool.warm();
    await tick(350);
    expect(await run(operator.call(pool, within(1000)))).toBe('session-1');
    expect(issuer.asked).toHaveLength(2);
    operator.revokeAll();
    const since = operator.tries.length;
    const started = Date.now();
    expect(await run(operator.call(pool, within(3000)))).toBe('session-3');
    expect(Date.now() - started).toBeLessThan(1500);
    const tried = operator.tries.slice(since);
    // Each revoked session tried once; then the new one until it was active (300 ms after its issue), taken once.
    expect(tried.slice(0, 2).map((one) => [one.bearer, one.taken])).toEqual([
      ['session-1', false],
      ['session-2', false],
    ]);
    expect(tried.slice(2).every((one) => one.bearer === 'session-3' || one.bearer === 'session-4')).toBe(true);
    expect(tried.filter((one) => one.taken)).toHaveLength(1);
    // Two new sessions (the one in use and its spare), not one per refusal.
    await tick(50);
    expect(issuer.asked).toHaveLength(4);
    expect(issuer.mostInFlight()).toBe(1);
    pool.stop();
  });

  test("a new session not taken in time: SessionUnavailableError once no try comes before the call's deadline, without a session asked for per refusal", async () => {
    const issuer = sessionIssuer(5);
    const operator = operatorOf(issuer, 5000);
    const pool = poolUpTo(issuer, { activationMs: 30_000, upToMs: 30_000, lifetimeMs: 3_600_000 });
    pool.warm();
    const started = Date.now();
    await expect(run(operator.call(pool, within(1200)))).rejects.toThrow(SessionUnavailableError);
    // Tried at once, after 250 ms and 500 ms more; the next try (1 s later) would come after the deadline: the call ends then, not at the deadline.
    expect(Date.now() - started).toBeGreaterThanOrEqual(700);
    expect(Date.now() - started).toBeLessThan(1200);
    expect(operator.tries.map((tried) => tried.bearer)).toEqual(['session-1', 'session-1', 'session-1']);
    expect(issuer.asked).toHaveLength(2);
    pool.stop();
  });
});

describe('in-flight windows', () => {
  test("each connector declares its window, whether it resends in doubt, and where the number comes from; going-live.md's table says the same", () => {
    const doc = readFileSync(new URL('../../docs/going-live.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('### In doubt is not refused'));
    for (const connector of IN_FLIGHT_WINDOWS) {
      expect(connector.windowSeconds).toBeGreaterThanOrEqual(60);
      expect(connector.source.length).toBeGreaterThan(40);
      const row = section.split('\n').find((line) => line.startsWith(`| ${connector.operator} |`));
      expect(row, `a row for ${connector.operator}`).toBeDefined();
      expect(row).toContain(`| ${connector.windowSeconds} s |`);
      expect(row).toContain(connector.resends ? '| yes' : '| no');
    }
  });

  test("OPERATOR_IN_FLIGHT_WINDOW_SECONDS overrides every connector's window", () => {
    const env = {
      PUBLIC_BASE_URL: 'https://pay.example',
      PAWAPAY_API_TOKEN: 'token',
      PAWAPAY_PROVIDERS: 'TIGO_TZA',
    };
    const own = createConnectors(loadConfig(env), {} as NetworkRecords);
    expect(own.map((connector) => connector.inFlight.windowSeconds)).toEqual([120]);
    const shortened = createConnectors(
      loadConfig({ ...env, OPERATOR_IN_FLIGHT_WINDOW_SECONDS: '4' }),
      {} as NetworkRecords,
    );
    expect(shortened.map((connector) => connector.inFlight)).toEqual([{ windowSeconds: 4, resends: true }]);
  });
});
