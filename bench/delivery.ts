/**
 * The webhook delivery phases of `npm run bench` (bench/run.ts runs them last): full lifecycles
 * against a receiver that answers some POSTs past the timeout, against one that closes every
 * connection, at a high keep-alive rate, and offered at twice the sustained ceiling; a backlog of
 * deliveries for one webhook drained after a worker restart; two workers with one killed mid-run;
 * events spread over many merchants' webhooks (contacts, then full lifecycles, then the worker's
 * memory with many webhooks live); a burst of contacts for one webhook whose receiver is dead.
 * After each phase, the check that no delivery was lost. Every phase is bounded in time and count.
 *
 * Knobs (small defaults make a smoke run; the full sizes in bench/README.md):
 * BENCH_DELIVERY_PHASES (comma separated, default all: slow,close,keepalive,overload,backlog,two,spread,spread-lifecycles,burst; empty skips them),
 * BENCH_SLOW_RATE (5), BENCH_SLOW_EVERY (20: one POST in 20 answered late), BENCH_SLOW_DELAY_MS (6000),
 * BENCH_CLOSE_RATE (15), BENCH_KEEPALIVE_RATE (27),
 * BENCH_OVERLOAD_CEILING (default: the sweep's highest sustained rate), BENCH_OVERLOAD_FACTOR (2), BENCH_OVERLOAD_SECONDS (15; full 60),
 * BENCH_BACKLOG (5000; full 100000), BENCH_BACKLOG_WAIT_SECONDS (900: bound of each wait of the backlog phase),
 * BENCH_TWO_WORKERS_RATE (10), BENCH_TWO_WORKERS_SECONDS (12; the kill at half), BENCH_RESTART_AFTER_SECONDS (5; 0: the killed worker stays down),
 * BENCH_SPREAD_MERCHANTS (20; full 200), BENCH_SPREAD_RATE (10: contacts per second, round-robin over the merchants),
 * BENCH_SPREAD_LIFECYCLE_MERCHANTS (20; full 100), BENCH_SPREAD_LIFECYCLE_RATE (20), BENCH_SPREAD_WEBHOOKS (100; full 1000: webhooks live for the memory figure),
 * BENCH_BURST_CONTACTS (2000; full 100000), BENCH_BURST_CLIENTS (16), BENCH_BURST_SECONDS_MAX (60; full 900: bound of the burst and of each of its waits),
 * BENCH_BURST_CONTROL_SECONDS (BENCH_SECONDS: the control run without a webhook), BENCH_BURST_RETRY_SCHEDULE (default: nine equal waits that outlast the dead receiver).
 * BENCH_HANGING_WEBHOOKS (220), BENCH_HANGING_SECONDS (60), BENCH_HANGING_NOISY_RATE (1), BENCH_HANGING_HEALTHY_RATE (2), BENCH_HANGING_DRAIN_SECONDS (420):
 * one merchant's webhooks to receivers that never answer (one host, then a port each) beside a healthy merchant's one webhook.
 * Each lifecycle phase, and the spread of contacts, lasts BENCH_SECONDS.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { createServer as createHttpsServer } from 'node:https';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import type { Sql } from '../src/db';
import { createOrganization, fundWallet } from '../src/services/merchants/organizations';
import {
  alive,
  closedLoop,
  closedPort,
  CpuMeter,
  inBatches,
  mb,
  ms,
  openLoop,
  peakOf,
  percentile,
  RssSampler,
  stopPid,
  table,
  waitUntil,
  windowCounts,
} from './lib';
import {
  historyFacts,
  openRuns,
  runsAliveSince,
  runsOf,
  temporalCost,
  type OpenRuns,
  type TemporalCost,
} from './temporal';

export type DeliveryContext = {
  sql: Sql;
  client: Client;
  apiUrl: string;
  apiKey: string;
  orgId: number;
  noopQueue: string;
  /** Seconds of each lifecycle phase (BENCH_SECONDS). */
  seconds: number;
  /** The sweep's highest sustained rate, if any. */
  ceiling: number | undefined;
  /** Peak VmRSS (kB) of the worker and the API during the sustained-rate sweep. */
  sweepMemory: { worker: number | undefined; api: number | undefined };
  /** Bare one-activity workflows per second (the fan-out phase's baseline) in this run. */
  bareActivityRate: number;
  pids: { temporal: number; api: number; worker: number };
  section(title: string, body: string): void;
};

const env = process.env;
const number = (name: string, fallback: number, min = 0): number => {
  const value = Number(env[name] ?? fallback);
  if (!Number.isFinite(value) || value < min) throw new Error(`${name} must be a number of at least ${min}`);
  return value;
};
const PHASES = (
  env.BENCH_DELIVERY_PHASES ?? 'slow,close,keepalive,overload,backlog,two,spread,spread-lifecycles,burst,hanging'
)
  .split(',')
  .map((name) => name.trim())
  .filter(Boolean);
const SLOW_RATE = number('BENCH_SLOW_RATE', 5, 0.1);
const SLOW_EVERY = number('BENCH_SLOW_EVERY', 20, 1);
const SLOW_DELAY_MS = number('BENCH_SLOW_DELAY_MS', 6000);
const CLOSE_RATE = number('BENCH_CLOSE_RATE', 15, 0.1);
const KEEPALIVE_RATE = number('BENCH_KEEPALIVE_RATE', 27, 0.1);
const OVERLOAD_FACTOR = number('BENCH_OVERLOAD_FACTOR', 2, 1);
const OVERLOAD_SECONDS = number('BENCH_OVERLOAD_SECONDS', 15, 5);
const BACKLOG = Math.round(number('BENCH_BACKLOG', 5000, 1));
const BACKLOG_WAIT_MS = number('BENCH_BACKLOG_WAIT_SECONDS', 900, 10) * 1000;
const TWO_RATE = number('BENCH_TWO_WORKERS_RATE', 10, 0.1);
const TWO_SECONDS = number('BENCH_TWO_WORKERS_SECONDS', 12, 2);
const RESTART_AFTER_SECONDS = number('BENCH_RESTART_AFTER_SECONDS', 5);
const SPREAD_MERCHANTS = Math.round(number('BENCH_SPREAD_MERCHANTS', 20, 1));
const SPREAD_RATE = number('BENCH_SPREAD_RATE', 10, 0.1);
const SPREAD_LIFECYCLE_MERCHANTS = Math.round(number('BENCH_SPREAD_LIFECYCLE_MERCHANTS', 20, 1));
const SPREAD_LIFECYCLE_RATE = number('BENCH_SPREAD_LIFECYCLE_RATE', 20, 0.1);
const SPREAD_WEBHOOKS = Math.round(number('BENCH_SPREAD_WEBHOOKS', 100, 1));
const BURST_CONTACTS = Math.round(number('BENCH_BURST_CONTACTS', 2000, 1));
const BURST_CLIENTS = Math.round(number('BENCH_BURST_CLIENTS', 16, 1));
const BURST_SECONDS_MAX = number('BENCH_BURST_SECONDS_MAX', 60, 5);
const HANGING_WEBHOOKS = Math.round(number('BENCH_HANGING_WEBHOOKS', 220, 1));
const HANGING_SECONDS = number('BENCH_HANGING_SECONDS', 60, 5);
const HANGING_NOISY_RATE = number('BENCH_HANGING_NOISY_RATE', 1, 0.1);
const HANGING_HEALTHY_RATE = number('BENCH_HANGING_HEALTHY_RATE', 2, 0.1);
const HANGING_DRAIN_SECONDS = number('BENCH_HANGING_DRAIN_SECONDS', 420, 10);
/**
 * The burst's retry schedule: nine equal waits long enough that no delivery spends its 10 attempts
 * while the receiver is dead (the burst, then up to half as long for the first attempts, each wait
 * shortened by up to the 20% jitter), short enough that the run stays bounded once it is back.
 */
const BURST_RETRY_SCHEDULE =
  env.BENCH_BURST_RETRY_SCHEDULE ??
  Array.from({ length: 9 }, () => `${Math.ceil((1.5 * BURST_SECONDS_MAX + 30) / (9 * 0.8))}s`).join(',');
/** How long after the bench stops a worker its sticky queues can still time a workflow task out (see the burst phase). */
const STICKY_SETTLE_MS = 15_000;
/** Every execution of the namespace: what the spread phases count, whichever task queue a design runs its workflows on. */
const ALL_EXECUTIONS = '';
const ATTEMPTS = 10;
const WINDOW_MS = 5000;
const STATUS_EVENT = 'collectionrequest.status.changed';

/** Figures and whether each target was met, gathered for the summary section. */
type Verdict = { phase: string; figure: string; target: string; met: boolean | null };

