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
export const OUTAGE_MODES: readonly OutageMode[] = ['none', 'refused', 'error', 'hang'];

export type OutageServerOptions = {
  port?: number;
  /** Bun's idle timeout in seconds for the connections of calls not held by a hang (0: none). */
  idleTimeout?: number;
  handle: (request: Request) => Promise<Response> | Response;
  /** The operator's own answer when its systems fail (HTTP 500 or 503). */
  systemError: () => Response;
};

export type OutageServer = {
  /** The port, the same for the server's whole life. */
  readonly port: number;
  mode(): OutageMode;
  /** Switches the mode; resolves once the port is closed (refused) or listening again (any other mode). */
  set(mode: OutageMode): Promise<void>;
  /** Answers any held call and closes the port for good. */
  stop(): Promise<void>;
};

export function serveWithOutages(options: OutageServerOptions): OutageServer {
  let current: OutageMode = 'none';
  let stopped = false;
  let releaseHeld: () => void = () => {};
  let held: Promise<void> = Promise.resolve();
  // Mode changes run one after another, so a quick refused-then-none never listens twice.
  let changes: Promise<void> = Promise.resolve();

  async function answer(request: Request, server: ReturnType<typeof Bun.serve>): Promise<Response> {
    if (current === 'error') return options.systemError();
    if (current === 'hang') {
      // Bun would close a connection idle for its idle timeout: a hang keeps it open until released.
      server.timeout(request, 0);
      await held;
      return options.systemError();
    }
    return await options.handle(request);
  }

  const listen = (port: number) =>
    Bun.serve({
      hostname: '127.0.0.1',
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
    async stop() {
      await changes;
      stopped = true;
      release();
      await close();
    },
  };
}
