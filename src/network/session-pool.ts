/**
 * The sessions of an operator whose new session is usable only after an activation delay (Vodacom's
 * M-Pesa OpenAPI: "up to 30 seconds"), kept so that no call waits for an activation in the ordinary
 * course, and a call that must wait (every session revoked) waits only as long as the new session
 * actually takes, within its deadline:
 * - the pool holds, besides the session in use, a spare: `warm` asks for the first session at a
 *   process's start and for the spare as soon as the first is issued, in the background;
 * - a session is used in the ordinary course once its activation delay (`activationMs`) has passed
 *   or once the operator took a call with it; calls use the oldest such session (the spare is the
 *   younger);
 * - a session the operator refuses is dropped, and the spare serves the next call at once while its
 *   own spare is asked for; with no session usable in the ordinary course, a call waits for the
 *   next one when it comes before the call's deadline, and fails at once, with nothing carried out,
 *   when none does (`SessionUnavailableError`);
 * - where the operator activates a session when it will, up to a most (`activationUpToMs`), and
 *   refuses one not active yet in the same words as one revoked, a refusal is read by what the pool
 *   knows of the session: one that served a call, one issued before a session that served was
 *   refused (the operator ended them together), and one older than that most is revoked (dropped);
 *   any other may only not be active yet: kept, and tried again after a pause that grows with each
 *   refusal. A call that would wait past its deadline for `activationMs` tries a new session early
 *   instead, and again after each pause (the operator often activates well before its most), until
 *   its deadline;
 * - each session is retired a margin before its end (the operator's clock may run ahead of ours),
 *   and its replacement asked for its activation delay before that, so the replacement is active
 *   when it retires; a retired session still serves, up to its end, when no other is usable;
 * - at most one session request is in flight. One that fails is reported, and asked again
 *   `retryMs` later while a session still serves; with none held the next call asks, and fails with
 *   that request's error when it fails too.
 * Its timers never keep a process alive; `stop` ends the requests made in the background.
 */

/**
 * What the operator answered to a session request: the bearer it gives, and when it was asked for (its lifetime counts
 * from then).
 */
export type IssuedSession = { bearer: string; askedAt: number };
/**
 * A session held: issued at `issuedAt`, used in the ordinary course from `activeAt` (its activation
 * delay after that) or once `taken` (the operator took a call with it), preferred until `retireAt`,
 * never used from `expiresAt`; after `refusals` while it may not have been active yet, not tried
 * again before `retryAt`.
 */
type Session = {
  bearer: string;
  issuedAt: number;
  activeAt: number;
  retireAt: number;
  expiresAt: number;
  taken: boolean;
  refusals: number;
  retryAt: number;
};

/** No session is usable before the call's deadline: the call was not carried out (a later try may find one). */
export class SessionUnavailableError extends Error {}

