/**
 * The worker process's lifecycle: what it opened is released in the reverse order once it ends,
 * the worker itself first (shut down, its run() settled) so that no connection closes while the
 * worker holds it, and the error that ended the process stays the one it reports.
 */
import type { Worker } from '@temporalio/worker';
import { logger } from '../log';

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
