/**
 * What the connector suites (test/connectors/*.test.ts) share, none of it a database or a worker:
 * settings read from variables as the configuration reads them, a records port that refuses every
 * read (a translator keeps no records), a callback context that records what it wakes, the
 * connector's callback routes served on loopback for a simulator to call, a wiretap that shows what
 * the operator received, and the prompts and payouts the core would hand a connector.
 */
import { isDeepStrictEqual } from 'node:util';
import * as v from 'valibot';
import { asId } from '../../src/domain/ids';
import { networkByName, type Network } from '../../src/domain/networks';
import {
  CallbackRefusal,
  type CallbackContext,
  type CallbackRoute,
  type WakeTarget,
} from '../../src/network/callback-routes';
import type {
  ConnectorDeps,
  ConnectorUnit,
  NetworkOperation,
  NetworkRecords,
  PaymentPrompt,
  Payout,
  Recorded,
  TakenPrompt,
} from '../../src/network/adapter';
import { configureOperatorCalls, operatorTimeoutMs } from '../../src/network/operator-http';

/** A unit's settings from environment variables, read and checked as the configuration reads them; a problem throws. */
export function settingsOf<Settings>(unit: ConnectorUnit<string, Settings>, env: Record<string, string>): Settings {
  const values = v.parse(v.object(unit.variables), env);
  const problems: string[] = [];
  const settings = unit.readSettings(values, problems);
  if (problems.length > 0) throw new Error(`${unit.name} settings: ${problems.join('; ')}`);
  return settings;
}

/** A records port that throws on any use: a connector built with it and still working keeps no records. */
export const translatorKeepsNoRecords = new Proxy(
  {},
  {
    get(_target, property) {
      throw new Error(`a translator keeps no records, yet records.${String(property)} was read`);
    },
  },
) as NetworkRecords;

/** What a connector is built with, `records` the port it is handed. */
export const depsOf = (callbackBaseUrl: string, records: NetworkRecords = translatorKeepsNoRecords): ConnectorDeps => ({
  records,
  callbackBaseUrl,
  statusPollSeconds: 1,
  inFlightWindowSeconds: 120,
});

export const networkNamed = (name: string): Network => {
  const network = networkByName(name);
  if (!network) throw new Error(`no network ${name}`);
  return network;
};

let sequence = 0;
/** A number no other prompt or payout of this process has used, for references. */
export const nextSequence = (): number => {
  sequence += 1;
  return sequence;
};

/** A prompt as the core hands it to a connector, with a fresh reference unless one is given. */
export function promptOf(
  fields: Pick<PaymentPrompt, 'phoneNumber' | 'amount' | 'currency'> & {
    network: string;
    promptReference?: string;
    reference?: string;
    recorded?: Recorded;
  },
): PaymentPrompt {
  const request = nextSequence();
  return {
    requestId: asId('CollectionRequest', request),
    attempt: 1,
    phoneNumber: fields.phoneNumber,
    amount: fields.amount,
    currency: fields.currency,
    reference: fields.reference ?? `Invoice ${request}`,
    promptReference: fields.promptReference ?? `req-${request}-1`,
    network: networkNamed(fields.network),
    workflowId: `collection-request-${request}`,
    ...(fields.recorded ? { recorded: fields.recorded } : {}),
  };
}

/** The prompt as `promptStatus` is asked about it, once the operator took it under `operatorReference`. */
export const takenPrompt = (prompt: PaymentPrompt, operatorReference: string): TakenPrompt => ({
  ...prompt,
  operatorReference,
});

/** A payout (or a reversal, with the collection's transaction id) as the core hands it to a connector. */
export function payoutOf(
  fields: Pick<Payout, 'phoneNumber' | 'amount' | 'currency'> & {
    network: string;
    kind?: Payout['kind'];
    reference?: string;
    originalTransactionId?: string;
    recorded?: Recorded;
  },
): Payout {
  const payment = nextSequence();
  const kind = fields.kind ?? 'payment';
  return {
    reference: fields.reference ?? `${kind}-${payment}`,
    kind,
    phoneNumber: fields.phoneNumber,
    amount: fields.amount,
    currency: fields.currency,
    network: networkNamed(fields.network),
    workflowId: `${kind}-${payment}`,
    ...(fields.originalTransactionId ? { originalTransactionId: fields.originalTransactionId } : {}),
    ...(fields.recorded ? { recorded: fields.recorded } : {}),
  };
}

/** What the core's journal would hand over: `operatorReference` recorded just now (or `at`). */
export const recordedAs = (operatorReference: string | null, at = new Date()): Recorded => ({ operatorReference, at });

