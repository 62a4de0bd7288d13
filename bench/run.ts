/**
 * The benchmarks (`npm run bench` starts everything and runs this with Bun): create throughput,
 * end-to-end lifecycle latency, filtered reads, peak memory. Each figure is set against a baseline
 * measured in the same run. Prints each table and writes them all to bench/results/latest.md.
 *
 * Sizes (small defaults: a smoke run): BENCH_COLLECTIONS (rows for the read benchmark; full run
 * 1000000), BENCH_SECONDS (per load phase; full 8), BENCH_CONCURRENCY (clients; full 32),
 * BENCH_READ_ITERATIONS (per read query; full 100), BENCH_E2E_RATE (POSTs per second of the end-to-end phase, default 2).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { createSql, type Sql } from '../src/db';
import { collectionColumns } from '../src/services/collections';
import { connectClient } from '../src/temporal/connection';
import { closedLoop, mb, ms, openLoop, percentile, ratio, repeat, RssSampler, table, type Run } from './lib';

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
const RESULTS = join(ROOT, 'bench', 'results', 'latest.md');
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
    `- Node ${node} (worker), Bun ${Bun.version} (API and bench client), PostgreSQL ${postgresVersion}, Temporal dev server (in memory)`,
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
// 1. Create throughput: POST /api/collectionrequests against bare client.workflow.start.
const runId = randomUUID().slice(0, 8);
let phoneCounter = 0;
async function postRequest(): Promise<void> {
  const phone = `+25677${String(phoneCounter++).padStart(7, '0')}`;
  const response = await fetch(`${apiUrl}/api/collectionrequests`, {
    method: 'POST',
    headers: { Authorization: `Token ${apiKey}`, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ phonenumber: phone, amount: '10', currency: 'BXC', send_instructions: 'true', expiry_date: '1 hour' }),
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`POST answered ${response.status}: ${text.slice(0, 200)}`);
}
let noopCounter = 0;
async function startNoop(): Promise<void> {
  await client.workflow.start('benchNoop', { taskQueue: noopQueue, workflowId: `bench-noop-${runId}-${noopCounter++}` });
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
await drain();
// End to end first, on a quiet system and at a rate the lifecycle can sustain (BENCH_E2E_RATE per second).
const marker = (await sql<{ marker: number }[]>`select coalesce(max(id), 0)::int as marker from collection_requests`)[0]!.marker;
const e2eRun = await openLoop(e2eRate, sizes.seconds, maxOps(e2eRate), () => postRequest());
const openAfterE2e = await drain();
const baseSat = await closedLoop(sizes.concurrency, sizes.seconds, sizes.seconds * 10_000, () => startNoop());
const apiSat = await closedLoop(sizes.concurrency, sizes.seconds, sizes.seconds * 10_000, () => postRequest());
const openAfterSaturation = await drain();
const baseHalf = await openLoop(baseSat.rate / 2, sizes.seconds, maxOps(baseSat.rate / 2), () => startNoop());
const apiHalf = await openLoop(apiSat.rate / 2, sizes.seconds, maxOps(apiSat.rate / 2), () => postRequest());
const openAfterHalf = await drain();
for (const run of [e2eRun, baseSat, apiSat, baseHalf, apiHalf]) if (run.firstError) process.stderr.write(`first error: ${run.firstError}\n`);

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
  ].join('\n'),
);

// End to end: request created → sandbox pays (SANDBOX_PAYMENT_DELAY_SECONDS) → successful.
const [lifecycle] = await sql<{ done: number; p50: number | null; p99: number | null; span: number | null }[]>`
  select count(*)::int as done,
         (percentile_cont(0.5) within group (order by extract(epoch from modified - created)) * 1000)::float8 as p50,
         (percentile_cont(0.99) within group (order by extract(epoch from modified - created)) * 1000)::float8 as p99,
         extract(epoch from max(modified) - min(created))::float8 as span
  from collection_requests where id > ${marker}::bigint and id <= ${marker + e2eRun.ops}::bigint and status = 'successful'`;
section(
  'End to end (request → sandbox payment → successful)',
  [
    table(
      ['requests', 'successful', 'p50 ms', 'p99 ms', 'completed lifecycles per second', 'still open after drain'],
      [[e2eRun.ops, lifecycle!.done, ms(lifecycle!.p50 ?? NaN), ms(lifecycle!.p99 ?? NaN), lifecycle!.span ? (lifecycle!.done / lifecycle!.span).toFixed(1) : 'n/a', openAfterE2e]],
    ),
    '',
    `POSTs at ${e2eRate}/s (BENCH_E2E_RATE) for ${sizes.seconds} s on a quiet system, before the create benchmark; SANDBOX_PAYMENT_DELAY_SECONDS=${env.SANDBOX_PAYMENT_DELAY_SECONDS ?? '5'}. ` +
      'Latency is the request row\'s `created` to its last change (`modified`: the change to `successful`): POST, workflows, SMS and prompt activities, sandbox payment, incoming-collection workflow (store, match, credit), signal. ' +
      'No baseline: a bare-Temporal equivalent of the lifecycle is not defined yet. Webhook receipt is not part of this lifecycle measurement.',
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
      ['process', 'create and end-to-end loads', 'seeding', 'reads', 'VmHWM (whole run)'],
      [...sampler.peaks.entries()].map(([name, byPhase]) => [name, mb(byPhase.get('create')), mb(byPhase.get('seeding')), mb(byPhase.get('reads')), mb(hwm[name])]),
    ),
    '',
    'VmRSS of each process sampled every 200 ms per phase; VmHWM is the kernel\'s high-water mark at the end.',
  ].join('\n'),
);

section(
  'Not measured',
  '- Webhook fan-out (deliveries per second to a local receiver against bare Temporal activity executions per second) and webhook receipt as the last step of the end-to-end lifecycle: not built yet.',
);

await client.connection.close();
await sql.end({ timeout: 5 });
