// `npm start`: the whole service with sandbox defaults. Installs what is missing, starts the
// Temporal dev server (UI on 8233), prepares PostgreSQL (the configured server, or an embedded one
// on 5433 with its cluster kept in .data/postgres: scripts/postgres.mjs), then the worker (Node)
// and the API (Bun), each restarted when it exits (scripts/infra.mjs, superviseChild); Ctrl-C or
// SIGTERM stops everything.
// `npm run start:networks` (START_NETWORKS=true) also starts the project's simulators of M-Pesa
// Daraja, MTN MoMo, Airtel Money, the M-Pesa OpenAPI and pawaPay (test/simulators/run.ts, ports 8101-8106) and
// points the connectors at them: MoMo's MTN Uganda market through the MTN_MOMO_* variables, MTN Ghana
// and MTN Rwanda through a generated markets file (.data/momo-markets.json, MTN_MOMO_MARKETS_FILE);
// Airtel for Airtel Uganda and Airtel Kenya, calling back at PUBLIC_BASE_URL; Vodacom M-Pesa for
// Vodacom Tanzania and Vodacom DRC, with the public key the OpenAPI simulator made at its start;
// pawaPay for every provider the service knows: the only route of Tigo Tanzania, Halotel, Telecel
// Ghana, AirtelTigo and Orange DRC, and the second route of the networks a direct connector serves.
// The simulators' control endpoint (port 8103) makes a subscriber pay the paybill, takes an
// operator's API down or brings it back (POST /outage) and opens or closes a pawaPay provider's
// operation (POST /availability). The banner lists the networks as the connectors' registry sees
// them (`npm run admin -- network list`).
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ROOT,
  binPath,
  ensureDependencies,
  ensureTemporalCli,
  portIsOpen,
  readJson,
  registerSearchAttributes,
  say,
  startTemporalDevServer,
  stopChildren,
  superviseChild,
  waitFor,
  WORKER_NODE_ARGS,
} from './infra.mjs';
import { firstStepsText } from './first-steps.mjs';
import { usePostgres, withDatabase } from './postgres.mjs';

const DATA = join(ROOT, '.data');
const SANDBOX_FILE = join(DATA, 'sandbox.json');
const MOMO_MARKETS_FILE = join(DATA, 'momo-markets.json');
const apiPort = Number(process.env.PORT ?? 8000);
const temporalPort = Number(process.env.TEMPORAL_PORT ?? 7233);
const uiPort = Number(process.env.TEMPORAL_UI_PORT ?? 8233);
/** A fixed port, so that `npm run admin` can be pointed at the embedded server (README). */
const embeddedPostgresPort = Number(process.env.EMBEDDED_POSTGRES_PORT ?? 5433);
const env = {
  ...process.env,
  PORT: String(apiPort),
  TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS ?? `127.0.0.1:${temporalPort}`,
  SANDBOX: process.env.SANDBOX ?? 'true',
  // The console links requests to their workflows in the UI of the dev server started here.
  TEMPORAL_UI_URL: process.env.TEMPORAL_UI_URL ?? `http://localhost:${uiPort}`,
};
const apiUrl = `http://localhost:${apiPort}`;
const withNetworks = ['true', '1'].includes(process.env.START_NETWORKS ?? '');
const workerMetricsPort = Number(process.env.WORKER_METRICS_PORT ?? 9464);
const metricsOn = !['false', '0'].includes(process.env.METRICS ?? 'true');
const children = [];
let stopping = false;

async function shutdown(code) {
  if (stopping) return;
  stopping = true;
  say('stopping');
  await stopChildren(children);
  process.exit(code);
}
process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

/** The networks a connector serves with this configuration, one line each, as the registry describes them. */
function connectedNetworks() {
  const { connections } = JSON.parse(admin(['network', 'list', '--json']));
  return connections
    .filter((row) => row.connector !== 'none' && row.network !== 'Sandbox')
    .map((row) => `    ${row.network} (${row.currency}) through ${row.connector}: ${row.detail}`)
    .join('\n');
}