/** An operation as the core's records hold it, for a callback to find. */
export function operationOf(
  fields: Pick<NetworkOperation, 'network' | 'reference' | 'operatorReference'> & {
    kind?: NetworkOperation['kind'];
    workflowId?: string;
  },
): NetworkOperation {
  return {
    id: nextSequence(),
    network: fields.network,
    kind: fields.kind ?? 'prompt',
    reference: fields.reference,
    operatorReference: fields.operatorReference,
    workflowId: fields.workflowId ?? `workflow-of-${fields.reference}`,
    subject: fields.reference,
    phoneNumber: null,
    amount: null,
    remoteTransactionId: null,
    hint: null,
    result: null,
    created: new Date(),
  };
}

/** One call of the context's `wake`: the operation woken, what the operator said, and whether it is a result. */
export type Woken = { operation: WakeTarget; said: unknown; asResult: boolean };
/**
 * The wakes whose operator said `said` (compared whole): what one callback of a test did, whatever other callbacks of
 * the simulator arrive meanwhile.
 */
export const wokenBy = (woken: readonly Woken[], said: unknown): Woken[] =>
  woken.filter((each) => isDeepStrictEqual(each.said, said));

/** A payment a callback reported for confirmation. */
export type Reported = Parameters<CallbackContext<unknown>['reportForConfirmation']>[0];

/**
 * A callback context as the API builds it, with `operations` as the core's records of which operation an operator's
 * reference names (the only read a translator's callback makes: any other read of `records` throws unless `records`
 * is given), and `woken` and `reported` recording what the callbacks did.
 */
export function callbackContextOf<Settings>(
  settings: Settings | null,
  options: {
    operations?: NetworkOperation[];
    records?: NetworkRecords;
    onWake?: (woken: Woken) => void;
  } = {},
): { context: CallbackContext<Settings>; woken: Woken[]; reported: Reported[] } {
  const operations = options.operations ?? [];
  const woken: Woken[] = [];
  const reported: Reported[] = [];
  const lookups: Pick<NetworkRecords, 'findOperationByOperatorReference'> = {
    findOperationByOperatorReference: async (network, operatorReference) => {
      const networks: readonly string[] = typeof network === 'string' ? [network] : network;
      return operations.find(
        (operation) => operation.operatorReference === operatorReference && networks.includes(operation.network),
      );
    },
  };
  const records =
    options.records ??
    (new Proxy(lookups, {
      get(target, property) {
        if (property === 'findOperationByOperatorReference') return target.findOperationByOperatorReference;
        throw new Error(`a callback reads only which operation a reference names, yet records.${String(property)}`);
      },
    }) as NetworkRecords);
  const context: CallbackContext<Settings> = {
    records,
    settings,
    sandbox: false,
    publicBaseUrl: undefined,
    async wake(operation, said, asResult = false) {
      const call = { operation, said, asResult };
      woken.push(call);
      options.onWake?.(call);
    },
    async reportForConfirmation(payment) {
      reported.push(payment);
    },
    merchants: {
      requestOfBillReference: async () => undefined,
      verificationSettingsOf: async () => undefined,
    },
    askVerification: async () => {
      throw new Error('no merchant is asked in these tests');
    },
  };
  return { context, woken, reported };
}

/** The path parameters of `pattern` (`/network/momo/:referenceId`) in `path`, or null when it does not match. */
function paramsOf(pattern: string, path: string): Record<string, string> | null {
  const names: string[] = [];
  const expression = new RegExp(
    `^${pattern.replace(/:([A-Za-z]+)/g, (_all, name: string) => {
      names.push(name);
      return '([^/]+)';
    })}$`,
  );
  const match = expression.exec(path);
  if (match === null) return null;
  return Object.fromEntries(names.map((name, index) => [name, decodeURIComponent(match[index + 1]!)]));
}

/** One callback the served routes received: what the operator sent (`body`) and what it was answered. */
export type CallbackDelivery = { method: string; path: string; body: unknown; status: number; answer: unknown };

/**
 * A connector's callback routes served on loopback, as the API mounts them (src/api/operator-callbacks.ts): the body
 * seen as it arrived (`received`), checked against the route's schema (400, or handed over as `{valid, ...}` when the
 * route is `checked`), then `handle` with `context`; a CallbackRefusal answers its status. `deliveries` lists each call.
 */
