/**
 * A contract simulator of the Airtel Africa Open API on loopback, written from Airtel's public
 * documentation (developers.airtel.africa): client-credentials tokens (`/auth/oauth2/token`), the
 * USSD push (`/merchant/v1/payments/`, HTTP 200 with `status.success` and a response code either
 * way), its transaction enquiry (`/standard/v1/payments/{id}`: TS, TF, TIP), the callback to the
 * one URL registered for the merchant (`{transaction: {id, message, status_code, airtel_money_id},
 * hash}` with hash = Base64(HMAC-SHA256(key, the transaction object as sent)) when a key is set),
 * disbursements whose PIN is RSA-encrypted (PKCS#1 v1.5) under the key of
 * `/v1/rsa/encryption-keys` and checked by decrypting it, their enquiry, refunds (`/standard/v1/payments/refund`
 * by the collection's `airtel_money_id`, once: a repeat is refused with HTTP 400 "Transaction already
 * refunded") and the user enquiry. Every call names its country and currency (X-Country, X-Currency). It plays the
 * operator for the network tests and `npm run start:networks`: subscribers are scripted per
 * number (without the country code), and its misbehaviour on request.
 */
import { createHmac } from 'node:crypto';
import { decryptPkcs1, simulatorKeyPair } from './rsa';
import { SIMULATOR_HOST, serveWithOutages, type LateAnswer, type OutageMode } from './outage';
import { createScheduler } from './scheduler';

export type AirtelSubscriber = {
  /** What the subscriber does with a push: pays, declines, lacks the funds, or never answers (TIP for ever). */
  outcome: 'pays' | 'declines' | 'insufficient' | 'ignores';
  /** The callback: truthful, none, one that lies (TS for TF and the reverse), or the same one twice. */
  callback: 'truthful' | 'none' | 'lie' | 'twice';
  /** Whether the number has an Airtel Money account (an unregistered one is refused at once). */
  registered: boolean;
  decideAfterMs?: number;
  name?: { first_name: string; last_name: string };
};
export type AirtelSimulatorOptions = {
  clientId: string;
  clientSecret: string;
  /** The disbursement PIN the merchant set in Airtel's portal. */
  pin: string;
  /** The countries this merchant is enabled in, with their currency. */
  countries: Record<string, string>;
  /** The key Airtel signs callbacks with; none: callbacks carry no hash. */
  callbackKey?: string;
  /** The callback URL registered in the portal (settable later: `setCallbackUrl`). */
  callbackUrl?: string;
  port?: number;
  decisionDelayMs?: number;
  callbackDelayMs?: number;
  tokenLifetimeSeconds?: number;
};
export type AirtelTransaction = {
  id: string;
  kind: 'collection' | 'disbursement';
  country: string;
  currency: string;
  msisdn: string;
  amount: number;
  reference: string;
  status: 'TIP' | 'TS' | 'TF';
  code: string;
  message: string;
  airtelMoneyId: string | null;
  submissions: number;
  refunded: boolean;
};
type Call = { api: string; method: string; status: number; at: number };
export type AirtelSimulator = {
  url: string;
  stop(): Promise<void>;
  subscriber(msisdn: string, behaviour: Partial<AirtelSubscriber>): void;
  setCallbackUrl(url: string): void;
  /** Every new push and disbursement answered 500 before it is recorded, while enquiries answer as usual (until `failSends(false)`). */
  failSends(on: boolean): void;
  /** The merchant's disbursement wallet at Airtel (null: never short). */
  setDisbursementBalance(amount: number | null): void;
  expireTokens(): void;
  collections(): AirtelTransaction[];
  disbursements(): AirtelTransaction[];
  refunds(): { airtelMoneyId: string; refundId: string }[];
  /** Refunds asked again for a collection refunded already (each refused, nothing refunded twice). */
  refundRepeats(): number;
  /** Callbacks sent, as sent. */
  callbacks(): { body: string; status: number | null }[];
  calls(): Call[];
  /** Takes the whole API down (the token endpoint included) or brings it back: see outage.ts. */
  outage(mode: OutageMode): Promise<void>;
  /** Answers the next matching calls out of time: processed before or after the answer, answered late or 500. */
  late(rule: LateAnswer): void;
  /** How many calls its gateway answered with its system error (an outage's or a late rule's). */
  systemErrors(): number;
  clearLate(): void;
  /** Resolves once every late call has been processed and answered. */
  settled(): Promise<void>;
};

