/**
 * The benchmarks (`npm run bench` starts everything and runs this with Bun): create throughput,
 * end-to-end lifecycle latency up to the webhook's receipt, webhook fan-out, filtered reads, peak
 * memory. Each figure is set against a baseline
 * measured in the same run. Prints each table and writes them all to bench/results/latest.md.
 *
 * Sizes (small defaults: a smoke run): BENCH_COLLECTIONS (rows for the read benchmark; full run
 * 1000000), BENCH_SECONDS (per load phase; full 8), BENCH_CONCURRENCY (clients; full 32),
 * BENCH_READ_ITERATIONS (per read query; full 100), BENCH_E2E_RATE (POSTs per second of the end-to-end phase, default 2),
 * BENCH_FANOUT_EVENTS and BENCH_FANOUT_HOOKS (events × webhooks of the fan-out phase, default 40 × 10).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { createSql, type Sql } from '../src/db';
import { collectionColumns } from '../src/services/collections';
import { connectClient } from '../src/temporal/connection';
import { closedLoop, CpuMeter, mb, ms, openLoop, percentile, ratio, repeat, RssSampler, table, type Run } from './lib';

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
// A run on the production server (BENCH_TEMPORAL=server) keeps its own results file beside the dev server's.
const RESULTS = join(ROOT, 'bench', 'results', env.BENCH_TEMPORAL === 'server' ? 'latest-server.md' : 'latest.md');
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
const client = await connectClient({ address: need('TEMPORAL_ADDRESS'), namespace: env.TEMPORAL_NAMESPACE ?? 'default' });
const sampler = new RssSampler({ 'API (Bun)': Number(need('BENCH_API_PID')), 'worker (Node)': Number(need('BENCH_WORKER_PID')) });
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
const postgresVersion = (await sql<{ version: string }[]>`select current_setting('server_version') as version`)[0]!.version;
const header = `# Benchmark results\n\nWritten by \`npm run bench\` (bench/run.ts). Ratios: service figure / baseline figure measured in the same run (latency ratios: baseline latency / service latency), so 1.0 is parity and higher is better.\n\n${machine()}\n`;

function writeResults(): void {
  writeFileSync(RESULTS, `${header}\n${sections.join('\n')}`);
}

// ---------------------------------------------------------------------------------------------
// A local HTTPS webhook receiver (the worker trusts its certificate through WEBHOOK_CA_FILE).
const successReceivedAt = new Map<number, number>();
const fanout = { received: 0, last: 0 };
const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  tls: { cert: readFileSync(need('BENCH_CERT_FILE'), 'utf8'), key: readFileSync(need('BENCH_KEY_FILE'), 'utf8') },
  async fetch(request) {
    const path = new URL(request.url).pathname;
    const body = (await request.json()) as { data?: { id?: number; status?: string } };
    const now = Date.now();
    if (path === '/e2e' && body.data?.status === 'successful' && typeof body.data.id === 'number' && !successReceivedAt.has(body.data.id)) {
      successReceivedAt.set(body.data.id, now);
    }
    if (path.startsWith('/fanout/')) {
      fanout.received += 1;
      fanout.last = now;
    }
    return new Response('ok');
  },
});
const receiverUrl = (path: string) => `https://127.0.0.1:${receiver.port}${path}`;

async function api(method: string, path: string, form?: Record<string, string>): Promise<{ status: number; body: any }> {
  const response = await fetch(`${apiUrl}${path}`, {
    method,
    headers: { Authorization: `Token ${apiKey}`, ...(form ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}) },
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
async function postRequest(): Promise<void> {
  const phone = `+25677${String(phoneCounter++).padStart(7, '0')}`;
  const sentAt = Date.now();
  const response = await fetch(`${apiUrl}/api/collectionrequests`, {
    method: 'POST',
    headers: { Authorization: `Token ${apiKey}`, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ phonenumber: phone, amount: '10', currency: 'BXC', send_instructions: 'true', expiry_date: '1 hour' }),
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`POST answered ${response.status}: ${text.slice(0, 200)}`);
  postedAt.set((JSON.parse(text) as { id: number }).id, sentAt);
}
let noopCounter = 0;
async function startNoop(): Promise<void> {
  await client.workflow.start('benchNoop', { taskQueue: noopQueue, workflowId: `bench-noop-${runId}-${noopCounter++}` });
}
async function runBaselineLifecycle(): Promise<void> {
  await client.workflow.execute('benchLifecycle', { taskQueue: noopQueue, workflowId: `bench-lifecycle-${runId}-${noopCounter++}` });
}

/** Waits (bounded) until no request is open, so one phase's workflows do not load the next. */
async function drain(timeoutSeconds = 120): Promise<number> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  for (;;) {
    const open = (await sql<{ open: number }[]>`
      select count(*)::int as open from collection_requests where status in ('new', 'pending', 'instructions_sent', 'processing_started')`)[0]!.open;
    if (open === 0 || Date.now() > deadline) return open;
    await Bun.sleep(500);
  }
}

