/**
 * Every simulator's outage over HTTP with plain fetch, as a connector meets it: `refused` is a
 * refused connection on the simulator's port; `error` answers the token call and the API call with
 * the operator's own system error, and nothing is recorded; `hang` leaves a call unanswered until
 * a client's short timeout gives up (and answers the held call with the system error once the mode
 * changes); back to `none`, the same URL works again, token first.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { constants, publicEncrypt, randomUUID } from 'node:crypto';
import { startAirtelSimulator } from './airtel';
import { startDarajaSimulator } from './daraja';
import { startMomoSimulator } from './momo';
import type { OutageMode } from './outage';
import { startPawapaySimulator } from './pawapay';
import { startVodacomSimulator } from './vodacom';

/** A decision far beyond any test: nothing a call starts completes or calls back while the test runs. */
const LATER = 60_000;
/** What a simulator is to these tests: how to fetch a credential, make a call that records a payment, and count what it recorded. */
type Subject = {
  url: string;
  outage(mode: OutageMode): Promise<void>;
  stop(): Promise<void>;
  /** The token (or session) call; its Response. */
  credential(): Promise<Response>;
  /** A call that records a payment when the simulator is up, with a credential fetched before. */
  record(credential: string): Promise<Response>;
  recorded(): number;
  /** The credential out of a successful credential answer. */
  credentialOf(response: Response): Promise<string>;
  /** How the operator's system error reads: its status and a part of its body. */
  systemError: { status: number; body: Record<string, unknown> };
};

async function daraja(): Promise<Subject> {
  const credentials = {
    consumerKey: 'outage-key',
    consumerSecret: 'outage-secret',
    shortcode: '174379',
    passkey: 'outage-passkey',
    initiatorName: 'outageapi',
    securityCredential: 'b3V0YWdl',
  };
  const simulator = await startDarajaSimulator({ credentials, decisionDelayMs: LATER });
  const basic = Buffer.from(`${credentials.consumerKey}:${credentials.consumerSecret}`).toString('base64');
  // A subscriber with a push in process is locked (Daraja refuses a second push): each push goes to another.
  let sequence = 0;
  return {
    url: simulator.url,
    outage: simulator.outage,
    stop: simulator.stop,
    credential: () =>
      fetch(`${simulator.url}/oauth/v1/generate?grant_type=client_credentials`, {
        headers: { Authorization: `Basic ${basic}` },
      }),
    credentialOf: async (response) => ((await response.json()) as { access_token: string }).access_token,
    record(token) {
      const timestamp = '20260101120000';
      const msisdn = `2547${String(10_000_000 + (sequence += 1)).slice(-8)}`;
      return fetch(`${simulator.url}/mpesa/stkpush/v1/processrequest`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
        body: JSON.stringify({
          BusinessShortCode: credentials.shortcode,
          Password: Buffer.from(`${credentials.shortcode}${credentials.passkey}${timestamp}`).toString('base64'),
          Timestamp: timestamp,
          TransactionType: 'CustomerPayBillOnline',
          Amount: 10,
          PartyA: msisdn,
          PartyB: credentials.shortcode,
          PhoneNumber: msisdn,
          CallBackURL: 'http://127.0.0.1:9/callback',
          AccountReference: 'OUTAGE',
          TransactionDesc: 'outage',
        }),
      });
    },
    recorded: () => simulator.stkPushes().length,
    systemError: { status: 500, body: { errorCode: '500.003.1001' } },
  };
}

async function momo(): Promise<Subject> {
  const collection = {
    subscriptionKey: 'outage-collection-key',
    apiUser: randomUUID(),
    apiKey: 'outage-collection-secret',
  };
  const disbursement = {
    subscriptionKey: 'outage-disbursement-key',
    apiUser: randomUUID(),
    apiKey: 'outage-disbursement-secret',
  };
  const simulator = await startMomoSimulator({ collection, disbursement, decisionDelayMs: LATER });
  return {
    url: simulator.url,
    outage: simulator.outage,
    stop: simulator.stop,
    credential: () =>
      fetch(`${simulator.url}/collection/token/`, {
        method: 'POST',
        headers: {
          'Ocp-Apim-Subscription-Key': collection.subscriptionKey,
          Authorization: `Basic ${Buffer.from(`${collection.apiUser}:${collection.apiKey}`).toString('base64')}`,
        },
      }),
    credentialOf: async (response) => ((await response.json()) as { access_token: string }).access_token,
    record: (token) =>
      fetch(`${simulator.url}/collection/v1_0/requesttopay`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Authorization: `Bearer ${token}`,
          'X-Reference-Id': randomUUID(),
          'X-Target-Environment': 'sandbox',
          'Ocp-Apim-Subscription-Key': collection.subscriptionKey,
        },
        body: JSON.stringify({
          amount: '100',
          currency: 'EUR',
          externalId: 'outage',
          payer: { partyIdType: 'MSISDN', partyId: '256772123456' },
          payerMessage: 'outage',
          payeeNote: 'outage',
        }),
      }),
    recorded: () => simulator.requestsToPay().length,
    systemError: { status: 503, body: { code: 'SERVICE_UNAVAILABLE' } },
  };
}

