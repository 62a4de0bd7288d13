/**
 * The benchmarks (`npm run bench` starts everything and runs this with Bun): the sustained-rate
 * sweep of full lifecycles (POST up to the `successful` webhook's receipt) against the floor of any
 * durable notification, the cost of telemetry, create throughput, webhook fan-out, filtered reads,
 * CPU per process and peak memory. Each figure is set against a baseline measured in the same run.
 * Prints each table and writes them all to bench/results/latest.md (latest-file.md for the `npm
 * start` configuration, latest-server.md for the production server).
 *
 * Sizes (small defaults: a smoke run): BENCH_COLLECTIONS (rows for the read benchmark; full run
 * 1000000), BENCH_SECONDS (per load phase; full 8), BENCH_CONCURRENCY (clients; full 32),
 * BENCH_READ_ITERATIONS (per read query; full 100), BENCH_SWEEP_RATES (lifecycles per second,
 * comma separated; default 1,2,5,10), BENCH_SWEEP_SECONDS (per rate; default BENCH_SECONDS),
 * BENCH_TELEMETRY_RATES (rates at which telemetry on is set against off; npm run bench: 2,5),
 * BENCH_FANOUT_EVENTS and BENCH_FANOUT_HOOKS (events × webhooks of the fan-out phase, default 40 × 10).
 * Then the webhook delivery phases of bench/delivery.ts (slow and closing receivers, a high
 * keep-alive rate, overload, a one-webhook backlog, two workers with one killed, events spread over
 * many merchants' webhooks, a burst for one dead receiver), knobs in its header.
 *
 * BENCH_PHASES (comma separated, default `service`): `service` is everything above; `connector` adds
 * the connector lifecycle of bench/connector.ts (MTN Uganda through the MoMo connector against its
 * simulator), knobs in its header. `connector` alone runs only that phase, and writes its results
 * to bench/results/latest-connector.md so the full run's file stays as it is.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { createSql, type Sql } from '../src/db';
import { collectionColumns } from '../src/services/collections/collection-reads';
import { connectClient } from '../src/temporal/connection';
import { closedLoop, CpuMeter, mb, ms, openLoop, percentile, ratio, repeat, RssSampler, table, type Run } from './lib';
import { runConnectorPhase } from './connector';
import { runDeliveryPhases } from './delivery';
import { listed, openRuns, temporalCost, type TemporalCost } from './temporal';

const env = process.env;
const need = (name: string): string => {
  const value = env[name];
  if (!value) throw new Error(`${name} is not set: run the benchmarks with \`npm run bench\``);
  return value;
};
const positive = (name: string, fallback: number): number => {
  const value = Number(env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive whole number`);
  return value;
};

const ROOT = join(import.meta.dir, '..');
const PHASES = new Set(
  (env.BENCH_PHASES ?? 'service')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean),
);
for (const name of PHASES)
  if (name !== 'service' && name !== 'connector')
    throw new Error(`BENCH_PHASES: unknown phase ${name} (service, connector)`);
// A run on the production server (BENCH_TEMPORAL=server), on the file-backed dev server (file) or on a server
// started elsewhere (BENCH_TEMPORAL_ADDRESS) keeps its own results file beside the in-memory dev server's.
const RESULTS = join(
  ROOT,
  'bench',
  'results',
  !PHASES.has('service')
    ? 'latest-connector.md'
    : env.BENCH_TEMPORAL_ADDRESS
      ? 'latest-external.md'
      : env.BENCH_TEMPORAL === 'server'
        ? 'latest-server.md'
        : env.BENCH_TEMPORAL === 'file'
          ? 'latest-file.md'
          : 'latest.md',
);
const sizes = {
  collections: positive('BENCH_COLLECTIONS', 10_000),
  seconds: positive('BENCH_SECONDS', 3),
  concurrency: positive('BENCH_CONCURRENCY', 8),
  readIterations: positive('BENCH_READ_ITERATIONS', 30),
};
const apiUrl = need('BENCH_API_URL');
const apiKey = need('BENCH_API_KEY');
const orgId = Number(need('BENCH_ORG_ID'));
const otherOrgId = Number(need('BENCH_OTHER_ORG_ID'));
const noopQueue = need('BENCH_NOOP_QUEUE');
const sql: Sql = createSql(need('DATABASE_URL'), 10);
const client = await connectClient({
  address: need('TEMPORAL_ADDRESS'),
  namespace: env.TEMPORAL_NAMESPACE ?? 'default',
});
const sampler = new RssSampler({
  'API (Bun)': Number(need('BENCH_API_PID')),
  'worker (Node)': Number(need('BENCH_WORKER_PID')),
});
const sections: string[] = [];

function section(title: string, body: string): void {
  const text = `## ${title}\n\n${body}\n`;
  process.stdout.write(`\n${text}`);
  sections.push(text);
  writeResults();
}

function machine(): string {
  const cpuModel = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown';
  const node = spawnSync('node', ['--version'], { encoding: 'utf8' }).stdout.trim();
  return [
    `- date: ${new Date().toISOString()}`,
    `- CPU: ${cpuModel}, nproc ${cpus().length}`,
    `- memory: ${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `- Node ${node} (worker), Bun ${Bun.version} (API and bench client), PostgreSQL ${postgresVersion}, ${env.BENCH_TEMPORAL_LABEL ?? 'Temporal dev server (in memory)'}`,
    `- sizes: BENCH_COLLECTIONS=${sizes.collections} BENCH_SECONDS=${sizes.seconds} BENCH_CONCURRENCY=${sizes.concurrency} BENCH_READ_ITERATIONS=${sizes.readIterations}`,
    `- everything (PostgreSQL, Temporal, API, worker, load generator) shares this machine`,
  ].join('\n');
}
const postgresVersion = (await sql<{ version: string }[]>`select current_setting('server_version') as version`)[0]!
  .version;
const header = `# Benchmark results\n\nWritten by \`npm run bench\` (bench/run.ts). Ratios: service figure / baseline figure measured in the same run (latency ratios: baseline latency / service latency), so 1.0 is parity and higher is better.\n\n${machine()}\n`;

function writeResults(): void {
  writeFileSync(RESULTS, `${header}\n${sections.join('\n')}`);
}

// ---------------------------------------------------------------------------------------------
// A local HTTPS webhook receiver (the worker trusts its certificate through WEBHOOK_CA_FILE).
const successReceivedAt = new Map<number, number>();
const floorReceivedAt = new Map<number, number>();
const fanout = { received: 0, last: 0 };
const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  tls: { cert: readFileSync(need('BENCH_CERT_FILE'), 'utf8'), key: readFileSync(need('BENCH_KEY_FILE'), 'utf8') },
  async fetch(request) {
    const path = new URL(request.url).pathname;
    const body = (await request.json()) as { data?: { id?: number; status?: string } };
    const now = Date.now();
    if (
      path === '/e2e' &&
      body.data?.status === 'successful' &&
      typeof body.data.id === 'number' &&
      !successReceivedAt.has(body.data.id)
    ) {
      successReceivedAt.set(body.data.id, now);
    }
    if (path === '/floor' && typeof body.data?.id === 'number') floorReceivedAt.set(body.data.id, now);
    if (path.startsWith('/fanout/')) {
      fanout.received += 1;
      fanout.last = now;
    }
    return new Response('ok');
  },
});
const receiverUrl = (path: string) => `https://127.0.0.1:${receiver.port}${path}`;

async function api(
  method: string,
  path: string,
  form?: Record<string, string>,
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${apiUrl}${path}`, {
    method,
    headers: {
      Authorization: `Token ${apiKey}`,
      ...(form ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}),
    },
    body: form ? new URLSearchParams(form) : undefined,
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}
async function addWebhook(event: string, path: string): Promise<number> {
  const created = await api('POST', '/api/webhooks', { event, target: receiverUrl(path) });
  if (created.status !== 201) throw new Error(`webhook not created: ${created.status} ${JSON.stringify(created.body)}`);
  return created.body.id;
}
async function removeWebhook(id: number): Promise<void> {
  const removed = await api('DELETE', `/api/webhooks/${id}`);
  if (removed.status !== 204 && removed.status !== 200) throw new Error(`webhook ${id} not deleted: ${removed.status}`);
}

// ---------------------------------------------------------------------------------------------
// 1. Create throughput: POST /api/collectionrequests against bare client.workflow.start.
const runId = randomUUID().slice(0, 8);
let phoneCounter = 0;
const postedAt = new Map<number, number>();
async function postRequest(toApi = apiUrl): Promise<void> {
  const phone = `+25677${String(phoneCounter++).padStart(7, '0')}`;
  const sentAt = Date.now();
  const response = await fetch(`${toApi}/api/collectionrequests`, {
    method: 'POST',
    headers: { Authorization: `Token ${apiKey}`, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      phonenumber: phone,
      amount: '10',
      currency: 'BXC',
      send_instructions: 'true',
      expiry_date: '1 hour',
    }),
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`POST answered ${response.status}: ${text.slice(0, 200)}`);
  postedAt.set((JSON.parse(text) as { id: number }).id, sentAt);
}
let noopCounter = 0;
async function startNoop(): Promise<void> {
  await client.workflow.start('benchNoop', {
    taskQueue: noopQueue,
    workflowId: `bench-noop-${runId}-${noopCounter++}`,
  });
}
/** The floor of the end-to-end figure: one workflow whose one activity POSTs a webhook-sized body to the same receiver. */
let floorCounter = 0;
const floorStartedAt = new Map<number, number>();
async function startFloor(): Promise<void> {
  const id = floorCounter++;
  floorStartedAt.set(id, Date.now());
  const body = JSON.stringify({
    hook: { id: 1, user: 1, event: 'collectionrequest.status.changed', target: receiverUrl('/floor') },
    data: { id, status: 'successful', padding: 'x'.repeat(1200) },
  });
  await client.workflow.start('benchNotify', {
    taskQueue: noopQueue,
    workflowId: `bench-notify-${runId}-${id}`,
    args: [{ url: receiverUrl('/floor'), body }],
  });
}