/** Waits (bounded) until the baseline's started workflows have run, so they do not load the next phase. */
async function drainBaseline(timeoutSeconds = 120): Promise<void> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  while (Date.now() < deadline) {
    const { count } = await client.workflow.count(`WorkflowType = 'benchNoop' AND ExecutionStatus = 'Running'`);
    if (count === 0) return;
    await Bun.sleep(500);
  }
}

const runRow = (name: string, run: Run): (string | number)[] => [
  name, run.ops, run.errors, run.rate.toFixed(1), ms(percentile(run.latencies, 50)), ms(percentile(run.latencies, 99)),
];
const maxOps = (rate: number) => Math.ceil(rate * sizes.seconds) + 10;
const e2eRate = Number(env.BENCH_E2E_RATE ?? 2);
if (!(e2eRate > 0)) throw new Error('BENCH_E2E_RATE must be a positive number');

sampler.start();
sampler.setPhase('create');
await closedLoop(4, 2, 20, () => startNoop());
await closedLoop(4, 2, 20, () => postRequest());
await closedLoop(2, 2, 6, () => runBaselineLifecycle());
await drain();

// End to end first, on a quiet system and at a rate the lifecycle can sustain (BENCH_E2E_RATE per
// second): POST sent → sandbox payment → verified, credited, successful → the status change's
// webhook received by the local receiver. Baseline: the same Temporal shape with empty steps.
const e2eHook = await addWebhook('collectionrequest.status.changed', '/e2e');
postedAt.clear();
const e2eRun = await openLoop(e2eRate, sizes.seconds, maxOps(e2eRate), () => postRequest());
const e2eDeadline = Date.now() + 120_000;
while ([...postedAt.keys()].some((id) => !successReceivedAt.has(id)) && Date.now() < e2eDeadline) await Bun.sleep(200);
const e2eLatencies = [...postedAt].filter(([id]) => successReceivedAt.has(id)).map(([id, sentAt]) => successReceivedAt.get(id)! - sentAt);
const e2eSpanSeconds = (Math.max(...[...postedAt.keys()].map((id) => successReceivedAt.get(id) ?? 0)) - Math.min(...postedAt.values())) / 1000;
const openAfterE2e = await drain();
await removeWebhook(e2eHook);
const e2eBase = await openLoop(e2eRate, sizes.seconds, maxOps(e2eRate), () => runBaselineLifecycle());

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
    phone_number: `+25678${String(contactCounter++).padStart(7, '0')}`, first_name: 'Fan', last_name: 'Out',
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
  await client.workflow.execute('benchSteps', { taskQueue: noopQueue, workflowId: `bench-steps-${runId}-${stepsCounter++}`, args: [1] });
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
for (const run of [e2eRun, e2eBase, contactsRun, stepsRun, baseSat, apiSat, baseHalf, apiHalf]) if (run.firstError) process.stderr.write(`first error: ${run.firstError}\n`);

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

section(
  'End to end (request → sandbox payment → successful → webhook received)',
  [
    table(
      ['lifecycle', 'started', 'completed', 'p50 ms', 'p99 ms', 'completed per second'],
      [
        ['baseline: benchLifecycle (same workflows and activities, all empty)', e2eBase.ops + e2eBase.errors, e2eBase.ops, ms(percentile(e2eBase.latencies, 50)), ms(percentile(e2eBase.latencies, 99)), e2eBase.rate.toFixed(1)],
        ['service: POST → … → `successful` webhook received', e2eRun.ops, e2eLatencies.length, ms(percentile(e2eLatencies, 50)), ms(percentile(e2eLatencies, 99)), e2eSpanSeconds > 0 ? (e2eLatencies.length / e2eSpanSeconds).toFixed(1) : 'n/a'],
      ],
    ),
    '',
    `**Latency ratio (baseline p50 / service p50): ${ratio(percentile(e2eBase.latencies, 50) / percentile(e2eLatencies, 50))}**, p99: ${ratio(percentile(e2eBase.latencies, 99) / percentile(e2eLatencies, 99))}. ` +
      `Requests still open after the drain: ${openAfterE2e}.`,
    `Both at ${e2eRate}/s (BENCH_E2E_RATE) for ${sizes.seconds} s on a quiet system; SANDBOX_PAYMENT_DELAY_SECONDS=${env.SANDBOX_PAYMENT_DELAY_SECONDS ?? '0'}. ` +
      'Service latency: from sending the POST to the receiver getting the `collectionrequest.status.changed` webhook whose status is `successful` ' +
      '(POST, the request workflow with its text, status and prompt activities, the sandbox payment, the incoming-collection workflow: store, match, verification, credit; ' +
      'the signal, the status change, its event dispatch and webhook delivery over HTTPS). Baseline: `benchLifecycle` (bench/noop-workflow.ts), the same chain of ' +
      'workflow starts and activities with empty bodies, from client start to result.',
  ].join('\n'),
);

