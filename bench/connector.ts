/**
 * The connector lifecycle phase of `npm run bench` (BENCH_PHASES=connector): collection requests on
 * MTN Uganda through the MTN MoMo connector, against the project's MoMo simulator on loopback, so
 * every lifecycle takes a real connector call (request to pay, its callback, the status GET that
 * confirms it) where the sweep's BXC requests never leave the sandbox network. Its own worker and
 * API (a task queue of their own, the MTN_MOMO_* variables pointing at the simulator,
 * PUBLIC_BASE_URL at that API, as test/networks/momo.test.ts configures its stack); requests offered
 * at a fixed rate after a warm-up, each paid by the simulator's subscriber, until `successful`.
 *
 * Figures: p50/p99 from sending the POST to the request's row turning `successful` (its `modified`,
 * set by the transaction that credits it: the database's clock, this machine's), CPU seconds per
 * lifecycle of each process (PostgreSQL: all its processes) from the first POST to the last
 * success, and what each lifecycle costs PostgreSQL and the operator (transactions and rows from
 * pg_stat_database, calls the simulator saw).
 *
 * Knobs: BENCH_CONNECTOR_RATE (5 per second), BENCH_CONNECTOR_SECONDS (30), BENCH_CONNECTOR_WARMUP
 * (20 lifecycles first, not measured: the token, the JIT, the connections), BENCH_CONNECTOR_DECISION_MS
 * (200: the subscriber approves after it), BENCH_CONNECTOR_CALLBACK_MS (50: MoMo's callback after the
 * decision), BENCH_CONNECTOR_WAIT_SECONDS (120: bound of the wait for the last `successful`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sql } from '../src/db';
import { asId } from '../src/domain/ids';
import { fundWallet } from '../src/services/merchants/organizations';
import { startMomoSimulator } from '../test/simulators/momo';
import { closedPort, CpuMeter, ms, openLoop, percentile, stopPid, table, waitUntil } from './lib';

export type ConnectorContext = {
  sql: Sql;
  orgId: number;
  apiKey: string;
  /** The Temporal server's process, whose CPU the lifecycles also spend. */
  temporalPid: number;
  section(title: string, body: string): void;
};

const env = process.env;
const number = (name: string, fallback: number, min: number): number => {
  const value = Number(env[name] ?? fallback);
  if (!Number.isFinite(value) || value < min) throw new Error(`${name} must be a number of at least ${min}`);
  return value;
};
const RATE = number('BENCH_CONNECTOR_RATE', 5, 0.1);
const SECONDS = number('BENCH_CONNECTOR_SECONDS', 30, 1);
const WARMUP = Math.round(number('BENCH_CONNECTOR_WARMUP', 20, 0));
const DECISION_MS = number('BENCH_CONNECTOR_DECISION_MS', 200, 0);
const CALLBACK_MS = number('BENCH_CONNECTOR_CALLBACK_MS', 50, 0);
const WAIT_MS = number('BENCH_CONNECTOR_WAIT_SECONDS', 120, 10) * 1000;
const POLL_MS = 100;
const FINAL = ['successful', 'failed', 'expired', 'reversed'];

const CREDENTIALS = {
  collection: {
    subscriptionKey: 'bench-collection-key',
    apiUser: '3b7f2a1c-5d4e-4f6a-8b9c-0d1e2f3a4b5c',
    apiKey: 'bench-collection-secret',
  },
  disbursement: {
    subscriptionKey: 'bench-disbursement-key',
    apiUser: '9c8b7a6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d',
    apiKey: 'bench-disbursement-secret',
  },
};

type DatabaseCounters = { transactions: number; returned: number; inserted: number; updated: number };

/** The bench database's own counters (every backend's, flushed by each within about a second of going idle). */
async function databaseCounters(sql: Sql): Promise<DatabaseCounters> {
  const [row] = await sql<DatabaseCounters[]>`
    select (xact_commit + xact_rollback)::float8 as transactions, (tup_returned + tup_fetched)::float8 as returned,
           tup_inserted::float8 as inserted, tup_updated::float8 as updated
    from pg_stat_database where datname = current_database()`;
  return row!;
}