/** Waits (bounded) until no request is open, so one phase's workflows do not load the next. */
async function drain(timeoutSeconds = 120): Promise<number> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  for (;;) {
    const open = (
      await sql<{ open: number }[]>`
      select count(*)::int as open from collection_requests where status in ('new', 'pending', 'instructions_sent', 'processing_started')`
    )[0]!.open;
    if (open === 0 || Date.now() > deadline) return open;
    await Bun.sleep(500);
  }
}

/** Waits (bounded) until a baseline's started workflows have run, so they do not load the next phase. */
async function drainWorkflows(workflowType: string, timeoutSeconds = 120): Promise<void> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  while (Date.now() < deadline) {
    const { count } = await client.workflow.count(`WorkflowType = '${workflowType}' AND ExecutionStatus = 'Running'`);
    if (count === 0) return;
    await Bun.sleep(500);
  }
}
const drainBaseline = () => drainWorkflows('benchNoop');

const connectorPhase = () =>
  runConnectorPhase({ sql, orgId, apiKey, temporalPid: Number(need('BENCH_TEMPORAL_PID')), section });
async function finish(): Promise<void> {
  receiver.stop(true);
  await client.connection.close();
  await sql.end({ timeout: 5 });
}
if (!PHASES.has('service')) {
  if (PHASES.has('connector')) await connectorPhase();
  await finish();
  process.exit(0);
}