export async function runDeliveryPhases(ctx: DeliveryContext): Promise<void> {
  if (PHASES.length === 0) return;
  const { sql, client } = ctx;
  const runTag = randomUUID().slice(0, 8);
  const verdicts: Verdict[] = [];

  // -------------------------------------------------------------------------------------------
  // Processes the phases start (a restarted worker, a second worker and API), stopped at the end.
  const dataDir = env.BENCH_DATA_DIR ?? '/tmp';
  const spawned: ChildProcess[] = [];
  let spawnCount = 0;
  function startProcess(
    kind: 'worker' | 'api',
    extraEnv: Record<string, string> = {},
  ): { child: ChildProcess; log: string } {
    const log = join(dataDir, `${kind}-delivery-${++spawnCount}.log`);
    const output = openSync(log, 'a');
    const [command, args] =
      kind === 'worker'
        ? [env.BENCH_NODE!, JSON.parse(env.BENCH_WORKER_ARGS!) as string[]]
        : [env.BENCH_BUN!, ['src/server.ts']];
    const child = spawn(command, args, {
      cwd: join(import.meta.dir, '..'),
      env: {
        ...env,
        ...(kind === 'worker' ? { WORKFLOW_BUNDLE_PATH: env.BENCH_WORKFLOW_BUNDLE!, LOG_LEVEL: 'info' } : {}),
        ...extraEnv,
      },
      stdio: ['ignore', output, output],
    });
    spawned.push(child);
    return { child, log };
  }
  async function startWorker(extraEnv: Record<string, string> = {}): Promise<{ pid: number; readySeconds: number }> {
    const began = performance.now();
    const { child, log } = startProcess('worker', extraEnv);
    const ready = await waitUntil(() => {
      if (child.exitCode !== null) throw new Error(`a worker started by the bench exited; see ${log}`);
      try {
        return readFileSync(log, 'utf8').includes('"state":"RUNNING"');
      } catch {
        return false;
      }
    }, 120_000);
    if (!ready) throw new Error(`a worker started by the bench did not run within 120 s; see ${log}`);
    return { pid: child.pid!, readySeconds: (performance.now() - began) / 1000 };
  }
  async function startApi(extraEnv: Record<string, string> = {}): Promise<{ url: string; pid: number }> {
    const port = await closedPort();
    const { child, log } = startProcess('api', { ...extraEnv, PORT: String(port) });
    const url = `http://127.0.0.1:${port}`;
    const ready = await waitUntil(async () => {
      if (child.exitCode !== null) throw new Error(`an API started by the bench exited; see ${log}`);
      return (await fetch(`${url}/healthz`).catch(() => null))?.status === 200;
    }, 60_000);
    if (!ready) throw new Error(`an API started by the bench did not answer within 60 s; see ${log}`);
    return { url, pid: child.pid! };
  }

  // -------------------------------------------------------------------------------------------
  // The receiver: HTTPS with the bench's certificate. `/slow` answers one POST in SLOW_EVERY after
  // SLOW_DELAY_MS (past the sender's 5 s timeout: that attempt fails and is retried), `/close` answers
  // with `Connection: close`, `/floor` takes the floor's POSTs, `/backlog` the backlog's, `/contacts`
  // the spread phases' contact.created deliveries (the first receipt of each contact); every other
  // path answers at once. A request's `successful` webhook counts when answered in time.
  const received = new Map<number, number>();
  const contactReceived = new Map<number, number>();
  const floorReceived = new Map<number, number>();
  const postsByMessage = new Map<string, number>();
  const closeConnections = new Set<string>();
  const counters = { slow: 0, late: 0, close: 0, backlog: 0, backlogFirst: 0, backlogLast: 0 };
  const receiver = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 30,
    tls: { cert: readFileSync(env.BENCH_CERT_FILE!, 'utf8'), key: readFileSync(env.BENCH_KEY_FILE!, 'utf8') },
    async fetch(request, server) {
      const path = new URL(request.url).pathname;
      const body = (await request.json()) as { data?: { id?: number; status?: string } };
      const messageId = request.headers.get('webhook-id');
      if (messageId) postsByMessage.set(messageId, (postsByMessage.get(messageId) ?? 0) + 1);
      if (path === '/slow' && ++counters.slow % SLOW_EVERY === 0) {
        counters.late += 1;
        await Bun.sleep(SLOW_DELAY_MS);
        return new Response('late');
      }
      const now = Date.now();
      if (path === '/floor') {
        if (typeof body.data?.id === 'number') floorReceived.set(body.data.id, now);
      } else if (path === '/contacts') {
        if (typeof body.data?.id === 'number' && !contactReceived.has(body.data.id))
          contactReceived.set(body.data.id, now);
      } else if (path === '/backlog') {
        counters.backlog += 1;
        counters.backlogFirst ||= now;
        counters.backlogLast = now;
      } else if (
        body.data?.status === 'successful' &&
        typeof body.data.id === 'number' &&
        !received.has(body.data.id)
      ) {
        received.set(body.data.id, now);
      }
      if (path === '/close') {
        counters.close += 1;
        const peer = server.requestIP(request);
        closeConnections.add(`${peer?.address}:${peer?.port}`);
        return new Response('ok', { headers: { connection: 'close' } });
      }
      return new Response('ok');
    },
  });
  const receiverUrl = (path: string) => `https://127.0.0.1:${receiver.port}${path}`;

  async function api(
    method: string,
    path: string,
    form?: Record<string, string>,
    toApi = ctx.apiUrl,
    key = ctx.apiKey,
  ): Promise<{ status: number; body: any }> {
    const response = await fetch(`${toApi}${path}`, {
      method,
      headers: {
        Authorization: `Token ${key}`,
        ...(form ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}),
      },
      body: form ? new URLSearchParams(form) : undefined,
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  }
  async function addWebhook(event: string, target: string, key = ctx.apiKey, toApi = ctx.apiUrl): Promise<number> {
    const created = await api('POST', '/api/webhooks', { event, target }, toApi, key);
    if (created.status !== 201)
      throw new Error(`webhook not created: ${created.status} ${JSON.stringify(created.body)}`);
    return created.body.id;
  }
  const pendingOf = async (hookId: number): Promise<number> =>
    (
      await sql<
        { n: number }[]
      >`select count(*)::int as n from webhook_deliveries where webhook_id = ${hookId} and status = 'pending'`
    )[0]!.n;
  /** Waits (bounded) until the webhook has nothing pending (its retries done), then deletes it. What was still pending. */
  async function settleAndRemove(
    hookId: number,
    timeoutMs = 60_000,
    key = ctx.apiKey,
    toApi = ctx.apiUrl,
  ): Promise<number> {
    await waitUntil(async () => (await pendingOf(hookId)) === 0, timeoutMs, 500);
    const left = await pendingOf(hookId);
    const removed = await api('DELETE', `/api/webhooks/${hookId}`, undefined, toApi, key);
    if (removed.status !== 204 && removed.status !== 200)
      throw new Error(`webhook ${hookId} not deleted: ${removed.status}`);
    return left;
  }

  // -------------------------------------------------------------------------------------------
  // Lifecycles (POST with send_instructions → sandbox payment → successful → its webhook received).
  let phone = 0;
  const postedAt = new Map<number, number>();
  async function postLifecycle(toApi: string, key: string): Promise<number> {
    const sentAt = Date.now();
    const created = await api(
      'POST',
      '/api/collectionrequests',
      {
        phonenumber: `+25676${String(phone++).padStart(7, '0')}`,
        amount: '10',
        currency: 'BXC',
        send_instructions: 'true',
        expiry_date: '1 hour',
      },
      toApi,
      key,
    );
    if (created.status !== 201)
      throw new Error(`POST answered ${created.status}: ${JSON.stringify(created.body).slice(0, 200)}`);
    postedAt.set(created.body.id, sentAt);
    return created.body.id;
  }
  const cpuPids = () => ({
    'Temporal server': ctx.pids.temporal,
    'API (Bun)': ctx.pids.api,
    'worker (Node)': ctx.pids.worker,
  });
  type Point = {
    rate: number;
    offered: number;
    completed: number;
    perSecond: number;
    p50: number;
    p99: number;
    postP50: number;
    postP99: number;
    began: number;
    offerEnded: number;
    receipts: number[];
    cpu: Record<string, number>;
    workerRss: number | undefined;
    apiRss: number | undefined;
  };
  /** Lifecycles offered at `rate` for `seconds`, round-robin over the APIs and the merchants' keys, each awaited (bounded by `waitMs`). */
  async function lifecycles(
    rate: number,
    seconds: number,
    apis: string[],
    waitMs: number,
    during?: () => Promise<void>,
    keys = [ctx.apiKey],
  ): Promise<Point> {
    const ids: number[] = [];
    const cpu = new CpuMeter(cpuPids());
    const rss = new RssSampler({ api: ctx.pids.api, worker: ctx.pids.worker });
    cpu.start();
    rss.start();
    const began = Date.now();
    const meanwhile = during?.();
    const run = await openLoop(rate, seconds, Math.ceil(rate * seconds), async (index) => {
      ids.push(await postLifecycle(apis[index % apis.length]!, keys[index % keys.length]!));
    });
    const offerEnded = Date.now();
    if (run.firstError) process.stderr.write(`lifecycles at ${rate}/s, first error: ${run.firstError}\n`);
    await meanwhile;
    await waitUntil(() => ids.every((id) => received.has(id)), waitMs, 100);
    const usage = cpu.stop();
    rss.stop();
    const done = ids.filter((id) => received.has(id));
    const receipts = done.map((id) => received.get(id)!);
    const latencies = done.map((id) => received.get(id)! - postedAt.get(id)!);
    const span = (Math.max(...receipts) - began) / 1000;
    return {
      rate,
      offered: Math.ceil(rate * seconds),
      completed: done.length,
      perSecond: span > 0 ? done.length / span : NaN,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      postP50: percentile(run.latencies, 50),
      postP99: percentile(run.latencies, 99),
      began,
      offerEnded,
      receipts,
      cpu: usage,
      workerRss: peakOf(rss, 'worker'),
      apiRss: peakOf(rss, 'api'),
    };
  }
  /** The floor at `rate`: one workflow whose one activity POSTs a webhook-sized body to the receiver, from the start call to the receipt. */
  let floorCounter = 0;
  async function floor(
    rate: number,
    seconds: number,
  ): Promise<{ offered: number; completed: number; p50: number; p99: number }> {
    const started = new Map<number, number>();
    await openLoop(rate, seconds, Math.ceil(rate * seconds), async () => {
      const id = floorCounter++;
      started.set(id, Date.now());
      const body = JSON.stringify({
        hook: { id: 1, user: 1, event: STATUS_EVENT, target: receiverUrl('/floor') },
        data: { id, status: 'successful', padding: 'x'.repeat(1200) },
      });
      await client.workflow.start('benchNotify', {
        taskQueue: ctx.noopQueue,
        workflowId: `bench-delivery-floor-${runTag}-${id}`,
        args: [{ url: receiverUrl('/floor'), body }],
      });
    });
    await waitUntil(() => [...started.keys()].every((id) => floorReceived.has(id)), 60_000, 100);
    const latencies = [...started]
      .filter(([id]) => floorReceived.has(id))
      .map(([id, at]) => floorReceived.get(id)! - at);
    return {
      offered: started.size,
      completed: latencies.length,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
    };
  }
  // A process that ended during the phase (the killed worker) has no figure.
  const cores = (value: number | undefined) => (value === undefined || value < 0 ? 'n/a' : value.toFixed(2));
  const cpuCell = (cpu: Record<string, number>) =>
    `${cores(cpu['Temporal server'])} / ${cores(cpu['worker (Node)'])} / ${cores(cpu['API (Bun)'])} / ${cores(cpu.PostgreSQL)}`;
  const lifecycleRow = (name: string, point: Point): (string | number)[] => [
    name,
    point.rate,
    `${point.completed} / ${point.offered}`,
    point.perSecond.toFixed(1),
    ms(point.p50),
    ms(point.p99),
    `${mb(point.workerRss)} / ${mb(point.apiRss)}`,
    cpuCell(point.cpu),
  ];
  /**
   * The delivery's own share of a lifecycle, from the attempt log of the phase's webhooks: from each
   * event's commit to its first attempt's start (the wait), and the POST itself.
   */
  async function deliveryShare(hookIds: number | number[]): Promise<string> {
    const hooks = typeof hookIds === 'number' ? [hookIds] : hookIds;
    const [row] = await sql<{ wait50: number; wait99: number; post50: number; post99: number; attempts: number }[]>`
      select percentile_cont(0.5) within group (order by extract(epoch from a.started_at - e.created) * 1000)::float8 as wait50,
             percentile_cont(0.99) within group (order by extract(epoch from a.started_at - e.created) * 1000)::float8 as wait99,
             percentile_cont(0.5) within group (order by a.duration_ms)::float8 as post50,
             percentile_cont(0.99) within group (order by a.duration_ms)::float8 as post99, count(*)::int as attempts
      from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id join events e on e.id = d.event_id
      where d.webhook_id = any(${hooks}::bigint[]) and a.attempt = 1`;
    return (
      `Delivery's own share (first attempts of the phase's ${row!.attempts} deliveries): event committed → POST started p50 ${ms(row!.wait50)} / p99 ${ms(row!.wait99)} ms; ` +
      `the POST p50 ${ms(row!.post50)} / p99 ${ms(row!.post99)} ms; the rest of a lifecycle's latency is the request's own workflow.`
    );
  }
  const floorRow = (
    rate: number,
    point: { offered: number; completed: number; p50: number; p99: number },
  ): (string | number)[] => [
    'floor (one workflow, one POST activity)',
    rate,
    `${point.completed} / ${point.offered}`,
    '',
    ms(point.p50),
    ms(point.p99),
    '',
    '',
  ];
  const LIFECYCLE_HEADER = [
    'run',
    'offered per second',
    'completed / offered',
    'completed per second',
    'p50 ms',
    'p99 ms',
    'peak RSS MiB worker / API',
    'CPU cores Temporal / worker / API / PostgreSQL',
  ];

  // -------------------------------------------------------------------------------------------
  // No delivery lost: every row delivered, failed after its 10 attempts, cancelled, gone, or pending with a due time.
  async function lossCheck(): Promise<{ text: string; lost: number }> {
    const rows = await sql<{ status: string; ok: boolean; n: number }[]>`
      select d.status,
             (d.status = 'delivered' or (d.status = 'failed' and coalesce(a.n, 0) = ${ATTEMPTS}) or d.status in ('cancelled', 'gone')
              or (d.status = 'pending' and d.next_attempt_at is not null)) as ok,
             count(*)::int as n
      from webhook_deliveries d left join (select delivery_id, count(*)::int as n from webhook_delivery_attempts group by delivery_id) a on a.delivery_id = d.id
      group by 1, 2 order by 1, 2`;
    const lost = rows.filter((row) => !row.ok).reduce((sum, row) => sum + row.n, 0);
    const byStatus = rows
      .filter((row) => row.ok)
      .map((row) => `${row.n} ${row.status}`)
      .join(', ');
    return {
      lost,
      text: `**No delivery lost: ${lost === 0 ? 'yes' : `no, ${lost} rows in no accepted state`}** (all ${rows.reduce((sum, row) => sum + row.n, 0)} delivery rows of the run: ${byStatus || 'none'}; pending ones have their next attempt due).`,
    };
  }
  async function phaseSection(title: string, body: string[], phase: string): Promise<void> {
    const check = await lossCheck();
    verdicts.push({
      phase,
      figure: `${check.lost} rows lost`,
      target: 'no delivery lost (check after the phase)',
      met: check.lost === 0,
    });
    ctx.section(title, [...body, '', check.text].join('\n'));
  }
  const factor = (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)}×` : 'n/a');
  const allDone = (point: Point) => point.completed === point.offered;

  // -------------------------------------------------------------------------------------------
  // Receivers that accept connections and read each request, then never answer until `answer()`:
  // from then on every request, held ones included, gets 200. `count` servers, each on its own port.
  async function hangingReceivers(count: number) {
    const tls = { cert: readFileSync(env.BENCH_CERT_FILE!, 'utf8'), key: readFileSync(env.BENCH_KEY_FILE!, 'utf8') };
    const held = new Set<ServerResponse>();
    const state = { answering: false, most: 0 };
    const servers = await inBatches(
      Array.from({ length: count }, (_, index) => index),
      16,
      async () => {
        const server = createHttpsServer(tls, (request, response) => {
          request.resume();
          request.on('end', () => {
            if (state.answering) return void response.end('ok');
            held.add(response);
            state.most = Math.max(state.most, held.size);
            response.on('close', () => held.delete(response));
          });
        });
        server.keepAliveTimeout = 30_000;
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        return server;
      },
    );
    const portOf = (index: number) => (servers[index % servers.length]!.address() as AddressInfo).port;
    return {
      url: (index: number, path: string) => `https://127.0.0.1:${portOf(index)}${path}`,
      mostInFlight: () => state.most,
      answer: () => {
        state.answering = true;
        for (const response of held) if (!response.writableEnded) response.end('ok');
      },
      close: async () => {
        for (const server of servers) server.closeAllConnections();
        await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
      },
    };
  }

  // -------------------------------------------------------------------------------------------
  // Merchants of the spread and burst phases: organizations of their own, each with its API key and
  // a funded BXC wallet, made as `npm run admin -- org create` and `wallet fund` make them (the
  // operator's side; everything a merchant does after that goes through the API).
  type Merchant = { orgId: number; key: string };
  const merchantPool: Merchant[] = [];
  async function newMerchant(name: string): Promise<Merchant> {
    const created = await createOrganization(sql, `${name} ${runTag}`);
    await fundWallet(sql, created.organization.id, 'BXC', '1000000000');
    return { orgId: Number(created.organization.id), key: created.apiKey };
  }
  /** The first `count` merchants of the pool, made when missing (the spread phases share them). */
  async function spreadMerchants(count: number): Promise<Merchant[]> {
    const missing = Array.from(
      { length: Math.max(0, count - merchantPool.length) },
      (_, index) => merchantPool.length + index + 1,
    );
    merchantPool.push(...(await inBatches(missing, 8, (number) => newMerchant(`Bench spread merchant ${number}`))));
    return merchantPool.slice(0, count);
  }
  /** One webhook per merchant (each its own), on `event`, to `target`. */
  const webhooksOf = (merchants: Merchant[], event: string, target: string) =>
    inBatches(merchants, 8, async (merchant) => ({ merchant, hookId: await addWebhook(event, target, merchant.key) }));
  /** Waits (bounded, for all of them together) until the webhooks have nothing pending, then deletes them. What was still pending. */
  async function removeWebhooks(hooks: { merchant: Merchant; hookId: number }[], timeoutMs = 30_000): Promise<number> {
    const ids = hooks.map((hook) => hook.hookId);
    await waitUntil(
      async () =>
        (
          await sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries where webhook_id = any(${ids}::bigint[]) and status = 'pending'`
        )[0]!.n === 0,
      timeoutMs,
      500,
    );
    const left = await inBatches(hooks, 8, ({ merchant, hookId }) => settleAndRemove(hookId, 0, merchant.key));
    return left.reduce((sum, count) => sum + count, 0);
  }

  /** A contact created through the API by the merchant whose key is given: its id and when the 201 came back. */
  let contactNumber = 0;
  async function postContact(key: string, toApi = ctx.apiUrl): Promise<{ id: number; answeredAt: number }> {
    const created = await api(
      'POST',
      '/api/contacts',
      {
        phone_number: `+25670${String(contactNumber++).padStart(7, '0')}`,
        first_name: 'Bench',
        last_name: `Contact ${contactNumber}`,
      },
      toApi,
      key,
    );
    if (created.status !== 201)
      throw new Error(`contact not created: ${created.status} ${JSON.stringify(created.body).slice(0, 200)}`);
    return { id: created.body.id, answeredAt: Date.now() };
  }

  /**
   * Temporal's work since `since` (every execution of the namespace, bench/temporal.ts, as the sweep
   * counts it per lifecycle), read again every 2 s until the histories stop growing (at most 30 s), so
   * what the phase's runs did after its last delivery (a sender lingering, a run going idle) counts too.
   */
  async function settledCost(since: Date, before: OpenRuns): Promise<TemporalCost> {
    let cost = await temporalCost(client, ALL_EXECUTIONS, since, before);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      await Bun.sleep(2000);
      const again = await temporalCost(client, ALL_EXECUTIONS, since, before);
      const settled = again.historyEvents === cost.historyEvents && again.executions === cost.executions;
      cost = again;
      if (settled) break;
    }
    return cost;
  }
  const perUnit = (cost: TemporalCost, units: number) =>
    units > 0
      ? `${(cost.executions / units).toFixed(2)} / ${(cost.historyEvents / units).toFixed(2)} / ${(cost.visibilityWrites / units).toFixed(2)}`
      : 'n/a';

  try {
    // -----------------------------------------------------------------------------------------
    // 1. Slow receiver: one POST in SLOW_EVERY answered after SLOW_DELAY_MS, against a healthy receiver and the floor.
    if (PHASES.includes('slow')) {
      const healthyHook = await addWebhook(STATUS_EVENT, receiverUrl('/healthy'));
      const healthy = await lifecycles(SLOW_RATE, ctx.seconds, [ctx.apiUrl], 60_000);
      await settleAndRemove(healthyHook);
      const slowHook = await addWebhook(STATUS_EVENT, receiverUrl('/slow'));
      const late = counters.late;
      const slow = await lifecycles(SLOW_RATE, ctx.seconds, [ctx.apiUrl], 120_000);
      const slowLeft = await settleAndRemove(slowHook);
      const floorPoint = await floor(SLOW_RATE, ctx.seconds);
      const ratio = slow.p50 / healthy.p50;
      const met = ratio <= 2 && allDone(slow);
      verdicts.push({
        phase: 'slow receiver',
        figure: `p50 ${ms(slow.p50)} ms = ${factor(ratio)} the healthy run's ${ms(healthy.p50)} ms; ${slow.completed} / ${slow.offered} completed`,
        target: 'p50 within 2× of healthy, every lifecycle completed',
        met,
      });
      await phaseSection(
        'Delivery: slow receiver',
        [
          table(LIFECYCLE_HEADER, [
            lifecycleRow('healthy receiver', healthy),
            lifecycleRow(`slow receiver (1 POST in ${SLOW_EVERY} after ${SLOW_DELAY_MS / 1000} s)`, slow),
            floorRow(SLOW_RATE, floorPoint),
          ]),
          '',
          `**Slow p50 / healthy p50: ${factor(ratio)}** (target within 2×, every lifecycle completed: ${met ? 'met' : 'not met'}); slow p99 ${ms(slow.p99)} ms. ` +
            `${counters.late - late} POSTs were answered late (the sender's 5 s timeout: each failed and was retried after WEBHOOK_RETRY_SCHEDULE's first delay); ` +
            `a lifecycle completes when its \`successful\` webhook is answered in time. Still pending when the webhook was deleted: ${slowLeft}. Lifecycles offered for ${ctx.seconds} s. ` +
            `Healthy: ${await deliveryShare(healthyHook)} Slow: ${await deliveryShare(slowHook)}`,
        ],
        'slow receiver',
      );
    }

    // -----------------------------------------------------------------------------------------
    // 2. Closing receiver: every answer with `Connection: close`, a connection per POST.
    if (PHASES.includes('close')) {
      const hook = await addWebhook(STATUS_EVENT, receiverUrl('/close'));
      const posts = counters.close;
      const connections = closeConnections.size;
      const point = await lifecycles(CLOSE_RATE, ctx.seconds, [ctx.apiUrl], 60_000);
      await settleAndRemove(hook);
      const floorPoint = await floor(CLOSE_RATE, ctx.seconds);
      const met = allDone(point) && point.p99 < 2000;
      verdicts.push({
        phase: 'closing receiver',
        figure: `${point.completed} / ${point.offered} at ${CLOSE_RATE}/s, p99 ${ms(point.p99)} ms`,
        target: `${CLOSE_RATE}/s sustained with p99 under 2 s`,
        met,
      });
      await phaseSection(
        'Delivery: receiver closing every connection',
        [
          table(LIFECYCLE_HEADER, [
            lifecycleRow('receiver answering `Connection: close`', point),
            floorRow(CLOSE_RATE, floorPoint),
          ]),
          '',
          `**${met ? 'Sustained' : 'Not sustained'}: ${point.completed} / ${point.offered} completed, p99 ${ms(point.p99)} ms** (target ${CLOSE_RATE}/s with p99 under 2 s). ` +
            `${counters.close - posts} POSTs over ${closeConnections.size - connections} connections (client ports seen by the receiver). The floor opens a connection per POST too (\`agent: false\`). ${await deliveryShare(hook)}`,
        ],
        'closing receiver',
      );
    }

    // -----------------------------------------------------------------------------------------
    // 3. Keep-alive receiver at KEEPALIVE_RATE.
    if (PHASES.includes('keepalive')) {
      const hook = await addWebhook(STATUS_EVENT, receiverUrl('/healthy'));
      const point = await lifecycles(KEEPALIVE_RATE, ctx.seconds, [ctx.apiUrl], 60_000);
      await settleAndRemove(hook);
      const floorPoint = await floor(KEEPALIVE_RATE, ctx.seconds);
      const met = allDone(point) && point.p99 < 1000;
      verdicts.push({
        phase: 'keep-alive receiver',
        figure: `${point.completed} / ${point.offered} at ${KEEPALIVE_RATE}/s, p99 ${ms(point.p99)} ms`,
        target: `${KEEPALIVE_RATE}/s with p99 under 1 s (moonshot)`,
        met,
      });
      await phaseSection(
        `Delivery: keep-alive receiver at ${KEEPALIVE_RATE} per second`,
        [
          table(LIFECYCLE_HEADER, [lifecycleRow('keep-alive receiver', point), floorRow(KEEPALIVE_RATE, floorPoint)]),
          '',
          `**${point.completed} / ${point.offered} completed, p99 ${ms(point.p99)} ms** (moonshot target: p99 under 1 s: ${met ? 'met' : 'not met'}; sustained as the sweep counts it, p99 under 2 s: ${allDone(point) && point.p99 < 2000 ? 'yes' : 'no'}). ${await deliveryShare(hook)}`,
        ],
        'keep-alive receiver',
      );
    }

    // -----------------------------------------------------------------------------------------
    // 4. Overload: twice the ceiling offered; completions per 5-s window against the ceiling, then the drain.
    if (PHASES.includes('overload')) {
      const ceiling = env.BENCH_OVERLOAD_CEILING ? number('BENCH_OVERLOAD_CEILING', 10, 0.1) : (ctx.ceiling ?? 10);
      const offered = ceiling * OVERLOAD_FACTOR;
      const hook = await addWebhook(STATUS_EVENT, receiverUrl('/healthy'));
      const point = await lifecycles(offered, OVERLOAD_SECONDS, [ctx.apiUrl], BACKLOG_WAIT_MS);
      await settleAndRemove(hook);
      const windows = windowCounts(point.receipts, point.began, point.offerEnded, WINDOW_MS).map(
        (count) => count / (WINDOW_MS / 1000),
      );
      const lowest = Math.min(...windows);
      const lastReceipt = Math.max(...point.receipts);
      const drainSeconds = (lastReceipt - point.offerEnded) / 1000;
      const met = lowest >= 0.9 * ceiling && allDone(point);
      verdicts.push({
        phase: 'overload',
        figure: `lowest 5-s window ${lowest.toFixed(1)}/s = ${((lowest / ceiling) * 100).toFixed(0)}% of ${ceiling}/s; drained ${allDone(point) ? `${drainSeconds.toFixed(1)} s after the offer stopped` : 'not within the bound'}`,
        target: 'every 5-s window ≥ 90% of the ceiling; the backlog drains',
        met,
      });
      await phaseSection(
        'Delivery: overload at twice the ceiling',
        [
          table(
            [
              'ceiling (per second)',
              'offered per second',
              'seconds offered',
              'completed / offered',
              'completions per second in each 5-s window of the offer',
              'lowest / ceiling',
              'drain after the offer stopped (s)',
              'lifecycle p50 / p99 ms',
              'POST p50 / p99 ms',
              'peak RSS MiB worker / API',
            ],
            [
              [
                ceiling,
                offered,
                OVERLOAD_SECONDS,
                `${point.completed} / ${point.offered}`,
                windows.map((value) => value.toFixed(1)).join(', '),
                `${((lowest / ceiling) * 100).toFixed(0)}%`,
                allDone(point) ? drainSeconds.toFixed(1) : `not drained in ${BACKLOG_WAIT_MS / 1000} s`,
                `${ms(point.p50)} / ${ms(point.p99)}`,
                `${ms(point.postP50)} / ${ms(point.postP99)}`,
                `${mb(point.workerRss)} / ${mb(point.apiRss)}`,
              ],
            ],
          ),
          '',
          `**Lowest 5-s window: ${lowest.toFixed(1)} completions per second, ${((lowest / ceiling) * 100).toFixed(0)}% of the ceiling** (target ≥ 90% throughout: ${met ? 'met' : 'not met'}). ` +
            `Ceiling: ${env.BENCH_OVERLOAD_CEILING ? 'BENCH_OVERLOAD_CEILING' : ctx.ceiling ? "the sweep's highest sustained rate" : 'none sustained in the sweep, 10 assumed'}. ` +
            `Windows are whole 5-s windows from the first POST to the last one offered; the drain is from the last POST offered to the last \`successful\` webhook received. ` +
            `CPU over the phase and its drain (cores, Temporal / worker / API / PostgreSQL): ${cpuCell(point.cpu)}. ${await deliveryShare(hook)}`,
        ],
        'overload',
      );
    }

    // -----------------------------------------------------------------------------------------
    // 5. Backlog: BACKLOG deliveries waiting for one webhook whose receiver refuses connections,
    // first attempts failed, the worker restarted, the dispatchers' histories checked, then the receiver back.
    if (PHASES.includes('backlog')) {
      const deadPort = await closedPort();
      const hook = await addWebhook('contact.created', `https://127.0.0.1:${deadPort}/backlog`);
      const insertStarted = performance.now();
      // As recordEvent records them: the event (its data the contact object of serializeContact, key
      // order kept: the column is json) and a delivery row per live webhook of its type.
      await sql`
        with contact as (
          select g, ${ctx.orgId}::bigint as org, to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as at
          from generate_series(1, ${BACKLOG}::int) g),
        event as (
          insert into events (organization_id, type, data, author)
          select org, 'contact.created', json_build_object(
            'id', 900000000 + g, 'organization', org, 'first_name', 'Backlog', 'last_name', 'Contact ' || g, 'email', null,
            'phone_number', '+25675' || lpad(g::text, 7, '0'), 'type', 'other', 'status', 'active', 'metadata', json_build_object(),
            'created', at, 'modified', at, 'author', null, 'updated_by', null), null
          from contact order by g
          returning id, organization_id)
        insert into webhook_deliveries (workflow_id, organization_id, webhook_id, event_id, redelivery)
        select 'webhook-delivery-' || event.id || '-' || w.id, w.organization_id, w.id, event.id, false
        from event join webhooks w on w.id = ${hook}`;
      const insertSeconds = (performance.now() - insertStarted) / 1000;
      const total = BACKLOG + 1;
      const attempted = async () =>
        (
          await sql<{ n: number }[]>`
        select count(*)::int as n from webhook_deliveries where webhook_id = ${hook} and (next_attempt >= 2 or status <> 'pending')`
        )[0]!.n;
      // One contact through the API after them (its commit notifies the dispatch pool).
      const wakeStarted = Date.now();
      const woke = await api('POST', '/api/contacts', {
        phone_number: `+25674${runTag.replace(/\D/g, '').padEnd(7, '0').slice(0, 7)}`,
        first_name: 'Backlog',
        last_name: 'Wake',
      });
      if (woke.status !== 201) throw new Error(`contact not created: ${woke.status} ${JSON.stringify(woke.body)}`);
      const rss = new RssSampler({ api: ctx.pids.api, worker: ctx.pids.worker });
      rss.start();
      // Refused from the first POSTs on, the receiver is probed (docs/architecture.md, How the pool shares itself): the rest wait.
      const probed = async () =>
        (
          await sql<{ probed: boolean }[]>`
        select probing_since is not null as probed from webhook_receivers where origin = ${`https://127.0.0.1:${deadPort}`}`
        )[0]?.probed === true;
      const firstDone = await waitUntil(probed, BACKLOG_WAIT_MS, 1000);
      const firstSeconds = (Date.now() - wakeStarted) / 1000;
      const firstCount = await attempted();
      const failedWorkerRss = peakOf(rss, 'worker');
      rss.stop();

      // The worker restarted (SIGTERM, then a new one): the dispatchers go on in the new one.
      const stopped = await stopPid(ctx.pids.worker, 'SIGTERM', 30_000);
      const restarted = await startWorker();
      ctx.pids.worker = restarted.pid;
      const afterRestart = await attempted();
      await Bun.sleep(15_000);
      const movedAfterRestart = (
        await sql<{ n: number }[]>`
        select count(*)::int as n from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id
        where d.webhook_id = ${hook} and a.started_at > now() - interval '15 seconds'`
      )[0]!.n;

      // The receiver back: the webhook pointed at a live receiver, the pending rows due now (the bench
      // skips the retry waits), and one more commit.
      const backlogBefore = counters.backlog;
      const drainStarted = Date.now();
      await sql`update webhooks set target = ${receiverUrl('/backlog')} where id = ${hook}`;
      await sql`update webhook_deliveries set next_attempt_at = now() where webhook_id = ${hook} and status = 'pending'`;
      const wake2 = await api('POST', '/api/contacts', {
        phone_number: `+25673${runTag.replace(/\D/g, '').padEnd(7, '1').slice(0, 7)}`,
        first_name: 'Backlog',
        last_name: 'Back',
      });
      if (wake2.status !== 201) throw new Error(`contact not created: ${wake2.status}`);
      const drainRss = new RssSampler({ api: ctx.pids.api, worker: ctx.pids.worker });
      drainRss.start();
      const delivered = async () =>
        (
          await sql<
            { n: number }[]
          >`select count(*)::int as n from webhook_deliveries where webhook_id = ${hook} and status = 'delivered'`
        )[0]!.n;
      const progress: [number, number][] = [];
      const drained = await waitUntil(
        async () => {
          const count = await delivered();
          progress.push([Date.now(), count]);
          return count >= total + 1;
        },
        BACKLOG_WAIT_MS,
        1000,
      );
      drainRss.stop();
      const deliveredCount = await delivered();
      const drainSeconds = ((counters.backlogLast || Date.now()) - drainStarted) / 1000;
      const rate = (counters.backlog - backlogBefore) / drainSeconds;
      // The steadiest stretch: deliveries per second over the middle of the drain (10% to 90% delivered).
      const at = (share: number) => progress.find(([, count]) => count >= share * (total + 1));
      const [t10, c10] = at(0.1) ?? [NaN, NaN];
      const [t90, c90] = at(0.9) ?? [NaN, NaN];
      const middleRate = (c90 - c10) / ((t90 - t10) / 1000);

      // The pool that sent it: every run of each dispatcher (webhook-dispatcher-<task queue>-<slot>).
      const serviceQueue = process.env.TASK_QUEUE ?? 'collections';
      const dispatcherRuns = (
        await Promise.all(
          [0, 1].map((slot) => runsOf(client, `webhook-dispatcher-${serviceQueue}-${slot}`).catch(() => [])),
        )
      ).flat();
      const history = await historyFacts(client, dispatcherRuns);
      await settleAndRemove(hook, 10_000);
      const historyMet =
        history.slowTasks === 0 && history.failed === 0 && history.timedOut === 0 && history.maxInputBytes < 256 * 1024;
      const rateMet = drained && rate >= 200;
      verdicts.push({
        phase: "backlog: dispatchers' histories",
        figure: `longest workflow task ${ms(history.maxTaskMs)} ms, ${history.failed} failed, ${history.timedOut} timed out, largest run input ${history.maxInputBytes} bytes`,
        target: 'no task over 1 s, none failed or timed out, each input under 256 KiB',
        met: historyMet,
      });
      verdicts.push({
        phase: 'backlog: drain',
        figure: `${deliveredCount} of ${total + 1} delivered at ${rate.toFixed(0)} per second`,
        target: '≥ 200 deliveries per second',
        met: rateMet,
      });
      await phaseSection(
        `Delivery: a backlog of ${BACKLOG} deliveries for one webhook`,
        [
          table(
            ['step', 'figure'],
            [
              [
                'backlog recorded (one statement: events and delivery rows, as recordEvent records them)',
                `${BACKLOG} in ${insertSeconds.toFixed(1)} s`,
              ],
              [
                'refused (closed port) until the receiver is probed, from the wake-up',
                `${firstCount} of ${total} attempted in ${firstSeconds.toFixed(1)} s${firstDone ? '' : ', bound reached'}; worker peak RSS ${mb(failedWorkerRss)} MiB`,
              ],
              [
                'worker restart (SIGTERM, then a new worker)',
                `old worker ended in ${stopped.seconds.toFixed(1)} s${stopped.forced ? ' (killed after 30 s)' : ''}; new one running in ${restarted.readySeconds.toFixed(1)} s; ${movedAfterRestart} attempts logged in the 15 s after (rows attempted at the restart: ${afterRestart})`,
              ],
              [
                "the dispatchers' histories (every run, after the drain)",
                `${history.runs} runs, ${history.events} events; longest workflow task (started → completed) ${ms(history.maxTaskMs)} ms, ${history.slowTasks} over 1 s; ${history.failed} WorkflowTaskFailed, ${history.timedOut} WorkflowTaskTimedOut; largest run input ${history.maxInputBytes} bytes`,
              ],
              [
                'drain after the receiver came back',
                drained
                  ? `${deliveredCount} delivered in ${drainSeconds.toFixed(1)} s: **${rate.toFixed(0)} per second** (${middleRate.toFixed(0)} per second from 10% to 90%)`
                  : `${deliveredCount} of ${total + 1} delivered within the bound of ${BACKLOG_WAIT_MS / 1000} s`,
              ],
              ['POSTs received at the live receiver', String(counters.backlog - backlogBefore)],
              [
                'peak RSS during the drain, worker / API (MiB)',
                `${mb(peakOf(drainRss, 'worker'))} / ${mb(peakOf(drainRss, 'api'))}`,
              ],
              ['baseline: bare one-activity workflows per second (fan-out phase)', ctx.bareActivityRate.toFixed(0)],
            ],
          ),
          '',
          `Targets: no workflow task over 1 s, none failed or timed out, each continue-as-new input under 256 KiB (${historyMet ? 'met' : 'not met'}); ` +
            `≥ 200 deliveries per second draining (${rateMet ? 'met' : 'not met'}). ` +
            'The webhook (on `contact.created`) first points at a closed port; its events and delivery rows are inserted in bulk (one contact created through the API follows them). ' +
            "When every row has failed its first attempt the worker is restarted; then the webhook's target is updated to the live receiver and its pending rows made due now " +
            "(`update webhook_deliveries set next_attempt_at = now() where webhook_id = … and status = 'pending'`: how the bench skips the retry waits), with one more contact through the API. " +
            'Rate: POSTs received over the time from that update to the last one.',
        ],
        'backlog',
      );
    }

    // -----------------------------------------------------------------------------------------
    // 6. Two workers and two APIs (the load split between them); one worker SIGKILLed mid-run.
    if (PHASES.includes('two')) {
      const second = await startApi();
      const otherWorker = await startWorker();
      const hook = await addWebhook(STATUS_EVENT, receiverUrl('/two'));
      let killedAt = 0;
      let restartedIn = NaN;
      const point = await lifecycles(TWO_RATE, TWO_SECONDS, [ctx.apiUrl, second.url], 300_000, async () => {
        await Bun.sleep((TWO_SECONDS * 1000) / 2);
        killedAt = Date.now();
        await stopPid(ctx.pids.worker, 'SIGKILL');
        if (RESTART_AFTER_SECONDS > 0) {
          await Bun.sleep(RESTART_AFTER_SECONDS * 1000);
          const again = await startWorker();
          ctx.pids.worker = again.pid;
          restartedIn = again.readySeconds;
        } else {
          ctx.pids.worker = otherWorker.pid;
        }
      });
      const left = await settleAndRemove(hook, 120_000);
      const rows = await sql<{ eventId: number; attempts: number; unknown: number; status: string }[]>`
        select d.event_id as "eventId", count(a.attempt)::int as attempts, d.status,
               count(*) filter (where a.error like 'The sender stopped during this attempt%')::int as unknown
        from webhook_deliveries d left join webhook_delivery_attempts a on a.delivery_id = d.id
        where d.webhook_id = ${hook} and not d.redelivery group by d.id`;
      let over = 0;
      let resent = 0;
      let maxPosts = 0;
      for (const row of rows) {
        const posts = postsByMessage.get(`msg_${row.eventId}_${hook}`) ?? 0;
        if (posts > row.attempts) over += 1;
        if (posts > 1) resent += 1;
        maxPosts = Math.max(maxPosts, posts);
      }
      const unknown = rows.reduce((sum, row) => sum + row.unknown, 0);
      const killedLate = point.receipts.length > 0 ? point.receipts.filter((time) => time > killedAt) : [];
      const met = allDone(point) && over === 0;
      verdicts.push({
        phase: 'two workers, one killed',
        figure: `${point.completed} / ${point.offered} completed; ${over} deliveries with more POSTs than attempts logged`,
        target: 'every lifecycle completed, POSTs ≤ attempts logged',
        met,
      });
      await phaseSection(
        'Delivery: two workers and two APIs, one worker killed mid-run',
        [
          table(LIFECYCLE_HEADER, [
            lifecycleRow(
              `two workers, two APIs (requests alternating), one worker SIGKILLed after ${TWO_SECONDS / 2} s`,
              point,
            ),
          ]),
          '',
          `**${point.completed} / ${point.offered} lifecycles completed** (p50 ${ms(point.p50)} ms, p99 ${ms(point.p99)} ms; ${killedLate.length} completed after the kill). ` +
            `The killed worker was ${RESTART_AFTER_SECONDS > 0 ? `started again ${RESTART_AFTER_SECONDS} s after the kill (running in ${restartedIn.toFixed(1)} s)` : 'not started again'}; the second worker ran throughout. ` +
            `Deliveries of the phase's webhook: ${rows.length} (${rows.filter((row) => row.status === 'delivered').length} delivered, ${left} still pending when it was deleted); ` +
            `POSTs received per delivery (\`webhook-id\` header) at most ${maxPosts}; deliveries POSTed more than once: ${resent}; ` +
            `**deliveries with more POSTs than attempts logged: ${over}** (target 0); attempts logged with an unknown outcome (a lease lapsed with the killed worker): ${unknown}. ` +
            'A sender killed with its worker is run again elsewhere after its heartbeat timeout (6 s), so deliveries recorded meanwhile wait that long. ' +
            `${await deliveryShare(hook)}`,
        ],
        'two workers',
      );
    }

    // -----------------------------------------------------------------------------------------
    // 7. Spread: contacts created round-robin over many merchants, each with its own webhook on
    // `contact.created` to the keep-alive receiver; what Temporal does per delivery.
    if (PHASES.includes('spread')) {
      const merchants = await spreadMerchants(SPREAD_MERCHANTS);
      const hooks = await webhooksOf(merchants, 'contact.created', receiverUrl('/contacts'));
      const before = await openRuns(client, ALL_EXECUTIONS);
      const since = new Date();
      const cpu = new CpuMeter(cpuPids());
      const rss = new RssSampler({ api: ctx.pids.api, worker: ctx.pids.worker });
      cpu.start();
      rss.start();
      const answered = new Map<number, number>();
      const began = Date.now();
      const offered = Math.ceil(SPREAD_RATE * ctx.seconds);
      const run = await openLoop(SPREAD_RATE, ctx.seconds, offered, async (index) => {
        const contact = await postContact(merchants[index % merchants.length]!.key);
        answered.set(contact.id, contact.answeredAt);
      });
      if (run.firstError) process.stderr.write(`spread, first error: ${run.firstError}\n`);
      await waitUntil(() => [...answered.keys()].every((id) => contactReceived.has(id)), 60_000, 100);
      const usage = cpu.stop();
      rss.stop();
      const cost = await settledCost(since, before);
      const done = [...answered.keys()].filter((id) => contactReceived.has(id));
      const latencies = done.map((id) => contactReceived.get(id)! - answered.get(id)!);
      const span = (Math.max(...done.map((id) => contactReceived.get(id)!)) - began) / 1000;
      const perSecond = span > 0 ? done.length / span : NaN;
      const [p50, p99] = [percentile(latencies, 50), percentile(latencies, 99)];
      const eventsPerDelivery = done.length > 0 ? cost.historyEvents / done.length : NaN;
      const share = await deliveryShare(hooks.map((hook) => hook.hookId));
      const left = await removeWebhooks(hooks);
      const allDelivered = done.length === offered;
      const historyMet = eventsPerDelivery <= 1;
      const latencyMet = allDelivered && p99 < 500;
      verdicts.push({
        phase: 'spread: history events per delivery',
        figure: `${eventsPerDelivery.toFixed(2)} (${cost.historyEvents} events, ${done.length} deliveries over ${SPREAD_MERCHANTS} merchants)`,
        target: 'at most 1 on average',
        met: historyMet,
      });
      verdicts.push({
        phase: 'spread: latency',
        figure: `${done.length} / ${offered} delivered, 201 → POST received p99 ${ms(p99)} ms`,
        target: 'every delivery, p99 under 500 ms',
        met: latencyMet,
      });
      await phaseSection(
        `Delivery: events spread over ${SPREAD_MERCHANTS} merchants' webhooks`,
        [
          table(
            [
              'merchants (one webhook each)',
              'contacts per second offered',
              'created / offered',
              'delivered',
              'delivered per second',
              '201 → POST received p50 / p99 ms',
              'executions / history events / visibility writes per delivery',
              'peak RSS MiB worker / API',
              'CPU cores Temporal / worker / API / PostgreSQL',
            ],
            [
              [
                SPREAD_MERCHANTS,
                SPREAD_RATE,
                `${run.ops} / ${offered}`,
                done.length,
                perSecond.toFixed(1),
                `${ms(p50)} / ${ms(p99)}`,
                perUnit(cost, done.length),
                `${mb(peakOf(rss, 'worker'))} / ${mb(peakOf(rss, 'api'))}`,
                cpuCell(usage),
              ],
            ],
          ),
          '',
          `**History events per delivery: ${eventsPerDelivery.toFixed(2)}** (target at most 1: ${historyMet ? 'met' : 'not met'}); ` +
            `**p99 from the API's 201 to the POST arriving: ${ms(p99)} ms** (target under 500 ms with every delivery: ${latencyMet ? 'met' : 'not met'}). ` +
            `Contacts created through the API for ${ctx.seconds} s, round-robin over ${SPREAD_MERCHANTS} organizations (each its own API key and one webhook on \`contact.created\` to the keep-alive receiver). ` +
            'History events: every workflow execution of the namespace started during the phase (its whole history) and what the runs already open added to theirs, ' +
            'read once the histories stopped growing after the last delivery (bench/temporal.ts, as the sweep counts them per lifecycle). ' +
            `Still pending when the webhooks were deleted: ${left}. ${share}`,
        ],
        'spread',
      );
    }

    // -----------------------------------------------------------------------------------------
    // 8. Spread lifecycles: full lifecycles round-robin over merchants with a webhook each; then the
    // worker's memory with SPREAD_WEBHOOKS merchants' webhooks that have each had a delivery.
    if (PHASES.includes('spread-lifecycles')) {
      const merchants = await spreadMerchants(SPREAD_LIFECYCLE_MERCHANTS);
      const hooks = await webhooksOf(merchants, STATUS_EVENT, receiverUrl('/spread-lifecycles'));
      const before = await openRuns(client, ALL_EXECUTIONS);
      const since = new Date();
      const point = await lifecycles(
        SPREAD_LIFECYCLE_RATE,
        ctx.seconds,
        [ctx.apiUrl],
        60_000,
        undefined,
        merchants.map((merchant) => merchant.key),
      );
      const cost = await settledCost(since, before);
      const share = await deliveryShare(hooks.map((hook) => hook.hookId));
      const left = await removeWebhooks(hooks);
      const met = allDone(point) && point.p99 < 1000;
      verdicts.push({
        phase: 'spread lifecycles',
        figure: `${point.completed} / ${point.offered} at ${SPREAD_LIFECYCLE_RATE}/s over ${SPREAD_LIFECYCLE_MERCHANTS} merchants, p99 ${ms(point.p99)} ms`,
        target: `${SPREAD_LIFECYCLE_RATE}/s sustained with p99 under 1 s`,
        met,
      });

      // Memory: SPREAD_WEBHOOKS merchants' webhooks on `contact.created`, one contact each, all delivered.
      const memoryMerchants = await spreadMerchants(SPREAD_WEBHOOKS);
      const rss = new RssSampler({ api: ctx.pids.api, worker: ctx.pids.worker });
      rss.start();
      rss.setPhase('delivering');
      const memoryHooks = await webhooksOf(memoryMerchants, 'contact.created', receiverUrl('/contacts'));
      const contacts: number[] = [];
      const memoryStarted = Date.now();
      const created = await closedLoop(8, BACKLOG_WAIT_MS / 1000, memoryMerchants.length, async (index) => {
        contacts.push((await postContact(memoryMerchants[index]!.key)).id);
      });
      if (created.firstError) process.stderr.write(`spread memory, first error: ${created.firstError}\n`);
      const delivered = await waitUntil(() => contacts.every((id) => contactReceived.has(id)), 120_000, 200);
      const deliveredSeconds = (Date.now() - memoryStarted) / 1000;
      // The webhooks stay live a moment with nothing to send: what the worker keeps for them.
      rss.setPhase('live');
      await Bun.sleep(5000);
      rss.stop();
      const workerPeak = peakOf(rss, 'worker');
      const apiPeak = peakOf(rss, 'api');
      const memoryLeft = await removeWebhooks(memoryHooks);
      const receivedCount = contacts.filter((id) => contactReceived.has(id)).length;
      const memoryMet = delivered && workerPeak !== undefined && workerPeak < 400 * 1024;
      verdicts.push({
        phase: 'spread: worker memory',
        figure: `peak ${mb(workerPeak)} MiB with ${SPREAD_WEBHOOKS} merchants' webhooks live, each delivered to (${receivedCount} of ${contacts.length})`,
        target: 'under 400 MiB',
        met: memoryMet,
      });
      await phaseSection(
        `Delivery: lifecycles spread over ${SPREAD_LIFECYCLE_MERCHANTS} merchants' webhooks, and ${SPREAD_WEBHOOKS} webhooks live`,
        [
          table(LIFECYCLE_HEADER, [
            lifecycleRow(`lifecycles round-robin over ${SPREAD_LIFECYCLE_MERCHANTS} merchants, a webhook each`, point),
          ]),
          '',
          `**${point.completed} / ${point.offered} completed, p99 ${ms(point.p99)} ms** (target ${SPREAD_LIFECYCLE_RATE}/s with p99 under 1 s: ${met ? 'met' : 'not met'}); ` +
            `executions / history events / visibility writes per lifecycle: ${perUnit(cost, point.completed)} (every execution of the namespace, as in the spread phase). ` +
            `Still pending when the webhooks were deleted: ${left}. ${share}`,
          '',
          table(
            [
              'webhooks live (one merchant each)',
              'contacts (one per webhook), delivered',
              'from the first contact to the last delivery (s)',
              'worker peak RSS while creating and delivering (MiB)',
              'worker peak RSS in the 5 s after, all delivered, webhooks live (MiB)',
              'API peak RSS (MiB)',
            ],
            [
              [
                SPREAD_WEBHOOKS,
                `${contacts.length}, ${receivedCount}${delivered ? '' : ' (bound of 120 s reached)'}`,
                deliveredSeconds.toFixed(1),
                mb(rss.peaks.get('worker')?.get('delivering')),
                mb(rss.peaks.get('worker')?.get('live')),
                mb(apiPeak),
              ],
            ],
          ),
          '',
          `**Worker peak RSS with ${SPREAD_WEBHOOKS} merchants' webhooks each delivered to: ${mb(workerPeak)} MiB** (target under 400 MiB: ${memoryMet ? 'met' : 'not met'}). ` +
            `Each merchant's webhook on \`contact.created\` created through the API, then one contact per merchant (8 clients); VmRSS sampled every 200 ms from the first webhook created to 5 s after the last delivery. ` +
            `Still pending when those webhooks were deleted: ${memoryLeft}.`,
        ],
        'spread lifecycles',
      );
    }

    // -----------------------------------------------------------------------------------------
    // 9. Burst for one dead receiver: contacts as fast as BURST_CLIENTS clients go, for one webhook
    // whose target refuses connections, against a control run with no webhook; the histories of
    // every run alive meanwhile; every row attempted while dead; then the receiver back.
    if (PHASES.includes('burst')) {
      const controlSeconds = number('BENCH_BURST_CONTROL_SECONDS', ctx.seconds, 1);
      const merchant = await newMerchant('Bench burst merchant');
      const deadPort = await closedPort();
      // The shortened retry schedule: a worker and an API of its own with it (an actor's schedule
      // comes from whichever process starts it, so the API gets it too); the bench's worker stopped meanwhile.
      const phaseEnv = { WEBHOOK_RETRY_SCHEDULE: BURST_RETRY_SCHEDULE };
      await stopPid(ctx.pids.worker, 'SIGTERM', 30_000);
      const stoppedAt = Date.now();
      ctx.pids.worker = (await startWorker(phaseEnv)).pid;
      const burstApi = await startApi(phaseEnv);
      // A run the stopped worker had cached gets its next workflow task on that worker's sticky queue
      // and, within about 10 s of its last poll, that task times out (schedule-to-start, 5 s) before
      // going to the shared queue: the restart's doing, not the burst's. The phase begins after that.
      await Bun.sleep(Math.max(0, stoppedAt + STICKY_SETTLE_MS - Date.now()));
      const since = new Date();
      const burstPids = () => ({
        'Temporal server': ctx.pids.temporal,
        'API (Bun)': burstApi.pid,
        'worker (Node)': ctx.pids.worker,
      });
      const createContacts = async (seconds: number, ids: number[]) => {
        const cpu = new CpuMeter(burstPids());
        cpu.start();
        const run = await closedLoop(BURST_CLIENTS, seconds, BURST_CONTACTS, async () => {
          ids.push((await postContact(merchant.key, burstApi.url)).id);
        });
        if (run.firstError) process.stderr.write(`burst, first error: ${run.firstError}\n`);
        return { run, cpu: cpu.stop() };
      };
      const control = await createContacts(controlSeconds, []);
      const hook = await addWebhook(
        'contact.created',
        `https://127.0.0.1:${deadPort}/burst`,
        merchant.key,
        burstApi.url,
      );
      const ids: number[] = [];
      const rss = new RssSampler({ api: burstApi.pid, worker: ctx.pids.worker });
      rss.start();
      const burst = await createContacts(BURST_SECONDS_MAX, ids);
      const burstEnded = Date.now();
      const rows = async () =>
        (
          await sql<{ total: number; attempted: number; delivered: number; attempts: number }[]>`
        select count(*)::int as total, count(*) filter (where exists (select 1 from webhook_delivery_attempts a where a.delivery_id = d.id))::int as attempted,
               count(*) filter (where d.status = 'delivered')::int as delivered,
               (select count(*)::int from webhook_delivery_attempts a join webhook_deliveries x on x.id = a.delivery_id where x.webhook_id = ${hook}) as attempts
        from webhook_deliveries d where d.webhook_id = ${hook}`
        )[0]!;
      // Every row recorded and the receiver probed (docs/architecture.md, How the pool shares itself): its rows wait, keeping their attempts.
      const allAttempted = await waitUntil(
        async () => {
          const now = await rows();
          const [receiver] = await sql<{ probed: boolean }[]>`
          select probing_since is not null as probed from webhook_receivers where origin = ${`https://127.0.0.1:${deadPort}`}`;
          return now.total >= ids.length && receiver?.probed === true;
        },
        (BURST_SECONDS_MAX * 1000) / 2,
        1000,
      );
      const whileDead = await rows();
      const attemptedSeconds = (Date.now() - burstEnded) / 1000;
      const latestDue =
        (
          await sql<{ latestDue: Date | null }[]>`
        select max(next_attempt_at) as "latestDue" from webhook_deliveries where webhook_id = ${hook} and status = 'pending'`
        )[0]?.latestDue ?? null;

      // The receiver back: the same port listening again with the bench's certificate.
      const arrivals = new Map<string, number>();
      const backAt = Date.now();
      const revived = Bun.serve({
        hostname: '127.0.0.1',
        port: deadPort,
        tls: { cert: readFileSync(env.BENCH_CERT_FILE!, 'utf8'), key: readFileSync(env.BENCH_KEY_FILE!, 'utf8') },
        async fetch(request) {
          await request.arrayBuffer();
          const messageId = request.headers.get('webhook-id') ?? randomUUID();
          if (!arrivals.has(messageId)) arrivals.set(messageId, Date.now());
          return new Response('ok');
        },
      });
      // The rows are counted once a second (a light count: the times come from the receiver).
      const delivered = async () =>
        (
          await sql<{ n: number }[]>`
        select count(*)::int as n from webhook_deliveries where webhook_id = ${hook} and status = 'delivered'`
        )[0]!.n;
      const allDelivered = await waitUntil(
        async () => (await delivered()) >= whileDead.total,
        BURST_SECONDS_MAX * 1000,
        1000,
      );
      revived.stop(true);
      rss.stop();
      const backRows = await rows();
      const times = [...arrivals.values()];
      const firstArrival = times.reduce((min, time) => Math.min(min, time), Infinity);
      const deliveredSeconds = (times.reduce((max, time) => Math.max(max, time), -Infinity) - backAt) / 1000;

      // Every run alive during the phase (open now, or closed since it began): failed or timed-out workflow tasks, the longest.
      const alive = await runsAliveSince(client, since, 20_000);
      const history = await historyFacts(client, alive.runs, since);
      const problems = Object.entries(history.problems)
        .map(([kind, count]) => `${count} ${kind}`)
        .join('; ');
      await settleAndRemove(hook, 10_000, merchant.key, burstApi.url);
      // The bench's own configuration back for whatever runs next.
      await stopPid(burstApi.pid, 'SIGTERM', 15_000);
      await stopPid(ctx.pids.worker, 'SIGTERM', 30_000);
      ctx.pids.worker = (await startWorker()).pid;

      const rateShare = burst.run.rate / control.run.rate;
      const tasksMet = history.failed === 0 && history.timedOut === 0 && !alive.truncated;
      const rateMet = rateShare >= 0.9;
      const backMet = allAttempted && allDelivered && backRows.total === ids.length && arrivals.size >= ids.length;
      verdicts.push({
        phase: 'burst: workflow tasks',
        figure: `${history.failed} failed, ${history.timedOut} timed out in ${history.runs} run${history.runs === 1 ? '' : 's'}; longest task ${ms(history.maxTaskMs)} ms`,
        target: 'no workflow task failed or timed out',
        met: tasksMet,
      });
      verdicts.push({
        phase: 'burst: create rate',
        figure: `${burst.run.rate.toFixed(1)} per second against ${control.run.rate.toFixed(1)} with no webhook = ${(rateShare * 100).toFixed(0)}%`,
        target: 'at least 90% of the control',
        met: rateMet,
      });
      verdicts.push({
        phase: 'burst: receiver back',
        figure: `${backRows.delivered} of ${backRows.total} delivered ${deliveredSeconds.toFixed(1)} s after it came back; ${whileDead.attempted} of ${whileDead.total} attempted while dead`,
        target: 'the receiver probed while dead, every row delivered after',
        met: backMet,
      });
      const cpuOf = (cpu: Record<string, number>) =>
        `${cores(cpu['Temporal server'])} / ${cores(cpu['worker (Node)'])} / ${cores(cpu['API (Bun)'])} / ${cores(cpu.PostgreSQL)}`;
      await phaseSection(
        `Delivery: a burst of ${BURST_CONTACTS} contacts for one dead receiver`,
        [
          table(
            [
              'run',
              'contacts created',
              'errors',
              'seconds',
              'created per second',
              'POST p50 / p99 ms',
              'CPU cores Temporal / worker / API / PostgreSQL',
            ],
            [
              [
                'control: no webhook',
                control.run.ops,
                control.run.errors,
                control.run.seconds.toFixed(1),
                control.run.rate.toFixed(1),
                `${ms(percentile(control.run.latencies, 50))} / ${ms(percentile(control.run.latencies, 99))}`,
                cpuOf(control.cpu),
              ],
              [
                'burst: one webhook, its target refusing connections',
                burst.run.ops,
                burst.run.errors,
                burst.run.seconds.toFixed(1),
                burst.run.rate.toFixed(1),
                `${ms(percentile(burst.run.latencies, 50))} / ${ms(percentile(burst.run.latencies, 99))}`,
                cpuOf(burst.cpu),
              ],
            ],
          ),
          '',
          table(
            ['step', 'figure'],
            [
              ['create rate, burst / control', `**${(rateShare * 100).toFixed(0)}%**`],
              [
                'rows attempted while the receiver was dead (probed: the rest wait with their attempts)',
                `${whileDead.attempted} of ${whileDead.total} rows (${ids.length} contacts) ${attemptedSeconds.toFixed(1)} s after the burst${allAttempted ? '' : ', not probed within the bound'}; ${whileDead.attempts} attempts logged`,
              ],
              [
                'receiver back (the same port listening again)',
                `latest next attempt due ${latestDue ? `${((latestDue.getTime() - backAt) / 1000).toFixed(1)} s` : 'n/a'} after it came back`,
              ],
              [
                'every delivery arrived',
                allDelivered
                  ? `**${deliveredSeconds.toFixed(1)} s** after the receiver came back (first POST after ${((firstArrival - backAt) / 1000).toFixed(1)} s); ${backRows.delivered} delivered, ${arrivals.size} distinct \`webhook-id\`s received`
                  : `${backRows.delivered} of ${backRows.total} delivered within the bound of ${BURST_SECONDS_MAX} s`,
              ],
              [
                'workflow runs alive during the phase (open, or closed since it began)',
                `${history.runs}${alive.truncated ? ' (the first 20,000: more were alive)' : ''}, ${history.events} events; ` +
                  `**${history.failed} WorkflowTaskFailed, ${history.timedOut} WorkflowTaskTimedOut**${problems ? ` (${problems})` : ''}; longest workflow task (started → completed) ${ms(history.maxTaskMs)} ms, ${history.slowTasks} over 1 s ` +
                  '(workflow tasks of events from the control run on)',
              ],
              [
                'peak RSS from the burst to the last delivery, worker / API (MiB)',
                `${mb(peakOf(rss, 'worker'))} / ${mb(peakOf(rss, 'api'))}`,
              ],
            ],
          ),
          '',
          `Targets: no workflow task failed or timed out (${tasksMet ? 'met' : 'not met'}); create rate with the dead receiver at least 90% of the control (${rateMet ? 'met' : 'not met'}); ` +
            `the receiver probed while dead and every row delivered after it came back (${backMet ? 'met' : 'not met'}). ` +
            `One merchant, contacts created through the API by ${BURST_CLIENTS} clients as fast as they go (at most ${BURST_CONTACTS}, at most ${BURST_SECONDS_MAX} s); the control: the same for ${controlSeconds} s with no webhook. ` +
            `The webhook's target is a local port with nothing listening until it comes back. A worker and an API of the phase's own ran with \`WEBHOOK_RETRY_SCHEDULE=${BURST_RETRY_SCHEDULE}\` ` +
            "(the bench's worker stopped meanwhile and started again after), so no delivery spends its 10 attempts while the receiver is dead and the retries after it returns come within one wait.",
        ],
        'burst',
      );
    }

    // -----------------------------------------------------------------------------------------
    // 10. Hanging receivers: one merchant's HANGING_WEBHOOKS webhooks on `contact.created` to
    // receivers that accept connections and never answer (all on one host, then each on a port of
    // its own), contacts created at HANGING_NOISY_RATE; beside it a healthy merchant's one webhook
    // to the keep-alive receiver, contacts at HANGING_HEALTHY_RATE: its 201 → POST received. Then
    // the hanging receivers answer again, and every noisy delivery must arrive (none lost, none
    // failed: each kept its attempts).
    if (PHASES.includes('hanging')) {
      for (const layout of ['one host', `${HANGING_WEBHOOKS} ports`] as const) {
        const hanging = await hangingReceivers(layout === 'one host' ? 1 : HANGING_WEBHOOKS);
        try {
          const [noisy, healthy] = [
            await newMerchant('Bench hanging noisy'),
            await newMerchant('Bench hanging healthy'),
          ];
          const noisyHooks = await inBatches(
            Array.from({ length: HANGING_WEBHOOKS }, (_, index) => index),
            8,
            (index) => addWebhook('contact.created', hanging.url(index, `/hang/${index}`), noisy.key),
          );
          const healthyHook = await addWebhook('contact.created', receiverUrl('/contacts'), healthy.key);
          const answered = new Map<number, number>();
          const cpu = new CpuMeter(cpuPids());
          cpu.start();
          const offered = Math.ceil(HANGING_HEALTHY_RATE * HANGING_SECONDS);
          const [healthyRun, noisyRun] = await Promise.all([
            openLoop(HANGING_HEALTHY_RATE, HANGING_SECONDS, offered, async () => {
              const contact = await postContact(healthy.key);
              answered.set(contact.id, contact.answeredAt);
            }),
            openLoop(HANGING_NOISY_RATE, HANGING_SECONDS, Math.ceil(HANGING_NOISY_RATE * HANGING_SECONDS), async () => {
              await postContact(noisy.key);
            }),
          ]);
          await waitUntil(() => [...answered.keys()].every((id) => contactReceived.has(id)), 180_000, 100);
          const usage = cpu.stop();
          const done = [...answered.keys()].filter((id) => contactReceived.has(id));
          const latencies = done.map((id) => contactReceived.get(id)! - answered.get(id)!);
          const [p50, p99] = [percentile(latencies, 50), percentile(latencies, 99)];
          const missing = answered.size - done.length;
          const mostInFlight = hanging.mostInFlight();
          const back = Date.now();
          hanging.answer();
          const noisyRows = async () =>
            await sql<{ status: string; n: number; most: number }[]>`
            select d.status, count(*)::int as n, max((select count(*) from webhook_delivery_attempts a where a.delivery_id = d.id))::int as most
            from webhook_deliveries d where d.webhook_id = any(${noisyHooks}::bigint[]) group by d.status`;
          const drained = await waitUntil(
            async () => (await noisyRows()).every((row) => row.status === 'delivered'),
            HANGING_DRAIN_SECONDS * 1000,
            1000,
          );
          const rows = await noisyRows();
          const byStatus = Object.fromEntries(rows.map((row) => [row.status, row.n]));
          const total = rows.reduce((sum, row) => sum + row.n, 0);
          const drainSeconds = (Date.now() - back) / 1000;
          await settleAndRemove(healthyHook, 10_000, healthy.key);
          await inBatches(noisyHooks, 8, (hookId) => settleAndRemove(hookId, 0, noisy.key));
          const latencyMet = missing === 0 && p50 < 50 && p99 < 1000;
          const keptMet = (byStatus.failed ?? 0) === 0 && drained;
          verdicts.push({
            phase: `hanging (${layout}): healthy merchant`,
            figure: `${done.length} / ${answered.size} delivered, p50 ${ms(p50)} ms, p99 ${ms(p99)} ms`,
            target: 'p50 under 50 ms, p99 under 1 s, nothing missing',
            met: latencyMet,
          });
          verdicts.push({
            phase: `hanging (${layout}): noisy merchant's deliveries`,
            figure: `${byStatus.delivered ?? 0} of ${total} delivered ${drainSeconds.toFixed(0)} s after its receivers answered, ${byStatus.failed ?? 0} failed`,
            target: 'every one delivered once its receivers answer, none failed',
            met: keptMet,
          });
          await phaseSection(
            `Delivery: ${HANGING_WEBHOOKS} hanging webhooks of one merchant (${layout}) beside a healthy merchant`,
            [
              table(
                [
                  'merchant',
                  'contacts per second',
                  'created / offered',
                  'deliveries',
                  'healthy: 201 → POST received p50 / p99 ms',
                  'missing after the drain',
                ],
                [
                  [
                    `noisy: ${HANGING_WEBHOOKS} webhooks, receivers that never answer (${layout})`,
                    HANGING_NOISY_RATE,
                    `${noisyRun.ops} / ${Math.ceil(HANGING_NOISY_RATE * HANGING_SECONDS)}`,
                    total,
                    '',
                    '',
                  ],
                  [
                    'healthy: one webhook, the keep-alive receiver',
                    HANGING_HEALTHY_RATE,
                    `${healthyRun.ops} / ${offered}`,
                    answered.size,
                    `**${ms(p50)} / ${ms(p99)}**`,
                    missing,
                  ],
                ],
              ),
              '',
              table(
                ['figure', 'value'],
                [
                  ['most POSTs unanswered at once at the hanging receivers', mostInFlight],
                  [
                    'noisy deliveries once the receivers answered again',
                    `${Object.entries(byStatus)
                      .map(([status, n]) => `${n} ${status}`)
                      .join(
                        ', ',
                      )}; ${drained ? `all delivered ${drainSeconds.toFixed(0)} s after` : `bound of ${HANGING_DRAIN_SECONDS} s reached`}; at most ${Math.max(...rows.map((row) => row.most))} attempts for one delivery`,
                  ],
                  ['CPU cores Temporal / worker / API / PostgreSQL', cpuCell(usage)],
                ],
              ),
              '',
              `Targets: the healthy merchant's p50 under 50 ms and p99 under 1 s with nothing missing (${latencyMet ? 'met' : 'not met'}); every noisy delivery keeps its attempts and arrives once its receivers answer (${keptMet ? 'met' : 'not met'}). ` +
                `For ${HANGING_SECONDS} s the noisy merchant created ${HANGING_NOISY_RATE} contact(s) per second, each delivered to its ${HANGING_WEBHOOKS} webhooks (${HANGING_WEBHOOKS * HANGING_NOISY_RATE} hanging POSTs a second), ` +
                `the healthy one ${HANGING_HEALTHY_RATE} per second, both through the API. The hanging receivers accept TLS connections and read each request but never answer, until they answer 200 to everything (the drain, on the service's own retry schedule).`,
            ],
            'hanging',
          );
        } finally {
          await hanging.close();
        }
      }
    }

    // -----------------------------------------------------------------------------------------
    // Memory through the sweep, then the summary.
    const workerMet = ctx.sweepMemory.worker !== undefined && ctx.sweepMemory.worker < 300 * 1024;
    const apiMet = ctx.sweepMemory.api !== undefined && ctx.sweepMemory.api < 150 * 1024;
    verdicts.push({
      phase: 'memory: worker peak RSS (sweep)',
      figure: `${mb(ctx.sweepMemory.worker)} MiB`,
      target: 'under 300 MiB',
      met: workerMet,
    });
    verdicts.push({
      phase: 'memory: API peak RSS (sweep)',
      figure: `${mb(ctx.sweepMemory.api)} MiB`,
      target: 'under 150 MiB',
      met: apiMet,
    });
    ctx.section(
      'Delivery phases: targets',
      [
        table(
          ['phase', 'measured', 'target', 'met'],
          verdicts.map((verdict) => [
            verdict.phase,
            verdict.figure,
            verdict.target,
            verdict.met === null ? 'n/a' : verdict.met ? 'yes' : 'no',
          ]),
        ),
        '',
        'Memory: peak VmRSS sampled every 200 ms during the sustained-rate sweep (table "Memory" above).',
      ].join('\n'),
    );
  } finally {
    receiver.stop(true);
    for (const child of spawned) if (child.pid && alive(child.pid)) await stopPid(child.pid, 'SIGTERM', 15_000);
  }
}