export function serveCallbacks<Settings>(
  routes: readonly CallbackRoute<NonNullable<Settings>>[],
  context: CallbackContext<Settings>,
) {
  const deliveries: CallbackDelivery[] = [];
  async function answer(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname.replace(/\/+$/, '');
    for (const route of routes) {
      const params = route.method === request.method ? paramsOf(route.path, path) : null;
      if (params === null) continue;
      if (route.params && !v.safeParse(route.params, params).success)
        return Response.json({ detail: 'Not found.' }, { status: 404 });
      const rawBody = new Uint8Array(await request.arrayBuffer());
      let arrived: unknown;
      try {
        arrived = JSON.parse(new TextDecoder().decode(rawBody));
      } catch {
        return Response.json({ detail: 'The body is not JSON.' }, { status: 400 });
      }
      route.received?.(arrived, request);
      const checked = v.safeParse(route.body, arrived);
      if (!checked.success && !route.checked) return Response.json({ detail: 'Invalid body.' }, { status: 400 });
      const body = route.checked
        ? checked.success
          ? { valid: true, body: checked.output }
          : { valid: false, errors: v.flatten(checked.issues).nested ?? {} }
        : checked.output;
      try {
        const handled = await route.handle(
          { body, params, request, rawBody },
          context as CallbackContext<NonNullable<Settings>>,
        );
        return Response.json(handled);
      } catch (error) {
        if (error instanceof CallbackRefusal) return Response.json({ detail: error.message }, { status: error.status });
        throw error;
      }
    }
    return Response.json({ detail: 'Not found.' }, { status: 404 });
  }
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const method = request.method;
      const path = new URL(request.url).pathname;
      const text = await request.clone().text();
      const response = await answer(request);
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // Kept as text.
      }
      deliveries.push({ method, path, body, status: response.status, answer: await response.clone().json() });
      return response;
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    deliveries,
    /** Posts `body` (JSON) to `path` with `headers`, as an operator would; the answer's status and body. */
    async post(path: string, body: unknown, headers: Record<string, string> = {}, method = 'POST') {
      const response = await fetch(`http://127.0.0.1:${server.port}${path}`, {
        method,
        headers: { 'Content-Type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as unknown };
    },
    stop: () => server.stop(true),
  };
}

/** One request as the operator received it. */
export type Tapped = {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  body: string;
  json: unknown;
};

/**
 * A loopback proxy in front of an operator's simulator that keeps every request as it passed (method, path, query,
 * headers, body) and hands it on unchanged: `url` stands for the simulator's `target` (its path included).
 */
export function startWiretap(target: string) {
  const upstream = new URL(target);
  const seen: Tapped[] = [];
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const body = request.method === 'GET' || request.method === 'HEAD' ? '' : await request.text();
      let json: unknown;
      try {
        json = body === '' ? undefined : JSON.parse(body);
      } catch {
        json = undefined;
      }
      seen.push({
        method: request.method,
        path: url.pathname,
        query: url.searchParams,
        headers: Object.fromEntries(request.headers),
        body,
        json,
      });
      const headers = new Headers(request.headers);
      headers.delete('host');
      headers.delete('content-length');
      const answer = await fetch(`${upstream.origin}${url.pathname}${url.search}`, {
        method: request.method,
        headers,
        body: body === '' ? undefined : body,
        redirect: 'manual',
      });
      const answerHeaders = new Headers(answer.headers);
      answerHeaders.delete('content-encoding');
      answerHeaders.delete('content-length');
      return new Response(await answer.arrayBuffer(), { status: answer.status, headers: answerHeaders });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}${upstream.pathname.replace(/\/+$/, '')}`,
    /** The requests seen, oldest first; `path` filters them by path (a string ends it, a pattern tests it). */
    seen(path?: string | RegExp): Tapped[] {
      return seen.filter(
        (each) => path === undefined || (typeof path === 'string' ? each.path.endsWith(path) : path.test(each.path)),
      );
    },
    stop: () => server.stop(true),
  };
}

/** Runs `action` with OPERATOR_TIMEOUT_MS set to `timeoutMs`, then sets it back. */
export async function withOperatorTimeout<T>(timeoutMs: number, action: () => Promise<T>): Promise<T> {
  const before = operatorTimeoutMs();
  configureOperatorCalls({ timeoutMs });
  try {
    return await action();
  } finally {
    configureOperatorCalls({ timeoutMs: before });
  }
}

/** Polls `probe` until it gives a value (not undefined), every 10 ms, for at most `timeoutMs`. */
export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 3000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(10);
  }
}

/**
 * The outcome of a call: its value, or `thrown` with the error's message (an operation in doubt, to the core). A read
 * of the records port is no such outcome: it fails the test.
 */
export async function outcomeOf<T>(call: () => Promise<T>): Promise<T | { thrown: string }> {
  try {
    return await call();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (message.startsWith('a translator keeps no records')) throw error;
    return { thrown: message };
  }
}
