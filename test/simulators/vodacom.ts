/**
 * A contract simulator of the M-Pesa OpenAPI (Vodacom's markets) on loopback, written from the
 * OpenAPI's public documentation: sessions from `getSession` whose bearer is the API key encrypted
 * under the portal's public key (RSA, PKCS#1 v1.5, base64), checked by decrypting it with the private
 * key made at start; every other call's bearer is the session id encrypted the same way, refused
 * (HTTP 401) before the session's activation delay, after its lifetime, once revoked, or for
 * another market (by default each refusal says why; `plainSessionRefusals` answers them all as the
 * OpenAPI documents them, `INS-2` `Invalid API Key`, as M-Pesa does);
 * the `Origin` header on every call; the `input_*` fields of each API, their formats (amounts of the
 * market's currency, `255…` numbers in Tanzania and `243…` in the DRC), and the documented
 * `output_*` answers with their `INS-*` codes and HTTP statuses. The customer payment
 * (`c2bPayment/singleStage`) answers once the subscriber entered the PIN, or `INS-9` when the PIN
 * window closes first (the payment may still complete); a repeated ThirdPartyConversationID is
 * `INS-10`. B2C (`b2cPayment`), reversals (`reversal`, PUT), `queryTransactionStatus` (by
 * transaction id, conversation id or ThirdPartyConversationID) and `queryBeneficiaryName`.
 * Subscribers are scripted per number (as M-Pesa writes it: `2557…`), and so is misbehaviour.
 */
import { randomBytes } from 'node:crypto';
import { decryptPkcs1, simulatorKeyPair } from './rsa';
import { SIMULATOR_HOST, serveWithOutages, type LateAnswer, type OutageMode } from './outage';
import { createScheduler } from './scheduler';

export type VodacomSubscriber = {
  /** What the subscriber does with a payment prompt: pays, cancels, lacks the funds, or never enters the PIN. */
  outcome: 'pays' | 'cancels' | 'insufficient' | 'ignores';
  /** Whether the answer to a customer payment or B2C comes back (`lost`: held until the simulator stops, the money still moves). */
  answer: 'on-time' | 'lost';
  /** Whether the number has an M-Pesa account. */
  registered: boolean;
  decideAfterMs?: number;
  name?: { first: string; last: string };
};
export type VodacomSimulatorOptions = {
  apiKey: string;
  serviceProviderCode: string;
  /** The markets the application is enabled for, with the currencies each takes (`{ TZN: ['TZS'], DRC: ['USD'] }`). */
  markets: Record<string, readonly string[]>;
  /** The Origin the application is registered with; `*` or none: any. The header itself is always required. */
  origin?: string;
  /** `sandbox` (default) or `openapi`: the root's path. */
  environment?: 'sandbox' | 'openapi';
  /** How long after it is issued a session becomes usable. */
  activationMs?: number;
  /**
   * Every refused session answered `INS-2` `Invalid API Key` (HTTP 401), whether it is not active
   * yet, ended or revoked: a client learns nothing more from the answer. By default the description
   * says which.
   */
  plainSessionRefusals?: boolean;
  sessionLifetimeMs?: number;
  /** How long M-Pesa waits for the subscriber's PIN before answering INS-9. */
  pinWindowMs?: number;
  decisionDelayMs?: number;
  port?: number;
};
type Status = 'Pending' | 'Completed' | 'Cancelled' | 'Expired' | 'Failed';
export type VodacomTransaction = {
  kind: 'c2b' | 'b2c' | 'reversal';
  market: string;
  currency: string;
  msisdn: string;
  amount: string;
  transactionId: string;
  conversationId: string;
  thirdPartyConversationId: string;
  transactionReference: string;
  description: string;
  status: Status;
  submissions: number;
  reversedBy: string | null;
  originalTransactionId: string | null;
  origin: string;
};
/** A call as the simulator saw it; `session`: which session its bearer named (1 the first issued, 2 the next, ...), when it named one. */
type Call = {
  api: string;
  market: string;
  method: string;
  status: number;
  code: string | undefined;
  at: number;
  session?: number;
};
export type VodacomSimulator = {
  /** The environment's root (VODACOM_BASE_URL). */
  url: string;
  /** The portal's public key (VODACOM_PUBLIC_KEY): base64 DER. */
  publicKey: string;
  stop(): Promise<void>;
  subscriber(msisdn: string, behaviour: Partial<VodacomSubscriber>): void;
  /** Ends every session issued so far (their lifetime is over). */
  expireSessions(): void;
  /**
   * Revokes every session that has carried a call (the operator ending an application's sessions in
   * use); a session issued but not used yet stays valid. Returns how many were revoked.
   */
  revokeSessionsInUse(): number;
  /** Revokes every session issued so far, used or not (the operator ending all of an application's sessions). Returns how many. */
  revokeSessions(): number;
  /** While on, `getSession` answers `INS-1` (an internal error, HTTP 500): no session is issued. */
  failSessionRequests(failing: boolean): void;
  /**
   * The service provider's own M-Pesa account, which B2C pays from (null, the default: never short): a B2C of more
   * than it holds is refused `INS-2006` and nothing is recorded.
   */
  setB2cBalance(amount: number | null): void;
  transactions(kind?: VodacomTransaction['kind']): VodacomTransaction[];
  /** Sessions issued, and calls refused for a session used before it was active. */
  sessions(): { issued: number; usedBeforeActive: number };
  calls(): Call[];
  /** Takes the whole API down (getSession included) or brings it back: see outage.ts. */
  outage(mode: OutageMode): Promise<void>;
  /** Answers the next matching calls out of time: processed before or after the answer, answered late or 500. */
  late(rule: LateAnswer): void;
  /** How many calls its gateway answered with its system error (an outage's or a late rule's). */
  systemErrors(): number;
  clearLate(): void;
  /** Resolves once every late call has been processed and answered. */
  settled(): Promise<void>;
};

