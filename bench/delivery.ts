/**
 * The webhook delivery phases of `npm run bench` (bench/run.ts runs them last): full lifecycles
 * against a receiver that answers some POSTs past the timeout, against one that closes every
 * connection, at a high keep-alive rate, and offered at twice the sustained ceiling; a backlog of
 * deliveries for one webhook drained after a worker restart; two workers with one killed mid-run.
 * After each phase, the check that no delivery was lost. Every phase is bounded in time and count.
 *
 * Knobs (small defaults make a smoke run; the full sizes in bench/README.md):
 * BENCH_DELIVERY_PHASES (comma separated, default all: slow,close,keepalive,overload,backlog,two; empty skips them),
 * BENCH_SLOW_RATE (5), BENCH_SLOW_EVERY (20: one POST in 20 answered late), BENCH_SLOW_DELAY_MS (6000),
 * BENCH_CLOSE_RATE (15), BENCH_KEEPALIVE_RATE (27),
 * BENCH_OVERLOAD_CEILING (default: the sweep's highest sustained rate), BENCH_OVERLOAD_FACTOR (2), BENCH_OVERLOAD_SECONDS (15; full 60),
 * BENCH_BACKLOG (5000; full 100000), BENCH_BACKLOG_WAIT_SECONDS (900: bound of each wait of the backlog phase),
 * BENCH_TWO_WORKERS_RATE (10), BENCH_TWO_WORKERS_SECONDS (12; the kill at half), BENCH_RESTART_AFTER_SECONDS (5; 0: the killed worker stays down).
 * Each lifecycle phase lasts BENCH_SECONDS.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Sql } from '../src/db';
import {
  alive, closedPort, CpuMeter, mb, ms, openLoop, peakOf, percentile, RssSampler, stopPid, table, waitUntil, windowCounts,
} from './lib';

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
const PHASES = (env.BENCH_DELIVERY_PHASES ?? 'slow,close,keepalive,overload,backlog,two').split(',').map((name) => name.trim()).filter(Boolean);
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
  function startProcess(kind: 'worker' | 'api', extraEnv: Record<string, string> = {}): { child: ChildProcess; log: string } {
    const log = join(dataDir, `${kind}-delivery-${++spawnCount}.log`);
    const output = openSync(log, 'a');
    const [command, args] = kind === 'worker'
      ? [env.BENCH_NODE!, JSON.parse(env.BENCH_WORKER_ARGS!) as string[]]
      : [env.BENCH_BUN!, ['src/server.ts']];
    const child = spawn(command, args, {
      cwd: join(import.meta.dir, '..'),
      env: { ...env, ...(kind === 'worker' ? { WORKFLOW_BUNDLE_PATH: env.BENCH_WORKFLOW_BUNDLE!, LOG_LEVEL: 'info' } : {}), ...extraEnv },
      stdio: ['ignore', output, output],
    });
    spawned.push(child);
    return { child, log };
  }
  async function startWorker(): Promise<{ pid: number; readySeconds: number }> {
    const began = performance.now();
    const { child, log } = startProcess('worker');
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
  async function startApi(): Promise<{ url: string; pid: number }> {
    const port = await closedPort();
    const { child, log } = startProcess('api', { PORT: String(port) });
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
  // with `Connection: close`, `/floor` takes the floor's POSTs, `/backlog` the backlog's; every other
  // path answers at once. A request's `successful` webhook counts when answered in time.
  const received = new Map<number, number>();
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
      } else if (path === '/backlog') {
        counters.backlog += 1;
        counters.backlogFirst ||= now;
        counters.backlogLast = now;
      } else if (body.data?.status === 'successful' && typeof body.data.id === 'number' && !received.has(body.data.id)) {
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

  async function api(method: string, path: string, form?: Record<string, string>, toApi = ctx.apiUrl): Promise<{ status: number; body: any }> {
    const response = await fetch(`${toApi}${path}`, {
      method,
      headers: { Authorization: `Token ${ctx.apiKey}`, ...(form ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}) },
      body: form ? new URLSearchParams(form) : undefined,
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  }
  async function addWebhook(event: string, target: string): Promise<number> {
    const created = await api('POST', '/api/webhooks', { event, target });
    if (created.status !== 201) throw new Error(`webhook not created: ${created.status} ${JSON.stringify(created.body)}`);
    return created.body.id;
  }
  const pendingOf = async (hookId: number): Promise<number> =>
    (await sql<{ n: number }[]>`select count(*)::int as n from webhook_deliveries where webhook_id = ${hookId} and status = 'pending'`)[0]!.n;
  /** Waits (bounded) until the webhook has nothing pending (its retries done), then deletes it. What was still pending. */
  async function settleAndRemove(hookId: number, timeoutMs = 60_000): Promise<number> {
    await waitUntil(async () => (await pendingOf(hookId)) === 0, timeoutMs, 500);
    const left = await pendingOf(hookId);
    const removed = await api('DELETE', `/api/webhooks/${hookId}`);
    if (removed.status !== 204 && removed.status !== 200) throw new Error(`webhook ${hookId} not deleted: ${removed.status}`);
    return left;
  }

  // -------------------------------------------------------------------------------------------
  // Lifecycles (POST with send_instructions → sandbox payment → successful → its webhook received).
  let phone = 0;
  const postedAt = new Map<number, number>();
  async function postLifecycle(toApi: string): Promise<number> {
    const sentAt = Date.now();
    const created = await api('POST', '/api/collectionrequests', {
      phonenumber: `+25676${String(phone++).padStart(7, '0')}`, amount: '10', currency: 'BXC', send_instructions: 'true', expiry_date: '1 hour',
    }, toApi);
    if (created.status !== 201) throw new Error(`POST answered ${created.status}: ${JSON.stringify(created.body).slice(0, 200)}`);
    postedAt.set(created.body.id, sentAt);
    return created.body.id;
  }
  const cpuPids = () => ({ 'Temporal server': ctx.pids.temporal, 'API (Bun)': ctx.pids.api, 'worker (Node)': ctx.pids.worker });
  type Point = {
    rate: number; offered: number; completed: number; perSecond: number; p50: number; p99: number; postP50: number; postP99: number;
    began: number; offerEnded: number; receipts: number[]; cpu: Record<string, number>; workerRss: number | undefined; apiRss: number | undefined;
  };
  async function lifecycles(rate: number, seconds: number, apis: string[], waitMs: number, during?: () => Promise<void>): Promise<Point> {
    const ids: number[] = [];
    const cpu = new CpuMeter(cpuPids());
    const rss = new RssSampler({ api: ctx.pids.api, worker: ctx.pids.worker });
    cpu.start();
    rss.start();
    const began = Date.now();
    const meanwhile = during?.();
    const run = await openLoop(rate, seconds, Math.ceil(rate * seconds), async (index) => {
      ids.push(await postLifecycle(apis[index % apis.length]!));
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
      rate, offered: Math.ceil(rate * seconds), completed: done.length, perSecond: span > 0 ? done.length / span : NaN,
      p50: percentile(latencies, 50), p99: percentile(latencies, 99), postP50: percentile(run.latencies, 50), postP99: percentile(run.latencies, 99),
      began, offerEnded, receipts, cpu: usage, workerRss: peakOf(rss, 'worker'), apiRss: peakOf(rss, 'api'),
    };
  }
  /** The floor at `rate`: one workflow whose one activity POSTs a webhook-sized body to the receiver, from the start call to the receipt. */
  let floorCounter = 0;
  async function floor(rate: number, seconds: number): Promise<{ offered: number; completed: number; p50: number; p99: number }> {
    const started = new Map<number, number>();
    await openLoop(rate, seconds, Math.ceil(rate * seconds), async () => {
      const id = floorCounter++;
      started.set(id, Date.now());
      const body = JSON.stringify({ hook: { id: 1, user: 1, event: STATUS_EVENT, target: receiverUrl('/floor') }, data: { id, status: 'successful', padding: 'x'.repeat(1200) } });
      await client.workflow.start('benchNotify', { taskQueue: ctx.noopQueue, workflowId: `bench-delivery-floor-${runTag}-${id}`, args: [{ url: receiverUrl('/floor'), body }] });
    });
    await waitUntil(() => [...started.keys()].every((id) => floorReceived.has(id)), 60_000, 100);
    const latencies = [...started].filter(([id]) => floorReceived.has(id)).map(([id, at]) => floorReceived.get(id)! - at);
    return { offered: started.size, completed: latencies.length, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
  }
  // A process that ended during the phase (the killed worker) has no figure.
  const cores = (value: number | undefined) => (value === undefined || value < 0 ? 'n/a' : value.toFixed(2));
  const cpuCell = (cpu: Record<string, number>) =>
    `${cores(cpu['Temporal server'])} / ${cores(cpu['worker (Node)'])} / ${cores(cpu['API (Bun)'])} / ${cores(cpu.PostgreSQL)}`;
  const lifecycleRow = (name: string, point: Point): (string | number)[] => [
    name, point.rate, `${point.completed} / ${point.offered}`, point.perSecond.toFixed(1), ms(point.p50), ms(point.p99), `${mb(point.workerRss)} / ${mb(point.apiRss)}`,
    cpuCell(point.cpu),
  ];
  /**
   * The delivery's own share of a lifecycle, from the attempt log of the phase's webhook: from each
   * event's commit to its first attempt's start (the wait), and the POST itself.
   */
  async function deliveryShare(hookId: number): Promise<string> {
    const [row] = await sql<{ wait50: number; wait99: number; post50: number; post99: number; attempts: number }[]>`
      select percentile_cont(0.5) within group (order by extract(epoch from a.started_at - e.created) * 1000)::float8 as wait50,
             percentile_cont(0.99) within group (order by extract(epoch from a.started_at - e.created) * 1000)::float8 as wait99,
             percentile_cont(0.5) within group (order by a.duration_ms)::float8 as post50,
             percentile_cont(0.99) within group (order by a.duration_ms)::float8 as post99, count(*)::int as attempts
      from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id join events e on e.id = d.event_id
      where d.webhook_id = ${hookId} and a.attempt = 1`;
    return `Delivery's own share (first attempts of the phase's ${row!.attempts} deliveries): event committed → POST started p50 ${ms(row!.wait50)} / p99 ${ms(row!.wait99)} ms; ` +
      `the POST p50 ${ms(row!.post50)} / p99 ${ms(row!.post99)} ms; the rest of a lifecycle's latency is the request's own workflow.`;
  }
  const floorRow = (rate: number, point: { offered: number; completed: number; p50: number; p99: number }): (string | number)[] => [
    'floor (one workflow, one POST activity)', rate, `${point.completed} / ${point.offered}`, '', ms(point.p50), ms(point.p99), '', '',
  ];
  const LIFECYCLE_HEADER = ['run', 'offered per second', 'completed / offered', 'completed per second', 'p50 ms', 'p99 ms', 'peak RSS MiB worker / API', 'CPU cores Temporal / worker / API / PostgreSQL'];

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
    const byStatus = rows.filter((row) => row.ok).map((row) => `${row.n} ${row.status}`).join(', ');
    return { lost, text: `**No delivery lost: ${lost === 0 ? 'yes' : `no, ${lost} rows in no accepted state`}** (all ${rows.reduce((sum, row) => sum + row.n, 0)} delivery rows of the run: ${byStatus || 'none'}; pending ones have their next attempt due).` };
  }
  async function phaseSection(title: string, body: string[], phase: string): Promise<void> {
    const check = await lossCheck();
    verdicts.push({ phase, figure: `${check.lost} rows lost`, target: 'no delivery lost (check after the phase)', met: check.lost === 0 });
    ctx.section(title, [...body, '', check.text].join('\n'));
  }
  const factor = (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)}×` : 'n/a');
  const allDone = (point: Point) => point.completed === point.offered;

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
      verdicts.push({ phase: 'slow receiver', figure: `p50 ${ms(slow.p50)} ms = ${factor(ratio)} the healthy run's ${ms(healthy.p50)} ms; ${slow.completed} / ${slow.offered} completed`, target: 'p50 within 2× of healthy, every lifecycle completed', met });
      await phaseSection('Delivery: slow receiver', [
        table(LIFECYCLE_HEADER, [lifecycleRow('healthy receiver', healthy), lifecycleRow(`slow receiver (1 POST in ${SLOW_EVERY} after ${SLOW_DELAY_MS / 1000} s)`, slow), floorRow(SLOW_RATE, floorPoint)]),
        '',
        `**Slow p50 / healthy p50: ${factor(ratio)}** (target within 2×, every lifecycle completed: ${met ? 'met' : 'not met'}); slow p99 ${ms(slow.p99)} ms. ` +
          `${counters.late - late} POSTs were answered late (the sender's 5 s timeout: each failed and was retried after WEBHOOK_RETRY_SCHEDULE's first delay); ` +
          `a lifecycle completes when its \`successful\` webhook is answered in time. Still pending when the webhook was deleted: ${slowLeft}. Lifecycles offered for ${ctx.seconds} s. ` +
          `Healthy: ${await deliveryShare(healthyHook)} Slow: ${await deliveryShare(slowHook)}`,
      ], 'slow receiver');
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
      verdicts.push({ phase: 'closing receiver', figure: `${point.completed} / ${point.offered} at ${CLOSE_RATE}/s, p99 ${ms(point.p99)} ms`, target: `${CLOSE_RATE}/s sustained with p99 under 2 s`, met });
      await phaseSection('Delivery: receiver closing every connection', [
        table(LIFECYCLE_HEADER, [lifecycleRow('receiver answering `Connection: close`', point), floorRow(CLOSE_RATE, floorPoint)]),
        '',
        `**${met ? 'Sustained' : 'Not sustained'}: ${point.completed} / ${point.offered} completed, p99 ${ms(point.p99)} ms** (target ${CLOSE_RATE}/s with p99 under 2 s). ` +
          `${counters.close - posts} POSTs over ${closeConnections.size - connections} connections (client ports seen by the receiver). The floor opens a connection per POST too (\`agent: false\`). ${await deliveryShare(hook)}`,
      ], 'closing receiver');
    }

    // -----------------------------------------------------------------------------------------
    // 3. Keep-alive receiver at KEEPALIVE_RATE.
    if (PHASES.includes('keepalive')) {
      const hook = await addWebhook(STATUS_EVENT, receiverUrl('/healthy'));
      const point = await lifecycles(KEEPALIVE_RATE, ctx.seconds, [ctx.apiUrl], 60_000);
      await settleAndRemove(hook);
      const floorPoint = await floor(KEEPALIVE_RATE, ctx.seconds);
      const met = allDone(point) && point.p99 < 1000;
      verdicts.push({ phase: 'keep-alive receiver', figure: `${point.completed} / ${point.offered} at ${KEEPALIVE_RATE}/s, p99 ${ms(point.p99)} ms`, target: `${KEEPALIVE_RATE}/s with p99 under 1 s (moonshot)`, met });
      await phaseSection(`Delivery: keep-alive receiver at ${KEEPALIVE_RATE} per second`, [
        table(LIFECYCLE_HEADER, [lifecycleRow('keep-alive receiver', point), floorRow(KEEPALIVE_RATE, floorPoint)]),
        '',
        `**${point.completed} / ${point.offered} completed, p99 ${ms(point.p99)} ms** (moonshot target: p99 under 1 s: ${met ? 'met' : 'not met'}; sustained as the sweep counts it, p99 under 2 s: ${allDone(point) && point.p99 < 2000 ? 'yes' : 'no'}). ${await deliveryShare(hook)}`,
      ], 'keep-alive receiver');
    }

    // -----------------------------------------------------------------------------------------
    // 4. Overload: twice the ceiling offered; completions per 5-s window against the ceiling, then the drain.
    if (PHASES.includes('overload')) {
      const ceiling = env.BENCH_OVERLOAD_CEILING ? number('BENCH_OVERLOAD_CEILING', 10, 0.1) : ctx.ceiling ?? 10;
      const offered = ceiling * OVERLOAD_FACTOR;
      const hook = await addWebhook(STATUS_EVENT, receiverUrl('/healthy'));
      const point = await lifecycles(offered, OVERLOAD_SECONDS, [ctx.apiUrl], BACKLOG_WAIT_MS);
      await settleAndRemove(hook);
      const windows = windowCounts(point.receipts, point.began, point.offerEnded, WINDOW_MS).map((count) => count / (WINDOW_MS / 1000));
      const lowest = Math.min(...windows);
      const lastReceipt = Math.max(...point.receipts);
      const drainSeconds = (lastReceipt - point.offerEnded) / 1000;
      const met = lowest >= 0.9 * ceiling && allDone(point);
      verdicts.push({ phase: 'overload', figure: `lowest 5-s window ${lowest.toFixed(1)}/s = ${((lowest / ceiling) * 100).toFixed(0)}% of ${ceiling}/s; drained ${allDone(point) ? `${drainSeconds.toFixed(1)} s after the offer stopped` : 'not within the bound'}`, target: 'every 5-s window ≥ 90% of the ceiling; the backlog drains', met });
      await phaseSection('Delivery: overload at twice the ceiling', [
        table(['ceiling (per second)', 'offered per second', 'seconds offered', 'completed / offered', 'completions per second in each 5-s window of the offer', 'lowest / ceiling', 'drain after the offer stopped (s)', 'lifecycle p50 / p99 ms', 'POST p50 / p99 ms', 'peak RSS MiB worker / API'], [[
          ceiling, offered, OVERLOAD_SECONDS, `${point.completed} / ${point.offered}`, windows.map((value) => value.toFixed(1)).join(', '), `${((lowest / ceiling) * 100).toFixed(0)}%`,
          allDone(point) ? drainSeconds.toFixed(1) : `not drained in ${BACKLOG_WAIT_MS / 1000} s`, `${ms(point.p50)} / ${ms(point.p99)}`, `${ms(point.postP50)} / ${ms(point.postP99)}`, `${mb(point.workerRss)} / ${mb(point.apiRss)}`,
        ]]),
        '',
        `**Lowest 5-s window: ${lowest.toFixed(1)} completions per second, ${((lowest / ceiling) * 100).toFixed(0)}% of the ceiling** (target ≥ 90% throughout: ${met ? 'met' : 'not met'}). ` +
          `Ceiling: ${env.BENCH_OVERLOAD_CEILING ? 'BENCH_OVERLOAD_CEILING' : ctx.ceiling ? "the sweep's highest sustained rate" : 'none sustained in the sweep, 10 assumed'}. ` +
          `Windows are whole 5-s windows from the first POST to the last one offered; the drain is from the last POST offered to the last \`successful\` webhook received. ` +
          `CPU over the phase and its drain (cores, Temporal / worker / API / PostgreSQL): ${cpuCell(point.cpu)}. ${await deliveryShare(hook)}`,
      ], 'overload');
    }

    // -----------------------------------------------------------------------------------------
    // 5. Backlog: BACKLOG deliveries waiting for one webhook whose receiver refuses connections,
    // first attempts failed, the worker restarted, the actor's history checked, then the receiver back.
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
      const attempted = async () => (await sql<{ n: number }[]>`
        select count(*)::int as n from webhook_deliveries where webhook_id = ${hook} and (next_attempt >= 2 or status <> 'pending')`)[0]!.n;
      // The wake-up: one contact through the API (its commit signals the webhook's actor with start).
      const wakeStarted = Date.now();
      const woke = await api('POST', '/api/contacts', { phone_number: `+25674${runTag.replace(/\D/g, '').padEnd(7, '0').slice(0, 7)}`, first_name: 'Backlog', last_name: 'Wake' });
      if (woke.status !== 201) throw new Error(`contact not created: ${woke.status} ${JSON.stringify(woke.body)}`);
      const rss = new RssSampler({ api: ctx.pids.api, worker: ctx.pids.worker });
      rss.start();
      const firstDone = await waitUntil(async () => (await attempted()) >= total, BACKLOG_WAIT_MS, 1000);
      const firstSeconds = (Date.now() - wakeStarted) / 1000;
      const firstCount = await attempted();
      const failedWorkerRss = peakOf(rss, 'worker');
      rss.stop();

      // The worker restarted (SIGTERM, then a new one): the actor and its sender go on in the new one.
      const stopped = await stopPid(ctx.pids.worker, 'SIGTERM', 30_000);
      const restarted = await startWorker();
      ctx.pids.worker = restarted.pid;
      const afterRestart = await attempted();
      await Bun.sleep(15_000);
      const movedAfterRestart = (await sql<{ n: number }[]>`
        select count(*)::int as n from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id
        where d.webhook_id = ${hook} and a.started_at > now() - interval '15 seconds'`)[0]!.n;

      // The receiver back: the webhook pointed at a live receiver, the pending rows due now (the bench
      // skips the retry waits), and a commit to wake the actor should it sleep until its next due time.
      const backlogBefore = counters.backlog;
      const drainStarted = Date.now();
      await sql`update webhooks set target = ${receiverUrl('/backlog')} where id = ${hook}`;
      await sql`update webhook_deliveries set next_attempt_at = now() where webhook_id = ${hook} and status = 'pending'`;
      const wake2 = await api('POST', '/api/contacts', { phone_number: `+25673${runTag.replace(/\D/g, '').padEnd(7, '1').slice(0, 7)}`, first_name: 'Backlog', last_name: 'Back' });
      if (wake2.status !== 201) throw new Error(`contact not created: ${wake2.status}`);
      const drainRss = new RssSampler({ api: ctx.pids.api, worker: ctx.pids.worker });
      drainRss.start();
      const delivered = async () => (await sql<{ n: number }[]>`select count(*)::int as n from webhook_deliveries where webhook_id = ${hook} and status = 'delivered'`)[0]!.n;
      const progress: [number, number][] = [];
      const drained = await waitUntil(async () => {
        const count = await delivered();
        progress.push([Date.now(), count]);
        return count >= total + 1;
      }, BACKLOG_WAIT_MS, 1000);
      drainRss.stop();
      const deliveredCount = await delivered();
      const drainSeconds = ((counters.backlogLast || Date.now()) - drainStarted) / 1000;
      const rate = (counters.backlog - backlogBefore) / drainSeconds;
      // The steadiest stretch: deliveries per second over the middle of the drain (10% to 90% delivered).
      const at = (share: number) => progress.find(([, count]) => count >= share * (total + 1));
      const [t10, c10] = at(0.1) ?? [NaN, NaN];
      const [t90, c90] = at(0.9) ?? [NaN, NaN];
      const middleRate = (c90 - c10) / ((t90 - t10) / 1000);

      const history = await actorHistory(client, `webhook-${hook}`);
      await settleAndRemove(hook, 10_000);
      const historyMet = history.slowTasks === 0 && history.failed === 0 && history.timedOut === 0 && history.maxInputBytes < 256 * 1024;
      const rateMet = drained && rate >= 200;
      verdicts.push({ phase: 'backlog: actor history', figure: `longest workflow task ${ms(history.maxTaskMs)} ms, ${history.failed} failed, ${history.timedOut} timed out, largest run input ${history.maxInputBytes} bytes`, target: 'no task over 1 s, none failed or timed out, each input under 256 KiB', met: historyMet });
      verdicts.push({ phase: 'backlog: drain', figure: `${deliveredCount} of ${total + 1} delivered at ${rate.toFixed(0)} per second`, target: '≥ 200 deliveries per second', met: rateMet });
      await phaseSection(`Delivery: a backlog of ${BACKLOG} deliveries for one webhook`, [
        table(['step', 'figure'], [
          ['backlog recorded (one statement: events and delivery rows, as recordEvent records them)', `${BACKLOG} in ${insertSeconds.toFixed(1)} s`],
          ['first attempts, refused (closed port), from the wake-up', `${firstCount} of ${total} attempted in ${firstSeconds.toFixed(1)} s (${(firstCount / firstSeconds).toFixed(0)} per second)${firstDone ? '' : ', bound reached'}; worker peak RSS ${mb(failedWorkerRss)} MiB`],
          ['worker restart (SIGTERM, then a new worker)', `old worker ended in ${stopped.seconds.toFixed(1)} s${stopped.forced ? ' (killed after 30 s)' : ''}; new one running in ${restarted.readySeconds.toFixed(1)} s; ${movedAfterRestart} attempts logged in the 15 s after (rows attempted at the restart: ${afterRestart})`],
          ["the actor's history (every run, after the drain)", `${history.runs} runs, ${history.events} events; longest workflow task (started → completed) ${ms(history.maxTaskMs)} ms, ${history.slowTasks} over 1 s; ${history.failed} WorkflowTaskFailed, ${history.timedOut} WorkflowTaskTimedOut; largest run input ${history.maxInputBytes} bytes`],
          ['drain after the receiver came back', drained
            ? `${deliveredCount} delivered in ${drainSeconds.toFixed(1)} s: **${rate.toFixed(0)} per second** (${middleRate.toFixed(0)} per second from 10% to 90%)`
            : `${deliveredCount} of ${total + 1} delivered within the bound of ${BACKLOG_WAIT_MS / 1000} s`],
          ['POSTs received at the live receiver', String(counters.backlog - backlogBefore)],
          ['peak RSS during the drain, worker / API (MiB)', `${mb(peakOf(drainRss, 'worker'))} / ${mb(peakOf(drainRss, 'api'))}`],
          ['baseline: bare one-activity workflows per second (fan-out phase)', ctx.bareActivityRate.toFixed(0)],
        ]),
        '',
        `Targets: no workflow task over 1 s, none failed or timed out, each continue-as-new input under 256 KiB (${historyMet ? 'met' : 'not met'}); ` +
          `≥ 200 deliveries per second draining (${rateMet ? 'met' : 'not met'}). ` +
          'The webhook (on `contact.created`) first points at a closed port; its events and delivery rows are inserted in bulk, and one contact created through the API wakes its actor. ' +
          'When every row has failed its first attempt the worker is restarted; then the webhook\'s target is updated to the live receiver and its pending rows made due now ' +
          '(`update webhook_deliveries set next_attempt_at = now() where webhook_id = … and status = \'pending\'`: how the bench skips the retry waits), with one more contact to wake the actor. ' +
          'Rate: POSTs received over the time from that update to the last one.',
      ], 'backlog');
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
      verdicts.push({ phase: 'two workers, one killed', figure: `${point.completed} / ${point.offered} completed; ${over} deliveries with more POSTs than attempts logged`, target: 'every lifecycle completed, POSTs ≤ attempts logged', met });
      await phaseSection('Delivery: two workers and two APIs, one worker killed mid-run', [
        table(LIFECYCLE_HEADER, [lifecycleRow(`two workers, two APIs (requests alternating), one worker SIGKILLed after ${TWO_SECONDS / 2} s`, point)]),
        '',
        `**${point.completed} / ${point.offered} lifecycles completed** (p50 ${ms(point.p50)} ms, p99 ${ms(point.p99)} ms; ${killedLate.length} completed after the kill). ` +
          `The killed worker was ${RESTART_AFTER_SECONDS > 0 ? `started again ${RESTART_AFTER_SECONDS} s after the kill (running in ${restartedIn.toFixed(1)} s)` : 'not started again'}; the second worker ran throughout. ` +
          `Deliveries of the phase's webhook: ${rows.length} (${rows.filter((row) => row.status === 'delivered').length} delivered, ${left} still pending when it was deleted); ` +
          `POSTs received per delivery (\`webhook-id\` header) at most ${maxPosts}; deliveries POSTed more than once: ${resent}; ` +
          `**deliveries with more POSTs than attempts logged: ${over}** (target 0); attempts logged with an unknown outcome (a lease lapsed with the killed worker): ${unknown}. ` +
          'A sender killed with its worker is run again elsewhere after its heartbeat timeout (6 s), so deliveries recorded meanwhile wait that long. ' +
          `${await deliveryShare(hook)}`,
      ], 'two workers');
    }

    // -----------------------------------------------------------------------------------------
    // Memory through the sweep, then the summary.
    const workerMet = ctx.sweepMemory.worker !== undefined && ctx.sweepMemory.worker < 300 * 1024;
    const apiMet = ctx.sweepMemory.api !== undefined && ctx.sweepMemory.api < 150 * 1024;
    verdicts.push({ phase: 'memory: worker peak RSS (sweep)', figure: `${mb(ctx.sweepMemory.worker)} MiB`, target: 'under 300 MiB', met: workerMet });
    verdicts.push({ phase: 'memory: API peak RSS (sweep)', figure: `${mb(ctx.sweepMemory.api)} MiB`, target: 'under 150 MiB', met: apiMet });
    ctx.section('Delivery phases: targets', [
      table(['phase', 'measured', 'target', 'met'], verdicts.map((verdict) => [verdict.phase, verdict.figure, verdict.target, verdict.met === null ? 'n/a' : verdict.met ? 'yes' : 'no'])),
      '',
      'Memory: peak VmRSS sampled every 200 ms during the sustained-rate sweep (table "Memory" above).',
    ].join('\n'));
  } finally {
    receiver.stop(true);
    for (const child of spawned) if (child.pid && alive(child.pid)) await stopPid(child.pid, 'SIGTERM', 15_000);
  }
}