function admin(args) {
  const result = spawnSync(binPath('bun'), ['src/admin.ts', ...args], { cwd: ROOT, env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`admin ${args.join(' ')} failed: ${result.stderr || result.stdout}`);
  return result.stdout;
}

async function keyWorks(key) {
  const response = await fetch(`${apiUrl}/api/events?limit=1`, { headers: { Authorization: `Token ${key}` } }).catch(
    () => null,
  );
  return response?.status === 200;
}

/** A web console user for the sandbox merchant (may manage it), with a random password. */
function consoleUser(organizationId) {
  const email = `sandbox-${organizationId}-${randomBytes(3).toString('hex')}@example.com`;
  const password = randomBytes(12).toString('base64url');
  admin([
    'user',
    'create',
    '--org',
    String(organizationId),
    '--email',
    email,
    '--password',
    password,
    '--role',
    'owner',
    '--json',
  ]);
  return { consoleEmail: email, consolePassword: password };
}

/**
 * The sandbox merchant: made on first run (org, BXC wallet with funds, key, console user), reused
 * afterwards; a merchant saved before the console existed gets its console user now.
 */
async function sandboxMerchant() {
  if (existsSync(SANDBOX_FILE)) {
    const saved = readJson(SANDBOX_FILE);
    if (await keyWorks(saved.apiKey)) {
      if (saved.consoleEmail) return saved;
      const withUser = { ...saved, ...consoleUser(saved.organizationId) };
      writeFileSync(SANDBOX_FILE, `${JSON.stringify(withUser, null, 2)}\n`, { mode: 0o600 });
      return withUser;
    }
  }
  const created = JSON.parse(admin(['org', 'create', '--name', 'Sandbox Merchant', '--json']));
  const funding = JSON.parse(
    admin([
      'wallet',
      'fund',
      '--org',
      String(created.organization.id),
      '--currency',
      'BXC',
      '--amount',
      '1000000',
      '--json',
    ]),
  );
  const saved = {
    organizationId: created.organization.id,
    apiKey: created.apiKey,
    walletId: funding.accountId,
    ...consoleUser(created.organization.id),
  };

  writeFileSync(SANDBOX_FILE, `${JSON.stringify(saved, null, 2)}\n`, { mode: 0o600 });
  return saved;
}

/** Wallets in the connected networks' currencies for the sandbox merchant, funded once (the simulators' money, not real). */
function networkWallets(organizationId) {
  const { wallets } = JSON.parse(admin(['wallet', 'show', '--org', String(organizationId), '--json']));
  for (const currency of ['KES', 'UGX', 'GHS', 'RWF', 'TZS', 'USD', 'CDF']) {
    if (!wallets.some((wallet) => wallet.currency === currency)) {
      admin([
        'wallet',
        'fund',
        '--org',
        String(organizationId),
        '--currency',
        currency,
        '--amount',
        '1000000',
        '--json',
      ]);
    }
  }
}

/** The operator simulators as a child process; resolves with the configuration that points the service at them. */
function startSimulators() {
  const callbackBase = process.env.PUBLIC_BASE_URL ?? apiUrl;
  const child = spawn(binPath('bun'), ['test/simulators/run.ts', '--port', '8101', '--callback-base', callbackBase], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child.processName = 'simulators';
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk.toString();
      const line = output.split('\n')[0];
      if (output.includes('\n')) resolve(JSON.parse(line));
    });
    child.once('exit', (code) => reject(new Error(`the simulators exited (${code})`)));
  });
}

/** Stops everything when `child` exits (the Temporal dev server, the embedded PostgreSQL). */
function watch(child) {
  child.once('exit', (code, signal) => {
    if (stopping) return;
    say(`${child.processName} exited (${signal ?? code}); stopping everything`);
    void shutdown(1);
  });
}