const MAX_BODY_BYTES = 1_048_576;
const ESB_OK = { code: '200', result_code: 'ESB000010' };
/** A collection's response code by how it ended. */
const COLLECTION_CODES = { pays: 'DP00800001001', declines: 'DP00800001008', insufficient: 'DP00800001007' } as const;
const COLLECTION_MESSAGES = {
  pays: 'Paid',
  declines: 'Transaction declined by subscriber',
  insufficient: 'Insufficient balance',
} as const;

const answer = (success: boolean, responseCode: string, message: string, data?: unknown, httpStatus = 200) =>
  Response.json(
    { ...(data === undefined ? {} : { data }), status: { ...ESB_OK, response_code: responseCode, message, success } },
    { status: httpStatus },
  );

export async function startAirtelSimulator(options: AirtelSimulatorOptions): Promise<AirtelSimulator> {
  const { publicKey, privateKey } = simulatorKeyPair();
  const tokens = new Map<string, number>();
  const subscribers = new Map<string, Partial<AirtelSubscriber>>();
  const transactions = {
    collection: new Map<string, AirtelTransaction>(),
    disbursement: new Map<string, AirtelTransaction>(),
  };
  const refunds: { airtelMoneyId: string; refundId: string }[] = [];
  let refundRepeats = 0;
  const sentCallbacks: { body: string; status: number | null }[] = [];
  const log: Call[] = [];
  let callbackUrl = options.callbackUrl ?? null;
  const { later, track, stop } = createScheduler();

  const behaviourOf = (msisdn: string): AirtelSubscriber => ({
    outcome: 'pays',
    callback: 'truthful',
    registered: true,
    ...subscribers.get(msisdn),
  });
  const airtelMoneyId = () =>
    `MP${Date.now().toString().slice(-6)}.${String(Math.floor(Math.random() * 1e4)).padStart(4, '0')}.${String.fromCharCode(65 + Math.floor(Math.random() * 26))}${String(Math.floor(Math.random() * 1e5)).padStart(5, '0')}`;

  /** The callback Airtel sends to the registered URL: the transaction, then its hash when a key is set. */
  function callBack(transaction: AirtelTransaction, statusCode: string): void {
    if (callbackUrl === null) return;
    const payload = {
      id: transaction.id,
      message: transaction.message,
      status_code: statusCode,
      airtel_money_id: transaction.airtelMoneyId ?? '',
    };
    const hash = options.callbackKey
      ? createHmac('sha256', options.callbackKey).update(JSON.stringify(payload)).digest('base64')
      : undefined;
    const body = JSON.stringify(hash === undefined ? { transaction: payload } : { transaction: payload, hash });
    const sent = { body, status: null as number | null };
    sentCallbacks.push(sent);
    void track(
      fetch(callbackUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
        signal: AbortSignal.timeout(10_000),
      }).then(
        (response) => {
          sent.status = response.status;
        },
        () => null,
      ),
    );
  }

  function decide(transaction: AirtelTransaction): void {
    const behaviour = behaviourOf(transaction.msisdn);
    later(behaviour.decideAfterMs ?? options.decisionDelayMs ?? 300, () => {
      if (behaviour.outcome === 'ignores') return;
      transaction.status = behaviour.outcome === 'pays' ? 'TS' : 'TF';
      transaction.code = COLLECTION_CODES[behaviour.outcome];
      transaction.message = COLLECTION_MESSAGES[behaviour.outcome];
      if (transaction.status === 'TS') transaction.airtelMoneyId = airtelMoneyId();
      if (behaviour.callback === 'none') return;
      const told = behaviour.callback === 'lie' ? (transaction.status === 'TS' ? 'TF' : 'TS') : transaction.status;
      later(options.callbackDelayMs ?? 100, () => {
        callBack(transaction, told);
        if (behaviour.callback === 'twice') callBack(transaction, told);
      });
    });
  }

  /** The country and currency of a call, when it carries a valid token and a country this merchant is enabled in. */
  function authorized(request: Request): { country: string; currency: string } | Response {
    const token = /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1];
    const expiresAt = token ? tokens.get(token) : undefined;
    if (expiresAt === undefined || expiresAt < Date.now())
      return Response.json(
        { error: 'invalid_token', error_description: 'Access token expired or invalid' },
        { status: 401 },
      );
    const country = request.headers.get('x-country') ?? '';
    const currency = request.headers.get('x-currency') ?? '';
    if (options.countries[country] !== currency)
      return answer(
        false,
        'ESB000008',
        `Country ${country} or currency ${currency} not enabled for this merchant`,
        undefined,
        400,
      );
    return { country, currency };
  }

  async function readJson(request: Request): Promise<Record<string, unknown> | Response> {
    const text = await request.text();
    if (text.length > MAX_BODY_BYTES) return answer(false, 'ESB000001', 'Request too large', undefined, 413);
    try {
      const body = JSON.parse(text) as unknown;
      if (typeof body === 'object' && body !== null && !Array.isArray(body)) return body as Record<string, unknown>;
    } catch {
      // Falls through to the refusal.
    }
    return answer(false, 'ESB000001', 'Invalid request body', undefined, 400);
  }

  async function token(request: Request): Promise<Response> {
    const body = await readJson(request);
    if (body instanceof Response) return body;
    if (
      body.grant_type !== 'client_credentials' ||
      body.client_id !== options.clientId ||
      body.client_secret !== options.clientSecret
    ) {
      return Response.json(
        { error: 'invalid_client', error_description: 'Client authentication failed' },
        { status: 401 },
      );
    }
    const value = crypto.randomUUID().replaceAll('-', '');
    const lifetime = options.tokenLifetimeSeconds ?? 180;
    tokens.set(value, Date.now() + lifetime * 1000);
    // Airtel sends expires_in as text.
    return Response.json({ access_token: value, expires_in: String(lifetime), token_type: 'bearer' });
  }

  /** The fields of a collection or disbursement request, or the refusal of a malformed one. */
  function transactionFields(
    body: Record<string, unknown>,
    party: unknown,
    country: string,
  ): { id: string; msisdn: string; amount: number } | Response {
    const transaction = body.transaction as Record<string, unknown> | undefined;
    const msisdn = (party as Record<string, unknown> | undefined)?.msisdn;
    const id = transaction?.id;
    const amount = transaction?.amount;
    if (typeof id !== 'string' || id.length === 0 || id.length > 64)
      return answer(false, 'DP00800001005', 'Transaction ID is invalid', undefined, 400);
    // Airtel Money moves whole amounts of the country's currency.
    if (typeof amount !== 'number' || !(amount > 0) || !Number.isInteger(amount))
      return answer(false, 'DP00800001004', 'Invalid amount', undefined, 400);
    // The msisdn comes without the country code: 9 digits in every country served here.
    if (typeof msisdn !== 'string' || !/^\d{9}$/.test(msisdn))
      return answer(
        false,
        'ESB000001',
        `Invalid msisdn for ${country}: send it without the country code`,
        undefined,
        400,
      );
    return { id, msisdn, amount };
  }

  async function collect(request: Request): Promise<Response> {
    const scope = authorized(request);
    if (scope instanceof Response) return scope;
    const body = await readJson(request);
    if (body instanceof Response) return body;
    const subscriber = body.subscriber as Record<string, unknown> | undefined;
    const transaction = body.transaction as Record<string, unknown> | undefined;
    if (
      subscriber?.country !== scope.country ||
      subscriber.currency !== scope.currency ||
      transaction?.country !== scope.country ||
      transaction.currency !== scope.currency
    ) {
      return answer(false, 'ESB000008', 'Country and currency must match the headers', undefined, 400);
    }
    const fields = transactionFields(body, subscriber, scope.country);
    if (fields instanceof Response) return fields;
    const existing = transactions.collection.get(fields.id);
    if (existing) {
      existing.submissions += 1;
      return answer(false, 'DP00800001008', 'Duplicate transaction id');
    }
    if (!behaviourOf(fields.msisdn).registered)
      return answer(false, 'DP00800001010', 'Payer is not registered on Airtel Money');
    const created: AirtelTransaction = {
      ...fields,
      kind: 'collection',
      country: scope.country,
      currency: scope.currency,
      reference: String(body.reference ?? ''),
      status: 'TIP',
      code: 'DP00800001006',
      message: 'In process',
      airtelMoneyId: null,
      submissions: 1,
      refunded: false,
    };
    transactions.collection.set(fields.id, created);
    decide(created);
    return answer(true, 'DP00800001006', 'SUCCESS', { transaction: { id: fields.id, status: 'Success.' } });
  }

  /** A transaction as its enquiry shows it (in the country it was made in). */
  function enquiry(request: Request, kind: 'collection' | 'disbursement', id: string): Response {
    const scope = authorized(request);
    if (scope instanceof Response) return scope;
    const found = transactions[kind].get(id);
    if (!found || found.country !== scope.country)
      return answer(false, kind === 'collection' ? 'DP00800001025' : 'DP00900001015', 'Transaction Not Found');
    return answer(true, found.code, 'SUCCESS', {
      transaction: {
        airtel_money_id: found.airtelMoneyId ?? '',
        id: found.id,
        message: found.message,
        status: found.status,
      },
    });
  }

  async function disburse(request: Request): Promise<Response> {
    const scope = authorized(request);
    if (scope instanceof Response) return scope;
    const body = await readJson(request);
    if (body instanceof Response) return body;
    const fields = transactionFields(body, body.payee, scope.country);
    if (fields instanceof Response) return fields;
    if ((body.transaction as Record<string, unknown>).type !== 'B2C')
      return answer(false, 'ESB000001', 'transaction.type must be B2C', undefined, 400);
    if (typeof body.pin !== 'string' || decryptPkcs1(privateKey, body.pin) !== options.pin)
      return answer(false, 'DP00900001013', 'Invalid PIN');
    const existing = transactions.disbursement.get(fields.id);
    if (existing) {
      existing.submissions += 1;
      return answer(false, 'DP00900001014', 'Duplicate transaction id');
    }
    if (!behaviourOf(fields.msisdn).registered)
      return answer(false, 'DP00900001010', 'Payee is not registered on Airtel Money');
    // The merchant's disbursement wallet (its float): a payout it cannot cover is refused, nothing recorded.
    if (disbursementBalance !== null && fields.amount > disbursementBalance)
      return answer(false, 'DP00900001007', 'Insufficient funds in the disbursement wallet');
    if (disbursementBalance !== null) disbursementBalance -= fields.amount;
    const created: AirtelTransaction = {
      ...fields,
      kind: 'disbursement',
      country: scope.country,
      currency: scope.currency,
      reference: String(body.reference ?? ''),
      status: 'TS',
      code: 'DP00900001001',
      message: 'Transaction Successful',
      airtelMoneyId: airtelMoneyId(),
      submissions: 1,
      refunded: false,
    };
    transactions.disbursement.set(fields.id, created);
    return answer(true, created.code, 'SUCCESS', {
      transaction: {
        reference_id: String(Math.floor(Math.random() * 1e9)),
        airtel_money_id: created.airtelMoneyId,
        id: created.id,
        status: created.status,
        message: created.message,
      },
    });
  }

  /**
   * A refund of a paid collection, whole and once: asked again for a collection it has refunded, Airtel
   * refuses the new refund (HTTP 400, "Transaction already refunded") and refunds nothing more.
   */
  async function refund(request: Request): Promise<Response> {
    const scope = authorized(request);
    if (scope instanceof Response) return scope;
    const body = await readJson(request);
    if (body instanceof Response) return body;
    const id = (body.transaction as Record<string, unknown> | undefined)?.airtel_money_id;
    const paid = [...transactions.collection.values()].find(
      (transaction) =>
        transaction.airtelMoneyId === id && transaction.status === 'TS' && transaction.country === scope.country,
    );
    if (typeof id !== 'string' || !paid) return answer(false, 'DP00800001025', 'Transaction Not Found');
    if (paid.refunded) {
      refundRepeats += 1;
      return answer(false, 'ESB000001', 'Transaction already refunded', undefined, 400);
    }
    paid.refunded = true;
    const done = { airtelMoneyId: id, refundId: airtelMoneyId() };
    refunds.push(done);
    return answer(true, 'DP00800001001', 'SUCCESS', {
      transaction: { airtel_money_id: done.refundId, status: 'SUCCESS' },
    });
  }

  function user(request: Request, msisdn: string): Response {
    const scope = authorized(request);
    if (scope instanceof Response) return scope;
    const behaviour = behaviourOf(msisdn);
    if (!behaviour.registered) return answer(false, 'DP00800001010', 'Msisdn Not Found');
    const name = behaviour.name ?? { first_name: 'Sand', last_name: 'Box' };
    return answer(true, 'DP00800001001', 'SUCCESS', {
      ...name,
      msisdn,
      grade: 'SUBS',
      is_barred: false,
      is_pin_set: true,
      registration: { status: 'SUBS' },
    });
  }

  /** Which API a request is for, and its handler. */
  function route(request: Request): { api: string; handle: () => Promise<Response> | Response } {
    const path = new URL(request.url).pathname.replace(/\/+$/, '');
    const post = request.method === 'POST';
    const get = request.method === 'GET';
    const id = /^\/standard\/v(1|2)\/(payments|disbursements|users)\/([^/]+)$/.exec(path);
    if (post && path === '/auth/oauth2/token') return { api: 'token', handle: () => token(request) };
    if (post && path === '/merchant/v1/payments') return { api: 'payment', handle: () => collect(request) };
    if (post && path === '/standard/v2/disbursements') return { api: 'disbursement', handle: () => disburse(request) };
    if (post && path === '/standard/v1/payments/refund') return { api: 'refund', handle: () => refund(request) };
    if (get && path === '/v1/rsa/encryption-keys') {
      return {
        api: 'encryption-keys',
        handle: () => {
          const scope = authorized(request);
          return scope instanceof Response
            ? scope
            : answer(true, 'DP00800001027', 'SUCCESS', {
                key_id: '1',
                key: publicKey,
                valid_upto: new Date(Date.now() + 86_400_000).toISOString(),
              });
        },
      };
    }
    if (get && id?.[1] === '1' && id[2] === 'payments')
      return { api: 'payment-enquiry', handle: () => enquiry(request, 'collection', decodeURIComponent(id[3]!)) };
    if (get && id?.[1] === '2' && id[2] === 'disbursements')
      return {
        api: 'disbursement-enquiry',
        handle: () => enquiry(request, 'disbursement', decodeURIComponent(id[3]!)),
      };
    if (get && id?.[1] === '1' && id[2] === 'users')
      return { api: 'user', handle: () => user(request, decodeURIComponent(id[3]!)) };
    return { api: 'unknown', handle: () => answer(false, 'ESB000004', 'Resource not found', undefined, 404) };
  }

  let failingSends = false;
  let disbursementBalance: number | null = null;
  let systemErrors = 0;
  const server = serveWithOutages({
    port: options.port,
    // Airtel's gateway answer when the money platform behind it fails.
    systemError: () => {
      systemErrors += 1;
      return answer(false, 'ESB000001', 'Something went wrong', undefined, 500);
    },
    async handle(request) {
      const { api, handle } = route(request);
      // A platform that takes no new transaction while its enquiries still answer: nothing is recorded.
      const response =
        failingSends && (api === 'payment' || api === 'disbursement')
          ? answer(false, 'ESB000001', 'Something went wrong', undefined, 500)
          : await handle();
      log.push({ api, method: request.method, status: response.status, at: Date.now() });
      return response;
    },
  });

  const copies = (kind: 'collection' | 'disbursement') =>
    [...transactions[kind].values()].map((transaction) => ({ ...transaction }));
  return {
    url: `http://${SIMULATOR_HOST}:${server.port}`,
    async stop() {
      await stop();
      await server.stop();
    },
    outage: (mode) => server.set(mode),
    late: (rule) => server.late(rule),
    systemErrors: () => systemErrors,
    clearLate: () => server.clearLate(),
    settled: () => server.settled(),
    failSends(on) {
      failingSends = on;
    },
    setDisbursementBalance(amount) {
      disbursementBalance = amount;
    },
    subscriber(msisdn, behaviour) {
      subscribers.set(msisdn, { ...subscribers.get(msisdn), ...behaviour });
    },
    setCallbackUrl(url) {
      callbackUrl = url;
    },
    expireTokens() {
      for (const token of tokens.keys()) tokens.set(token, 0);
    },
    collections: () => copies('collection'),
    disbursements: () => copies('disbursement'),
    refunds: () => [...refunds],
    refundRepeats: () => refundRepeats,
    callbacks: () => sentCallbacks.map((sent) => ({ ...sent })),
    calls: () => [...log],
  };
}
