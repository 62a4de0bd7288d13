// Shared bootstrap for `npm start` and `npm test`: plain Node ESM with no dependencies, because it
// runs before `npm install` has.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, statSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
/** Where built tools live (git-ignored): $TOOLS_DIR, else `.tools` in the project. */
export const TOOLS = process.env.TOOLS_DIR ?? join(ROOT, '.tools');
const LOCAL_TEMPORAL = join(TOOLS, 'bin', 'temporal');
export const COMPOSE_VERSION = 'v2.32.4';
/** A DOCKER_CONFIG folder whose cli-plugins hold the project's own `docker compose` build. */
export const LOCAL_DOCKER_CONFIG = join(TOOLS, 'docker');

/** Custom search attributes the workflows set (src/contracts/search-attributes.ts; a unit test keeps them equal). */
export const SEARCH_ATTRIBUTES = {
  OrganizationId: 'Keyword',
  EventType: 'Keyword',
  RequestStatus: 'Keyword',
  PhoneNumber: 'Keyword',
  Currency: 'Keyword',
  EventId: 'Keyword',
};

/**
 * Dynamic configuration of every dev server the project starts, as temporal-compose.yml's
 * deploy/temporal/dynamicconfig/docker.yaml sets it for the production server: eager activity
 * dispatch hands a workflow's first activity to the worker in the reply to its workflow task.
 */
export const DEV_SERVER_DYNAMIC_CONFIG = {
  'system.enableActivityEagerExecution': 'true',
  // One partition per task queue: with a handful of workers, the default four only add forwarding
  // between partitions; one took the sustained lifecycle rate in `npm run bench` from 5 to 8 per second.
  'matching.numTaskqueueReadPartitions': '1',
  'matching.numTaskqueueWritePartitions': '1',
};

/**
 * How Node runs the worker (TypeScript through tsx) wherever the project starts it: `npm start`,
 * `npm run worker`, the tests and the benchmarks; deploy/worker.Dockerfile repeats the flags. V8's
 * default young generation and lazy old-space growth let an idle-looking worker sit at 450 MiB after
 * a burst; a 4 MiB semi-space and a 192 MiB old-space ceiling keep its peak under 300 MiB through
 * the benchmark's sweep at no measured cost in rate. The worker's live heap (the workflow bundle's
 * context, up to WORKER_MAX_CACHED_WORKFLOWS cached runs) stays well below the ceiling; a worker that
 * reached it would exit and, being stateless, lose nothing (its workflows resume on the next one).
 */
export const WORKER_NODE_ARGS = ['--max-old-space-size=192', '--max-semi-space-size=4', '--import', 'tsx'];

export function say(message) {
  process.stdout.write(`[collections] ${message}\n`);
}

