/**
 * The worker process's lifecycle: what it opened is released in the reverse order once it ends,
 * the worker itself first (shut down, its run() settled) so that no connection closes while the
 * worker holds it, and the error that ended the process stays the one it reports.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TransportError, type Worker } from '@temporalio/worker';
import { logger } from '../log';

/** The signals the SDK's runtime turns into a graceful shutdown (its default `shutdownSignals`). */
const SHUTDOWN_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGQUIT', 'SIGUSR2'] as const;

/** Registers what to release once the process's work ends; the latest registered is released first. */
type Hold = (what: string, release: () => Promise<void>) => void;

/**
 * Runs `body`, then every release it registered, newest first, whether `body` succeeded or
 * failed. A release that fails is logged as a warning and the next ones still run: `body`'s own
 * error is the one rethrown, never a release's.
 */
export async function withReleases<T>(body: (hold: Hold) => Promise<T>): Promise<T> {
  const releases: { what: string; release: () => Promise<void> }[] = [];
  try {
    return await body((what, release) => void releases.push({ what, release }));
  } finally {
    for (const { what, release } of releases.reverse()) {
      try {
        await release();
      } catch (error) {
        logger.warn(`could not release ${what}`, { error });
      }
    }
  }
}

type RunnableWorker = Pick<Worker, 'run' | 'shutdown' | 'getState'>;

/**
 * Several workers of one process run as one: running while any runs, shut down together, and when
 * one fails the others are shut down and awaited before its error is thrown.
 */
export function allOf(workers: readonly RunnableWorker[]): RunnableWorker {
  const shutdown = () => {
    for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
  };
  return {
    async run() {
      const runs = workers.map((worker) => worker.run());
      try {
        await Promise.all(runs);
      } catch (error) {
        shutdown();
        await Promise.allSettled(runs);
        throw error;
      }
    },
    shutdown,
    getState: () =>
      workers.some((worker) => worker.getState() === 'RUNNING') ? 'RUNNING' : (workers[0]?.getState() ?? 'STOPPED'),
  };
}

/**
 * Runs the worker until it shuts down (the SDK's runtime turns SIGINT/SIGTERM into a graceful
 * shutdown; a fatal error rejects). `background` starts alongside run(), not before it; its signal
 * aborts once the worker stops. Both are held at once: should the process end any other way, the
 * background work is stopped, then the worker shut down and its run() awaited, before anything
 * held earlier (its connection) is released.
 */
export async function runUntilShutdown(
  worker: RunnableWorker,
  hold: Hold,
  background: (stop: AbortSignal) => Promise<void>,
): Promise<void> {
  const running = worker.run();
  const settled = running.then(
    () => undefined,
    () => undefined,
  );
  hold('the worker', async () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await settled;
  });
  const stop = new AbortController();
  const tasks = background(stop.signal);
  hold("the worker's background tasks", async () => {
    stop.abort();
    await tasks;
  });
  await running;
}

/** gRPC codes the server itself answered with: trying again gets the same answer (a namespace that does not exist). */
const SERVER_ANSWERED =
  /code: (NotFound|PermissionDenied|Unauthenticated|InvalidArgument|FailedPrecondition|Unimplemented)\b/;

/** The native connection's failures without the server's answer: unreachable, restarting or not answering, for now. */
function temporalUnreachable(error: unknown): boolean {
  return error instanceof TransportError && !SERVER_ANSWERED.test(error.message);
}

/** A shutdown signal came while the process waited for Temporal at its start: it ends without having run. */
export class StoppedBeforeStart extends Error {
  constructor(what: string) {
    super(`stopped while waiting for Temporal (${what})`);
    this.name = 'StoppedBeforeStart';
  }
}

/**
 * Runs `open` (a connection to Temporal, a worker whose creation describes its namespace) until
 * Temporal answers. A server that cannot be reached when the process starts (a partition, a server
 * restarting) is waited out with a warning, the wait doubling up to `maxDelayMs`, instead of the
 * process exiting and its supervisor starting it again. Any other error ends the wait; SIGINT or
 * SIGTERM meanwhile ends it with `StoppedBeforeStart`.
 */
export async function untilTemporalAnswers<T>(
  what: string,
  open: () => Promise<T>,
  { firstDelayMs = 500, maxDelayMs = 10_000 } = {},
): Promise<T> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, onSignal);
  try {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await open();
      } catch (error) {
        if (!temporalUnreachable(error)) throw error;
        if (stop.signal.aborted) throw new StoppedBeforeStart(what);
        const delayMs = Math.min(firstDelayMs * 2 ** (attempt - 1), maxDelayMs);
        logger.warn(`Temporal did not answer: ${what} tried again`, { attempt, delayMs, error });
        await sleep(delayMs, undefined, { signal: stop.signal }).catch(() => {
          throw new StoppedBeforeStart(what);
        });
      }
    }
  } finally {
    for (const signal of SHUTDOWN_SIGNALS) process.off(signal, onSignal);
  }
}
