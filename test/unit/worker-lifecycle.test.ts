/**
 * The worker process's lifecycle (src/temporal/worker-lifecycle.ts): what it opened is released
 * newest first, the worker stopped before its connection closes, and a release's failure never
 * takes the place of the error that ended the run; Temporal unreachable at the start is waited
 * out, not a crash.
 */
import { afterEach, beforeEach, expect, spyOn, test, type Mock } from 'bun:test';
import { IllegalStateError } from '@temporalio/common';
import { NativeConnection, TransportError } from '@temporalio/worker';
import {
  StoppedBeforeStart,
  runUntilShutdown,
  untilTemporalAnswers,
  withReleases,
} from '../../src/temporal/worker-lifecycle';

let stderr: Mock<typeof process.stderr.write>;
beforeEach(() => {
  stderr = spyOn(process.stderr, 'write').mockImplementation(() => true);
});
afterEach(() => stderr.mockRestore());

const logLines = () =>
  stderr.mock.calls.map(
    ([line]) =>
      JSON.parse(String(line)) as { level: string; message: string; error?: { name: string; message: string } },
  );

/** A worker double: run() settles once shutdown() is called (as the SDK's does), or with `runError`. */
function fakeWorker(steps: string[], runError?: Error) {
  let state: 'INITIALIZED' | 'RUNNING' | 'STOPPED' | 'FAILED' = 'INITIALIZED';
  let finish = () => {};
  return {
    getState: () => state as never,
    shutdown: () => {
      steps.push('worker shutdown');
      finish();
    },
    run: () => {
      state = runError ? 'FAILED' : 'RUNNING';
      if (runError) return Promise.reject(runError);
      return new Promise<void>(
        (resolve) =>
          (finish = () => {
            state = 'STOPPED';
            steps.push('worker stopped');
            resolve();
          }),
      );
    },
  };
}

test('a failure before the worker runs is the error rethrown; a connection refusing to close is only a warning', async () => {
  const steps: string[] = [];
  const failure = new Error('the Schedule setup failed');
  const run = withReleases(async (hold) => {
    hold('the pool', async () => void steps.push('pool closed'));
    hold('the connection', async () => {
      steps.push('connection close');
      throw new IllegalStateError('Cannot close connection while Workers hold a reference to it');
    });
    throw failure;
  });
  await expect(run).rejects.toBe(failure);
  expect(steps).toEqual(['connection close', 'pool closed']);
  expect(logLines()).toEqual([
    expect.objectContaining({
      level: 'warn',
      message: 'could not release the connection',
      error: expect.objectContaining({ name: 'IllegalStateError' }),
    }),
  ]);
});

test('the worker is shut down and its run settled before the connection it holds is closed, whatever ends the process', async () => {
  const steps: string[] = [];
  const failure = new Error('failed beside the running worker');
  const run = withReleases(async (hold) => {
    hold('the connection', async () => void steps.push('connection closed'));
    await runUntilShutdown(fakeWorker(steps), hold, () => {
      throw failure;
    });
  });
  await expect(run).rejects.toBe(failure);
  expect(steps).toEqual(['worker shutdown', 'worker stopped', 'connection closed']);
});

test('background work starts beside run(), is stopped when the worker stops, and its end is awaited before the connection closes', async () => {
  const steps: string[] = [];
  const worker = fakeWorker(steps);
  await withReleases(async (hold) => {
    hold('the connection', async () => void steps.push('connection closed'));
    await runUntilShutdown(worker, hold, (stop) => {
      expect(worker.getState()).toBe('RUNNING' as never);
      queueMicrotask(() => worker.shutdown());
      return new Promise<void>((resolve) =>
        stop.addEventListener('abort', () => {
          steps.push('background stopped');
          resolve();
        }),
      );
    });
  });
  expect(steps).toEqual(['worker shutdown', 'worker stopped', 'background stopped', 'connection closed']);
  expect(logLines()).toEqual([]);
});

test('a worker that fails while running: its error is the one rethrown, and the releases still run', async () => {
  const steps: string[] = [];
  const fatal = new Error('the worker failed');
  const run = withReleases(async (hold) => {
    hold('the connection', async () => void steps.push('connection closed'));
    await runUntilShutdown(fakeWorker(steps, fatal), hold, async () => {});
  });
  await expect(run).rejects.toBe(fatal);
  expect(steps).toEqual(['connection closed']);
});

/** Nothing listens on port 1: the native connection is refused at once, as when Temporal is cut off or restarting. */
const refused = () => NativeConnection.connect({ address: '127.0.0.1:1' });

test('Temporal refusing the connection at the start is tried again until it answers, with a warning each time', async () => {
  let attempts = 0;
  const opened = await untilTemporalAnswers(
    'the connection',
    async () => {
      attempts += 1;
      if (attempts < 3) await refused();
      return 'connected';
    },
    { firstDelayMs: 5 },
  );
  expect(opened).toBe('connected');
  expect(attempts).toBe(3);
  expect(logLines()).toEqual([
    expect.objectContaining({ level: 'warn', message: 'Temporal did not answer: the connection tried again' }),
    expect.objectContaining({ level: 'warn', attempt: 2, delayMs: 10 }),
  ]);
});

test.each([
  ['a bug', new TypeError('the workflow bundle does not build')],
  [
    'an answer of the server itself (no such namespace)',
    new TransportError(
      'Namespace nowhere was not found or otherwise could not be described: Status { code: NotFound, message: "Namespace nowhere is not found." }',
    ),
  ],
])('an error other than Temporal unreachable ends the start at once: %s', async (_, failure) => {
  let attempts = 0;
  const start = untilTemporalAnswers('the worker', async () => {
    attempts += 1;
    throw failure;
  });
  await expect(start).rejects.toBe(failure);
  expect(attempts).toBe(1);
});

test('SIGTERM while waiting for Temporal ends the start as a stop, not a failure, and leaves no signal handler behind', async () => {
  const before = process.listenerCount('SIGTERM');
  const start = untilTemporalAnswers('the worker', refused, { firstDelayMs: 60_000 });
  while (logLines().length === 0) await Bun.sleep(5);
  process.emit('SIGTERM');
  await expect(start).rejects.toBeInstanceOf(StoppedBeforeStart);
  expect(process.listenerCount('SIGTERM')).toBe(before);
});
