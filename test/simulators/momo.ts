/**
 * A contract simulator of the MTN MoMo Open API (collection and disbursement, v1_0) on loopback,
 * written from MTN's public documentation (momodeveloper.mtn.com: request to pay and its status,
 * transfers and their status, account holder look-ups, tokens per product, X-Reference-Id as a
 * version-4 UUID, RESOURCE_ALREADY_EXIST for a repeated one, the callback sent once to
 * X-Callback-Url). It plays the operator for the network tests and `npm run start:networks`:
 * parties are scripted per number, and its misbehaviour on request (a callback that lies, none,
 * a 500 after recording, a slow answer, expired tokens). It serves several target environments
 * at once (MoMo's markets), each with its own API users, keys and currency: a token belongs to the
 * market whose credentials fetched it and works only with that market's X-Target-Environment.
 */
import { SIMULATOR_HOST, serveWithOutages, type LateAnswer, type OutageMode } from './outage';
import { createScheduler } from './scheduler';

export type MomoProductCredentials = { subscriptionKey: string; apiUser: string; apiKey: string };
export type MomoPartyBehaviour = {
  outcome: 'SUCCESSFUL' | 'FAILED' | 'PENDING';
  reason?: string;
  callback: 'truthful' | 'none' | 'lie' | 'twice';
  decideAfterMs?: number;
  active?: boolean;
  name?: { given_name: string; family_name: string };
};
export type FaultMode = '500-after-recording' | '500-before-recording' | 'slow';
/** One market the simulator serves besides the first (the options' own credentials). */
export type MomoSimulatorMarket = {
  targetEnvironment: string;
  currency: string;
  collection: MomoProductCredentials;
  disbursement: MomoProductCredentials;
};
export type MomoSimulatorOptions = {
  collection: MomoProductCredentials;
  disbursement: MomoProductCredentials;
  targetEnvironment?: string;
  currency?: string;
  markets?: MomoSimulatorMarket[];
  port?: number;
  decisionDelayMs?: number;
  callbackDelayMs?: number;
  tokenLifetimeSeconds?: number;
  slowMs?: number;
};
type Api = 'token' | 'requesttopay' | 'requesttopay-status' | 'transfer' | 'transfer-status' | 'accountholder';
export type MomoTransaction = {
  targetEnvironment: string;
  referenceId: string;
  amount: string;
  currency: string;
  externalId: string;
  payer: string;
  payee: string;
  callbackUrl: string | null;
  status: string;
  reason: string | null;
  financialTransactionId: string | null;
  submissions: number;
  payerMessage: string;
  payeeNote: string;
};
export type MomoSimulator = {
  url: string;
  stop(): Promise<void>;
  party(msisdn: string, behaviour: Partial<MomoPartyBehaviour>): void;
  failNext(api: Api, mode: FaultMode): void;
  /** The same fault on every call of `api` until cleared (null): a front that refuses new transactions while its status queries still answer. */
  failAlways(api: Api, mode: FaultMode | null): void;
  expireTokens(): void;
  requestsToPay(): MomoTransaction[];
  transfers(): MomoTransaction[];
  calls(): MomoCall[];
  /** Takes the whole API down (the token endpoints included) or brings it back: see outage.ts. */
  outage(mode: OutageMode): Promise<void>;
  /** Answers the next matching calls out of time: processed before or after the answer, answered late or 500. */
  late(rule: LateAnswer): void;
  /** How many calls its gateway answered with its system error (an outage's or a late rule's). */
  systemErrors(): number;
  clearLate(): void;
  /** Resolves once every late call has been processed and answered. */
  settled(): Promise<void>;
};
/** A call as the simulator saw it: which market it named and which subscription key it carried. */
export type MomoCall = {
  api: string;
  method: string;
  status: number;
  at: number;
  targetEnvironment: string | null;
  subscriptionKey: string | null;
};

type Product = 'collection' | 'disbursement';
type Kind = {
  path: 'requesttopay' | 'transfer';
  product: Product;
  party: 'payer' | 'payee';
  api: Api;
  statusApi: Api;
  defaultReason: string;
};
const KINDS: Record<'requesttopay' | 'transfer', Kind> = {
  requesttopay: {
    path: 'requesttopay',
    product: 'collection',
    party: 'payer',
    api: 'requesttopay',
    statusApi: 'requesttopay-status',
    defaultReason: 'APPROVAL_REJECTED',
  },
  transfer: {
    path: 'transfer',
    product: 'disbursement',
    party: 'payee',
    api: 'transfer',
    statusApi: 'transfer-status',
    defaultReason: 'PAYEE_NOT_FOUND',
  },
};
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const MAX_BODY_BYTES = 1_048_576;