const runRow = (name: string, run: Run): (string | number)[] => [
  name,
  run.ops,
  run.errors,
  run.rate.toFixed(1),
  ms(percentile(run.latencies, 50)),
  ms(percentile(run.latencies, 99)),
];
const maxOps = (rate: number) => Math.ceil(rate * sizes.seconds) + 10;

sampler.start();
sampler.setPhase('create');
await closedLoop(4, 2, 20, () => startNoop());
await closedLoop(4, 2, 20, () => postRequest());
await closedLoop(2, 2, 6, () => startFloor());
await drain();

// The sustained-rate sweep: lifecycles (POST → prompt → sandbox payment → match → credit →
// `successful` → its webhook received) offered at each rate for BENCH_SWEEP_SECONDS, against the
// floor (one workflow whose one activity POSTs the same kind of body to the same receiver) at the
// same rate. A rate is sustained when every lifecycle completes with p99 under 2 s.
const SWEEP_RATES = (env.BENCH_SWEEP_RATES ?? '1,2,5,10').split(',').map(Number);
if (SWEEP_RATES.some((rate) => !(rate > 0)))
  throw new Error('BENCH_SWEEP_RATES must be positive numbers, comma separated');
const sweepSeconds = positive('BENCH_SWEEP_SECONDS', sizes.seconds);
const SUSTAINED_P99_MS = 2000;
type SweepPoint = {
  rate: number;
  offered: number;
  completed: number;
  perSecond: number;
  p50: number;
  p99: number;
  cpu: Record<string, number>;
  cost?: TemporalCost;
};

/** Offers `rate` per second for the sweep's seconds, waits (bounded) for every completion, then for the system to be idle. */
async function sweepPoint(
  rate: number,
  offer: () => Promise<void>,
  started: Map<number, number>,
  received: Map<number, number>,
  idle: () => Promise<unknown>,
): Promise<SweepPoint> {
  started.clear();
  const cpu = new CpuMeter(cpuPids);
  cpu.start();
  const run = await openLoop(rate, sweepSeconds, Math.ceil(rate * sweepSeconds), offer);
  if (run.firstError) process.stderr.write(`sweep at ${rate}/s, first error: ${run.firstError}\n`);
  const deadline = Date.now() + 60_000;
  while ([...started.keys()].some((id) => !received.has(id)) && Date.now() < deadline) await Bun.sleep(100);
  const usage = cpu.stop();
  const done = [...started].filter(([id]) => received.has(id));
  const latencies = done.map(([id, sentAt]) => received.get(id)! - sentAt);
  const span = (Math.max(...done.map(([id]) => received.get(id)!)) - Math.min(...started.values())) / 1000;
  await idle();
  return {
    rate,
    offered: started.size,
    completed: done.length,
    perSecond: span > 0 ? done.length / span : NaN,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    cpu: usage,
  };
}

// What Temporal does per lifecycle, read from the server after each service point: the executions
// the lifecycles started on the service's task queue, their history events (and what long-running
// actors already open added to theirs), and visibility writes (each execution's start and close,
// each search-attribute upsert); bench/temporal.ts reads them.
const serviceQueue = need('TASK_QUEUE');
const serviceScope = `TaskQueue = '${serviceQueue}'`;

const cpuPids = {
  'Temporal server': Number(need('BENCH_TEMPORAL_PID')),
  'API (Bun)': Number(need('BENCH_API_PID')),
  'worker (Node)': Number(need('BENCH_WORKER_PID')),
  'bench-noop worker (Node)': Number(need('BENCH_NOOP_PID')),
};
const sustained = (point: SweepPoint) => point.completed === point.offered && point.p99 < SUSTAINED_P99_MS;