export function binPath(name) {
  return join(ROOT, 'node_modules', '.bin', name);
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit', ...options });
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${result.status}`);
  return result;
}

/** Installs npm dependencies when node_modules is missing or older than the lockfile. */
export function ensureDependencies() {
  const marker = join(ROOT, 'node_modules', '.package-lock.json');
  const lock = join(ROOT, 'package-lock.json');
  const fresh = existsSync(marker) && existsSync(binPath('bun')) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs;
  if (fresh) return;
  // `npm install` rather than `npm ci`: it still follows package-lock.json, and it tolerates a lock
  // written without other platforms' optional packages.
  say('installing dependencies (npm install)');
  run('npm', ['install', '--no-audit', '--no-fund']);
}

/** Debian's Chromium, which the browser tests (the console, the docs page) drive through playwright-core. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Installs one of Debian's packages when `present()` says it is missing (CI starts on a fresh
 * machine): the package lists are updated, then the package installed. Needs root and apt-get.
 */
function ensureDebianPackage(name, purpose, present) {
  if (present()) return;
  if (!onPath('apt-get') || process.getuid?.() !== 0)
    throw new Error(`${purpose} need Debian's ${name} package; install it (apt-get install ${name}) as root.`);
  say(`installing ${name} for ${purpose} (apt-get install ${name}; once)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  run('apt-get', ['update', '-q'], { env });
  run('apt-get', ['install', '-y', '-q', '--no-install-recommends', name], { env });
  if (!present()) throw new Error(`apt-get installed ${name}, but it is still missing`);
}

/** Debian's `chromium`, for the browser tests. */
export function ensureChromium() {
  ensureDebianPackage('chromium', 'the browser tests', () => existsSync(CHROMIUM));
  return CHROMIUM;
}

/** Debian's `haproxy`, the cluster's load balancer and the test of its configuration. */
export function ensureHaproxy() {
  ensureDebianPackage('haproxy', 'the load balancer', () => onPath('haproxy') !== null);
}

function onPath(name) {
  const result = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : null;
}

/** The Temporal CLI: $TEMPORAL_CLI, then PATH, then the project's own build (made here once). */
export function ensureTemporalCli() {
  if (process.env.TEMPORAL_CLI) return process.env.TEMPORAL_CLI;
  const found = onPath('temporal');
  if (found) return found;
  if (existsSync(LOCAL_TEMPORAL)) return LOCAL_TEMPORAL;
  if (!onPath('go')) {
    throw new Error(
      'The Temporal CLI is needed and Go is not installed to build it. Either install the Temporal CLI ' +
        '(put `temporal` on PATH or set TEMPORAL_CLI), or run the whole stack with Docker: ' +
        '`docker compose -f temporal-compose.yml up`.',
    );
  }
  say(`building the Temporal CLI ${TEMPORAL_CLI_VERSION} into .tools/bin (once; this takes a few minutes)`);
  mkdirSync(dirname(LOCAL_TEMPORAL), { recursive: true });
  run('go', ['install', `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`], {
    env: { ...process.env, GOBIN: dirname(LOCAL_TEMPORAL), CGO_ENABLED: '0' },
  });
  return LOCAL_TEMPORAL;
}

/**
 * `docker compose`, for checking temporal-compose.yml: the docker CLI ships without the compose
 * plugin on machines with no engine, so it is built once from its Go module like the Temporal CLI.
 * Returns the DOCKER_CONFIG to use, or null when docker or Go is missing.
 */
export function ensureComposePlugin() {
  if (!onPath('docker')) return null;
  if (spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0)
    return process.env.DOCKER_CONFIG ?? '';
  const plugins = join(LOCAL_DOCKER_CONFIG, 'cli-plugins');
  if (!existsSync(join(plugins, 'docker-compose'))) {
    if (!onPath('go')) return null;
    say(`building the docker compose plugin ${COMPOSE_VERSION} into .tools/docker (once; this takes a few minutes)`);
    mkdirSync(plugins, { recursive: true });
    run('go', ['install', `github.com/docker/compose/v2/cmd@${COMPOSE_VERSION}`], {
      env: { ...process.env, GOBIN: plugins, CGO_ENABLED: '0' },
    });
    renameSync(join(plugins, 'cmd'), join(plugins, 'docker-compose'));
  }
  return LOCAL_DOCKER_CONFIG;
}

export function portIsOpen(port, host = '127.0.0.1') {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function holdPort(port = 0, host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

/** A port in [low, high] that is free on every interface, held until the caller closes it. */
async function holdPortInRange(low, high) {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    try {
      return await holdPort(port, '0.0.0.0');
    } catch {
      // Taken: try another.
    }
  }
  throw new Error(`no free port between ${low} and ${high}`);
}

/**
 * `count` distinct free ports: all are held at once before being released, so none repeats. With
 * `range`, they come from [low, high] instead of the ephemeral range (which starts above 32767).
 */
export async function freePorts(count, range) {
  const servers = [];
  for (let index = 0; index < count; index += 1)
    servers.push(range ? await holdPortInRange(...range) : await holdPort());
  const ports = servers.map((server) => server.address().port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

export async function freePort() {
  return (await freePorts(1))[0];
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export async function waitFor(what, check, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/**
 * A child process whose output goes to a log file (or the terminal), named for the messages about
 * it; `uid` and `gid` run it as another user (the embedded PostgreSQL when the scripts run as root).
 */
function spawnChild(name, command, args, { env = process.env, logFile, cwd = ROOT, uid, gid } = {}) {
  const output = logFile ? openSync(logFile, 'a') : 'inherit';
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', output, output], uid, gid });
  // The child holds its own copy of the log file's descriptor from here on.
  if (logFile) closeSync(output);
  child.processName = name;
  return child;
}

/** Starts a child process whose output goes to a log file (or the terminal) and tracks it. */
export function startChild(children, name, command, args, options = {}) {
  const child = spawnChild(name, command, args, options);
  children.push(child);
  return child;
}

/**
 * How long a supervised child waits to be restarted: 1 s after its first exit, doubling while it
 * keeps exiting, at most 30 s; back to 1 s once a run has lasted a minute.
 */
export const RESTART_BACKOFF = { firstMs: 1_000, maxMs: 30_000, steadyAfterMs: 60_000 };

/** The wait before the next restart, given the previous wait (0 before any) and how long the run that ended lasted. */
export function restartDelay(previousMs, ranForMs, backoff = RESTART_BACKOFF) {
  if (previousMs === 0 || ranForMs >= backoff.steadyAfterMs) return backoff.firstMs;
  return Math.min(previousMs * 2, backoff.maxMs);
}

/** The supervisions of each list of children: stopChildren ends them before it stops the processes. */
const supervisions = new WeakMap();

function addSupervision(children, end) {
  if (!supervisions.has(children)) supervisions.set(children, []);
  supervisions.get(children).push(end);
}

function endSupervisions(children) {
  for (const end of supervisions.get(children) ?? []) end();
  supervisions.delete(children);
}

/** Puts `next` in the place of `previous` in the list (at its end if `previous` left it). */
function replaceChild(children, previous, next) {
  const index = children.indexOf(previous);
  if (index === -1) children.push(next);
  else children[index] = next;
}

function describeExit(code, signal) {
  return signal ? `signal ${signal}` : `code ${code}`;
}

const inSeconds = (ms) => `${Number((ms / 1000).toFixed(1))} s`;

/**
 * Starts a child as startChild does and restarts it whenever it exits, whatever its exit code or
 * signal, as a Deployment restarts a pod: after RESTART_BACKOFF's wait (`backoff` in the options
 * replaces it), with one line saying what exited, how, and when it restarts. Each new process
 * takes its predecessor's place in `children`, so stopChildren still stops the list in reverse
 * order of start; stopChildren(children) ends the supervision first, so nothing is restarted while
 * stopping, not even a restart already waiting. Returns `current()`, the process running now (or
 * the one that last exited, while it waits).
 */
export function superviseChild(children, name, command, args, options = {}) {
  const { backoff = RESTART_BACKOFF, ...spawnOptions } = options;
  let child = startChild(children, name, command, args, spawnOptions);
  let delayMs = 0;
  let restart;
  let ended = false;
  const watch = (running, startedAt) =>
    running.once('exit', (code, signal) => {
      if (ended) return;
      const ranForMs = Date.now() - startedAt;
      delayMs = restartDelay(delayMs, ranForMs, backoff);
      say(
        `${name} (pid ${running.pid}) exited with ${describeExit(code, signal)} after ${inSeconds(ranForMs)}; restarting it in ${inSeconds(delayMs)}`,
      );
      restart = setTimeout(() => {
        const next = spawnChild(name, command, args, spawnOptions);
        replaceChild(children, running, next);
        child = next;
        watch(next, Date.now());
      }, delayMs);
    });
  watch(child, Date.now());
  addSupervision(children, () => {
    ended = true;
    clearTimeout(restart);
  });
  return { current: () => child };
}

export function temporalHealthy(cli, address) {
  const result = spawnSync(cli, ['operator', 'cluster', 'health', '--address', address, '--command-timeout', '2s'], {
    encoding: 'utf8',
  });
  return result.status === 0;
}

/**
 * Starts the Temporal dev server (real server, SQLite, Web UI unless headless) with the project's
 * search attributes, and waits until it answers.
 */
export async function startTemporalDevServer(children, cli, { port, uiPort, dbFile, logFile, headless = false }) {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'warn'];
  // On a database file (`npm start`, the fault test): SQLite in WAL mode with synchronous=NORMAL,
  // one fsync per checkpoint instead of several per commit. A killed server loses nothing (the WAL
  // is written before each commit returns); a power cut may lose its last commits, never the file.
  // At 8 lifecycles per second offered to `npm start`'s configuration (`BENCH_TEMPORAL=file`), p50 fell from 26 s to 3.9 s.
  if (dbFile)
    args.push('--db-filename', dbFile, '--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=normal');
  if (headless) args.push('--headless');
  else args.push('--ui-port', String(uiPort));
  const [httpPort, metricsPort] = (await freePorts(3)).filter((free) => free !== port && free !== uiPort);
  args.push('--http-port', String(httpPort), '--metrics-port', String(metricsPort));
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${name}=${type}`);
  for (const [key, value] of Object.entries(DEV_SERVER_DYNAMIC_CONFIG))
    args.push('--dynamic-config-value', `${key}=${value}`);
  const child = startChild(children, 'temporal', cli, args, { logFile });
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  await waitFor(
    'the Temporal dev server',
    () => {
      if (exited) throw new Error(`the Temporal dev server exited; see ${logFile ?? 'its output'}`);
      return temporalHealthy(cli, `127.0.0.1:${port}`);
    },
    120_000,
  );
  return child;
}

