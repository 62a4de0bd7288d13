/**
 * Calls to a real operator's API: JSON over HTTP with a hard deadline, answers read as JSON when
 * they are, and an access-token cache shared by every call of a process. Nothing here logs a
 * header or a body: they carry credentials.
 */

export type OperatorAnswer = { status: number; body: unknown };

/** Raised when the operator could not be reached or did not answer in time: the call may or may not have been carried out. */
export class OperatorUnreachableError extends Error {}

/** Raised for an answer no retry changes (a refused request); the activity turns it into a result, never retries it. */
export class OperatorRefusedError extends Error {
  constructor(message: string, readonly answer: OperatorAnswer) {
    super(message);
  }
}

type OperatorRequest = { method: 'GET' | 'POST' | 'PUT'; url: string; headers?: Record<string, string>; json?: unknown; timeoutMs: number };

/** One HTTP exchange with the operator; the body parsed as JSON when it is JSON, else its text. */
export async function callOperator(request: OperatorRequest): Promise<OperatorAnswer> {
  let response: Response;
  try {
    response = await fetch(request.url, {
      method: request.method,
      headers: { Accept: 'application/json', ...(request.json === undefined ? {} : { 'Content-Type': 'application/json' }), ...request.headers },
      body: request.json === undefined ? undefined : JSON.stringify(request.json),
      signal: AbortSignal.timeout(request.timeoutMs),
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
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
}

/** The value under `names`, one object inside the next (`nested(body, 'data', 'transaction')`); undefined where any step is missing or not an object. */
export function nested(body: unknown, ...names: string[]): unknown {
  let value = body;
  for (const name of names) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, name)) return undefined;
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

/** A token renewed ahead of its end: from `renewAt` its successor is asked for while it keeps serving calls, until `expiresAt`. */
export type RenewableToken = Token & { renewAt: number };

type RenewalOptions = {
  /** How long after a renewal in the background failed the next is tried, while the current token still serves. */
  retryMs: number;
  /** Told of a fetch in the background that failed (the warm-up or a renewal); nothing else hears of it. */
  onBackgroundFailure: (error: unknown) => void;
};

/**
 * A token cache for tokens that take long to be issued (a session that must first become active),
 * so that no call waits for one once the first is in hand:
 * - `warm` asks for the first token in the background, so a process's first call finds it (or
 *   waits only for what remains of that one fetch); its failure is reported, and the next call asks again;
 * - at a token's `renewAt` a timer asks for its successor in the background; the token keeps
 *   serving calls until the successor is in hand, which then replaces it; a failed renewal is
 *   reported and tried again `retryMs` later while the token still serves;
 * - with no token, or past its `expiresAt`, a call waits for a fetch;
 * - at most one fetch is in flight, and every caller that waits shares it;
 * - `invalidate` drops a token the operator refused, at once.
 * Its timers never keep a process alive; `stop` ends them.
 */
export function createRenewingTokenCache(fetchToken: () => Promise<RenewableToken>, options: RenewalOptions) {
  let current: RenewableToken | null = null;
  let refreshing: Promise<RenewableToken> | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;

  const schedule = (at: number): void => {
    clearTimeout(timer);
    if (stopped) return;
    timer = setTimeout(inBackground, Math.max(0, at - Date.now()));
    timer.unref?.();
  };
  const refresh = (): Promise<RenewableToken> => refreshing ??= fetchToken().then(
    (token) => {
      refreshing = null;
      current = token;
      schedule(token.renewAt);
      return token;
    },
    (error: unknown) => {
      refreshing = null;
      throw error;
    },
  );
  function inBackground(): void {
    // A fetch already in flight (a waiting call's) serves the same purpose.
    if (refreshing !== null) return;
    refresh().catch((error: unknown) => {
      options.onBackgroundFailure(error);
      if (current !== null && current.expiresAt > Date.now()) schedule(Math.min(Date.now() + options.retryMs, current.expiresAt));
    });
  }

  return {
    /** Asks for the first token in the background, unless one is held or on its way. */
    warm(): void {
      if (current === null) inBackground();
    },
    async get(): Promise<string> {
      if (current !== null && current.expiresAt > Date.now()) return current.value;
      return (await refresh()).value;
    },
    invalidate(value: string): void {
      if (current?.value !== value) return;
      current = null;
      clearTimeout(timer);
    },
    /** No more renewals ahead (a fetch in flight still ends). */
    stop(): void {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

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