sampler.setPhase('sweep');
const sweepHook = await addWebhook('collectionrequest.status.changed', '/e2e');
const servicePoints: SweepPoint[] = [];
const floorPoints: SweepPoint[] = [];
for (const rate of SWEEP_RATES) {
  const since = new Date();
  const before = await openRuns(client, serviceScope);
  const point = await sweepPoint(
    rate,
    () => postRequest(),
    postedAt,
    successReceivedAt,
    () => drain(),
  );
  servicePoints.push({ ...point, cost: await temporalCost(client, serviceScope, since, before) });
  floorPoints.push(
    await sweepPoint(
      rate,
      () => startFloor(),
      floorStartedAt,
      floorReceivedAt,
      () => drainWorkflows('benchNotify'),
    ),
  );
  process.stdout.write(
    `sweep ${rate}/s: service ${servicePoints.at(-1)!.completed}/${servicePoints.at(-1)!.offered} p50 ${ms(servicePoints.at(-1)!.p50)} p99 ${ms(servicePoints.at(-1)!.p99)}; floor p50 ${ms(floorPoints.at(-1)!.p50)}\n`,
  );
}

// The cost of telemetry: the same lifecycles through a second API and worker with tracing (OTLP to
// a local sink) and metrics on, at the rates given (BENCH_TELEMETRY_RATES), against the first pair.
const tracedApiUrl = env.BENCH_TRACED_API_URL;
const telemetryRates = (env.BENCH_TELEMETRY_RATES ?? '')
  .split(',')
  .filter((rate) => rate !== '')
  .map(Number);
const telemetryPoints: { rate: number; off: SweepPoint; on: SweepPoint }[] = [];
if (tracedApiUrl && telemetryRates.length > 0) {
  sampler.setPhase('telemetry');
  for (const rate of telemetryRates) {
    const off = await sweepPoint(
      rate,
      () => postRequest(),
      postedAt,
      successReceivedAt,
      () => drain(),
    );
    const on = await sweepPoint(
      rate,
      () => postRequest(tracedApiUrl),
      postedAt,
      successReceivedAt,
      () => drain(),
    );
    telemetryPoints.push({ rate, off, on });
  }
}
await removeWebhook(sweepHook);
sampler.setPhase('create');

// Webhook fan-out: each contact.created event goes to BENCH_FANOUT_HOOKS webhooks; deliveries per
// second until the receiver has them all, against bare workflows of one empty activity each.
const fanoutHooks = positive('BENCH_FANOUT_HOOKS', 10);
const fanoutEvents = positive('BENCH_FANOUT_EVENTS', 40);
const fanoutTotal = fanoutHooks * fanoutEvents;
const hookIds: number[] = [];
for (let hook = 0; hook < fanoutHooks; hook += 1) hookIds.push(await addWebhook('contact.created', `/fanout/${hook}`));
let contactCounter = 0;
const fanoutStarted = Date.now();
const contactsRun = await closedLoop(8, 600, fanoutEvents, async () => {
  const created = await api('POST', '/api/contacts', {
    phone_number: `+25678${String(contactCounter++).padStart(7, '0')}`,
    first_name: 'Fan',
    last_name: 'Out',
  });
  if (created.status !== 201) throw new Error(`contact not created: ${created.status}`);
});
const fanoutDeadline = Date.now() + 300_000;
while (fanout.received < fanoutTotal && Date.now() < fanoutDeadline) await Bun.sleep(100);
const fanoutSeconds = ((fanout.last || Date.now()) - fanoutStarted) / 1000;
const fanoutRate = fanout.received / fanoutSeconds;
for (const id of hookIds) await removeWebhook(id);
let stepsCounter = 0;
const stepsRun = await closedLoop(sizes.concurrency, 600, fanoutTotal, async () => {
  await client.workflow.execute('benchSteps', {
    taskQueue: noopQueue,
    workflowId: `bench-steps-${runId}-${stepsCounter++}`,
    args: [1],
  });
});

const cpu = new CpuMeter({
  'Temporal server process': Number(need('BENCH_TEMPORAL_PID')),
  'API (Bun)': Number(need('BENCH_API_PID')),
  'worker (Node)': Number(need('BENCH_WORKER_PID')),
  'bench-noop worker (Node)': Number(need('BENCH_NOOP_PID')),
  'bench client (Bun)': process.pid,
});
cpu.start();
const baseSat = await closedLoop(sizes.concurrency, sizes.seconds, sizes.seconds * 10_000, () => startNoop());
const baseCpu = cpu.stop();
await drainBaseline();
cpu.start();
const apiSat = await closedLoop(sizes.concurrency, sizes.seconds, sizes.seconds * 10_000, () => postRequest());
const apiCpu = cpu.stop();
const openAfterSaturation = await drain();
const baseHalf = await openLoop(baseSat.rate / 2, sizes.seconds, maxOps(baseSat.rate / 2), () => startNoop());
await drainBaseline();
const apiHalf = await openLoop(apiSat.rate / 2, sizes.seconds, maxOps(apiSat.rate / 2), () => postRequest());
const openAfterHalf = await drain();
for (const run of [contactsRun, stepsRun, baseSat, apiSat, baseHalf, apiHalf])
  if (run.firstError) process.stderr.write(`first error: ${run.firstError}\n`);