const MARKETS: Readonly<Record<string, { context: string; msisdn: RegExp }>> = {
  TZN: { context: 'vodacomTZN', msisdn: /^255\d{9}$/ },
  DRC: { context: 'vodacomDRC', msisdn: /^243\d{9}$/ },
};
const WHOLE_CURRENCIES = new Set(['TZS']);
/** The HTTP status the documentation gives each code. */
const HTTP_STATUS: Readonly<Record<string, number>> = {
  'INS-0': 200,
  'INS-1': 500,
  'INS-2': 401,
  'INS-4': 401,
  'INS-5': 401,
  'INS-6': 401,
  'INS-9': 408,
  'INS-10': 409,
  'INS-16': 503,
  'INS-2006': 422,
};
const DESCRIPTIONS: Readonly<Record<string, string>> = {
  'INS-0': 'Request processed successfully',
  'INS-2': 'Invalid API Key',
  'INS-5': 'Transaction cancelled by customer',
  'INS-6': 'Transaction Failed',
  'INS-9': 'Request timeout',
  'INS-10': 'Duplicate Transaction',
  'INS-13': 'Invalid Shortcode Used',
  'INS-15': 'Invalid Amount Used',
  'INS-17': 'Invalid Transaction Reference. Length Should Be Between 1 and 20.',
  'INS-18': 'Invalid TransactionID Used',
  'INS-19': 'Invalid ThirdPartyReference Used',
  'INS-20': 'Not All Parameters Provided. Please try again.',
  'INS-21': 'Parameter validations failed. Please try again.',
  'INS-26': 'Not authorized',
  'INS-2006': 'Insufficient balance',
  'INS-2051': 'MSISDN invalid.',
};
const FIELDS = {
  c2b: [
    'input_Amount',
    'input_Country',
    'input_Currency',
    'input_CustomerMSISDN',
    'input_ServiceProviderCode',
    'input_ThirdPartyConversationID',
    'input_TransactionReference',
    'input_PurchasedItemsDesc',
  ],
  b2c: [
    'input_Amount',
    'input_Country',
    'input_Currency',
    'input_CustomerMSISDN',
    'input_ServiceProviderCode',
    'input_ThirdPartyConversationID',
    'input_TransactionReference',
    'input_PaymentItemsDesc',
  ],
  reversal: [
    'input_ReversalAmount',
    'input_Country',
    'input_ServiceProviderCode',
    'input_ThirdPartyConversationID',
    'input_TransactionID',
  ],
  query: ['input_QueryReference', 'input_ServiceProviderCode', 'input_ThirdPartyConversationID', 'input_Country'],
  name: [
    'input_CustomerMSISDN',
    'input_Country',
    'input_ServiceProviderCode',
    'input_ThirdPartyConversationID',
    'input_KycQueryType',
  ],
} as const;

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
/** An answer as the OpenAPI gives it: the code, its description and HTTP status, and the fields of the API. */
const reply = (code: string, fields: Record<string, string> = {}, status?: number) =>
  Response.json(
    { output_ResponseCode: code, output_ResponseDesc: DESCRIPTIONS[code] ?? 'Request failed', ...fields },
    { status: status ?? HTTP_STATUS[code] ?? 400 },
  );

