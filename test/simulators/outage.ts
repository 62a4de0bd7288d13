/**
 * An operator's outage, the one shape every simulator shares, so that a test (or run.ts's control
 * endpoint) takes any operator down the same way and a route's failover can be tried against each.
 * The simulator's HTTP server is made here: the simulator hands over its handler and the answer
 * its operator gives when its own systems fail.
 *
 *   none     every call is handled as usual.
 *   refused  nothing listens on the port, so a client's connection is refused (ECONNREFUSED).
 *            Leaving this mode listens again on the same port: the simulator's url stays valid.
 *   error    every call, the token and session endpoints included, gets the operator's
 *            system-error answer before the simulator sees it: nothing is recorded, no money moves.
 *   hang     every call is held open, unanswered, until the mode changes; then it gets the same
 *            system-error answer (its client gave up long before), so a held call never moves money.
 *
 * The calls an outage answers are not in the simulator's `calls()`: the operator's gateway answered
 * them, the API behind it never saw them. What the simulator does on its own (a decision due, a
 * callback to send) goes on through any outage, as an operator's back office does while its API is down.
 */
export type OutageMode = 'none' | 'refused' | 'error' | 'hang';
/**
 * The address the simulators listen on and name in their URLs: loopback, or the operators node's
 * address when they run in the cluster (test/cluster), where the service calls them across hosts.
 */
export const SIMULATOR_HOST = process.env.SIMULATOR_HOST ?? '127.0.0.1';

export const OUTAGE_MODES: readonly OutageMode[] = ['none', 'refused', 'error', 'hang'];

/**
 * One operation answered out of time, the way an operator that is slow (not down) answers: the
 * next `times` calls matching `method` and `path` are
 *   processed `before` their answer, `after` it (the operator took `holdMs` to get to it: a status
 *   query in between finds nothing), or `never`;
 *   answered with the operator's own answer (`real`) or its system error (`error`: processed, then
 *   answered 500), after `holdMs` (0: at once). A client whose timeout is shorter than `holdMs`
 *   has given up by then: whatever was processed stays processed.
 */
export type LateAnswer = {
  method?: string;
  /** The path, or a pattern of it (`/^\/v2\/payouts$/`). */
  path: string | RegExp;
  holdMs: number;
  process: 'before' | 'after' | 'never';
  answer: 'real' | 'error';
  /** How many matching calls it takes (default 1). */
  times?: number;
};

export type OutageServerOptions = {
  port?: number;
  /** Bun's idle timeout in seconds for the connections of calls not held by a hang (0: none). */
  idleTimeout?: number;
  handle: (request: Request) => Promise<Response> | Response;
  /** The operator's own answer when its systems fail (HTTP 500 or 503). */
  systemError: () => Response;
  /**
   * Told of an answer of the operator's own that its client never received: a late rule sent the
   * system error in its place, or the client had hung up before it was ready. The operator knows
   * what it answered and to whom, so a simulator can keep it with what the call did.
   */
  undelivered?: (response: Response) => void;
};