section(
  'Create throughput',
  [
    table(
      ['load', 'completed', 'errors', 'per second', 'p50 ms', 'p99 ms'],
      [
        runRow(`baseline: client.workflow.start(benchNoop), ${sizes.concurrency} clients`, baseSat),
        runRow(`POST /api/collectionrequests, ${sizes.concurrency} clients`, apiSat),
        runRow(`baseline at 50% of its saturating rate (${(baseSat.rate / 2).toFixed(0)}/s)`, baseHalf),
        runRow(`POST at 50% of its saturating rate (${(apiSat.rate / 2).toFixed(0)}/s)`, apiHalf),
      ],
    ),
    '',
    `**Throughput ratio (POST / bare start): ${ratio(apiSat.rate / baseSat.rate)}** (target >= 0.8). ` +
      `Latency ratio at 50% load (baseline p50 / POST p50): ${ratio(percentile(baseHalf.latencies, 50) / percentile(apiHalf.latencies, 50))}, ` +
      `p99: ${ratio(percentile(baseHalf.latencies, 99) / percentile(apiHalf.latencies, 99))}.`,
    `Requests still open after draining: ${openAfterSaturation} (saturation phase), ${openAfterHalf} (50% phase).`,
    '',
    `CPU during the two saturation phases, in cores (${cpus().length} on this machine; PostgreSQL: all its processes):`,
    '',
    table(
      ['process', 'baseline (bare start)', 'POST'],
      Object.keys(apiCpu).map((name) => [name, (baseCpu[name] ?? 0).toFixed(2), (apiCpu[name] ?? 0).toFixed(2)]),
    ),
  ].join('\n'),
);

const highestSustained = servicePoints.filter(sustained).at(-1)?.rate;
const atRate = (points: SweepPoint[], rate: number) => points.find((point) => point.rate === rate);
const floorRatioAt = (rate: number) => {
  const service = atRate(servicePoints, rate);
  const floor = atRate(floorPoints, rate);
  return service && floor ? service.p50 / floor.p50 : NaN;
};
const cpuCells = (point: SweepPoint) =>
  Object.keys(cpuPids)
    .concat('PostgreSQL')
    .map((name) => (point.cpu[name] ?? 0).toFixed(2));
section(
  'End to end: sustained-rate sweep (request → sandbox payment → successful → webhook received)',
  [
    table(
      [
        'offered per second',
        'service: completed / offered',
        'completed per second',
        'p50 ms',
        'p99 ms',
        'floor p50 ms',
        'floor p99 ms',
        'p50 / floor p50',
        'sustained (p99 < 2 s)',
      ],
      servicePoints.map((point, index) => {
        const floor = floorPoints[index]!;
        return [
          point.rate,
          `${point.completed} / ${point.offered}`,
          Number.isFinite(point.perSecond) ? point.perSecond.toFixed(1) : 'n/a',
          ms(point.p50),
          ms(point.p99),
          ms(floor.p50),
          ms(floor.p99),
          ratio(point.p50 / floor.p50),
          sustained(point) ? 'yes' : 'no',
        ];
      }),
    ),
    '',
    `**Highest rate sustained with p99 under 2 s: ${highestSustained ?? 'none of the rates offered'}${highestSustained ? ' lifecycles per second' : ''}.** ` +
      `At 1/s, p50 is ${ratio(floorRatioAt(1))}× the floor's; at 2/s, p50 ${ms(atRate(servicePoints, 2)?.p50 ?? NaN)} ms.`,
    '',
    `Each rate offered for ${sweepSeconds} s (BENCH_SWEEP_SECONDS), then drained; SANDBOX_PAYMENT_DELAY_SECONDS=${env.SANDBOX_PAYMENT_DELAY_SECONDS ?? '0'}. ` +
      'Service: from sending `POST /api/collectionrequests` (send_instructions, a webhook on `collectionrequest.status.changed` to a local HTTPS receiver) ' +
      'to the receiver getting the webhook whose status is `successful`: the request workflow and its prompt activity (text, USSD push, statuses), ' +
      "the sandbox payment (with no delay, the prompt's answer confirms it) received in the same workflow by one local activity (store, match, credit, " +
      "request successful), the success text, and each status change's delivery through the webhook dispatch pool. Floor: `benchNotify` (bench/noop-workflow.ts), one workflow whose " +
      'one activity POSTs a webhook-sized body to the same receiver, started at the same rate; from the start call to the receipt.',
    '',
    "**What Temporal does per lifecycle** (read from the server after each rate: executions started on the service's task queue, " +
      "their history events plus what the open dispatchers added to their own, and visibility writes: each execution's start and close, " +
      'each search-attribute upsert), divided by the lifecycles completed:',
    '',
    table(
      [
        'offered per second',
        'executions per lifecycle',
        'history events per lifecycle',
        'visibility writes per lifecycle',
      ],
      servicePoints.map((point) => {
        const per = (value: number) =>
          point.completed > 0 && point.cost ? (value / point.completed).toFixed(2) : 'n/a';
        return [
          point.rate,
          per(point.cost?.executions ?? NaN),
          per(point.cost?.historyEvents ?? NaN),
          per(point.cost?.visibilityWrites ?? NaN),
        ];
      }),
    ),
    'Targets: at most 1.5 executions, 35 history events and 4 visibility writes per lifecycle.',
    '',
    'CPU per process while each rate ran (cores; 2 on this machine; PostgreSQL: all its processes):',
    '',
    table(
      ['offered per second', ...Object.keys(cpuPids), 'PostgreSQL'],
      servicePoints.map((point) => [point.rate, ...cpuCells(point)]),
    ),
    ...(telemetryPoints.length > 0
      ? [
          '',
          '**Cost of telemetry** (a second API and worker with tracing exported over OTLP to a local sink and metrics on, against the first pair with both off; same rates):',
          '',
          table(
            [
              'offered per second',
              'off: completed per second',
              'on: completed per second',
              'on / off',
              'off p50 / p99 ms',
              'on p50 / p99 ms',
            ],
            telemetryPoints.map(({ rate, off, on }) => [
              rate,
              off.perSecond.toFixed(1),
              on.perSecond.toFixed(1),
              ratio(on.perSecond / off.perSecond),
              `${ms(off.p50)} / ${ms(off.p99)}`,
              `${ms(on.p50)} / ${ms(on.p99)}`,
            ]),
          ),
        ]
      : []),
  ].join('\n'),
);

