/**
 * The sessions of an operator whose new session is usable only after an activation delay (Vodacom's
 * M-Pesa OpenAPI), kept so that no call waits for an activation, not even after the operator
 * refused the session in use:
 * - the pool holds, besides the session in use, a spare already past its activation delay: `warm`
 *   asks for the first session at a process's start and for the spare as soon as the first is
 *   issued, in the background;
 * - calls use the oldest active session (the spare is the younger); one the operator refuses is
 *   dropped and the spare serves the next call at once, while its own spare is asked for;
 * - each session is retired a margin before its end (the operator's clock may run ahead of ours),
 *   and its replacement asked for its activation delay before that, so the replacement is active
 *   when it retires; a retired session still serves, up to its end, when no other is active;
 * - with no active session a call waits for the next activation only when it comes before the
 *   call's deadline; else it fails at once, with nothing sent (`SessionUnavailableError`);
 * - at most one session request is in flight. One that fails is reported, and asked again
 *   `retryMs` later while a session still serves; with none held the next call asks, and fails with
 *   that request's error when it fails too.
 * Its timers never keep a process alive; `stop` ends the requests made in the background.
 */

/** What the operator answered to a session request: the bearer it gives, and when it was asked for (its lifetime counts from then). */
export type IssuedSession = { bearer: string; askedAt: number };
/** A session held: usable from `activeAt` (its activation delay after the operator answered), preferred until `retireAt`, never used from `expiresAt`. */
type Session = { bearer: string; activeAt: number; retireAt: number; expiresAt: number };

/** No session is active before the call's deadline: the call was not sent (a later try may find one). */
export class SessionUnavailableError extends Error {}

type PoolOptions = {
  /** Named in errors (`Vodacom M-Pesa vodacomTZN`). */
  name: string;
  /** Asks the operator for a session; it answers before the session is active. */
  issue: () => Promise<IssuedSession>;
  activationMs: number;
  lifetimeMs: number;
  /** How long after a failed request in the background the next is made, while a session still serves. */
  retryMs: number;
  /** Told of a session request that failed (the calls waiting for it see the error too). */
  onRequestFailure: (error: unknown) => void;
};

/** The sessions held ready: the one in use and its spare. */
const SESSIONS_HELD = 2;
/** The most a session is retired before its end (timers and the operator's clock run late at times). */
const RETIREMENT_MARGIN_MS = 60_000;

/**
 * When a session asked for at `askedAt` is retired and when it ends: a margin before its end (a
 * minute, or half of what a session serves beyond two activation delays when that is less). The
 * configuration keeps the lifetime above two activation delays, so a replacement asked for an
 * activation delay before the retirement comes after the session's own activation.
 */
function lifeOf(options: PoolOptions, askedAt: number): { retireAt: number; expiresAt: number } {
  const margin = Math.min(RETIREMENT_MARGIN_MS, Math.max(0, options.lifetimeMs - 2 * options.activationMs) / 2);
  return { retireAt: askedAt + options.lifetimeMs - margin, expiresAt: askedAt + options.lifetimeMs };
}

/** A promise settled by `wake`, made anew each time the pool changes: what a waiting call listens to. */
function changeSignal(): { changed: Promise<void>; wake: () => void } {
  let wake: () => void = () => {};
  const changed = new Promise<void>((resolve) => {
    wake = resolve;
  });
  return { changed, wake };
}

/** Resolves after `ms`, or when `changed` settles first (the timer cleared either way). */
async function untilChangeOr(changed: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([changed, new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, ms));
    })]);
  } finally {
    clearTimeout(timer);
  }
}

export function createSessionPool(options: PoolOptions) {
  /** The sessions issued and not yet ended, oldest first. */
  let held: Session[] = [];
  let requesting: Promise<void> | null = null;
  /** The last request's error, until a request succeeds. */
  let lastFailure: unknown = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let signal = changeSignal();

  const notify = (): void => {
    const { wake } = signal;
    signal = changeSignal();
    wake();
  };
  const prune = (now: number): void => {
    held = held.filter((session) => session.expiresAt > now);
  };
  /** When a session's replacement is due: its activation delay before the session retires. */
  const replacementDue = (session: Session): number => session.retireAt - options.activationMs;

  function schedule(at: number): void {
    clearTimeout(timer);
    if (stopped || !Number.isFinite(at)) return;
    timer = setTimeout(() => replenish(), Math.max(0, at - Date.now()));
    timer.unref?.();
  }

  /** Asks for a session when fewer than the sessions held ready will still serve once it is active; else waits for the next replacement due. */
  function replenish(demanded = false): void {
    if (requesting !== null || (stopped && !demanded)) return;
    const now = Date.now();
    prune(now);
    const lasting = held.filter((session) => replacementDue(session) > now);
    if (lasting.length < SESSIONS_HELD) {
      requesting = request();
      return;
    }
    schedule(Math.min(...lasting.map(replacementDue)));
  }

  async function request(): Promise<void> {
    try {
      const { bearer, askedAt } = await options.issue();
      // Counted from the answer: the operator's activation delay starts once it issued the session.
      held.push({ bearer, activeAt: Date.now() + options.activationMs, ...lifeOf(options, askedAt) });
      lastFailure = null;
      requesting = null;
      replenish();
    } catch (error) {
      lastFailure = error;
      requesting = null;
      options.onRequestFailure(error);
      if (held.some((session) => session.expiresAt > Date.now())) schedule(Date.now() + options.retryMs);
    } finally {
      notify();
    }
  }

  /** The session a call uses now: the oldest active one not retired, else the active one that ends last. */
  function serving(now: number): Session | undefined {
    const active = held.filter((session) => session.activeAt <= now);
    return active.find((session) => session.retireAt > now) ?? active.at(-1);
  }

  return {
    /** Asks for the sessions in the background, unless they are held or on their way. */
    warm(): void {
      replenish();
    },

    /**
     * The bearer of an active session, waiting for an activation only when it comes by `activeBy`;
     * throws SessionUnavailableError (nothing sent) when none does, or the request's error when the
     * session this call asked for was not issued.
     */
    async active(activeBy: number): Promise<string> {
      let asked = false;
      for (;;) {
        const now = Date.now();
        prune(now);
        const session = serving(now);
        if (session && now <= activeBy) return session.bearer;
        if (held.length === 0 && requesting === null) {
          if (asked) throw lastFailure ?? new Error(`${options.name}: no session issued`);
          asked = true;
          replenish(true);
        }
        const activations = held.map((known) => known.activeAt);
        // A session still being asked for is active an activation delay after it is answered, at the soonest.
        const soonest = Math.min(...activations, requesting === null ? Infinity : now + options.activationMs);
        if (session || soonest > activeBy) {
          throw new SessionUnavailableError(`${options.name}: no session active before the call's deadline (the call was not sent)`);
        }
        await untilChangeOr(signal.changed, Math.min(...activations, activeBy) - now);
      }
    },

    /** Drops a session the operator refused: the spare serves the next call at once, and a new spare is asked for. */
    refused(bearer: string): void {
      const before = held.length;
      held = held.filter((session) => session.bearer !== bearer);
      if (held.length === before) return;
      replenish();
      notify();
    },

    /** No more requests in the background (one in flight still ends; a call that finds no session still asks). */
    stop(): void {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