async function airtel(): Promise<Subject> {
  const options = {
    clientId: 'outage-client',
    clientSecret: 'outage-secret',
    pin: '1234',
    countries: { UG: 'UGX' },
    decisionDelayMs: LATER,
  };
  const simulator = await startAirtelSimulator(options);
  return {
    url: simulator.url,
    outage: simulator.outage,
    stop: simulator.stop,
    credential: () =>
      fetch(`${simulator.url}/auth/oauth2/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          client_id: options.clientId,
          client_secret: options.clientSecret,
          grant_type: 'client_credentials',
        }),
      }),
    credentialOf: async (response) => ((await response.json()) as { access_token: string }).access_token,
    record: (token) =>
      fetch(`${simulator.url}/merchant/v1/payments/`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Authorization: `Bearer ${token}`,
          'X-Country': 'UG',
          'X-Currency': 'UGX',
        },
        body: JSON.stringify({
          reference: 'outage',
          subscriber: { country: 'UG', currency: 'UGX', msisdn: '701234567' },
          transaction: { amount: 1000, country: 'UG', currency: 'UGX', id: randomUUID() },
        }),
      }),
    recorded: () => simulator.collections().length,
    systemError: {
      status: 500,
      body: { status: expect.objectContaining({ response_code: 'ESB000001', success: false }) },
    },
  };
}

async function vodacom(): Promise<Subject> {
  const options = {
    apiKey: 'outage-api-key',
    serviceProviderCode: '000000',
    markets: { TZN: ['TZS'] },
    decisionDelayMs: 0,
  };
  const simulator = await startVodacomSimulator(options);
  const encrypt = (text: string) =>
    publicEncrypt(
      {
        key: Buffer.from(simulator.publicKey, 'base64'),
        format: 'der',
        type: 'spki',
        padding: constants.RSA_PKCS1_PADDING,
      },
      Buffer.from(text),
    ).toString('base64');
  const root = `${simulator.url}/ipg/v2/vodacomTZN`;
  return {
    url: simulator.url,
    outage: simulator.outage,
    stop: simulator.stop,
    credential: () =>
      fetch(`${root}/getSession/`, { headers: { Authorization: `Bearer ${encrypt(options.apiKey)}`, Origin: '*' } }),
    credentialOf: async (response) => ((await response.json()) as { output_SessionID: string }).output_SessionID,
    record: (session) =>
      fetch(`${root}/c2bPayment/singleStage/`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${encrypt(session)}`, Origin: '*' },
        body: JSON.stringify({
          input_Amount: '1000',
          input_Country: 'TZN',
          input_Currency: 'TZS',
          input_CustomerMSISDN: '255741234567',
          input_ServiceProviderCode: options.serviceProviderCode,
          input_ThirdPartyConversationID: randomUUID().replaceAll('-', ''),
          input_TransactionReference: 'OUTAGE1',
          input_PurchasedItemsDesc: 'outage',
        }),
      }),
    recorded: () => simulator.transactions().length,
    systemError: { status: 500, body: { output_ResponseCode: 'INS-1' } },
  };
}

