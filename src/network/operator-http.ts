/**
 * Calls to a real operator's API: JSON over HTTP with a hard deadline, answers read as JSON when
 * they are, and an access-token cache shared by every call of a process. Nothing here logs a
 * header or a body: they carry credentials.
 */

export type OperatorAnswer = { status: number; body: unknown };

/**
 * Raised when the operator could not be reached or did not answer in time: the call may or may not have been carried
 * out.
 */
export class OperatorUnreachableError extends Error {}

/** Codes of a connection that was never made: the request never left, so the operator did nothing. */
const NEVER_SENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ConnectionRefused',
  'FailedToOpenSocket',
]);

/**
 * Whether an error (or one of its causes) says the request never reached the operator (a refused connection, no such
 * host).
 */
export function neverSent(error: unknown): boolean {
  for (let cause = error, depth = 0; cause && depth < 5; cause = (cause as { cause?: unknown }).cause, depth += 1) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string' && NEVER_SENT_CODES.has(code)) return true;
  }
  return false;
}

/** Raised for an answer no retry changes (a refused request); the activity turns it into a result, never retries it. */
export class OperatorRefusedError extends Error {
  constructor(
    message: string,
    readonly answer: OperatorAnswer,
  ) {
    super(message);
  }
}

type OperatorRequest = {
  method: 'GET' | 'POST' | 'PUT';
  url: string;
  headers?: Record<string, string>;
  json?: unknown;
  /** How long the answer is waited for; the configured OPERATOR_TIMEOUT_MS when not given. */
  timeoutMs?: number;
};

/** How long an operator's answer is waited for unless a call says otherwise: set once from the configuration. */
const operatorCalls = { timeoutMs: 20_000 };

/** OPERATOR_TIMEOUT_MS: how long an operator's answer is waited for. */
export const operatorTimeoutMs = (): number => operatorCalls.timeoutMs;

/** Takes OPERATOR_TIMEOUT_MS from the configuration (registry.ts `createConnectors`, once per process). */
export function configureOperatorCalls(settings: { timeoutMs: number }): void {
  operatorCalls.timeoutMs = settings.timeoutMs;
}

/** One HTTP exchange with the operator; the body parsed as JSON when it is JSON, else its text. */
export async function callOperator(request: OperatorRequest): Promise<OperatorAnswer> {
  let response: Response;
  try {
    response = await fetch(request.url, {
      method: request.method,
      headers: {
        Accept: 'application/json',
        ...(request.json === undefined ? {} : { 'Content-Type': 'application/json' }),
        ...request.headers,
      },
      body: request.json === undefined ? undefined : JSON.stringify(request.json),
      signal: AbortSignal.timeout(request.timeoutMs ?? operatorCalls.timeoutMs),
      redirect: 'manual',
    });
  } catch (cause) {
    throw new OperatorUnreachableError(`${request.method} ${new URL(request.url).pathname} did not answer`, { cause });
  }
  const text = await response.text().catch(() => '');
  let body: unknown = text;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON: the caller sees the text.
    }
  }
  return { status: response.status, body };
}

/**
 * A field of a JSON object, as text; undefined when absent, inherited (`constructor`) or not text,
 * a number or a boolean: an operator's answers and callbacks are read with it whatever arrived.
 */
export function field(body: unknown, name: string): string | undefined {
  const value = nested(body, name);
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? String(value)
    : undefined;
}

/**
 * The value under `names`, one object inside the next (`nested(body, 'data', 'transaction')`); undefined where any step
 * is missing or not an object.
 */
export function nested(body: unknown, ...names: string[]): unknown {
  let value = body;
  for (const name of names) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, name))
      return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

export type Token = { value: string; expiresAt: number };

/**
 * An access token cached until shortly before it expires, with at most one refresh in flight:
 * concurrent calls that find no valid token wait for the same refresh. `invalidate` drops a token
 * the operator refused (it expired early, or was revoked).
 */
export function createTokenCache(fetchToken: () => Promise<Token>, marginMs = 60_000) {
  let current: Token | null = null;
  let refreshing: Promise<Token> | null = null;
  return {
    async get(): Promise<string> {
      if (current !== null && current.expiresAt - marginMs > Date.now()) return current.value;
      refreshing ??= fetchToken().then(
        (token) => {
          current = token;
          refreshing = null;
          return token;
        },
        (error: unknown) => {
          refreshing = null;
          throw error;
        },
      );
      return (await refreshing).value;
    },
    invalidate(value: string): void {
      if (current?.value === value) current = null;
    },
  };
}
export type TokenCache = ReturnType<typeof createTokenCache>;

/** Calls with a bearer token from `tokens`; a 401 drops the token and tries once more with a fresh one. */
export async function callWithToken(tokens: TokenCache, request: OperatorRequest): Promise<OperatorAnswer> {
  const token = await tokens.get();
  const answer = await callOperator({ ...request, headers: { ...request.headers, Authorization: `Bearer ${token}` } });
  if (answer.status !== 401) return answer;
  tokens.invalidate(token);
  const fresh = await tokens.get();
  return await callOperator({ ...request, headers: { ...request.headers, Authorization: `Bearer ${fresh}` } });
}

/** `+256772123456` → `256772123456`: the operators want numbers without `+`. */
export const msisdnOf = (e164: string): string => e164.replace(/^\+/, '');

/** A whole amount as the operators take it (`1500.0000` → `1500`); null when it has a fraction. */
export function wholeAmount(amount: string): string | null {
  const [whole = '', fraction = ''] = amount.split('.');
  return /^0*$/.test(fraction) ? String(BigInt(whole)) : null;
}