async function main() {
  mkdirSync(DATA, { recursive: true });
  ensureDependencies();
  const cli = ensureTemporalCli();
  if (process.env.TEMPORAL_ADDRESS || (await portIsOpen(temporalPort))) {
    say(`using the Temporal server already at ${env.TEMPORAL_ADDRESS}`);
    registerSearchAttributes(cli, env.TEMPORAL_ADDRESS);
  } else {
    say('starting the Temporal dev server');
    watch(
      await startTemporalDevServer(children, cli, {
        port: temporalPort,
        uiPort,
        dbFile: join(DATA, 'temporal.db'),
        logFile: join(DATA, 'temporal.log'),
      }),
    );
  }
  // A configured server (DATABASE_URL, or one at the default address) is left to the service's
  // own default; an embedded one is handed to every process here by DATABASE_URL.
  const postgres = await usePostgres(children, {
    configuredUrl: process.env.DATABASE_URL,
    embedded: { dataDir: join(DATA, 'postgres'), port: embeddedPostgresPort, logFile: join(DATA, 'postgres.log') },
  });
  if (postgres.embedded) {
    watch(postgres.child);
    env.DATABASE_URL = withDatabase(postgres.url, 'collections');
  }
  say('preparing PostgreSQL');
  process.stdout.write(admin(['migrate']));
  let simulators = null;
  if (withNetworks) {
    say("starting the operators' simulators (M-Pesa Daraja, MTN MoMo, Airtel Money, the M-Pesa OpenAPI, pawaPay)");
    simulators = await startSimulators();
    writeFileSync(MOMO_MARKETS_FILE, `${JSON.stringify(simulators.momoMarkets, null, 2)}\n`, { mode: 0o600 });
    Object.assign(env, simulators.env, {
      MTN_MOMO_MARKETS_FILE: MOMO_MARKETS_FILE,
      PUBLIC_BASE_URL: process.env.PUBLIC_BASE_URL ?? apiUrl,
    });
  }
  // The worker and the API are restarted whenever they exit, each on its own, as a Deployment
  // restarts a pod; the dev server and the simulators are not.
  superviseChild(children, 'worker', process.execPath, [...WORKER_NODE_ARGS, 'src/worker.ts'], { env });
  superviseChild(children, 'api', binPath('bun'), ['src/server.ts'], { env });
  await waitFor('the API', async () => (await fetch(`${apiUrl}/healthz`).catch(() => null))?.status === 200, 120_000);
  const sandbox = await sandboxMerchant();
  if (simulators) networkWallets(sandbox.organizationId);
  const embeddedDatabase = postgres.embedded
    ? `
    PostgreSQL   ${env.DATABASE_URL}   (embedded, data in .data/postgres; DATABASE_URL for npm run admin)`
    : '';
  process.stdout.write(`
  Mobile-money collections service (sandbox) is up.

    API          ${apiUrl}
    Temporal UI  http://localhost:${uiPort}${embeddedDatabase}
    Metrics      ${metricsOn ? `${apiUrl}/metrics${workerMetricsPort > 0 ? `, http://localhost:${workerMetricsPort}/metrics (worker)` : ''}` : 'off (METRICS=false)'}
    Traces       ${process.env.OTEL_EXPORTER_OTLP_ENDPOINT ? `to ${process.env.OTEL_EXPORTER_OTLP_ENDPOINT}` : 'off (set OTEL_EXPORTER_OTLP_ENDPOINT)'}
    API key      ${sandbox.apiKey}   (organization ${sandbox.organizationId}; saved in .data/sandbox.json)
    Web console  ${apiUrl}/console
                 sign in as ${sandbox.consoleEmail} with password ${sandbox.consolePassword}   (saved beside the key)

${firstStepsText(sandbox.apiKey, apiUrl, env.SANDBOX_PAYMENT_DELAY_SECONDS ?? 5)}${
  simulators
    ? `
  Networks, through the project's simulators (the subscriber approves a prompt after 5 s):
${connectedNetworks()}
    curl -H 'Authorization: Token ${sandbox.apiKey}' -d phonenumber=+254712345678 -d amount=100 -d currency=KES -d send_instructions=true ${apiUrl}/api/collectionrequests
    curl -H 'Authorization: Token ${sandbox.apiKey}' -d phonenumber=+256772123456 -d amount=1500 -d currency=UGX -d send_instructions=true ${apiUrl}/api/collectionrequests
    curl -H 'Authorization: Token ${sandbox.apiKey}' -d phonenumber=+233241234567 -d amount=10.50 -d currency=GHS -d send_instructions=true ${apiUrl}/api/collectionrequests
    curl -H 'Authorization: Token ${sandbox.apiKey}' -d phonenumber=+250781234567 -d amount=2000 -d currency=RWF -d send_instructions=true ${apiUrl}/api/collectionrequests
    curl -H 'Authorization: Token ${sandbox.apiKey}' -d phonenumber=+256701234567 -d amount=1500 -d currency=UGX -d send_instructions=true ${apiUrl}/api/collectionrequests
    curl -H 'Authorization: Token ${sandbox.apiKey}' -d phonenumber=+255741234567 -d amount=2500 -d currency=TZS -d send_instructions=true ${apiUrl}/api/collectionrequests
    curl -H 'Authorization: Token ${sandbox.apiKey}' -d phonenumber=+243811234567 -d amount=12.50 -d currency=USD -d send_instructions=true ${apiUrl}/api/collectionrequests
    curl -H 'Authorization: Token ${sandbox.apiKey}' -d phonenumber=+255651234567 -d amount=3000 -d currency=TZS -d send_instructions=true ${apiUrl}/api/collectionrequests
    curl -d '{"msisdn": "254712345678", "amount": "100", "billRefNumber": "<svccode of a request>"}' ${simulators.controlUrl}/paybill
    curl -d '{"simulator": "momo", "mode": "refused"}' ${simulators.controlUrl}/outage   (daraja, momo, airtel, vodacom, pawapay; none, refused, error, hang)
    curl -d '{"provider": "MTN_MOMO_UGA", "operationType": "DEPOSIT", "status": "CLOSED"}' ${simulators.controlUrl}/availability   (pawaPay)
`
    : ''
}
  A worker or API that exits is restarted (after 1 s, doubling up to 30 s). Ctrl-C stops everything.
`);
}

main().catch(async (error) => {
  process.stderr.write(`[collections] ${error instanceof Error ? error.message : String(error)}\n`);
  await shutdown(1);
});
