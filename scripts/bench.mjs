// `npm run bench`: bootstraps like `npm test` (dependencies, a headless in-memory Temporal dev
// server on free ports, a fresh PostgreSQL database, migrations), then starts the real API process
// on Bun, the real worker on Node and a bench-only worker for the empty baseline workflow, and runs
// bench/run.ts with Bun. BENCH_TEMPORAL=file runs the dev server on a database file as `npm start`
// does (its own configuration); BENCH_TEMPORAL=server on the production Temporal server. Sizes:
// BENCH_COLLECTIONS, BENCH_SECONDS, BENCH_CONCURRENCY, BENCH_SWEEP_RATES (small defaults).
// Not part of `npm test`. Results: bench/results/latest.md (latest-file.md, latest-server.md).
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  ROOT,
  binPath,
  ensureDependencies,
  ensureTemporalCli,
  freePort,
  freePorts,
  makeSelfSignedCertificate,
  say,
  startChild,
  runScript,
  startHeadlessDevServer,
  startTemporalDevServer,
  stopChildren,
  waitFor,
  WORKER_NODE_ARGS,
} from './infra.mjs';
import { databaseName, dropDatabase, usePostgres, withDatabase } from './postgres.mjs';
import { freshDataDir } from './suite.mjs';
import { composeFile, composeServerVersion, ensureTemporalServer, startTemporalServer } from './temporal-server.mjs';

const DATA = join(ROOT, '.bench-data');
const children = [];
const sinks = [];

/** The bench database: $BENCH_DATABASE_URL's own when that is the server, else `collections_bench` on it. */
async function benchDatabaseUrl() {
  const { url } = await usePostgres(children, {
    configuredUrl: process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL,
    embedded: { dataDir: join(DATA, 'postgres'), logFile: join(DATA, 'postgres.log') },
  });
  return url === process.env.BENCH_DATABASE_URL ? url : withDatabase(url, 'collections_bench');
}