section(
  'Webhook fan-out',
  [
    table(
      ['load', 'deliveries', 'seconds', 'per second'],
      [
        [
          `baseline: benchSteps(1) workflows (one empty activity each), ${sizes.concurrency} clients`,
          stepsRun.ops,
          stepsRun.seconds.toFixed(1),
          stepsRun.rate.toFixed(1),
        ],
        [
          `service: ${fanoutEvents} contact.created events × ${fanoutHooks} webhooks, to the local receiver`,
          fanout.received,
          fanoutSeconds.toFixed(1),
          fanoutRate.toFixed(1),
        ],
      ],
    ),
    '',
    `**Ratio (deliveries per second / bare activity executions per second): ${ratio(fanoutRate / stepsRun.rate)}** (${fanout.received} of ${fanoutTotal} deliveries received). ` +
      "Service: from the first `POST /api/contacts` to the last delivery received; each delivery reaches its webhook's actor right after the commit " +
      'that recorded the event and its delivery rows (signal-with-start), which attempts what is due together in one activity (sign and POST over ' +
      'HTTPS, log each attempt, close each row). ' +
      'Baseline: one bare workflow with one empty activity per delivery, started and awaited by the bench client.',
  ].join('\n'),
);

// ---------------------------------------------------------------------------------------------
// Bulk payouts: one batch of BENCH_BATCH_ROWS payments (10,000 by default; 0 skips it) uploaded as
// JSON, timed from the upload to every row final, with the processes' peak memory meanwhile.
const batchRows = env.BENCH_BATCH_ROWS === '0' ? 0 : positive('BENCH_BATCH_ROWS', 10_000);
if (batchRows > 0) {
  sampler.setPhase('batch');
  const payments = Array.from({ length: batchRows }, (_, index) => ({
    phonenumber: `+25678${String(index).padStart(7, '0')}`,
    amount: '10',
    currency: 'BXC',
    description: `Bench payroll ${runId}`,
  }));
  const uploadBody = JSON.stringify({ payments });
  const uploadStarted = performance.now();
  const uploaded = await fetch(`${apiUrl}/api/payment-batches`, {
    method: 'POST',
    headers: { Authorization: `Token ${apiKey}`, 'Content-Type': 'application/json' },
    body: uploadBody,
  });
  const uploadText = await uploaded.text();
  if (uploaded.status !== 201)
    throw new Error(`POST /api/payment-batches answered ${uploaded.status}: ${uploadText.slice(0, 300)}`);
  const uploadSeconds = (performance.now() - uploadStarted) / 1000;
  const batchId = (JSON.parse(uploadText) as { id: number }).id;
  const batchDeadline = Date.now() + 3_600_000;
  let state = 'processing';
  while (state !== 'completed' && Date.now() < batchDeadline) {
    await Bun.sleep(500);
    state = (await api('GET', `/api/payment-batches/${batchId}`)).body.state;
  }
  const batchSeconds = (performance.now() - uploadStarted) / 1000;
  const batch = (await api('GET', `/api/payment-batches/${batchId}`)).body as { counts: Record<string, number> };
  const lifetimes = (
    await sql<{ ms: number }[]>`
    select extract(epoch from p.modified - p.created)::float8 * 1000 as ms
    from payment_batch_rows r join payments p on p.id = r.payment_id where r.batch_id = ${batchId}`
  )
    .map((row) => row.ms)
    .sort((a, b) => a - b);
  const runs = await listed(client, `WorkflowId = "payment-batch-${batchId}"`);
  const peaks = Object.fromEntries([...sampler.peaks.entries()].map(([name, byPhase]) => [name, byPhase.get('batch')]));
  section(
    'Bulk payout',
    [
      table(
        [
          'rows',
          'upload (s)',
          'to every row final (s)',
          'rows per second',
          'payment p50',
          'payment p99',
          'batch runs',
          'worker peak RSS',
          'API peak RSS',
        ],
        [
          [
            batchRows,
            uploadSeconds.toFixed(1),
            batchSeconds.toFixed(1),
            (batchRows / batchSeconds).toFixed(1),
            ms(percentile(lifetimes, 50)),
            ms(percentile(lifetimes, 99)),
            runs.length,
            mb(peaks['worker (Node)']),
            mb(peaks['API (Bun)']),
          ],
        ],
      ),
      '',
      `One \`POST /api/payment-batches\` of ${batchRows} rows (JSON, ${(uploadBody.length / 1024).toFixed(0)} KiB), then \`GET\` every 500 ms until \`completed\` ` +
        `(counts: ${Object.entries(batch.counts)
          .filter(([, count]) => count > 0)
          .map(([name, count]) => `${count} ${name}`)
          .join(', ')}). ` +
        "The batch's workflow creates its payments 100 rows per transaction (each debit, contact and event with it) and runs each payment's workflow as a child, " +
        `\`PAYMENT_BATCH_CONCURRENCY\` (${env.PAYMENT_BATCH_CONCURRENCY ?? 20}) at once, continuing as new past 10,000 history events. ` +
        "Payment p50/p99: from a payment's creation (its reservation, up to 100 rows ahead of a free slot) to its final state. Peak RSS: VmRSS sampled every 200 ms during the phase. " +
        `The sandbox completes a payout when it is sent (\`SANDBOX_PAYOUT_DELAY_SECONDS=${env.SANDBOX_PAYOUT_DELAY_SECONDS ?? '0'}\`).`,
    ].join('\n'),
  );
}