const error = (status: number, code: string, message: string) => Response.json({ code, message }, { status });

export async function startMomoSimulator(options: MomoSimulatorOptions): Promise<MomoSimulator> {
  const environment = options.targetEnvironment ?? 'sandbox';
  const markets = new Map<string, { currency: string; credentials: Record<Product, MomoProductCredentials> }>([
    [
      environment,
      {
        currency: options.currency ?? (environment === 'sandbox' ? 'EUR' : 'UGX'),
        credentials: { collection: options.collection, disbursement: options.disbursement },
      },
    ],
    ...(options.markets ?? []).map(
      (market) =>
        [
          market.targetEnvironment,
          {
            currency: market.currency,
            credentials: { collection: market.collection, disbursement: market.disbursement },
          },
        ] as const,
    ),
  ]);
  const tokens = new Map<string, { product: Product; environment: string; expiresAt: number }>();
  const parties = new Map<string, Partial<MomoPartyBehaviour>>();
  const faults = new Map<Api, FaultMode>();
  const standing = new Map<Api, FaultMode>();
  const transactions: Record<'requesttopay' | 'transfer', Map<string, MomoTransaction>> = {
    requesttopay: new Map(),
    transfer: new Map(),
  };
  const log: MomoCall[] = [];
  const { later, track, stop } = createScheduler();

  const behaviourOf = (msisdn: string): MomoPartyBehaviour => ({
    outcome: 'SUCCESSFUL',
    callback: 'truthful',
    ...parties.get(msisdn),
  });

  /** The transaction as MoMo's status resource shows it. */
  function resource(kind: Kind, transaction: MomoTransaction, status = transaction.status): Record<string, unknown> {
    return {
      amount: transaction.amount,
      currency: transaction.currency,
      ...(status === 'SUCCESSFUL' ? { financialTransactionId: transaction.financialTransactionId } : {}),
      externalId: transaction.externalId,
      [kind.party]: { partyIdType: 'MSISDN', partyId: kind.party === 'payer' ? transaction.payer : transaction.payee },
      payerMessage: transaction.payerMessage,
      payeeNote: transaction.payeeNote,
      status,
      ...(status === 'FAILED' ? { reason: transaction.reason ?? kind.defaultReason } : {}),
    };
  }

  /** MoMo sends the callback once, as a PUT, and never retries it. */
  function callBack(kind: Kind, transaction: MomoTransaction, status: string): void {
    if (transaction.callbackUrl === null) return;
    const body = resource(
      kind,
      {
        ...transaction,
        financialTransactionId: transaction.financialTransactionId ?? String(Math.floor(Math.random() * 1e9)),
      },
      status,
    );
    void track(
      fetch(transaction.callbackUrl, {
        method: 'PUT',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      }).catch(() => null),
    );
  }

  function decide(kind: Kind, transaction: MomoTransaction): void {
    const msisdn = kind.party === 'payer' ? transaction.payer : transaction.payee;
    const behaviour = behaviourOf(msisdn);
    later(behaviour.decideAfterMs ?? options.decisionDelayMs ?? 300, () => {
      if (behaviour.outcome === 'PENDING') return;
      transaction.status = behaviour.outcome;
      if (behaviour.outcome === 'SUCCESSFUL')
        transaction.financialTransactionId = String(1_000_000_000 + Math.floor(Math.random() * 8_999_999_999));
      else transaction.reason = behaviour.reason ?? kind.defaultReason;
      if (behaviour.callback === 'none') return;
      const told =
        behaviour.callback === 'lie'
          ? transaction.status === 'SUCCESSFUL'
            ? 'FAILED'
            : 'SUCCESSFUL'
          : transaction.status;
      later(options.callbackDelayMs ?? 100, () => {
        callBack(kind, transaction, told);
        if (behaviour.callback === 'twice') callBack(kind, transaction, told);
      });
    });
  }

  /**
   * The market a request is for, when it carries that market's subscription key for `product` and a
   * valid token fetched with that market's credentials; otherwise MoMo's refusal.
   */
  function authorized(request: Request, product: Product): { market: string; currency: string } | Response {
    const named = request.headers.get('x-target-environment') ?? '';
    const market = markets.get(named);
    if (market === undefined)
      return error(403, 'NOT_ALLOWED_TARGET_ENVIRONMENT', 'Access to target environment is forbidden.');
    if (request.headers.get('ocp-apim-subscription-key') !== market.credentials[product].subscriptionKey) {
      return Response.json(
        {
          statusCode: 401,
          message:
            'Access denied due to invalid subscription key. Make sure to provide a valid key for an active subscription.',
        },
        { status: 401 },
      );
    }
    const token = /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1];
    const known = token ? tokens.get(token) : undefined;
    if (!known || known.product !== product || known.expiresAt < Date.now())
      return Response.json(
        { statusCode: 401, message: 'Access denied due to invalid or expired token.' },
        { status: 401 },
      );
    if (known.environment !== named)
      return error(403, 'NOT_ALLOWED_TARGET_ENVIRONMENT', 'Access to target environment is forbidden.');
    return { market: named, currency: market.currency };
  }

  async function readJson(request: Request): Promise<Record<string, unknown> | Response> {
    const text = await request.text();
    if (text.length > MAX_BODY_BYTES) return error(413, 'REQUEST_TOO_LARGE', 'Request body is too large.');
    try {
      const body = JSON.parse(text) as unknown;
      if (typeof body === 'object' && body !== null && !Array.isArray(body)) return body as Record<string, unknown>;
    } catch {
      // Falls through to the refusal.
    }
    return error(400, 'INVALID_REQUEST', 'The request body is not valid JSON.');
  }

  /** A token for the market whose subscription key and API user the request carries (the token endpoint names no market). */
  async function token(request: Request, product: Product): Promise<Response> {
    const subscribed = [...markets].filter(
      ([, market]) => request.headers.get('ocp-apim-subscription-key') === market.credentials[product].subscriptionKey,
    );
    if (subscribed.length === 0) {
      return Response.json(
        {
          statusCode: 401,
          message:
            'Access denied due to invalid subscription key. Make sure to provide a valid key for an active subscription.',
        },
        { status: 401 },
      );
    }
    const basic = (credentials: MomoProductCredentials) =>
      `Basic ${Buffer.from(`${credentials.apiUser}:${credentials.apiKey}`).toString('base64')}`;
    const found = subscribed.find(
      ([, market]) => request.headers.get('authorization') === basic(market.credentials[product]),
    );
    if (found === undefined) return Response.json({ error: 'login_failed' }, { status: 401 });
    const value = crypto.randomUUID().replaceAll('-', '') + crypto.randomUUID().replaceAll('-', '');
    const lifetime = options.tokenLifetimeSeconds ?? 3600;
    tokens.set(value, { product, environment: found[0], expiresAt: Date.now() + lifetime * 1000 });
    return Response.json({ access_token: value, token_type: 'access_token', expires_in: lifetime });
  }

  async function create(request: Request, kind: Kind, fault: FaultMode | undefined): Promise<Response> {
    const market = authorized(request, kind.product);
    if (market instanceof Response) return market;
    if (fault === '500-before-recording')
      return error(500, 'INTERNAL_PROCESSING_ERROR', 'An internal error occurred while processing.');
    const referenceId = request.headers.get('x-reference-id') ?? '';
    if (!UUID_V4.test(referenceId))
      return error(400, 'INVALID_REFERENCE_ID', 'X-Reference-Id must be a UUID version 4.');
    const body = await readJson(request);
    if (body instanceof Response) return body;
    const existing = transactions[kind.path].get(referenceId);
    if (existing) {
      existing.submissions += 1;
      return error(409, 'RESOURCE_ALREADY_EXIST', 'Duplicated reference id. Creation of resource failed.');
    }
    const party = body[kind.party] as { partyIdType?: unknown; partyId?: unknown } | undefined;
    const amount = body.amount;
    if (typeof amount !== 'string' || !/^\d+(\.\d{1,2})?$/.test(amount) || Number(amount) <= 0)
      return error(400, 'INVALID_AMOUNT', 'Amount must be a positive number as a string.');
    const currency = market.currency;
    if (body.currency !== currency)
      return error(500, 'INVALID_CURRENCY', `Currency not supported in this environment: ${String(body.currency)}.`);
    if (party?.partyIdType !== 'MSISDN' || typeof party.partyId !== 'string' || !/^\d{8,15}$/.test(party.partyId)) {
      return error(400, 'INVALID_PARTY', `${kind.party} must be {partyIdType: "MSISDN", partyId: digits without +}.`);
    }
    const callbackUrl = request.headers.get('x-callback-url');
    const transaction: MomoTransaction = {
      targetEnvironment: market.market,
      referenceId,
      amount,
      currency,
      externalId: String(body.externalId ?? ''),
      payer: kind.party === 'payer' ? party.partyId : '',
      payee: kind.party === 'payee' ? party.partyId : '',
      callbackUrl,
      status: 'PENDING',
      reason: null,
      financialTransactionId: null,
      submissions: 1,
      payerMessage: String(body.payerMessage ?? ''),
      payeeNote: String(body.payeeNote ?? ''),
    };
    transactions[kind.path].set(referenceId, transaction);
    decide(kind, transaction);
    if (fault === '500-after-recording')
      return error(500, 'INTERNAL_PROCESSING_ERROR', 'An internal error occurred while processing.');
    return new Response(null, { status: 202 });
  }

  function status(request: Request, kind: Kind, referenceId: string): Response {
    const market = authorized(request, kind.product);
    if (market instanceof Response) return market;
    const transaction = transactions[kind.path].get(referenceId);
    if (!transaction || transaction.targetEnvironment !== market.market)
      return error(404, 'RESOURCE_NOT_FOUND', 'Requested resource was not found.');
    return Response.json(resource(kind, transaction));
  }

  function accountHolder(request: Request, msisdn: string, what: string): Response {
    const market = authorized(request, 'collection');
    if (market instanceof Response) return market;
    const behaviour = behaviourOf(msisdn);
    const active = behaviour.active ?? true;
    if (what === 'active') return Response.json({ result: active });
    // An account that is not active has no user information (the documented RESOURCE_NOT_FOUND).
    if (!active) return error(404, 'RESOURCE_NOT_FOUND', 'Requested resource was not found.');
    const name = behaviour.name ?? { given_name: 'Sand', family_name: 'Box' };
    return Response.json({
      sub: '0',
      name: `${name.given_name} ${name.family_name}`,
      ...name,
      birthdate: '1976-08-13',
      locale: 'sv_SE',
      gender: 'MALE',
      updated_at: Math.floor(Date.now() / 1000),
    });
  }

  /** Which API a request is for, and its handler. */
  function route(request: Request): {
    api: string;
    handle: (fault: FaultMode | undefined) => Promise<Response> | Response;
  } {
    const path = new URL(request.url).pathname.replace(/\/+$/, '');
    const method = request.method;
    const tokenMatch = /^\/(collection|disbursement)\/token$/.exec(path);
    if (tokenMatch && method === 'POST')
      return { api: 'token', handle: () => token(request, tokenMatch[1] as Product) };
    for (const kind of Object.values(KINDS)) {
      if (path === `/${kind.product}/v1_0/${kind.path}` && method === 'POST')
        return { api: kind.api, handle: (fault) => create(request, kind, fault) };
      const statusMatch = new RegExp(`^/${kind.product}/v1_0/${kind.path}/([^/]+)$`).exec(path);
      if (statusMatch && method === 'GET')
        return { api: kind.statusApi, handle: () => status(request, kind, decodeURIComponent(statusMatch[1]!)) };
    }
    const holder = /^\/collection\/v1_0\/accountholder\/msisdn\/(\d+)\/(active|basicuserinfo)$/.exec(path);
    if (holder && method === 'GET')
      return { api: 'accountholder', handle: () => accountHolder(request, holder[1]!, holder[2]!) };
    return { api: 'unknown', handle: () => error(404, 'RESOURCE_NOT_FOUND', 'Requested resource was not found.') };
  }

  let systemErrors = 0;
  const server = serveWithOutages({
    port: options.port,
    // MoMo's own answer when the service behind its gateway is down.
    systemError: () => {
      systemErrors += 1;
      return error(503, 'SERVICE_UNAVAILABLE', 'The service is temporarily unavailable, try again later.');
    },
    async handle(request) {
      const { api, handle } = route(request);
      const fault = faults.get(api as Api) ?? standing.get(api as Api);
      faults.delete(api as Api);
      let response = await handle(fault);
      if (fault === 'slow') await Bun.sleep(options.slowMs ?? 6000);
      if (fault === '500-after-recording' && api.endsWith('status'))
        response = error(500, 'INTERNAL_PROCESSING_ERROR', 'An internal error occurred while processing.');
      log.push({
        api,
        method: request.method,
        status: response.status,
        at: Date.now(),
        targetEnvironment: request.headers.get('x-target-environment'),
        subscriptionKey: request.headers.get('ocp-apim-subscription-key'),
      });
      return response;
    },
  });

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
    party(msisdn, behaviour) {
      parties.set(msisdn, { ...parties.get(msisdn), ...behaviour });
    },
    failNext(api, mode) {
      faults.set(api, mode);
    },
    failAlways(api, mode) {
      if (mode === null) standing.delete(api);
      else standing.set(api, mode);
    },
    expireTokens() {
      for (const token of tokens.values()) token.expiresAt = 0;
    },
    requestsToPay: () => [...transactions.requesttopay.values()].map((transaction) => ({ ...transaction })),
    transfers: () => [...transactions.transfer.values()].map((transaction) => ({ ...transaction })),
    calls: () => [...log],
  };
}
