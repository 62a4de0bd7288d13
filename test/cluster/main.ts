/**
 * The service on several hosts, on one machine (docs/operations.md, Several hosts):
 *   bun test/cluster/main.ts start              the cluster, until Ctrl-C or `stop`
 *   bun test/cluster/main.ts stop               stops a running cluster and removes every namespace
 *   bun test/cluster/main.ts faults [--schedules 1,2,…] [--seed N] [--minutes M] [--short] [--keep]
 *                                               starts it, runs the fault schedules under load,
 *                                               prints one row per schedule, and stops it (with
 *                                               --keep: leaves it up to be read)
 * Run as root (scripts/cluster.mjs prepares the tools first). Everything it starts is torn down on
 * any exit; every loop here is bounded in count and time.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT, binPath, makeSelfSignedCertificate } from '../../scripts/infra.mjs';
import { createNetwork, healAll, namespacesUnavailable, planNetwork, teardownNetwork } from './network';
import {
  API_PORT,
  CLUSTER_DATA,
  type Cluster,
  LB_PORT,
  POSTGRES_PORT,
  TEMPORAL_PORT,
  apiReady,
  defineApplication,
  launch,
  serverStates,
  startLoadBalancer,
  startOperators,
  startPostgres,
  startTemporal,
  stopProcess,
  waitUntil,
  publicApiPort,
  startSlowLinks,
} from './nodes';
import { SCHEDULES, type Schedule, drawMix } from './schedules';
import { measureThroughput } from './throughput';
import { runSchedule, type Row } from './run';

/** Schedule 6: 150 ms ± 50 ms each way on every link, and 2% of the chunks held as a lost segment is. */
const SLOW_LINKS = { delayMs: 150, jitterMs: 50, lossPercent: 2 };
export const RECEIVER_PORT = 9443;
const STATE_FILE = join(CLUSTER_DATA, 'cluster.json');
const say = (message: string) => process.stdout.write(`[cluster] ${message}\n`);

let cluster: Cluster | null = null;
let supervisor: ReturnType<typeof setInterval> | null = null;
let tearing: Promise<void> | null = null;

/** Stops every process of the cluster in order and removes its namespaces (once, however often asked). */
function teardown(): Promise<void> {
  tearing ??= stopEverything().finally(() => {
    tearing = null;
  });
  return tearing;
}

async function stopEverything(): Promise<void> {
  if (supervisor) clearInterval(supervisor);
  supervisor = null;
  if (cluster) {
    const order = [
      'haproxy',
      'api-app-a',
      'api-app-b',
      'worker-app-a',
      'worker-app-b',
      'operators',
      'temporal',
      'postgres',
    ];
    const others = [...cluster.processes.keys()].filter((name) => !order.includes(name));
    for (const name of [...order, ...others]) {
      const process = cluster.processes.get(name);
      if (process) {
        if (process.child?.pid) spawnSync('kill', ['-CONT', String(process.child.pid)]);
        await stopProcess(process, name === 'postgres' ? 'SIGINT' : 'SIGTERM', 10_000);
      }
    }
  }
  cluster = null;
  teardownNetwork();
  rmSync(STATE_FILE, { force: true });
}