function admin(env, args) {
  const result = spawnSync(binPath('bun'), ['src/admin.ts', ...args, '--json'], { cwd: ROOT, env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`admin ${args.join(' ')} failed: ${result.stderr}${result.stdout}`);
  return JSON.parse(result.stdout.trim().split('\n').pop());
}

async function waitForOutput(file, text, child, what) {
  const { readFileSync } = await import('node:fs');
  await waitFor(
    what,
    () => {
      if (child.exitCode !== null) throw new Error(`${what}: process exited; see ${file}`);
      try {
        return readFileSync(file, 'utf8').includes(text);
      } catch {
        return false;
      }
    },
    120_000,
  );
}

async function main() {
  freshDataDir(DATA);
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  ensureDependencies();
  const cli = ensureTemporalCli();
  const databaseUrl = await benchDatabaseUrl();
  // BENCH_TEMPORAL=server: the production server (built from source, on PostgreSQL, configured as
  // temporal-compose.yml configures it; see scripts/temporal-server.mjs) instead of the dev server.
  const onServer = process.env.BENCH_TEMPORAL === 'server';
  const onFile = process.env.BENCH_TEMPORAL === 'file';
  let temporalAddress;
  let temporalLabel;
  if (process.env.BENCH_TEMPORAL_ADDRESS) {
    // A Temporal server started elsewhere (a cluster, a differently configured server): measured as it is.
    temporalAddress = process.env.BENCH_TEMPORAL_ADDRESS;
    temporalLabel = process.env.BENCH_TEMPORAL_LABEL ?? `Temporal at ${temporalAddress}`;
  } else if (onServer) {
    const compose = composeFile();
    ensureTemporalServer(composeServerVersion(compose));
    temporalAddress = (await startTemporalServer(children, cli, compose, { databaseUrl, dataDir: DATA })).address;
    temporalLabel = `Temporal server ${composeServerVersion(compose)} on PostgreSQL (temporal-compose.yml's configuration)`;
  } else if (onFile) {
    // As `npm start` runs it: the dev server persisting to a SQLite file.
    const port = await freePort();
    await startTemporalDevServer(children, cli, {
      port,
      headless: true,
      dbFile: join(DATA, 'temporal.db'),
      logFile: join(DATA, 'temporal.log'),
    });
    temporalAddress = `127.0.0.1:${port}`;
    temporalLabel = 'Temporal dev server on a database file (the `npm start` configuration)';
  } else {
    temporalAddress = `127.0.0.1:${await startHeadlessDevServer(children, cli, { purpose: 'benchmarks', logFile: join(DATA, 'temporal.log') })}`;
    temporalLabel = 'Temporal dev server (in memory)';
  }
  const taskQueue = 'bench-collections';
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TASK_QUEUE: taskQueue,
    SANDBOX: 'true',
    // npm start's configuration keeps its sweeps (Schedules on the server) running, as npm start does.
    OUTBOX_SWEEP: onFile ? 'true' : 'false',
    RETENTION_SWEEP: onFile ? 'true' : 'false',
    SANDBOX_PAYMENT_DELAY_SECONDS: process.env.SANDBOX_PAYMENT_DELAY_SECONDS ?? '0',
    // Payouts (the bulk payout phase) complete when they are sent.
    SANDBOX_PAYOUT_DELAY_SECONDS: process.env.SANDBOX_PAYOUT_DELAY_SECONDS ?? '0',
    THROTTLE_READS: '100000000',
    THROTTLE_WRITES: '100000000',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    // Telemetry off in the measured pair; the cost of turning it on is measured apart (below).
    METRICS: 'false',
    WORKER_METRICS_PORT: '0',
  };
  say(`preparing a fresh bench database (${databaseName(databaseUrl)})`);
  await dropDatabase(databaseUrl);
  admin(env, ['migrate']);
  const org = admin(env, ['org', 'create', '--name', 'Bench Merchant']);
  const other = admin(env, ['org', 'create', '--name', 'Bench Other']);
  const orgId = String(org.organization.id);
  admin(env, ['throttle', 'set', '--org', orgId, '--reads', '100000000', '--writes', '100000000']);
  admin(env, ['wallet', 'fund', '--org', orgId, '--currency', 'BXC', '--amount', '1000000000']);

  say('bundling workflow code once for the worker');
  const bundle = join(DATA, 'workflow-bundle.js');
  const bundled = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/bundle-workflows.ts', bundle], {
    cwd: ROOT,
    env,
    stdio: 'inherit',
  });
  if (bundled.status !== 0) throw new Error('workflow bundling failed');

  // The local webhook receiver of bench/run.ts serves HTTPS with a self-signed certificate that
  // the worker trusts (WEBHOOK_CA_FILE, sandbox only).
  const { certFile, keyFile } = makeSelfSignedCertificate(DATA);
  env.WEBHOOK_CA_FILE = certFile;

  const apiPort = await freePort();
  const apiLog = join(DATA, 'api.log');
  const workerLog = join(DATA, 'worker.log');
  const noopLog = join(DATA, 'noop-worker.log');
  const api = startChild(children, 'api', binPath('bun'), ['src/server.ts'], {
    env: { ...env, PORT: String(apiPort) },
    logFile: apiLog,
  });
  // BENCH_PROFILE=1: the worker writes a V8 CPU profile into the bench's data folder when it stops.
  const profile = process.env.BENCH_PROFILE === '1' ? ['--cpu-prof', `--cpu-prof-dir=${join(DATA, 'profile')}`] : [];
  const worker = startChild(children, 'worker', process.execPath, [...profile, ...WORKER_NODE_ARGS, 'src/worker.ts'], {
    env: { ...env, WORKFLOW_BUNDLE_PATH: bundle, LOG_LEVEL: 'info' },
    logFile: workerLog,
  });
  const noopQueue = 'bench-noop';
  const noop = startChild(children, 'noop-worker', process.execPath, ['--import', 'tsx', 'bench/noop-worker.ts'], {
    env: { ...env, TASK_QUEUE: noopQueue },
    logFile: noopLog,
  });
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  await waitFor(
    'the API',
    async () => {
      if (api.exitCode !== null) throw new Error(`the API exited; see ${apiLog}`);
      return (await fetch(`${apiUrl}/healthz`).catch(() => null))?.status === 200;
    },
    60_000,
  );
  await waitForOutput(workerLog, '"state":"RUNNING"', worker, 'the worker');

  // The cost of telemetry: a second API and worker (their own task queue) with tracing exported
  // over OTLP/HTTP to a local sink and metrics on; bench/run.ts runs the same lifecycles through
  // both pairs at BENCH_TELEMETRY_RATES. The first pair runs with telemetry off.
  const telemetryRates = process.env.BENCH_TELEMETRY_RATES ?? '2,5';
  let tracedApiUrl = '';
  if (telemetryRates !== '') {
    const sink = createServer((request, response) => {
      request.resume();
      request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise((resolve) => sink.listen(0, '127.0.0.1', resolve));
    sinks.push(sink);
    const [tracedPort, tracedMetricsPort] = await freePorts(2);
    const tracedEnv = {
      ...env,
      TASK_QUEUE: `${taskQueue}-traced`,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sink.address().port}`,
      METRICS: 'true',
      WORKER_METRICS_PORT: String(tracedMetricsPort),
    };
    const tracedApiLog = join(DATA, 'api-traced.log');
    const tracedWorkerLog = join(DATA, 'worker-traced.log');
    const tracedApi = startChild(children, 'api-traced', binPath('bun'), ['src/server.ts'], {
      env: { ...tracedEnv, PORT: String(tracedPort) },
      logFile: tracedApiLog,
    });
    const tracedWorker = startChild(
      children,
      'worker-traced',
      process.execPath,
      [...WORKER_NODE_ARGS, 'src/worker.ts'],
      {
        env: { ...tracedEnv, WORKFLOW_BUNDLE_PATH: bundle, LOG_LEVEL: 'info' },
        logFile: tracedWorkerLog,
      },
    );
    tracedApiUrl = `http://127.0.0.1:${tracedPort}`;
    await waitFor(
      'the traced API',
      async () => {
        if (tracedApi.exitCode !== null) throw new Error(`the traced API exited; see ${tracedApiLog}`);
        return (await fetch(`${tracedApiUrl}/healthz`).catch(() => null))?.status === 200;
      },
      60_000,
    );
    await waitForOutput(tracedWorkerLog, '"state":"RUNNING"', tracedWorker, 'the traced worker');
  }
  await waitForOutput(noopLog, 'bench-noop worker running', noop, 'the bench-noop worker');
  say(`API ${apiUrl} (pid ${api.pid}), worker pid ${worker.pid}, bench-noop worker pid ${noop.pid}`);

  const runner = spawn(binPath('bun'), ['bench/run.ts'], {
    cwd: ROOT,
    stdio: 'inherit',
    env: {
      BENCH_TRACED_API_URL: tracedApiUrl,
      BENCH_TELEMETRY_RATES: telemetryRates,
      ...env,
      BENCH_API_URL: apiUrl,
      BENCH_API_KEY: org.apiKey,
      BENCH_ORG_ID: orgId,
      BENCH_OTHER_ORG_ID: String(other.organization.id),
      BENCH_API_PID: String(api.pid),
      BENCH_WORKER_PID: String(worker.pid),
      BENCH_NOOP_QUEUE: noopQueue,
      BENCH_NOOP_PID: String(noop.pid),
      BENCH_TEMPORAL_PID:
        process.env.BENCH_TEMPORAL_PID ??
        String(children.find((child) => child.processName.startsWith('temporal'))?.pid ?? ''),
      BENCH_TEMPORAL_LABEL: temporalLabel,
      BENCH_CERT_FILE: certFile,
      BENCH_KEY_FILE: keyFile,
      // The delivery phases (bench/delivery.ts) restart the worker and run a second worker and API
      // the same way: these commands, this environment, logs in the bench's data folder.
      BENCH_DATA_DIR: DATA,
      BENCH_NODE: process.execPath,
      BENCH_BUN: binPath('bun'),
      BENCH_WORKER_ARGS: JSON.stringify([...WORKER_NODE_ARGS, 'src/worker.ts']),
      BENCH_WORKFLOW_BUNDLE: bundle,
    },
  });
  const status = await new Promise((resolve) => runner.once('exit', (code) => resolve(code ?? 1)));
  await stopChildren(children);
  for (const sink of sinks) sink.close();
  if (status !== 0) throw new Error(`bench/run.ts exited with ${status}`);
  const connectorOnly = !(process.env.BENCH_PHASES ?? 'service')
    .split(',')
    .map((name) => name.trim())
    .includes('service');
  say(
    `results written to bench/results/${connectorOnly ? 'latest-connector.md' : process.env.BENCH_TEMPORAL_ADDRESS ? 'latest-external.md' : onServer ? 'latest-server.md' : onFile ? 'latest-file.md' : 'latest.md'}`,
  );
}

runScript(main, () => children);