export type OutageServer = {
  /** The port, the same for the server's whole life. */
  readonly port: number;
  mode(): OutageMode;
  /** Switches the mode; resolves once the port is closed (refused) or listening again (any other mode). */
  set(mode: OutageMode): Promise<void>;
  /** Answers the next matching calls out of time (see `LateAnswer`); `clearLate()` drops what is left. */
  late(rule: LateAnswer): void;
  clearLate(): void;
  /** Resolves once every call a late rule took has been processed (or dropped) and answered. */
  settled(): Promise<void>;
  /** Answers any held call and closes the port for good. */
  stop(): Promise<void>;
};

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function serveWithOutages(options: OutageServerOptions): OutageServer {
  let current: OutageMode = 'none';
  let stopped = false;
  let releaseHeld: () => void = () => {};
  let held: Promise<void> = Promise.resolve();
  // Mode changes run one after another, so a quick refused-then-none never listens twice.
  let changes: Promise<void> = Promise.resolve();

  let lateRules: (LateAnswer & { left: number })[] = [];
  const lateCalls = new Set<Promise<unknown>>();

  function lateRuleFor(request: Request): (LateAnswer & { left: number }) | undefined {
    const path = new URL(request.url).pathname;
    const rule = lateRules.find(
      (each) =>
        each.left > 0 &&
        (each.method === undefined || each.method === request.method) &&
        (typeof each.path === 'string' ? each.path === path : each.path.test(path)),
    );
    if (rule) rule.left -= 1;
    return rule;
  }

  /** A call taken by a late rule: its body read now (the client may be gone when it is processed). */
  async function answerLate(
    request: Request,
    rule: LateAnswer,
    server: ReturnType<typeof Bun.serve>,
  ): Promise<Response> {
    server.timeout(request, 0);
    const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer();
    const copy = () => new Request(request.url, { method: request.method, headers: request.headers, body });
    const work = (async () => {
      let real: Response | undefined;
      if (rule.process === 'before') real = await options.handle(copy());
      await pause(rule.holdMs);
      if (rule.process === 'after') real = await options.handle(copy());
      if (real && (rule.answer !== 'real' || request.signal.aborted)) options.undelivered?.(real);
      return rule.answer === 'real' && real ? real : options.systemError();
    })();
    lateCalls.add(work);
    void work.finally(() => lateCalls.delete(work)).catch(() => {});
    return await work;
  }

  async function answer(request: Request, server: ReturnType<typeof Bun.serve>): Promise<Response> {
    if (current === 'error') return options.systemError();
    const rule = current === 'none' && lateRules.length > 0 ? lateRuleFor(request) : undefined;
    if (rule) return await answerLate(request, rule, server);
    if (current === 'hang') {
      // Bun would close a connection idle for its idle timeout: a hang keeps it open until released.
      server.timeout(request, 0);
      await held;
      return options.systemError();
    }
    const response = await options.handle(request);
    if (request.signal.aborted) options.undelivered?.(response);
    return response;
  }

  const listen = (port: number) =>
    Bun.serve({
      hostname: SIMULATOR_HOST,
      port,
      ...(options.idleTimeout === undefined ? {} : { idleTimeout: options.idleTimeout }),
      fetch: answer,
    });
  let server: ReturnType<typeof Bun.serve> | null = listen(options.port ?? 0);
  const port = server.port!;

  /**
   * Stops listening: first letting the calls in flight (the held ones just released) have their
   * answers, then cutting the idle keep-alive connections, on which a client would otherwise still
   * reach a port that is meant to be closed.
   */
  async function close(): Promise<void> {
    const closing = server;
    server = null;
    await closing?.stop(false);
    await closing?.stop(true);
  }

  function release(): void {
    releaseHeld();
    releaseHeld = () => {};
  }

  async function apply(mode: OutageMode): Promise<void> {
    if (stopped || mode === current) return;
    if (current === 'hang') release();
    current = mode;
    if (mode === 'hang') held = new Promise<void>((resolve) => (releaseHeld = resolve));
    if (mode === 'refused' && server !== null) await close();
    else if (mode !== 'refused' && server === null) {
      server = listen(port);
    }
  }

  return {
    port,
    mode: () => current,
    set(mode) {
      if (!OUTAGE_MODES.includes(mode)) return Promise.reject(new Error(`unknown outage mode ${String(mode)}`));
      const change = changes.then(() => apply(mode));
      changes = change.catch(() => {});
      return change;
    },
    late(rule) {
      lateRules.push({ ...rule, left: rule.times ?? 1 });
    },
    clearLate() {
      lateRules = [];
    },
    async settled() {
      while (lateCalls.size > 0) await Promise.allSettled([...lateCalls]);
    },
    async stop() {
      await changes;
      stopped = true;
      release();
      await close();
    },
  };
}