async function pawapay(): Promise<Subject> {
  const token = 'outage-pawapay-token';
  const simulator = await startPawapaySimulator({ apiToken: token, providers: ['TIGO_TZA'], decisionDelayMs: LATER });
  return {
    url: simulator.url,
    outage: simulator.outage,
    stop: simulator.stop,
    // pawaPay has no token call: the account's key is its credential, and active-conf the first call a connector makes.
    credential: () => fetch(`${simulator.url}/v2/active-conf`, { headers: { Authorization: `Bearer ${token}` } }),
    credentialOf: async () => token,
    record: (bearer) =>
      fetch(`${simulator.url}/v2/deposits`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${bearer}` },
        body: JSON.stringify({
          depositId: randomUUID(),
          amount: '1500',
          currency: 'TZS',
          payer: { type: 'MMO', accountDetails: { phoneNumber: '255741234567', provider: 'TIGO_TZA' } },
        }),
      }),
    recorded: () => simulator.deposits().length,
    systemError: { status: 500, body: { failureReason: expect.objectContaining({ failureCode: 'UNKNOWN_ERROR' }) } },
  };
}

/** How a fetch failed (its error's name, code and message, wherever the runtime puts them), or the status it was answered with. */
async function connectionError(attempt: Promise<Response>): Promise<string> {
  try {
    const response = await attempt;
    return `answered HTTP ${response.status}`;
  } catch (error) {
    const failure = error as { name?: string; code?: unknown; message?: string; cause?: { code?: unknown } };
    return [failure.name, failure.code, failure.cause?.code, failure.message]
      .filter((part) => part !== undefined)
      .join(' ');
  }
}

const SUBJECTS: [string, () => Promise<Subject>][] = [
  ['Daraja', daraja],
  ['MoMo', momo],
  ['Airtel', airtel],
  ['the M-Pesa OpenAPI', vodacom],
  ['pawaPay', pawapay],
];

describe.each(SUBJECTS)('%s', (_name, start) => {
  let subject: Subject;
  beforeAll(async () => {
    subject = await start();
  });
  afterAll(async () => {
    await subject?.stop();
  });

  test('works before any outage: a credential, then a recorded payment', async () => {
    const credential = await subject.credential();
    expect(credential.status).toBeLessThan(300);
    const answer = await subject.record(await subject.credentialOf(credential));
    expect(answer.status).toBeLessThan(300);
    expect(subject.recorded()).toBe(1);
  });

  test('refused: the port refuses connections; back to none, the same URL answers again', async () => {
    const credential = await subject.credentialOf(await subject.credential());
    await subject.outage('refused');
    expect(await connectionError(subject.credential())).toMatch(/ConnectionRefused|ECONNREFUSED/);
    expect(await connectionError(subject.record(credential))).toMatch(/ConnectionRefused|ECONNREFUSED/);
    await subject.outage('none');
    const again = await subject.credential();
    expect(again.status).toBeLessThan(300);
    const before = subject.recorded();
    expect((await subject.record(await subject.credentialOf(again))).status).toBeLessThan(300);
    expect(subject.recorded()).toBe(before + 1);
  });

  test("error: the credential and the API call get the operator's system error, and nothing is recorded", async () => {
    const credential = await subject.credentialOf(await subject.credential());
    const before = subject.recorded();
    await subject.outage('error');
    for (const answer of [await subject.credential(), await subject.record(credential)]) {
      expect(answer.status).toBe(subject.systemError.status);
      expect(await answer.json()).toMatchObject(subject.systemError.body);
    }
    expect(subject.recorded()).toBe(before);
    await subject.outage('none');
    expect((await subject.record(credential)).status).toBeLessThan(300);
    expect(subject.recorded()).toBe(before + 1);
  });

  test('hang: a call is never answered, so a client with a short timeout gives up; the held call gets the system error once the mode changes', async () => {
    const credential = await subject.credentialOf(await subject.credential());
    const before = subject.recorded();
    await subject.outage('hang');
    const held = subject.record(credential);
    const timedOut = await connectionError(fetch(subject.url, { signal: AbortSignal.timeout(300) }));
    expect(timedOut).toMatch(/TimeoutError|timed out|abort/i);
    expect(
      await connectionError(Promise.race([held, Bun.sleep(50).then(() => Promise.reject(new Error('still held')))])),
    ).toMatch(/still held/);
    await subject.outage('none');
    const released = await held;
    expect(released.status).toBe(subject.systemError.status);
    expect(subject.recorded()).toBe(before);
    expect((await subject.record(credential)).status).toBeLessThan(300);
    expect(subject.recorded()).toBe(before + 1);
  });

  test('from one outage to another: hang, then refused, then error, then none', async () => {
    const credential = await subject.credentialOf(await subject.credential());
    await subject.outage('hang');
    const held = subject.record(credential);
    // A later call timing out says the server holds calls by now, the first one among them.
    await connectionError(fetch(subject.url, { signal: AbortSignal.timeout(300) }));
    await subject.outage('refused');
    // A held call is answered before the port closes, not cut.
    expect((await held).status).toBe(subject.systemError.status);
    expect(await connectionError(subject.credential())).toMatch(/ConnectionRefused|ECONNREFUSED/);
    await subject.outage('error');
    expect((await subject.credential()).status).toBe(subject.systemError.status);
    await subject.outage('none');
    expect((await subject.credential()).status).toBeLessThan(300);
  });
});