export async function startVodacomSimulator(options: VodacomSimulatorOptions): Promise<VodacomSimulator> {
  const { publicKey, privateKey } = simulatorKeyPair();
  const root = `/${options.environment ?? 'sandbox'}`;
  const sessions = new Map<
    string,
    { market: string; issuedAt: number; endsAt: number; ordinal: number; used: boolean }
  >();
  const counters = { issued: 0, usedBeforeActive: 0 };
  let sessionRequestsFail = false;
  let b2cBalance: number | null = null;
  const subscribers = new Map<string, Partial<VodacomSubscriber>>();
  const transactions: VodacomTransaction[] = [];
  const log: Call[] = [];
  const { later, stop } = createScheduler();
  let release: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    release = resolve;
  });
  const behaviourOf = (msisdn: string): VodacomSubscriber => ({
    outcome: 'pays',
    answer: 'on-time',
    registered: true,
    ...subscribers.get(msisdn),
  });

  /** The Origin header every call carries: present, and the registered one when the application names one. */
  function originProblem(request: Request): Response | null {
    const origin = request.headers.get('origin');
    if (!origin) return reply('INS-20');
    return options.origin && options.origin !== '*' && origin !== options.origin ? reply('INS-26') : null;
  }

  const bearerOf = (request: Request) =>
    decryptPkcs1(privateKey, /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1] ?? '');

  function getSession(request: Request, market: string): Response {
    const problem = originProblem(request);
    if (problem) return problem;
    if (bearerOf(request) !== options.apiKey) return reply('INS-2');
    if (sessionRequestsFail) return reply('INS-1');
    const id = hex(16);
    counters.issued += 1;
    sessions.set(id, {
      market,
      issuedAt: Date.now(),
      endsAt: Date.now() + (options.sessionLifetimeMs ?? 3_600_000),
      ordinal: counters.issued,
      used: false,
    });
    return reply('INS-0', { output_SessionID: id });
  }

  /** Null when the call carries a usable session of its market (and its Origin); else the refusal. */
  function sessionProblem(
    request: Request,
    market: string,
    session: { market: string; issuedAt: number; endsAt: number } | undefined,
  ): Response | null {
    const problem = originProblem(request);
    if (problem) return problem;
    const refused = (why: string) => reply('INS-2', options.plainSessionRefusals ? {} : { output_ResponseDesc: why });
    if (!session || session.market !== market) return refused('Invalid Session ID');
    if (Date.now() < session.issuedAt + (options.activationMs ?? 0)) {
      counters.usedBeforeActive += 1;
      return refused('Session ID not yet active');
    }
    return Date.now() > session.endsAt ? refused('Session ID expired') : null;
  }

  /** The code of the first rule a request's fields break (missing, of another market or provider, malformed), or null. */
  function fieldProblem(market: string, fields: Record<string, unknown>, required: readonly string[]): string | null {
    if (required.some((name) => typeof fields[name] !== 'string' || fields[name] === '')) return 'INS-20';
    if (fields.input_Country !== market) return 'INS-21';
    if (fields.input_ServiceProviderCode !== options.serviceProviderCode) return 'INS-13';
    const currency = fields.input_Currency as string | undefined;
    if (currency !== undefined && !(options.markets[market] ?? []).includes(currency)) return 'INS-21';
    for (const name of ['input_Amount', 'input_ReversalAmount'] as const) {
      const amount = fields[name] as string | undefined;
      if (amount === undefined) continue;
      const whole = currency !== undefined && WHOLE_CURRENCIES.has(currency);
      if (!(whole ? /^\d+$/ : /^\d+(\.\d{1,2})?$/).test(amount) || !(Number(amount) > 0)) return 'INS-15';
    }
    const msisdn = fields.input_CustomerMSISDN as string | undefined;
    if (msisdn !== undefined && !MARKETS[market]!.msisdn.test(msisdn)) return 'INS-2051';
    const reference = fields.input_TransactionReference as string | undefined;
    if (reference !== undefined && !/^[A-Za-z0-9]{1,20}$/.test(reference)) return 'INS-17';
    return /^[A-Za-z0-9-]{1,40}$/.test(fields.input_ThirdPartyConversationID as string) ? null : 'INS-19';
  }

  const answerOf = (transaction: VodacomTransaction, thirdPartyConversationId: string) => ({
    output_TransactionID: transaction.transactionId,
    output_ConversationID: transaction.conversationId,
    output_ThirdPartyConversationID: thirdPartyConversationId,
  });

  function newTransaction(
    kind: VodacomTransaction['kind'],
    market: string,
    fields: Record<string, string>,
    request: Request,
  ): VodacomTransaction {
    const transaction: VodacomTransaction = {
      kind,
      market,
      currency: fields.input_Currency ?? '',
      msisdn: fields.input_CustomerMSISDN ?? '',
      amount: fields.input_Amount ?? fields.input_ReversalAmount ?? '',
      transactionId: hex(6).toUpperCase(),
      conversationId: hex(16),
      thirdPartyConversationId: fields.input_ThirdPartyConversationID!,
      transactionReference: fields.input_TransactionReference ?? '',
      description: fields.input_PurchasedItemsDesc ?? fields.input_PaymentItemsDesc ?? '',
      status: 'Pending',
      submissions: 1,
      reversedBy: null,
      originalTransactionId: fields.input_TransactionID ?? null,
      origin: request.headers.get('origin') ?? '',
    };
    transactions.push(transaction);
    return transaction;
  }

  /** A request's repeat (the same ThirdPartyConversationID in its market): counted, and answered INS-10. */
  function duplicate(market: string, fields: Record<string, string>): Response | null {
    const existing = transactions.find(
      (known) => known.market === market && known.thirdPartyConversationId === fields.input_ThirdPartyConversationID,
    );
    if (!existing) return null;
    existing.submissions += 1;
    return reply('INS-10', { output_ThirdPartyConversationID: fields.input_ThirdPartyConversationID! });
  }

  /** Resolves after `ms`, or never once the simulator stopped (race it with `stopped`). */
  const after = (ms: number) => new Promise<void>((resolve) => later(ms, resolve));
  /** Held until the simulator stops: an answer that never arrives (the client gives up first). */
  const lost = async () => {
    await Promise.race([stopped, after(120_000)]);
    return reply('INS-1');
  };

  /** The customer payment: the subscriber is prompted; the answer waits for the PIN, up to the PIN window. */
  async function c2b(market: string, fields: Record<string, string>, request: Request): Promise<Response> {
    const repeated = duplicate(market, fields);
    if (repeated) return repeated;
    const behaviour = behaviourOf(fields.input_CustomerMSISDN!);
    if (!behaviour.registered) return reply('INS-2051');
    const transaction = newTransaction('c2b', market, fields, request);
    const decideAfter = behaviour.decideAfterMs ?? options.decisionDelayMs ?? 300;
    const window = options.pinWindowMs ?? 60_000;
    const decided = new Promise<void>((resolve) =>
      later(decideAfter, () => {
        if (behaviour.outcome === 'ignores') return;
        if (transaction.status === 'Pending')
          transaction.status = ({ pays: 'Completed', cancels: 'Cancelled', insufficient: 'Failed' } as const)[
            behaviour.outcome
          ];
        resolve();
      }),
    );
    later(window, () => {
      if (behaviour.outcome === 'ignores') transaction.status = 'Expired';
    });
    if (behaviour.answer === 'lost') return await lost();
    const inTime = await Promise.race([
      decided.then(() => true),
      after(window).then(() => false),
      stopped.then(() => false),
    ]);
    if (!inTime || transaction.status === 'Pending')
      return reply('INS-9', { output_ThirdPartyConversationID: transaction.thirdPartyConversationId });
    const code = ({ Completed: 'INS-0', Cancelled: 'INS-5', Failed: 'INS-2006', Expired: 'INS-9' } as const)[
      transaction.status
    ];
    return reply(code, answerOf(transaction, transaction.thirdPartyConversationId), code === 'INS-0' ? 201 : undefined);
  }

  async function b2c(market: string, fields: Record<string, string>, request: Request): Promise<Response> {
    const repeated = duplicate(market, fields);
    if (repeated) return repeated;
    const behaviour = behaviourOf(fields.input_CustomerMSISDN!);
    if (!behaviour.registered) return reply('INS-2051');
    if (b2cBalance !== null && Number(fields.input_Amount) > b2cBalance) return reply('INS-2006');
    if (b2cBalance !== null) b2cBalance -= Number(fields.input_Amount);
    const transaction = newTransaction('b2c', market, fields, request);
    transaction.status = 'Completed';
    if (behaviour.answer === 'lost') return await lost();
    return reply('INS-0', answerOf(transaction, transaction.thirdPartyConversationId), 201);
  }

  function reversal(market: string, fields: Record<string, string>, request: Request): Response {
    const repeated = duplicate(market, fields);
    if (repeated) return repeated;
    const original = transactions.find(
      (known) =>
        known.market === market &&
        known.kind !== 'reversal' &&
        known.transactionId === fields.input_TransactionID &&
        known.status === 'Completed',
    );
    if (!original) return reply('INS-18');
    if (Number(fields.input_ReversalAmount) > Number(original.amount)) return reply('INS-15');
    if (original.reversedBy !== null) return reply('INS-6');
    const transaction = newTransaction(
      'reversal',
      market,
      { ...fields, input_Currency: original.currency, input_CustomerMSISDN: original.msisdn },
      request,
    );
    transaction.status = 'Completed';
    original.reversedBy = transaction.transactionId;
    return reply('INS-0', answerOf(transaction, transaction.thirdPartyConversationId), 201);
  }

  function queryStatus(market: string, fields: Record<string, string>): Response {
    const reference = fields.input_QueryReference;
    const found = transactions.find(
      (known) =>
        known.market === market &&
        (known.transactionId === reference ||
          known.conversationId === reference ||
          known.thirdPartyConversationId === reference),
    );
    return reply('INS-0', {
      output_ResponseTransactionStatus: found?.status ?? 'N/A',
      output_ConversationID: hex(16),
      output_ThirdPartyConversationID: fields.input_ThirdPartyConversationID!,
      ...(found ? { output_OriginalTransactionID: found.transactionId } : {}),
    });
  }

  function beneficiaryName(fields: Record<string, string>): Response {
    if (fields.input_KycQueryType !== 'Name') return reply('INS-21');
    const behaviour = behaviourOf(fields.input_CustomerMSISDN!);
    if (!behaviour.registered) return reply('INS-2051');
    const name = behaviour.name ?? { first: 'Sand', last: 'Box' };
    return reply('INS-0', {
      output_CustomerFirstName: name.first,
      output_CustomerLastName: name.last,
      output_ConversationID: hex(16),
      output_ThirdPartyConversationID: fields.input_ThirdPartyConversationID!,
    });
  }

  /** The fields of a request: the JSON body of a POST or PUT, the query of a GET; null when they are not text fields. */
  async function fieldsOf(request: Request): Promise<Record<string, string> | null> {
    if (request.method === 'GET') return Object.fromEntries(new URL(request.url).searchParams);
    try {
      const body = (await request.json()) as unknown;
      if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
      return Object.values(body).every((value) => typeof value === 'string') ? (body as Record<string, string>) : null;
    } catch {
      return null;
    }
  }

  const APIS: Record<
    string,
    {
      method: string;
      fields: readonly string[];
      handle: (market: string, fields: Record<string, string>, request: Request) => Response | Promise<Response>;
    }
  > = {
    'c2bPayment/singleStage': { method: 'POST', fields: FIELDS.c2b, handle: c2b },
    b2cPayment: { method: 'POST', fields: FIELDS.b2c, handle: b2c },
    reversal: { method: 'PUT', fields: FIELDS.reversal, handle: reversal },
    queryTransactionStatus: {
      method: 'GET',
      fields: FIELDS.query,
      handle: (market, fields) => queryStatus(market, fields),
    },
    queryBeneficiaryName: { method: 'GET', fields: FIELDS.name, handle: (_market, fields) => beneficiaryName(fields) },
  };

  async function route(
    request: Request,
  ): Promise<{ api: string; market: string; response: Response; session?: number }> {
    const path = new URL(request.url).pathname.replace(/\/+$/, '');
    const match = new RegExp(`^${root}/ipg/v2/([A-Za-z]+)/(.+)$`).exec(path);
    const market = Object.keys(MARKETS).find((code) => MARKETS[code]!.context === match?.[1] && options.markets[code]);
    const api = match?.[2] ?? 'unknown';
    if (!match || !market) return { api, market: '', response: reply('INS-998', {}, 404) };
    if (api === 'getSession')
      return {
        api,
        market,
        response: request.method === 'GET' ? getSession(request, market) : reply('INS-22', {}, 405),
      };
    const known = APIS[api];
    if (!known) return { api, market, response: reply('INS-22', {}, 404) };
    if (request.method !== known.method) return { api, market, response: reply('INS-22', {}, 405) };
    const session = sessions.get(bearerOf(request) ?? '');
    const refused = sessionProblem(request, market, session);
    if (refused) return { api, market, response: refused, session: session?.ordinal };
    session!.used = true;
    const fields = await fieldsOf(request);
    const problem = fields === null ? 'INS-21' : fieldProblem(market, fields, known.fields);
    if (problem !== null) return { api, market, response: reply(problem), session: session?.ordinal };
    return { api, market, response: await known.handle(market, fields!, request), session: session?.ordinal };
  }

  let systemErrors = 0;
  const server = serveWithOutages({
    port: options.port,
    idleTimeout: 0,
    // The OpenAPI's internal error (INS-1, HTTP 500).
    systemError: () => {
      systemErrors += 1;
      return reply('INS-1', { output_ResponseDesc: 'Internal Error' });
    },
    async handle(request) {
      const { api, market, response, session } = await route(request);
      const code = response.headers.get('content-type')?.includes('json')
        ? ((await response.clone().json()) as { output_ResponseCode?: string }).output_ResponseCode
        : undefined;
      log.push({
        api,
        market,
        method: request.method,
        status: response.status,
        code,
        at: Date.now(),
        ...(session === undefined ? {} : { session }),
      });
      return response;
    },
  });

  return {
    url: `http://${SIMULATOR_HOST}:${server.port}${root}`,
    publicKey,
    async stop() {
      release();
      await stop();
      await server.stop();
    },
    outage: (mode) => server.set(mode),
    late: (rule) => server.late(rule),
    systemErrors: () => systemErrors,
    clearLate: () => server.clearLate(),
    settled: () => server.settled(),
    subscriber(msisdn, behaviour) {
      subscribers.set(msisdn, { ...subscribers.get(msisdn), ...behaviour });
    },
    expireSessions() {
      for (const session of sessions.values()) session.endsAt = 0;
    },
    revokeSessionsInUse() {
      const inUse = [...sessions.entries()].filter(([, session]) => session.used);
      for (const [id] of inUse) sessions.delete(id);
      return inUse.length;
    },
    revokeSessions() {
      const revoked = sessions.size;
      sessions.clear();
      return revoked;
    },
    failSessionRequests(failing) {
      sessionRequestsFail = failing;
    },
    setB2cBalance(amount) {
      b2cBalance = amount;
    },
    transactions: (kind) =>
      transactions.filter((known) => kind === undefined || known.kind === kind).map((known) => ({ ...known })),
    sessions: () => ({ ...counters }),
    calls: () => [...log],
  };
}