export async function runConnectorPhase(ctx: ConnectorContext): Promise<void> {
  const { sql } = ctx;
  const momo = await startMomoSimulator({
    ...CREDENTIALS,
    targetEnvironment: 'sandbox',
    decisionDelayMs: DECISION_MS,
    callbackDelayMs: CALLBACK_MS,
  });
  const port = await closedPort();
  const apiUrl = `http://127.0.0.1:${port}`;
  const serviceEnv: Record<string, string> = {
    // A task queue of its own: the bench's first worker (no connector) never takes these requests.
    TASK_QUEUE: 'bench-connector',
    PUBLIC_BASE_URL: apiUrl,
    MTN_MOMO_BASE_URL: momo.url,
    MTN_MOMO_TARGET_ENVIRONMENT: 'sandbox',
    MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: CREDENTIALS.collection.subscriptionKey,
    MTN_MOMO_COLLECTION_API_USER: CREDENTIALS.collection.apiUser,
    MTN_MOMO_COLLECTION_API_KEY: CREDENTIALS.collection.apiKey,
    MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: CREDENTIALS.disbursement.subscriptionKey,
    MTN_MOMO_DISBURSEMENT_API_USER: CREDENTIALS.disbursement.apiUser,
    MTN_MOMO_DISBURSEMENT_API_KEY: CREDENTIALS.disbursement.apiKey,
  };
  const dataDir = env.BENCH_DATA_DIR ?? '/tmp';
  const children: ChildProcess[] = [];
  function startProcess(kind: 'worker' | 'api'): { child: ChildProcess; log: string } {
    const log = join(dataDir, `${kind}-connector.log`);
    const output = openSync(log, 'a');
    const [command, args] =
      kind === 'worker'
        ? [env.BENCH_NODE!, JSON.parse(env.BENCH_WORKER_ARGS!) as string[]]
        : [env.BENCH_BUN!, ['src/server.ts']];
    const child = spawn(command, args, {
      cwd: join(import.meta.dir, '..'),
      env: {
        ...env,
        ...serviceEnv,
        ...(kind === 'worker'
          ? { WORKFLOW_BUNDLE_PATH: env.BENCH_WORKFLOW_BUNDLE!, LOG_LEVEL: 'info' }
          : { PORT: String(port) }),
      },
      stdio: ['ignore', output, output],
    });
    children.push(child);
    return { child, log };
  }

  try {
    const worker = startProcess('worker');
    if (
      !(await waitUntil(() => {
        if (worker.child.exitCode !== null) throw new Error(`the connector worker exited; see ${worker.log}`);
        try {
          return readFileSync(worker.log, 'utf8').includes('"state":"RUNNING"');
        } catch {
          return false;
        }
      }, 120_000))
    )
      throw new Error(`the connector worker did not run within 120 s; see ${worker.log}`);
    const api = startProcess('api');
    if (
      !(await waitUntil(async () => {
        if (api.child.exitCode !== null) throw new Error(`the connector API exited; see ${api.log}`);
        return (await fetch(`${apiUrl}/healthz`).catch(() => null))?.status === 200;
      }, 60_000))
    )
      throw new Error(`the connector API did not answer within 60 s; see ${api.log}`);
    await fundWallet(sql, asId('Organization', ctx.orgId), 'UGX', '1000000000');

    let phoneCounter = 0;
    const postedAt = new Map<number, number>();
    const post = async (): Promise<void> => {
      const phone = `+256772${String(phoneCounter++).padStart(6, '0')}`;
      const sentAt = Date.now();
      const response = await fetch(`${apiUrl}/api/collectionrequests`, {
        method: 'POST',
        headers: { Authorization: `Token ${ctx.apiKey}`, 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          phonenumber: phone,
          amount: '1500',
          currency: 'UGX',
          send_instructions: 'true',
          expiry_date: '1 hour',
        }),
      });
      const text = await response.text();
      if (response.status !== 201) throw new Error(`POST answered ${response.status}: ${text.slice(0, 200)}`);
      postedAt.set((JSON.parse(text) as { id: number }).id, sentAt);
    };
    /** Final requests among those posted, with the time each turned final; polled from the database, one statement every POLL_MS. */
    const finished = new Map<number, { status: string; at: number }>();
    const follow = async (): Promise<boolean> => {
      const open = [...postedAt.keys()].filter((id) => !finished.has(id));
      if (open.length === 0) return true;
      const rows = await sql<{ id: number; status: string; at: number }[]>`
        select id::int as id, status, extract(epoch from modified)::float8 * 1000 as at
        from collection_requests where id = any(${open}::bigint[]) and status = any(${FINAL}::text[])`;
      for (const row of rows) finished.set(row.id, { status: row.status, at: row.at });
      return rows.length === open.length;
    };

    // Warm-up at the same rate: MoMo's token, the connections, the JIT. Not measured.
    if (WARMUP > 0) {
      const warm = await openLoop(RATE, WARMUP / RATE, WARMUP, post);
      if (warm.firstError) throw new Error(`connector warm-up: ${warm.firstError}`);
      if (!(await waitUntil(follow, WAIT_MS, POLL_MS)))
        throw new Error('connector warm-up: not every request ended in time');
    }
    postedAt.clear();
    finished.clear();
    await Bun.sleep(2000);

    const pids = {
      'worker (Node)': worker.child.pid!,
      'API (Bun)': api.child.pid!,
      'Temporal server': ctx.temporalPid,
      'bench client and simulator (Bun)': process.pid,
    };
    const callsBefore = momo.calls().length;
    const countersBefore = await databaseCounters(sql);
    const cpu = new CpuMeter(pids);
    const began = performance.now();
    cpu.start();
    const run = await openLoop(RATE, SECONDS, Math.ceil(RATE * SECONDS), post);
    const allDone = await waitUntil(follow, WAIT_MS, POLL_MS);
    const shares = cpu.stop();
    const seconds = (performance.now() - began) / 1000;
    // pg_stat_database takes each backend's counts when it goes idle (at most once a second).
    await Bun.sleep(2000);
    const countersAfter = await databaseCounters(sql);
    const calls = momo.calls().slice(callsBefore);

    const ended = [...postedAt].filter(([id]) => finished.has(id));
    const successful = ended.filter(([id]) => finished.get(id)!.status === 'successful');
    const latencies = successful.map(([id, sentAt]) => finished.get(id)!.at - sentAt);
    const count = successful.length;
    const perLifecycle = (value: number) => (count > 0 ? value / count : NaN);
    const cpuMs = Object.fromEntries(
      Object.entries(shares).map(([name, share]) => [name, perLifecycle(share * seconds) * 1000]),
    );
    const byApi = new Map<string, number>();
    for (const call of calls)
      byApi.set(`${call.method} ${call.api}`, (byApi.get(`${call.method} ${call.api}`) ?? 0) + 1);
    const delta = (key: keyof DatabaseCounters) => perLifecycle(countersAfter[key] - countersBefore[key]);
    const serviceCpu = ['worker (Node)', 'API (Bun)', 'PostgreSQL'].reduce((sum, name) => sum + (cpuMs[name] ?? 0), 0);

    // One line a script can read, beside the table.
    process.stdout.write(
      `connector-result ${JSON.stringify({
        rate: RATE,
        seconds: SECONDS,
        offered: postedAt.size,
        errors: run.errors,
        successful: count,
        ended: ended.length,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        windowSeconds: seconds,
        cpuMsPerLifecycle: cpuMs,
        serviceCpuMs: serviceCpu,
        transactions: delta('transactions'),
        rowsRead: delta('returned'),
        rowsInserted: delta('inserted'),
        rowsUpdated: delta('updated'),
        operatorCalls: Object.fromEntries([...byApi].map(([name, calls]) => [name, perLifecycle(calls)])),
      })}\n`,
    );
    if (run.firstError) process.stderr.write(`connector phase, first error: ${run.firstError}\n`);

    const cell = (name: string) => ms(cpuMs[name] ?? NaN);
    ctx.section(
      'Connector lifecycle (MTN Uganda through the MoMo connector)',
      [
        table(
          ['offered', 'successful', 'other final', 'not final', 'POST errors', 'p50 ms', 'p99 ms'],
          [
            [
              `${postedAt.size} (${RATE}/s for ${SECONDS} s)`,
              count,
              ended.length - count,
              postedAt.size - ended.length,
              run.errors,
              ms(percentile(latencies, 50)),
              ms(percentile(latencies, 99)),
            ],
          ],
        ),
        '',
        'CPU per lifecycle, ms (from the first POST to the last request final, divided by the successful ones; PostgreSQL: all its processes):',
        '',
        table(
          [
            'worker (Node)',
            'API (Bun)',
            'PostgreSQL',
            'worker + API + PostgreSQL',
            'Temporal server',
            'bench client and simulator (Bun)',
          ],
          [
            [
              cell('worker (Node)'),
              cell('API (Bun)'),
              cell('PostgreSQL'),
              ms(serviceCpu),
              cell('Temporal server'),
              cell('bench client and simulator (Bun)'),
            ],
          ],
        ),
        '',
        `Per lifecycle: ${delta('transactions').toFixed(1)} PostgreSQL transactions, ${delta('returned').toFixed(0)} rows read, ` +
          `${delta('inserted').toFixed(1)} inserted, ${delta('updated').toFixed(1)} updated (pg_stat_database of the bench database: every process, ` +
          `the idle first worker and API included); operator calls: ${[...byApi].map(([name, calls]) => `${name} ${perLifecycle(calls).toFixed(2)}`).join(', ') || 'none'}.`,
        '',
        `Settings: requests of 1500 UGX to new +256772… numbers, send_instructions, offered open-loop at ${RATE}/s for ${SECONDS} s after ${WARMUP} ` +
          `unmeasured ones; the MoMo simulator (test/simulators/momo.ts, target environment sandbox) approves ${DECISION_MS} ms after the request to pay ` +
          `and calls back ${CALLBACK_MS} ms later; the service's worker and API on their own task queue with MTN_MOMO_* at the simulator. ` +
          `Latency: from sending the POST to the request's row turning \`successful\` (its \`modified\`), followed every ${POLL_MS} ms.` +
          (allDone ? '' : ` Not every request ended within ${WAIT_MS / 1000} s.`),
      ].join('\n'),
    );
  } finally {
    for (const child of children) if (child.pid && child.exitCode === null) await stopPid(child.pid);
    await momo.stop();
  }
}