/**
 * An in-memory, headless dev server on a free port (tests, benchmarks). Another process may take
 * the port between our choice and the server's bind, so it tries other ports up to three times.
 * Returns the port.
 */
export async function startHeadlessDevServer(children, cli, { purpose, logFile }) {
  for (let attempt = 1; ; attempt += 1) {
    const port = await freePort();
    say(`starting a Temporal dev server for the ${purpose} on 127.0.0.1:${port}`);
    try {
      await startTemporalDevServer(children, cli, { port, headless: true, logFile });
      return port;
    } catch (error) {
      if (attempt === 3) throw error;
      say(`${error.message}; trying other ports`);
    }
  }
}

/** Registers the search attributes on a Temporal server that was already running. */
export function registerSearchAttributes(cli, address) {
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
    spawnSync(cli, ['operator', 'search-attribute', 'create', '--address', address, '--name', name, '--type', type], {
      stdio: 'ignore',
    });
  }
}

/**
 * Stops children in reverse order of start: SIGTERM (or the child's own `stopSignal`, such as
 * PostgreSQL's SIGINT), then SIGKILL after a grace period. Their supervisors (superviseChild)
 * restart none of them from here on.
 */
export async function stopChildren(children, graceMs = 10_000) {
  endSupervisions(children);
  for (const child of [...children].reverse()) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(child.stopSignal ?? 'SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

export function readJson(file) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/**
 * A self-signed certificate for 127.0.0.1 and localhost, valid for a day, made with `openssl` in
 * `directory`, for `address` (127.0.0.1 unless given): for the local HTTPS webhook receivers of the
 * tests, the benchmarks and the cluster's merchants node.
 */
export function makeSelfSignedCertificate(directory, address = '127.0.0.1') {
  const certFile = join(directory, 'cert.pem');
  const keyFile = join(directory, 'key.pem');
  const result = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      `/CN=${address}`,
      '-addext',
      `subjectAltName=IP:${address},DNS:localhost`,
    ],
    { encoding: 'utf8' },
  );
  if (result.status !== 0) throw new Error(`openssl failed: ${result.stderr}`);
  return { certFile, keyFile };
}

/**
 * Runs a bootstrap script's `main`: Ctrl-C stops the children and exits 130; a failure prints its
 * stack, stops the children, prints `failureLine` (the test runners' closing count) and exits 1.
 * `children` returns the current list (a runner may start a new list per lane).
 */
export function runScript(main, children, { failureLine } = {}) {
  process.on('SIGINT', () => void stopChildren(children()).then(() => process.exit(130)));
  main().catch(async (error) => {
    process.stderr.write(`[collections] ${error instanceof Error ? error.stack : String(error)}\n`);
    await stopChildren(children());
    if (failureLine) process.stdout.write(`${failureLine}\n`);
    process.exit(1);
  });
}