/**
 * Every run of a workflow id (continue-as-new chain): events, the longest workflow task (started →
 * completed), how many took over 1 s, failed or timed out, and the largest run input in bytes.
 */
async function actorHistory(client: Client, workflowId: string) {
  const runIds = new Set<string>();
  for await (const execution of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runIds.add(execution.runId);
  runIds.add((await client.workflow.getHandle(workflowId).describe()).runId);
  const seconds = (time: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
    time ? Number(String(time.seconds ?? 0)) + (time.nanos ?? 0) / 1e9 : NaN;
  const inputBytes = (payloads: { data?: Uint8Array | null }[] | null | undefined) => (payloads ?? []).reduce((sum, payload) => sum + (payload.data?.length ?? 0), 0);
  const result = { runs: runIds.size, events: 0, maxTaskMs: 0, slowTasks: 0, failed: 0, timedOut: 0, maxInputBytes: 0 };
  for (const runId of runIds) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const startedAt = new Map<string, number>();
    for (const event of history.events ?? []) {
      result.events += 1;
      if (event.workflowTaskStartedEventAttributes) startedAt.set(String(event.eventId), seconds(event.eventTime));
      const completed = event.workflowTaskCompletedEventAttributes;
      if (completed) {
        const took = (seconds(event.eventTime) - (startedAt.get(String(completed.startedEventId)) ?? NaN)) * 1000;
        if (Number.isFinite(took)) {
          result.maxTaskMs = Math.max(result.maxTaskMs, took);
          if (took > 1000) result.slowTasks += 1;
        }
      }
      if (event.workflowTaskFailedEventAttributes) result.failed += 1;
      if (event.workflowTaskTimedOutEventAttributes) result.timedOut += 1;
      const input = event.workflowExecutionStartedEventAttributes?.input ?? event.workflowExecutionContinuedAsNewEventAttributes?.input;
      if (input) result.maxInputBytes = Math.max(result.maxInputBytes, inputBytes(input.payloads));
    }
  }
  return result;
}