function admin(args: string[]): string {
  const result = spawnSync(binPath('bun'), ['src/admin.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...cluster!.serviceEnv },
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`admin ${args.join(' ')}: ${result.stderr || result.stdout}`);
  return result.stdout;
}

/** A restart after an exit nobody asked for, as a Deployment does (1 s later). */
function supervise(c: Cluster) {
  supervisor = setInterval(() => {
    for (const process of c.processes.values()) {
      if (!process.name.startsWith('api-') && !process.name.startsWith('worker-')) continue;
      if (process.child === null && !process.stopping && !tearing) launch(process);
    }
  }, 1000);
  supervisor.unref();
}

export type Merchant = { organizationId: number; apiKey: string };

async function createMerchants(c: Cluster, count: number, receiver: string): Promise<Merchant[]> {
  const merchants: Merchant[] = [];
  for (let index = 0; index < count; index += 1) {
    const made = JSON.parse(admin(['org', 'create', '--name', `Cluster Merchant ${index + 1}`, '--json']));
    const organizationId = made.organization.id as number;
    for (const currency of ['KES', 'UGX', 'GHS', 'TZS'])
      admin([
        'wallet',
        'fund',
        '--org',
        String(organizationId),
        '--currency',
        currency,
        '--amount',
        '100000000',
        '--json',
      ]);
    const merchant = { organizationId, apiKey: made.apiKey as string };
    for (const event of ['collectionrequest.status.changed', 'payment.status.changed', 'collection.received']) {
      const response = await fetch(`${c.lbUrl}/api/webhooks`, {
        method: 'POST',
        headers: { Authorization: `Token ${merchant.apiKey}` },
        body: new URLSearchParams({ event, target: `${receiver}/hooks/${organizationId}/${event}` }),
      });
      if (response.status !== 201) throw new Error(`webhook not created: ${response.status} ${await response.text()}`);
    }
    merchants.push(merchant);
  }
  return merchants;
}

async function startCluster(options: { decisionMs: number; slow: Cluster['slow'] }): Promise<Cluster> {
  const unavailable = namespacesUnavailable();
  if (unavailable) throw new Error(`cannot start the cluster: ${unavailable}`);
  const network = planNetwork();
  rmSync(CLUSTER_DATA, { recursive: true, force: true });
  mkdirSync(CLUSTER_DATA, { recursive: true });
  createNetwork(network);
  const lbUrl = `http://${network.address.lb}:${LB_PORT}`;
  cluster = {
    network,
    processes: new Map(),
    databaseUrl: `postgres://postgres@${network.address.db}:${POSTGRES_PORT}/postgres`,
    lbUrl,
    temporalAddress: `${network.address.temporal}:${TEMPORAL_PORT}`,
    serviceEnv: {},
    controlUrl: '',
    slow: options.slow,
  };
  writeFileSync(STATE_FILE, JSON.stringify({ pid: process.pid, network }));
  say(
    `network ${network.subnet}: ${Object.entries(network.address)
      .map(([node, address]) => `${node} ${address}`)
      .join(', ')}`,
  );
  say('starting PostgreSQL 16 on db');
  await startPostgres(cluster);
  say('starting the Temporal server on temporal (production build, on db)');
  await startTemporal(cluster);
  say("starting the operators' simulators on operators");
  const operatorsEnv = await startOperators(cluster, options.decisionMs);
  const { certFile } = makeSelfSignedCertificate(CLUSTER_DATA, network.address.merchants) as { certFile: string };
  cluster.serviceEnv = {
    SANDBOX: 'true',
    DATABASE_URL: `postgres://postgres@${network.address.db}:${POSTGRES_PORT}/collections`,
    TEMPORAL_ADDRESS: cluster.temporalAddress,
    PORT: String(API_PORT),
    PUBLIC_BASE_URL: lbUrl,
    WEBHOOK_CA_FILE: certFile,
    ...operatorsEnv,
  };
  process.env.DATABASE_URL = cluster.serviceEnv.DATABASE_URL;
  process.env.TEMPORAL_ADDRESS = cluster.temporalAddress;
  admin(['migrate']);
  say('starting the API and the worker on app-a and app-b');
  for (const node of ['app-a', 'app-b'] as const) {
    defineApplication(cluster, node);
    startSlowLinks(cluster, node, [[publicApiPort(cluster), API_PORT]]);
    launch(cluster.processes.get(`worker-${node}`)!);
    launch(cluster.processes.get(`api-${node}`)!);
  }
  for (const node of ['app-a', 'app-b'] as const)
    await waitUntil(`the API on ${node}`, () => apiReady(cluster!, node), 120_000);
  supervise(cluster);
  startSlowLinks(cluster, 'merchants', [[RECEIVER_PORT, RECEIVER_PORT]]);
  say('starting HAProxy on lb');
  await startLoadBalancer(cluster);
  await waitUntil(
    'both APIs up behind HAProxy',
    async () => {
      const states = await serverStates();
      return states['app-a'] === 'UP' && states['app-b'] === 'UP';
    },
    30_000,
  );
  return cluster;
}

function banner(c: Cluster, merchant: Merchant) {
  const { address } = c.network;
  process.stdout.write(`
  The collections service on six nodes and a load balancer (network ${c.network.subnet}, sealed).

    db          ${address.db}:${POSTGRES_PORT}   PostgreSQL 16
    temporal    ${address.temporal}:${TEMPORAL_PORT}   Temporal server (production build, on db)
    app-a       ${address['app-a']}:${API_PORT}   API (Bun) and worker (Node)
    app-b       ${address['app-b']}:${API_PORT}   API (Bun) and worker (Node)
    operators   ${c.controlUrl}   the five operators' simulators (control)
    merchants   ${address.merchants}         load and webhook receivers (during fault runs)
    lb          ${c.lbUrl}   HAProxy, checking /readyz every second

    API key     ${merchant.apiKey}   (organization ${merchant.organizationId})
    curl -H 'Authorization: Token ${merchant.apiKey}' ${c.lbUrl}/api/events
    Logs in .data/cluster/. Ctrl-C or npm run cluster:stop stops everything and removes the namespaces.
`);
}

async function stopRunning() {
  if (existsSync(STATE_FILE)) {
    const { pid } = JSON.parse(readFileSync(STATE_FILE, 'utf8')) as { pid: number };
    try {
      process.kill(pid, 'SIGTERM');
      await waitUntil('the cluster to stop', () => !existsSync(STATE_FILE), 60_000).catch(() => {});
    } catch {}
  }
  // Whatever is left (a cluster killed with -9): its processes die with their namespaces' removal
  // only if nothing holds them, so they are killed by namespace first.
  const listed = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout;
  for (const name of listed.split('\n').map((line) => line.split(' ')[0] ?? '')) {
    if (!name.startsWith('mmc-')) continue;
    const pids = spawnSync('ip', ['netns', 'pids', name], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
    for (const pid of pids) spawnSync('kill', ['-9', pid]);
  }
  teardownNetwork();
  say('stopped; no namespace left');
}

function printTable(rows: Row[]) {
  const header =
    '| schedule | tried | created | refused (4xx) | retried and resolved | unfinished after 2 min | 5xx other than 503 | 503 | slowest answer | events missing | failing workflows | processes crashed | operator sends repeated | operator in doubt at the end | anomalies | recovered in |';
  const lines = rows.map(
    (row) =>
      `| ${row.schedule} | ${row.tried} | ${row.succeeded} | ${row.failedClearly} | ${row.inDoubtResolved} | ${row.unfinished} | ${row.status5xx} | ${row.status503} | ${row.slowestSeconds} s | ${row.eventsMissing} | ${row.failingWorkflows} | ${row.crashes} | ${row.operatorResent} | ${row.operatorInDoubt} | ${row.anomalies.length} | ${row.recoverSeconds} s |`,
  );
  process.stdout.write(`\n${header}\n|${' --- |'.repeat(16)}\n${lines.join('\n')}\n`);
  for (const row of rows)
    for (const anomaly of row.anomalies.slice(0, 20))
      process.stdout.write(`  ${row.schedule}: (${anomaly.rule}) ${anomaly.phone ?? ''} ${anomaly.text}\n`);
}

async function main() {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      schedules: { type: 'string', default: '1,2,3,4,5,7,8,9,10' },
      seed: { type: 'string', default: String(Date.now() % 1_000_000) },
      minutes: { type: 'string', default: '3' },
      rate: { type: 'string', default: '2' },
      short: { type: 'boolean', default: false },
      // Leaves the cluster up after the schedules, to read its database and workflows.
      keep: { type: 'boolean', default: false },
      report: { type: 'string' },
      rates: { type: 'string', default: '6,12' },
      seconds: { type: 'string', default: '60' },
    },
  });
  const command = positionals[0] ?? 'start';
  if (command === 'stop') return await stopRunning();
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => void teardown().then(() => process.exit(signal === 'SIGINT' ? 130 : 0)));
  process.on('exit', () => teardownNetwork());
  try {
    const chosen = values.short ? ['1', '4', '9'] : values.schedules!.split(',');
    if (command === 'start' || command === 'throughput') {
      const c = await startCluster({ decisionMs: 1500, slow: null });
      const merchants = await createMerchants(c, 3, `https://${c.network.address.merchants}:${RECEIVER_PORT}`);
      if (command === 'start') {
        banner(c, merchants[0]!);
        await new Promise(() => {});
      }
      const results = await measureThroughput(c, merchants, {
        rates: values.rates!.split(',').map(Number),
        seconds: Number(values.seconds),
      });
      if (values.report) writeFileSync(values.report, JSON.stringify(results, null, 2));
      await teardown();
      process.exit(0);
    }
    const seed = Number(values.seed);
    const rows: Row[] = [];
    // Schedule 6 holds for a whole cluster's life (every link slow from its start), so it runs on a
    // cluster of its own after the others.
    const groups = [chosen.filter((id) => id !== '6'), chosen.filter((id) => id === '6')].filter(
      (group) => group.length > 0,
    );
    let c: Cluster | null = null;
    let merchants: Merchant[] = [];
    for (const group of groups) {
      if (c) await teardown();
      c = await startCluster({ decisionMs: 1500, slow: group[0] === '6' ? SLOW_LINKS : null });
      merchants = await createMerchants(c, 3, `https://${c.network.address.merchants}:${RECEIVER_PORT}`);
      for (const id of group) {
        const schedule: Schedule = id === '10' ? drawMix(seed, Number(values.minutes) * 60_000) : SCHEDULES[id]!;
        say(`schedule ${schedule.name}${id === '10' ? ` (seed ${seed})` : ''}`);
        // Subscriber numbers end in six digits: two of the schedule's and four of its own, or, for the
        // long mix, '9' and five.
        const numberPrefix = id === '10' ? '9' : String(chosen.indexOf(id)).padStart(2, '0');
        const row = await runSchedule(c, merchants, schedule, { numberPrefix, rate: Number(values.rate) });
        rows.push(row);
        printTable([row]);
        healAll();
      }
    }
    printTable(rows);
    if (values.report) writeFileSync(values.report, JSON.stringify({ seed, rows }, null, 2));
    const failed = rows.some(
      (row) =>
        row.anomalies.length > 0 ||
        row.status5xx > 0 ||
        // The merchants send only valid requests: a 4xx is the service refusing one it should take.
        row.failedClearly > 0 ||
        row.unfinished > 0 ||
        row.eventsMissing > 0 ||
        row.failingWorkflows > 0 ||
        row.crashes > 0,
    );
    if (values.keep && c) {
      banner(c, merchants[0]!);
      await new Promise(() => {});
    }
    await teardown();
    process.exit(failed ? 1 : 0);
  } catch (error) {
    process.stderr.write(`[cluster] ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    await teardown();
    process.exit(1);
  }
}

await main();
