/**
 * The worker's start and stop on the real worker process (Node) and the real dev server: a
 * Temporal server that does not answer the Schedule calls (still settling after a restart) neither
 * keeps the worker from its task queue nor stops it, and a worker that cannot start reports the
 * error that stopped it.
 */
import { afterAll, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { collectionRequestWorkflowId } from '../../src/contracts/collection-request';
import { eventRetentionScheduleId, outboxSweepScheduleId } from '../../src/contracts/sweeps';
import {
  ROOT,
  createMerchant,
  eventually,
  startWorker,
  testApp,
  testClient,
  testConfig,
  testSql,
  uniqueNumber,
  uniqueTaskQueue,
  workerRuntimeCommand,
  type WorkerProcess,
} from '../helpers';
import { SCHEDULE_SETUP_PATHS, startStallingProxy, type StallingProxy } from '../stalling-grpc-proxy';

const SCHEDULE_WARNING = 'Schedule not set up yet; the worker runs without it and tries again';
let proxy: StallingProxy | undefined;
let worker: WorkerProcess | undefined;

afterAll(async () => {
  await worker?.kill();
  await proxy?.close();
});

type LogLine = {
  level: string;
  message: string;
  scheduleId?: string;
  error?: { name: string; message: string; cause?: unknown };
};
/** The JSON lines of a worker's log (a line still being written is left out). */
const logLines = (output: string): LogLine[] =>
  output.split('\n').flatMap((line) => {
    try {
      return line.startsWith('{') ? [JSON.parse(line) as LogLine] : [];
    } catch {
      return [];
    }
  });

test('with the Schedule calls unanswered, the worker serves a collection request, warns about its Schedules and stops cleanly', async () => {
  proxy = await startStallingProxy(testConfig().temporal.address);
  const taskQueue = uniqueTaskQueue('worker-start');
  worker = await startWorker(taskQueue, {
    TEMPORAL_ADDRESS: proxy.address,
    OUTBOX_SWEEP: 'true',
    RETENTION_SWEEP: 'true',
    SANDBOX_PAYMENT_DELAY_SECONDS: '0',
  });

  // The test's own client speaks to the server directly; the worker only through the proxy.
  const ctx = await testApp(taskQueue);
  const merchant = await createMerchant(ctx.app);
  const created = await merchant.request('/api/collectionrequests', {
    form: {
      phonenumber: uniqueNumber('+256772'),
      amount: '100',
      currency: 'BXC',
      send_instructions: 'true',
      expiry_date: '1 minute',
    },
  });
  expect(created.status).toBe(201);
  await ctx.client.workflow.getHandle(collectionRequestWorkflowId(created.body.id)).result();
  const [row] = await testSql()<
    { status: string }[]
  >`select status from collection_requests where id = ${created.body.id}`;
  expect(row!.status).toBe('successful');

  // Its Schedule calls went out and were held; each Schedule's attempt was abandoned with a warning.
  expect(proxy.stalled()).toContain(SCHEDULE_SETUP_PATHS[0]!);
  const warnings = await eventually(
    'a warning for each Schedule',
    async () => {
      const found = logLines(worker!.output()).filter((line) => line.message === SCHEDULE_WARNING);
      return new Set(found.map((line) => line.scheduleId)).size === 2 && found;
    },
    30_000,
  );
  expect(new Set(warnings.map((line) => line.scheduleId))).toEqual(
    new Set([outboxSweepScheduleId(taskQueue), eventRetentionScheduleId(taskQueue)]),
  );
  expect(warnings[0]).toMatchObject({
    level: 'warn',
    error: { message: expect.stringContaining('did not answer within'), cause: expect.anything() },
  });
  const client = await testClient();
  expect(
    await client.schedule
      .getHandle(outboxSweepScheduleId(taskQueue))
      .describe()
      .then(
        () => 'exists',
        () => 'none',
      ),
  ).toBe('none');

  // A shutdown is not held up by the unanswered calls, and nothing fails on the way out.
  worker.child.kill('SIGTERM');
  await eventually(
    'the worker to exit',
    async () => worker!.child.exitCode !== null || worker!.child.signalCode !== null,
    30_000,
  );
  expect(worker.child.exitCode).toBe(0);
  expect(logLines(worker.output()).filter((line) => line.level === 'error')).toEqual([]);
}, 120_000);

test('a worker that cannot start logs the error that stopped it, and exits non-zero', () => {
  const [command, ...args] = workerRuntimeCommand('src/worker.ts');
  const result = spawnSync(command, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      TASK_QUEUE: uniqueTaskQueue('worker-no-namespace'),
      TEMPORAL_NAMESPACE: 'no-such-namespace',
      WORKER_METRICS_PORT: '0',
    },
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(result.status).toBe(1);
  const errors = logLines(result.stderr).filter((line) => line.level === 'error');
  expect(errors).toEqual([
    expect.objectContaining({
      message: 'worker failed',
      error: expect.objectContaining({ message: expect.stringContaining('no-such-namespace') }),
    }),
  ]);
  expect(result.stderr).not.toContain('IllegalStateError');
}, 70_000);