// ---------------------------------------------------------------------------------------------
// 2. Reads: GET /api/collections with filters against the same SQL run directly with postgres.js.
sampler.setPhase('seeding');
const seedStarted = performance.now();
const phones = Math.max(1, Math.floor(sizes.collections / 10));
await sql`
  insert into collections (organization_id, network, remote_transaction_id, amount, currency, phone_number, payment_date, reference, status, created, modified)
  select case when g % 100 = 0 then ${otherOrgId}::bigint else ${orgId}::bigint end,
         'MTN Uganda', 'BENCH-' || g, (g % 1000) + 1,
         case when (g / 7) % 10 = 0 then 'UGX' else 'BXC' end,
         '+25670' || lpad((g % ${phones})::text, 7, '0'),
         now() - g * interval '1 second', 'bench',
         (array['successful','successful','successful','successful','successful','successful','successful','failed','pending','cashed_out'])[g % 10 + 1],
         now() - g * interval '1 second', now() - g * interval '1 second'
  from generate_series(1, ${sizes.collections}::int) g`;
await sql.unsafe('vacuum analyze collections');
const seedSeconds = (performance.now() - seedStarted) / 1000;

type Filters = { status?: string; currency?: string; phonenumber?: string };
const QUERIES: { name: string; filters: Filters }[] = [
  { name: 'status=successful&currency=BXC', filters: { status: 'successful', currency: 'BXC' } },
  {
    name: `phonenumber=+25670${'123'.padStart(7, '0')}`,
    filters: { phonenumber: `+25670${String(123 % phones).padStart(7, '0')}` },
  },
  { name: '(no filter)', filters: {} },
];
const PAGE = 10;

/** The two statements src/api/collections.ts builds for these filters (count, page), run as it runs them. */
function statements(f: Filters) {
  const where = sql`
    where c.organization_id = ${orgId}
    ${f.currency !== undefined ? sql`and c.currency = ${f.currency}` : sql``}
    ${f.phonenumber !== undefined ? sql`and c.phone_number = ${f.phonenumber}` : sql``}
    ${f.status !== undefined ? sql`and c.status = ${f.status}` : sql``}`;
  const from = sql`collections c left join contacts ct on ct.id = c.contact_id`;
  return {
    count: () => sql`select count(*)::int as count from ${from} ${where}`,
    page: () =>
      sql`select ${sql.unsafe(collectionColumns('c.'))} from ${from} ${where} order by c.created desc, c.id desc limit ${PAGE} offset 0`,
    explainCount: () => sql`explain analyze select count(*)::int as count from ${from} ${where}`,
    explainPage: () =>
      sql`explain analyze select ${sql.unsafe(collectionColumns('c.'))} from ${from} ${where} order by c.created desc, c.id desc limit ${PAGE} offset 0`,
  };
}

async function apiGet(query: string): Promise<void> {
  const search = new URLSearchParams(query === '(no filter)' ? '' : query);
  search.set('limit', String(PAGE));
  const response = await fetch(`${apiUrl}/api/collections?${search}`, {
    headers: { Authorization: `Token ${apiKey}` },
  });
  const body = (await response.json()) as { count?: number };
  if (response.status !== 200 || typeof body.count !== 'number')
    throw new Error(`GET answered ${response.status}: ${JSON.stringify(body).slice(0, 200)}`);
}

function planSummary(rows: Record<string, string>[]): string {
  const lines = rows.map((row) => Object.values(row)[0]!);
  const scans = lines
    .filter((line) => /Scan|Sort|Aggregate/.test(line))
    .map((line) =>
      line
        .trim()
        .replace(/\s+\(cost=[^)]*\)/, '')
        .replace(/\(actual time=[\d.]+\.\.([\d.]+) rows=(\d+) loops=\d+\)/, '($1 ms, $2 rows)'),
    );
  const total = lines.find((line) => line.startsWith('Execution Time'));
  return `${scans.slice(0, 3).join('; ')}; ${total ?? ''}`;
}