section(
  'Webhook fan-out',
  [
    table(
      ['load', 'deliveries', 'seconds', 'per second'],
      [
        [`baseline: benchSteps(1) workflows (one empty activity each), ${sizes.concurrency} clients`, stepsRun.ops, stepsRun.seconds.toFixed(1), stepsRun.rate.toFixed(1)],
        [`service: ${fanoutEvents} contact.created events × ${fanoutHooks} webhooks, to the local receiver`, fanout.received, fanoutSeconds.toFixed(1), fanoutRate.toFixed(1)],
      ],
    ),
    '',
    `**Ratio (deliveries per second / bare activity executions per second): ${ratio(fanoutRate / stepsRun.rate)}** (${fanout.received} of ${fanoutTotal} deliveries received). ` +
      'Service: from the first `POST /api/contacts` to the last delivery received; each delivery is its own workflow, started by the event\'s dispatch workflow, ' +
      'with one activity per attempt (open the log row, sign and POST over HTTPS, log the attempt, close the row). Baseline: one bare workflow with one empty activity per delivery, started and awaited by the bench client.',
  ].join('\n'),
);

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
  { name: `phonenumber=+25670${'123'.padStart(7, '0')}`, filters: { phonenumber: `+25670${String(123 % phones).padStart(7, '0')}` } },
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
    page: () => sql`select ${sql.unsafe(collectionColumns('c.'))} from ${from} ${where} order by c.created desc, c.id desc limit ${PAGE} offset 0`,
    explainCount: () => sql`explain analyze select count(*)::int as count from ${from} ${where}`,
    explainPage: () => sql`explain analyze select ${sql.unsafe(collectionColumns('c.'))} from ${from} ${where} order by c.created desc, c.id desc limit ${PAGE} offset 0`,
  };
}

async function apiGet(query: string): Promise<void> {
  const search = new URLSearchParams(query === '(no filter)' ? '' : query);
  search.set('limit', String(PAGE));
  const response = await fetch(`${apiUrl}/api/collections?${search}`, { headers: { Authorization: `Token ${apiKey}` } });
  const body = (await response.json()) as { count?: number };
  if (response.status !== 200 || typeof body.count !== 'number') throw new Error(`GET answered ${response.status}: ${JSON.stringify(body).slice(0, 200)}`);
}

function planSummary(rows: Record<string, string>[]): string {
  const lines = rows.map((row) => Object.values(row)[0]!);
  const scans = lines.filter((line) => /Scan|Sort|Aggregate/.test(line)).map((line) => line.trim().replace(/\s+\(cost=[^)]*\)/, '').replace(/\(actual time=[\d.]+\.\.([\d.]+) rows=(\d+) loops=\d+\)/, '($1 ms, $2 rows)'));
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
      name, api, direct, total: total.count,
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
      const [a50, a99, d50, d99] = [percentile(r.api, 50), percentile(r.api, 99), percentile(r.direct, 50), percentile(r.direct, 99)];
      return [`\`${r.name}\``, r.total, ms(a50), ms(a99), ms(d50), ms(d99), ratio(d50 / a50), ratio(d99 / a99)];
    }),
  );
}
const plans = (results: ReadResult[]) =>
  results.map((r) => `- \`${r.name}\`: count: ${r.countPlan}\n  page: ${r.pagePlan}`).join('\n');

sampler.setPhase('reads');
const indexFile = join(ROOT, 'migrations', '006_indexes.sql');
const indexSql = existsSync(indexFile) ? readFileSync(indexFile, 'utf8') : null;
const indexNames = indexSql ? [...indexSql.matchAll(/create index (?:if not exists )?(\w+)/gi)].map((match) => match[1]!) : [];
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
      ['process', 'create, end-to-end and webhook loads', 'seeding', 'reads', 'VmHWM (whole run)'],
      [...sampler.peaks.entries()].map(([name, byPhase]) => [name, mb(byPhase.get('create')), mb(byPhase.get('seeding')), mb(byPhase.get('reads')), mb(hwm[name])]),
    ),
    '',
    'VmRSS of each process sampled every 200 ms per phase; VmHWM is the kernel\'s high-water mark at the end.',
  ].join('\n'),
);


receiver.stop(true);
await client.connection.close();
await sql.end({ timeout: 5 });