type PoolOptions = {
  /** Named in errors (`Vodacom M-Pesa vodacomTZN`). */
  name: string;
  /** Asks the operator for a session; it answers before the session is active. */
  issue: () => Promise<IssuedSession>;
  /** How long after its issue a session is used in the ordinary course (and surely active). */
  activationMs: number;
  /**
   * Where the operator activates a new session when it will, up to this long after its issue
   * (Vodacom: 30 s): a call that cannot wait for `activationMs` tries a new session sooner, and a new
   * session refused within this of its issue, never having served, is tried again after a pause
   * instead of dropped. Absent: a session is active exactly `activationMs` after its issue.
   */
  activationUpToMs?: number;
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
 * The pause after a new session's first refusal, doubled after each further one up to the most: the operator is asked a
 * few times a second at first, and no more than every two seconds.
 */
const FIRST_RETRY_PAUSE_MS = 250;
const LONGEST_RETRY_PAUSE_MS = 2_000;

/** How long a new session refused `refusals` times is left before it is tried again. */
const retryPause = (refusals: number): number =>
  Math.min(LONGEST_RETRY_PAUSE_MS, FIRST_RETRY_PAUSE_MS * 2 ** (refusals - 1));

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
    await Promise.race([
      changed,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, ms));
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A pool's state, built once by `createSessionPool` and read and changed by the functions below: its options, the
 * sessions it holds, its request in flight and its timer.
 */
type Pool = {
  options: PoolOptions;
  /** The sessions issued and not yet ended, oldest first. */
  held: Session[];
  requesting: Promise<void> | null;
  /** The last request's error, until a request succeeds. */
  lastFailure: unknown;
  /** When a session that had served was last refused: the sessions issued before were ended with it. */
  revokedAt: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  stopped: boolean;
  signal: { changed: Promise<void>; wake: () => void };
};

function notify(pool: Pool): void {
  const { wake } = pool.signal;
  pool.signal = changeSignal();
  wake();
}

function prune(pool: Pool, now: number): void {
  pool.held = pool.held.filter((session) => session.expiresAt > now);
}

/** When a session's replacement is due: its activation delay before the session retires. */
const replacementDue = (pool: Pool, session: Session): number => session.retireAt - pool.options.activationMs;

/**
 * When a session is used in the ordinary course: once its activation delay passed (or it served), and not before its
 * next try.
 */
const usableFrom = (session: Session): number =>
  Math.max(session.retryAt, session.taken ? -Infinity : session.activeAt);

const unavailable = (pool: Pool) =>
  new SessionUnavailableError(
    `${pool.options.name}: no session active before the call's deadline (nothing was carried out)`,
  );

function schedule(pool: Pool, at: number): void {
  clearTimeout(pool.timer);
  if (pool.stopped || !Number.isFinite(at)) return;
  pool.timer = setTimeout(() => replenish(pool), Math.max(0, at - Date.now()));
  pool.timer.unref?.();
}

/**
 * Asks for a session when fewer than the sessions held ready will still serve once it is active; else waits for the
 * next replacement due.
 */
function replenish(pool: Pool, demanded = false): void {
  if (pool.requesting !== null || (pool.stopped && !demanded)) return;
  const now = Date.now();
  prune(pool, now);
  const lasting = pool.held.filter((session) => replacementDue(pool, session) > now);
  if (lasting.length < SESSIONS_HELD) {
    pool.requesting = request(pool);
    return;
  }
  schedule(pool, Math.min(...lasting.map((session) => replacementDue(pool, session))));
}

async function request(pool: Pool): Promise<void> {
  const { options } = pool;
  try {
    const { bearer, askedAt } = await options.issue();
    // Counted from the answer: the operator's activation delay starts once it issued the session.
    const issuedAt = Date.now();
    pool.held.push({
      bearer,
      issuedAt,
      activeAt: issuedAt + options.activationMs,
      ...lifeOf(options, askedAt),
      taken: false,
      refusals: 0,
      retryAt: -Infinity,
    });
    pool.lastFailure = null;
    pool.requesting = null;
    replenish(pool);
  } catch (error) {
    pool.lastFailure = error;
    pool.requesting = null;
    options.onRequestFailure(error);
    if (pool.held.some((session) => session.expiresAt > Date.now())) schedule(pool, Date.now() + options.retryMs);
  } finally {
    notify(pool);
  }
}

/**
 * The session a call uses now in the ordinary course: the oldest usable one not retired, else the usable one that
 * ends last.
 */
function serving(pool: Pool, now: number): Session | undefined {
  const usable = pool.held.filter((session) => usableFrom(session) <= now);
  return usable.find((session) => session.retireAt > now) ?? usable.at(-1);
}

/**
 * When a session is next usable in the ordinary course; one still being asked for is, an activation delay after its
 * answer at the soonest.
 */
const nextUsable = (pool: Pool, now: number): number =>
  Math.min(...pool.held.map(usableFrom), pool.requesting === null ? Infinity : now + pool.options.activationMs);

/**
 * The session tried before its activation delay ends, when none will be usable in the ordinary
 * course before the call's deadline: the oldest not known active (a younger one is not active
 * before it), once its pause is over.
 */
const earlyCandidate = (pool: Pool): Session | undefined =>
  pool.options.activationUpToMs === undefined ? undefined : pool.held.find((session) => !session.taken);
const earlyTry = (pool: Pool, now: number): Session | undefined => {
  const candidate = earlyCandidate(pool);
  return candidate && candidate.retryAt <= now ? candidate : undefined;
};

/**
 * How long a call that found no session to use waits before it looks again (a change of the pool,
 * such as a request's answer, wakes it sooner): until the next session usable in time, else until
 * the next early try; null when no session can be tried before `activeBy`.
 */
function waitBeforeLook(pool: Pool, now: number, activeBy: number): number | null {
  const usable = Math.min(...pool.held.map(usableFrom));
  if (nextUsable(pool, now) <= activeBy) return Math.min(usable, activeBy) - now;
  if (pool.options.activationUpToMs === undefined) return null;
  const early = earlyCandidate(pool)?.retryAt ?? Infinity;
  if (early <= activeBy) return early - now;
  return pool.requesting === null ? null : activeBy - now;
}

/**
 * Whether a refused session may only not be active yet: never taken, issued after the last revocation seen, and
 * younger than an activation's most.
 */
const mayBeInactive = (pool: Pool, session: Session, now: number): boolean =>
  !session.taken && session.issuedAt > pool.revokedAt && now - session.issuedAt < (pool.options.activationUpToMs ?? 0);

/** The bearer `active` answers with (see `createSessionPool`). */
async function activeBearer(pool: Pool, activeBy: number): Promise<string> {
  let asked = false;
  for (;;) {
    const now = Date.now();
    prune(pool, now);
    if (now > activeBy) throw unavailable(pool);
    const session = serving(pool, now) ?? (nextUsable(pool, now) > activeBy ? earlyTry(pool, now) : undefined);
    if (session) return session.bearer;
    if (pool.held.length === 0 && pool.requesting === null) {
      if (asked) throw pool.lastFailure ?? new Error(`${pool.options.name}: no session issued`);
      asked = true;
      replenish(pool, true);
    }
    const wait = waitBeforeLook(pool, now, activeBy);
    if (wait === null) throw unavailable(pool);
    await untilChangeOr(pool.signal.changed, wait);
  }
}

function markTaken(pool: Pool, bearer: string): void {
  const session = pool.held.find((known) => known.bearer === bearer);
  if (!session || session.taken) return;
  session.taken = true;
  session.retryAt = -Infinity;
  notify(pool);
}

function markRefused(pool: Pool, bearer: string): void {
  const session = pool.held.find((known) => known.bearer === bearer);
  if (!session) return;
  const now = Date.now();
  if (mayBeInactive(pool, session, now)) {
    session.refusals += 1;
    session.retryAt = now + retryPause(session.refusals);
  } else {
    if (session.taken) pool.revokedAt = Math.max(pool.revokedAt, now);
    pool.held = pool.held.filter((known) => known !== session);
    replenish(pool);
  }
  notify(pool);
}

export function createSessionPool(options: PoolOptions) {
  const pool: Pool = {
    options,
    held: [],
    requesting: null,
    lastFailure: null,
    revokedAt: -Infinity,
    timer: undefined,
    stopped: false,
    signal: changeSignal(),
  };

  return {
    /** Asks for the sessions in the background, unless they are held or on their way. */
    warm(): void {
      replenish(pool);
    },

    /**
     * The bearer of a session to call with: one usable in the ordinary course, waiting for one only
     * when it comes by `activeBy`, else one tried early; throws SessionUnavailableError (nothing
     * carried out) when none can be tried by then, or the request's error when the session this call
     * asked for was not issued.
     */
    active(activeBy: number): Promise<string> {
      return activeBearer(pool, activeBy);
    },

    /** The operator took a call with the session: it is active, whatever its activation delay said. */
    taken(bearer: string): void {
      markTaken(pool, bearer);
    },

    /**
     * A session the operator refused: one that may only not be active yet is tried again after a
     * pause; any other is dropped (the spare serves the next call at once, and a new spare is asked for).
     */
    refused(bearer: string): void {
      markRefused(pool, bearer);
    },

    /** No more requests in the background (one in flight still ends; a call that finds no session still asks). */
    stop(): void {
      pool.stopped = true;
      clearTimeout(pool.timer);
    },
  };
}