type ReadResult = { name: string; api: number[]; direct: number[]; countPlan: string; pagePlan: string; total: number };
async function measureReads(): Promise<ReadResult[]> {
  const results: ReadResult[] = [];
  for (const { name, filters } of QUERIES) {
    const s = statements(filters);
    const api = await repeat(sizes.readIterations, sizes.seconds * 5, () => apiGet(name));
    const direct = await repeat(sizes.readIterations, sizes.seconds * 5, async () => {
      await Promise.all([s.count(), s.page()]);
    });
    const [[total]] = (await Promise.all([s.count()])) as unknown as [[{ count: number }]];
    results.push({
      name,
      api,
      direct,
      total: total.count,
      countPlan: planSummary((await s.explainCount()) as unknown as Record<string, string>[]),
      pagePlan: planSummary((await s.explainPage()) as unknown as Record<string, string>[]),
    });
  }
  return results;
}

function readTable(results: ReadResult[]): string {
  return table(
    ['filter', 'matching rows', 'API p50 ms', 'API p99 ms', 'direct p50 ms', 'direct p99 ms', 'ratio p50', 'ratio p99'],
    results.map((r) => {
      const [a50, a99, d50, d99] = [
        percentile(r.api, 50),
        percentile(r.api, 99),
        percentile(r.direct, 50),
        percentile(r.direct, 99),
      ];
      return [`\`${r.name}\``, r.total, ms(a50), ms(a99), ms(d50), ms(d99), ratio(d50 / a50), ratio(d99 / a99)];
    }),
  );
}
const plans = (results: ReadResult[]) =>
  results.map((r) => `- \`${r.name}\`: count: ${r.countPlan}\n  page: ${r.pagePlan}`).join('\n');

sampler.setPhase('reads');
const indexFile = join(ROOT, 'migrations', '006_indexes.sql');
const indexSql = existsSync(indexFile) ? readFileSync(indexFile, 'utf8') : null;
const indexNames = indexSql
  ? [...indexSql.matchAll(/create index (?:if not exists )?(\w+)/gi)].map((match) => match[1]!)
  : [];
const readIntro =
  `${sizes.collections} collections (${Math.round(sizes.collections * 0.99)} of the benchmark organization, the rest another's; ` +
  `${phones} phone numbers; 70% successful, 90% BXC), inserted with one \`insert ... select generate_series\` and \`vacuum analyze\` in ${seedSeconds.toFixed(1)} s. ` +
  `Sequential requests, page size ${PAGE}; API = \`GET /api/collections?<filter>\` over HTTP (auth, throttle, validation, the count and page queries, the page's transaction lookup, JSON); ` +
  `direct = the count and page statements the route builds, run with postgres.js from the bench process. Ratio = direct / API latency (target >= 0.7).`;
if (indexNames.length > 0) {
  for (const name of indexNames) await sql.unsafe(`drop index if exists ${name}`);
  await sql.unsafe('analyze collections');
  const before = await measureReads();
  await sql.unsafe(indexSql!);
  await sql.unsafe('vacuum analyze collections');
  const after = await measureReads();
  section(
    'Reads',
    [
      readIntro,
      '',
      `### Before migrations/006_indexes.sql (indexes ${indexNames.join(', ')} dropped)`,
      '',
      readTable(before),
      '',
      plans(before),
      '',
      '### After migrations/006_indexes.sql',
      '',
      readTable(after),
      '',
      plans(after),
    ].join('\n'),
  );
} else {
  const results = await measureReads();
  section('Reads', [readIntro, '', readTable(results), '', plans(results)].join('\n'));
}

// ---------------------------------------------------------------------------------------------
// 3. Memory.
sampler.stop();
const hwm = sampler.highWaterMarks();
section(
  'Memory (peak RSS, MiB)',
  [
    table(
      [
        'process',
        'sustained-rate sweep',
        'create and webhook loads',
        'bulk payout',
        'seeding',
        'reads',
        'VmHWM (whole run)',
      ],
      [...sampler.peaks.entries()].map(([name, byPhase]) => [
        name,
        mb(byPhase.get('sweep')),
        mb(byPhase.get('create')),
        mb(byPhase.get('batch')),
        mb(byPhase.get('seeding')),
        mb(byPhase.get('reads')),
        mb(hwm[name]),
      ]),
    ),
    '',
    "VmRSS of each process sampled every 200 ms per phase; VmHWM is the kernel's high-water mark at the end.",
  ].join('\n'),
);

// ---------------------------------------------------------------------------------------------
// 4. Webhook delivery under adverse receivers, overload, a backlog and a killed worker (bench/delivery.ts).
await runDeliveryPhases({
  sql,
  client,
  apiUrl,
  apiKey,
  orgId,
  noopQueue,
  seconds: sizes.seconds,
  ceiling: highestSustained,
  sweepMemory: {
    worker: sampler.peaks.get('worker (Node)')?.get('sweep'),
    api: sampler.peaks.get('API (Bun)')?.get('sweep'),
  },
  bareActivityRate: stepsRun.rate,
  pids: {
    temporal: Number(need('BENCH_TEMPORAL_PID')),
    api: Number(need('BENCH_API_PID')),
    worker: Number(need('BENCH_WORKER_PID')),
  },
  section,
});

// ---------------------------------------------------------------------------------------------
// 5. The connector lifecycle (bench/connector.ts), when asked for.
if (PHASES.has('connector')) await connectorPhase();

await finish();
