/**
 * Fault injection. While N lifecycles run (collection request → sandbox payment → the merchant's
 * verification URL → credit → webhooks; some of them then reversed) and money goes out as payments
 * (some completed, some rejected by the network), the suite kills the worker with SIGKILL, restarts
 * the Temporal dev server, kills and restarts the API, and makes PostgreSQL refuse connections for
 * a while. Afterwards every request, payment and reversal must be in its expected final state,
 * every wallet balance must equal the sum of its transactions (one debit per payment and reversal,
 * one release per rejected payment), every event must exist once, and every webhook delivery must
 * have succeeded or logged exactly 10 attempts. The counts are printed and written to
 * `$TEST_DATA_DIR/faults/report.md`.
 *
 * Everything here is real and owned by this file: its own PostgreSQL database
 * (`<test database>_faults`), its own Temporal dev server with a database file (so a restart keeps
 * its state), the API on Bun and the worker on Node (Bun in the parity lane's Bun run) as child
 * processes. `npm test` runs it with FAULT_LIFECYCLES=24; `npm run test:faults` runs a larger
 * on-demand round (FAULT_LIFECYCLES=200 by default there).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, freePorts, startTemporalDevServer, stopChildren } from '../../scripts/infra.mjs';
import { adminQuery, dropDatabase } from '../../scripts/postgres.mjs';
import { createSql, type Sql } from '../../src/db';
import { createOrganization, fundWallet, updateCollectionSettings } from '../../src/services/merchants/organizations';
import { setThrottleLimits } from '../../src/services/platform/throttling';
import { SANDBOX_PAYOUT_REJECTED_NUMBER } from '../../src/network/sandbox';
import { connectClient } from '../../src/temporal/connection';
import { ROOT, eventually, startWorker, uniqueNumber, type WorkerProcess } from '../helpers';
import { makeCertificate, startReceiver, type Receiver } from '../webhook-receiver';

const LIFECYCLES = Number(process.env.FAULT_LIFECYCLES ?? 24);
const ORGANIZATIONS = 3;
const AMOUNT = 100;
/** Launches are spread over this long, so that every fault lands while lifecycles are in flight. */
const LAUNCH_WINDOW_MS = Math.max(40_000, LIFECYCLES * 250);
const POSTGRES_OUTAGE_MS = 6_000;
/** How long one lifecycle's client may keep retrying the creation of its request through the faults. */
const CREATE_DEADLINE_MS = 180_000;
const TASK_QUEUE = 'faults';
const WEBHOOK_ATTEMPTS = 10;
/** Money out during the window: this many payments (every third to the number the network refuses). */
const PAYMENTS = Math.max(6, Math.floor(LIFECYCLES / 2));
const PAYMENT_AMOUNT = 7;
const FUNDING = 1000;

type Kind = 'accept' | 'reject';
type Lifecycle = {
  index: number;
  kind: Kind;
  /** Whether the merchant reverses the collection once the request is successful. */
  reverse: boolean;
  organization: number;
  apiKey: string;
  phone: string;
  requestId: number | null;
  reversalId: number | null;
  /** What the driver saw before it had the request (or reversal): statuses and network errors. */
  hiccups: string[];
};
type Payout = {
  index: number;
  rejected: boolean;
  organization: number;
  apiKey: string;
  phone: string;
  description: string;
  paymentId: number | null;
  hiccups: string[];
};

const dataDir = join(process.env.TEST_DATA_DIR ?? join(ROOT, '.test-data'), 'faults');
const databaseUrl = (() => {
  const url = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/collections');
  url.pathname += '_faults';
  return url.toString();
})();
const databaseName = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
const temporalCli = process.env.TEMPORAL_CLI ?? join(ROOT, '.tools', 'bin', 'temporal');

let sql: Sql;
let temporalPort: number;
let temporal: ChildProcess | undefined;
let apiPort: number;
let api: ChildProcess | undefined;
let worker: WorkerProcess | undefined;
let receiver: Receiver;
let verifier: ReturnType<typeof Bun.serve>;
let childEnv: Record<string, string>;
const rejectNumbers = new Set<string>();
const organizations: { id: number; apiKey: string }[] = [];
const faults: { fault: string; atSeconds: number; tookMs: number }[] = [];
let started = 0;

const seconds = () => Math.round((Date.now() - started) / 100) / 10;

async function run(command: string[], env: Record<string, string> = childEnv): Promise<string> {
  const child = Bun.spawn(command, { cwd: ROOT, env, stdout: 'pipe', stderr: 'pipe' });
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0) throw new Error(`${command.join(' ')} exited with ${code}: ${err}${out}`);
  return out;
}

/** A statement on the server's maintenance database (the faults database may be refusing connections). */
const onServer = (statement: string): Promise<unknown> => adminQuery(databaseUrl, statement);

async function startTemporal(): Promise<void> {
  const children: ChildProcess[] = [];
  await startTemporalDevServer(children, temporalCli, {
    port: temporalPort,
    uiPort: 0,
    headless: true,
    dbFile: join(dataDir, 'temporal.db'),
    logFile: join(dataDir, 'temporal.log'),
  });
  temporal = children[0];
}

/** SIGTERM (SIGKILL after a grace period) through the bootstrap's own helper; nothing when not running. */
const stopChild = (child: ChildProcess | undefined): Promise<void> => stopChildren(child ? [child] : []);

/** A crash: SIGKILL, and wait until the process is gone. */
async function killChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

async function startApi(): Promise<void> {
  // process.execPath is Bun: the API runs on the runtime it ships on.
  // Its output goes to api.log beside the report: what an API that stopped answering said last.
  const log = openSync(join(dataDir, 'api.log'), 'a');
  api = spawn(process.execPath, ['src/server.ts'], { cwd: ROOT, env: childEnv, stdio: ['ignore', log, log] });
  closeSync(log);
  await eventually(
    'the API to answer',
    async () => (await fetch(`http://127.0.0.1:${apiPort}/healthz`).catch(() => null))?.status === 200,
    60_000,
  );
}

/** One call to the API as a merchant's client makes it; network errors come back as status 0. */
async function call(
  apiKey: string,
  path: string,
  init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { Authorization: `Token ${apiKey}`, ...init.headers };
  let body: string | undefined;
  if (init.form) {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(init.form).toString();
  }
  try {
    const response = await fetch(`http://127.0.0.1:${apiPort}${path}`, {
      method: init.method ?? (body ? 'POST' : 'GET'),
      headers,
      body,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  } catch (error) {
    return { status: 0, body: String(error) };
  }
}

/**
 * Creates something as a careful merchant client does through faults: on a network error, a 5xx,
 * a 409 or a 429 it looks the object up before sending it again (with a new Duplicate-Check-Key),
 * so an object the API committed before it died is not made twice. `lookUp` answers the id, null
 * when there is none yet, or undefined when the lookup itself failed.
 */
async function createCarefully(
  what: string,
  client: { apiKey: string; hiccups: string[] },
  send: (attempt: number) => Promise<{ status: number; body: any }>,
  lookUp: () => Promise<number | null | undefined>,
): Promise<number> {
  // Every fault is over well within this; an object still not created by then is a failure, not a wait.
  const deadline = Date.now() + CREATE_DEADLINE_MS;
  const beforeDeadline = () => {
    if (Date.now() > deadline)
      throw new Error(`${what}: not created within ${CREATE_DEADLINE_MS / 1000} s (${client.hiccups.join(', ')})`);
  };
  for (let attempt = 1; ; attempt += 1) {
    beforeDeadline();
    const response = await send(attempt);
    if (response.status === 201) return response.body.id;
    client.hiccups.push(response.status === 0 ? 'network error' : String(response.status));
    if (response.status !== 0 && response.status < 500 && response.status !== 409 && response.status !== 429) {
      throw new Error(`${what}: ${response.status} ${JSON.stringify(response.body)}`);
    }
    for (;;) {
      beforeDeadline();
      const found = await lookUp();
      if (found) return found;
      if (found === null) break;
      await Bun.sleep(500);
    }
    await Bun.sleep(500);
  }
}

/** A lifecycle's request, looked up by its phone number after a failed attempt. */
async function createRequest(lifecycle: Lifecycle): Promise<void> {
  lifecycle.requestId = await createCarefully(
    `lifecycle ${lifecycle.index}`,
    lifecycle,
    (attempt) =>
      call(lifecycle.apiKey, '/api/collectionrequests', {
        form: {
          phonenumber: lifecycle.phone,
          amount: String(AMOUNT),
          currency: 'BXC',
          send_instructions: 'true',
          // A rejected payment leaves its request open until it expires.
          expiry_date: lifecycle.kind === 'reject' ? '1 minute' : '1 hour',
          first_name: 'Fault',
          last_name: `Payer ${lifecycle.index}`,
        },
        headers: { 'Duplicate-Check-Key': `lifecycle-${lifecycle.index}-${attempt}` },
      }),
    async () => {
      const found = await call(
        lifecycle.apiKey,
        `/api/collectionrequests?phonenumber=${encodeURIComponent(lifecycle.phone)}`,
      );
      return found.status === 200 ? (found.body.results[0]?.id ?? null) : undefined;
    },
  );
}

/** Once the request is successful, its collection is reversed (looked up by collection after a failed attempt). */
async function reverseCollection(lifecycle: Lifecycle): Promise<void> {
  let collectionId: number | null = null;
  await eventually(
    `lifecycle ${lifecycle.index}'s request to be successful`,
    async () => {
      const found = await call(lifecycle.apiKey, `/api/collectionrequests/${lifecycle.requestId}`);
      collectionId = found.status === 200 && found.body.status === 'successful' ? found.body.collection : null;
      return collectionId !== null;
    },
    CREATE_DEADLINE_MS,
  );
  const lookUp = async () => {
    const found = await call(lifecycle.apiKey, `/api/reversals?collection=${collectionId}`);
    return found.status === 200 ? (found.body.results[0]?.id ?? null) : undefined;
  };
  lifecycle.reversalId = await createCarefully(
    `lifecycle ${lifecycle.index}'s reversal`,
    lifecycle,
    async (attempt) => {
      const response = await call(lifecycle.apiKey, '/api/reversals', {
        form: { collection: String(collectionId), reason: 'Fault test' },
        headers: { 'Duplicate-Check-Key': `reversal-${lifecycle.index}-${attempt}` },
      });
      // A reversal the API committed before it died is refused as a second one: it is there to be found.
      return response.status === 400 && JSON.stringify(response.body).includes('reversed already')
        ? { status: 409, body: response.body }
        : response;
    },
    lookUp,
  );
}

/** A payment, looked up by its phone number and description after a failed attempt. */
async function createPayment(payout: Payout): Promise<void> {
  payout.paymentId = await createCarefully(
    `payment ${payout.index}`,
    payout,
    (attempt) =>
      call(payout.apiKey, '/api/payments', {
        form: {
          phonenumber: payout.phone,
          amount: String(PAYMENT_AMOUNT),
          currency: 'BXC',
          description: payout.description,
        },
        headers: { 'Duplicate-Check-Key': `payment-${payout.index}-${attempt}` },
      }),
    async () => {
      const found = await call(
        payout.apiKey,
        `/api/payments?phonenumber=${encodeURIComponent(payout.phone)}&limit=100`,
      );
      if (found.status !== 200) return undefined;
      return (
        found.body.results.find((payment: { description: string }) => payment.description === payout.description)?.id ??
        null
      );
    },
  );
}

/**
 * The faults, one after another at fixed points of the launch window (a fault starts no earlier
 * than the previous one ended), so requests are being created, paid, verified and announced
 * around each of them; the PostgreSQL outage ends before the last launch.
 */
async function injectFaults(): Promise<void> {
  const steps: [number, string, () => Promise<void>][] = [
    [
      0.15,
      'kill -9 the worker, start a new one',
      async () => {
        await worker!.kill();
        await Bun.sleep(1_000);
        worker = await startWorker(TASK_QUEUE, childEnv);
      },
    ],
    [
      0.35,
      'restart the Temporal dev server',
      async () => {
        await stopChild(temporal);
        await Bun.sleep(1_000);
        await startTemporal();
      },
    ],
    [
      0.5,
      'kill -9 the API, start a new one',
      async () => {
        await killChild(api);
        await Bun.sleep(500);
        await startApi();
      },
    ],
    [
      0.65,
      `PostgreSQL refuses connections for ${POSTGRES_OUTAGE_MS / 1000} s`,
      async () => {
        await onServer(`alter database "${databaseName}" with allow_connections false`);
        await onServer(
          `select count(pg_terminate_backend(pid)) from pg_stat_activity where datname = '${databaseName}'`,
        );
        await Bun.sleep(POSTGRES_OUTAGE_MS);
        await onServer(`alter database "${databaseName}" with allow_connections true`);
      },
    ],
  ];
  for (const [at, fault, action] of steps) {
    await Bun.sleep(Math.max(0, started + at * LAUNCH_WINDOW_MS - Date.now()));
    const atSeconds = seconds();
    const began = Date.now();
    await action();
    faults.push({ fault, atSeconds, tookMs: Date.now() - began });
  }
}

beforeAll(async () => {
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  const certificate = makeCertificate();
  receiver = await startReceiver(certificate);
  verifier = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const body = (await request.json()) as { phonenumber: string; remote_transaction_id: string };
      if (rejectNumbers.has(body.phonenumber)) return new Response(`REJECT ${body.remote_transaction_id} Not expected`);
      return new Response(`ACCEPT ${body.remote_transaction_id}`);
    },
  });
  [temporalPort, apiPort] = (await freePorts(2)) as [number, number];
  if (temporalPort === apiPort) apiPort = await freePort();
  childEnv = {
    ...(process.env as Record<string, string>),
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
    TASK_QUEUE,
    PORT: String(apiPort),
    SANDBOX: 'true',
    SANDBOX_PAYMENT_DELAY_SECONDS: '1',
    FAILED_PROMPT_RETRY_SECONDS: '1',
    VERIFICATION_TIMEOUT_SECONDS: '3',
    SANDBOX_PAYOUT_DELAY_SECONDS: '1',
    PAYOUT_STATUS_POLL_SECONDS: '2',
    WEBHOOK_CA_FILE: certificate.certFile,
    WEBHOOK_RETRY_SCHEDULE: Array(WEBHOOK_ATTEMPTS - 1)
      .fill('200ms')
      .join(','),
    WEBHOOK_RETRY_JITTER: '0',
    // What the API could not hand to Temporal (it died, or Temporal was down) the sweep starts.
    OUTBOX_SWEEP: 'true',
    OUTBOX_SWEEP_INTERVAL_SECONDS: '3',
    OUTBOX_GRACE_SECONDS: '2',
    RETENTION_SWEEP: 'false',
  };

  await dropDatabase(databaseUrl);
  await run([process.execPath, 'src/admin.ts', 'migrate']);
  sql = createSql(databaseUrl, 4);
  for (let index = 0; index < ORGANIZATIONS; index += 1) {
    const created = await createOrganization(sql, `Fault Merchant ${index + 1}`);
    const id = created.organization.id;
    await fundWallet(sql, id, 'BXC', String(FUNDING));
    await setThrottleLimits(sql, id, { reads: 1_000_000, writes: 1_000_000 });
    await updateCollectionSettings(
      sql,
      { organizationId: id },
      { verificationUrl: `http://127.0.0.1:${verifier.port}/verify`, acceptByDefault: false },
    );
    organizations.push({ id, apiKey: created.apiKey });
  }
  receiver.script('/fail', [], { status: 500 });

  await startTemporal();
  worker = await startWorker(TASK_QUEUE, childEnv);
  await startApi();
  for (const organization of organizations) {
    const hooks: [string, string][] = [
      ['collectionrequest.status.changed', `/ok/${organization.id}`],
      ['collection.received', `/ok/${organization.id}`],
    ];
    // One organization also has a hook that never answers 2xx: each of its deliveries must log 10 attempts.
    if (organization === organizations[0]) hooks.push(['collection.received', '/fail']);
    for (const [event, path] of hooks) {
      const created = await call(organization.apiKey, '/api/webhooks', { form: { event, target: receiver.url(path) } });
      if (created.status !== 201)
        throw new Error(`webhook not created: ${created.status} ${JSON.stringify(created.body)}`);
    }
  }
}, 180_000);

afterAll(async () => {
  await stopChild(api);
  await worker?.stop();
  await stopChild(temporal);
  verifier?.stop(true);
  await receiver?.close();
  await onServer(`alter database "${databaseName}" with allow_connections true`).catch(() => undefined);
  await sql?.end({ timeout: 5 });
});

test(`${LIFECYCLES} lifecycles survive worker, Temporal, API and PostgreSQL faults`, async () => {
  started = Date.now();
  const lifecycles: Lifecycle[] = Array.from({ length: LIFECYCLES }, (_, index) => {
    const organization = organizations[index % ORGANIZATIONS]!;
    const phone = uniqueNumber('+256772');
    const kind: Kind = index % 4 === 3 ? 'reject' : 'accept';
    if (kind === 'reject') rejectNumbers.add(phone);
    const reverse = index % 4 === 1;
    return {
      index,
      kind,
      reverse,
      organization: organization.id,
      apiKey: organization.apiKey,
      phone,
      requestId: null,
      reversalId: null,
      hiccups: [],
    };
  });
  const payouts: Payout[] = Array.from({ length: PAYMENTS }, (_, index) => {
    const organization = organizations[index % ORGANIZATIONS]!;
    const rejected = index % 3 === 2;
    const phone = rejected ? SANDBOX_PAYOUT_REJECTED_NUMBER : uniqueNumber('+256772');
    return {
      index,
      rejected,
      organization: organization.id,
      apiKey: organization.apiKey,
      phone,
      description: `Fault payout ${index}`,
      paymentId: null,
      hiccups: [],
    };
  });

  const launches = lifecycles.map(async (lifecycle) => {
    await Bun.sleep(Math.floor((lifecycle.index * LAUNCH_WINDOW_MS) / LIFECYCLES));
    await createRequest(lifecycle);
    if (lifecycle.reverse) await reverseCollection(lifecycle);
  });
  const payments = payouts.map(async (payout) => {
    await Bun.sleep(Math.floor(((payout.index + 0.5) * LAUNCH_WINDOW_MS) / PAYMENTS));
    await createPayment(payout);
  });
  await Promise.all([injectFaults(), ...launches, ...payments]);
  const launchedAt = seconds();

  // Drain: every request final, every event dispatched, every delivery finished.
  const organizationIds = organizations.map((organization) => organization.id);
  const requestIds = lifecycles.map((lifecycle) => lifecycle.requestId!);
  const phones = lifecycles.map((lifecycle) => lifecycle.phone);
  const temporalClient = await connectClient({ address: childEnv.TEMPORAL_ADDRESS!, namespace: 'default' });
  let lastProgress = '';
  try {
    await eventually(
      'every lifecycle to finish',
      async () => {
        const [progress] = await sql<
          {
            open: number;
            moneyOut: number;
            undispatched: number;
            pending: number;
            collections: number;
            prompted: number;
          }[]
        >`
        select (select count(*)::int from collection_requests where id = any(${requestIds}) and status not in ('successful', 'expired', 'failed', 'reversed')) as open,
               (select count(*)::int from payments where organization_id = any(${organizationIds}) and state not in ('completed', 'rejected', 'cancelled'))
                 + (select count(*)::int from reversals where organization_id = any(${organizationIds}) and state = 'processing') as "moneyOut",
               (select count(*)::int from events where organization_id = any(${organizationIds}) and dispatched_at is null) as undispatched,
               (select count(*)::int from webhook_deliveries where organization_id = any(${organizationIds}) and status = 'pending') as pending,
               (select count(*)::int from collections where phone_number = any(${phones})) as collections,
               -- A payment comes for each prompted request; under heavy load a short-lived (rejected-kind)
               -- request may expire before its workflow prompts anyone, and then none comes.
               (select count(*)::int from events where type = 'collectionrequest.status.changed' and organization_id = any(${organizationIds})
                  and data->>'status' = 'processing_started') as prompted`.catch(() => [
          { open: -1, moneyOut: -1, undispatched: -1, pending: -1, collections: -1, prompted: -2 },
        ]);
        // Payments still on their way (a rejected request's may outlive the request), dispatches and
        // deliveries still running (a delivery's row is opened by its workflow's first activity).
        const running = (
          await temporalClient.workflow.count(
            `ExecutionStatus = 'Running' AND (WorkflowType = 'incomingCollection' ` +
              `OR WorkflowType = 'eventDispatch' OR WorkflowType = 'webhookDelivery' OR WorkflowType = 'payment' OR WorkflowType = 'reversal')`,
          )
        ).count;
        const missing = await missingDeliveries(organizationIds).catch(() => -1);
        lastProgress = JSON.stringify({ ...progress, running, missing });
        return (
          progress!.open === 0 &&
          progress!.moneyOut === 0 &&
          progress!.undispatched === 0 &&
          progress!.pending === 0 &&
          progress!.collections === progress!.prompted &&
          running === 0 &&
          missing === 0
        );
      },
      240_000 + LIFECYCLES * 1_000,
    );
  } catch (error) {
    const workerState = worker?.child.exitCode ?? worker?.child.signalCode ?? 'running';
    const apiState = api?.exitCode ?? api?.signalCode ?? 'running';
    throw new Error(
      `${(error as Error).message}; last progress ${lastProgress}; worker ${workerState}, API ${apiState}; ` +
        `faults ${JSON.stringify(faults)}; the worker's last output:\n${worker?.output().slice(-4000) ?? ''}`,
    );
  }
  const drainedAt = seconds();
  await temporalClient.connection.close();

  // 1. One request per lifecycle, in its expected final state.
  const requests = await sql<{ id: number; phone: string; status: string; collectionId: number | null }[]>`
    select id, phone_number as phone, status, collection_id as "collectionId" from collection_requests
    where organization_id = any(${organizationIds}) order by id`;
  expect(requests.length).toBe(LIFECYCLES);
  const byPhone = new Map(requests.map((request) => [request.phone, request]));
  const wrongState = lifecycles.filter((lifecycle) => {
    const request = byPhone.get(lifecycle.phone);
    const expected = lifecycle.kind === 'reject' ? 'expired' : lifecycle.reverse ? 'reversed' : 'successful';
    return request?.status !== expected || request.id !== lifecycle.requestId;
  });
  expect(wrongState.map((lifecycle) => ({ ...lifecycle, request: byPhone.get(lifecycle.phone) }))).toEqual([]);

  // 2. One collection per payment: accepted ones credited once, rejected ones never. Under load a
  // payment to be rejected may arrive after its request expired: it is then unmatched (pending, no
  // organization, waiting to be claimed), also never credited.
  const collections = await sql<
    { id: number; phone: string; status: string; organizationId: number | null; credits: number }[]
  >`
    select c.id, c.phone_number as phone, c.status, c.organization_id as "organizationId",
           (select count(*)::int from transactions t where t.collection_id = c.id and t.type = 'mobile_collection') as credits
    from collections c where c.phone_number = any(${phones})`;
  const [{ prompted } = { prompted: -1 }] = await sql<{ prompted: number }[]>`
    select count(*)::int as prompted from events where type = 'collectionrequest.status.changed'
    and organization_id = any(${organizationIds}) and data->>'status' = 'processing_started'`;
  expect(collections.length).toBe(prompted);
  // Every accepted-kind request (an hour to live) was prompted and paid.
  const paidPhones = new Set(collections.map((collection) => collection.phone));
  expect(lifecycles.filter((lifecycle) => lifecycle.kind === 'accept' && !paidPhones.has(lifecycle.phone))).toEqual([]);
  const wrongCollections = collections.filter((collection) => {
    if (!rejectNumbers.has(collection.phone)) return collection.status !== 'successful' || collection.credits !== 1;
    const rejected = collection.status === 'failed' && collection.organizationId !== null;
    const unmatched = collection.status === 'pending' && collection.organizationId === null;
    return !(rejected || unmatched) || collection.credits !== 0;
  });
  expect(wrongCollections).toEqual([]);
  const unmatchedAfterExpiry = collections.filter((collection) => collection.organizationId === null).length;

  // 3. Every wallet balance equals the sum of its transactions; credits add up to the accepted payments.
  const wallets = await sql<{ id: number; balance: string; sum: string; credits: string }[]>`
    select a.id, a.balance::text as balance, coalesce(sum(t.amount), 0)::text as sum,
           coalesce(sum(t.amount) filter (where t.type = 'mobile_collection'), 0)::text as credits
    from accounts a left join transactions t on t.account_id = a.id
    where a.organization_id = any(${organizationIds}) group by a.id order by a.id`;
  expect(wallets.filter((wallet) => Number(wallet.balance) !== Number(wallet.sum))).toEqual([]);
  const accepted = lifecycles.filter((lifecycle) => lifecycle.kind === 'accept').length;
  expect(wallets.reduce((total, wallet) => total + Number(wallet.credits), 0)).toBe(accepted * AMOUNT);

  // 3b. Money out: each payment as the network decided, debited once and released once when refused;
  // each reversal completed, debited once, never released; the wallets hold exactly what is left.
  const paymentRows = await sql<{ id: number; description: string; state: string; debits: number; releases: number }[]>`
    select p.id, p.description, p.state,
           (select count(*)::int from transactions t where t.payment_id = p.id and t.type = 'mobile_payment') as debits,
           (select count(*)::int from transactions t where t.payment_id = p.id and t.type = 'payment_release') as releases
    from payments p where p.organization_id = any(${organizationIds})`;
  expect(paymentRows.length).toBe(PAYMENTS);
  const paymentByDescription = new Map(paymentRows.map((row) => [row.description, row]));
  const wrongPayments = payouts.filter((payout) => {
    const row = paymentByDescription.get(payout.description);
    return (
      row?.id !== payout.paymentId ||
      row.state !== (payout.rejected ? 'rejected' : 'completed') ||
      row.debits !== 1 ||
      row.releases !== (payout.rejected ? 1 : 0)
    );
  });
  expect(wrongPayments.map((payout) => ({ ...payout, row: paymentByDescription.get(payout.description) }))).toEqual([]);
  const reversalRows = await sql<{ id: number; state: string; debits: number; releases: number }[]>`
    select r.id, r.state,
           (select count(*)::int from transactions t where t.reversal_id = r.id and t.type = 'reversal') as debits,
           (select count(*)::int from transactions t where t.reversal_id = r.id and t.type = 'reversal_release') as releases
    from reversals r where r.organization_id = any(${organizationIds})`;
  const reversing = lifecycles.filter((lifecycle) => lifecycle.reverse);
  expect(reversalRows.length).toBe(reversing.length);
  expect(reversalRows.filter((row) => row.state !== 'completed' || row.debits !== 1 || row.releases !== 0)).toEqual([]);
  expect(reversalRows.map((row) => row.id).sort()).toEqual(reversing.map((lifecycle) => lifecycle.reversalId!).sort());
  const completedPayments = payouts.filter((payout) => !payout.rejected).length;
  const funded = ORGANIZATIONS * FUNDING;
  expect(wallets.reduce((total, wallet) => total + Number(wallet.balance), 0)).toBe(
    funded + (accepted - reversing.length) * AMOUNT - completedPayments * PAYMENT_AMOUNT,
  );

  // 4. Each event once: no (type, object, status) recorded twice, and each request's status story in order.
  const [duplicates] = await sql<{ n: number }[]>`
    select count(*)::int as n from (
      select 1 from events where organization_id = any(${organizationIds})
      group by organization_id, type, data->>'id', coalesce(data->>'status', data->>'state', '') having count(*) > 1) d`;
  expect(duplicates!.n).toBe(0);
  const stories = await sql<{ id: number; statuses: string[] }[]>`
    select (data->>'id')::bigint as id, array_agg(data->>'status' order by id) as statuses from events
    where type = 'collectionrequest.status.changed' and organization_id = any(${organizationIds}) group by 1`;
  const storyOf = new Map(stories.map((story) => [Number(story.id), story.statuses]));
  const wrongStories = lifecycles
    .map((lifecycle) => ({ index: lifecycle.index, statuses: storyOf.get(lifecycle.requestId!) }))
    .filter(({ index, statuses }) => {
      const full = ['instructions_sent', 'processing_started'];
      const lifecycle = lifecycles[index]!;
      if (lifecycle.kind === 'accept') {
        return (
          JSON.stringify(statuses) !==
          JSON.stringify([...full, 'successful', ...(lifecycle.reverse ? ['reversed'] : [])])
        );
      }
      // A rejected-kind request expires wherever it stood: after a prefix of the usual steps.
      const story = statuses ?? [];
      return (
        story.at(-1) !== 'expired' ||
        JSON.stringify(story.slice(0, -1)) !== JSON.stringify(full.slice(0, story.length - 1))
      );
    });
  expect(wrongStories).toEqual([]);
  const [eventCounts] = await sql<{ events: number; received: number }[]>`
    select count(*)::int as events, (count(*) filter (where type = 'collection.received'))::int as received
    from events where organization_id = any(${organizationIds})`;

  // 5. Every delivery delivered, or failed after exactly 10 logged attempts; receivers got each delivered one.
  const deliveries = await sql<
    {
      id: number;
      status: string;
      attempts: number;
      attemptNumbers: number[];
      target: string;
      eventId: number;
      webhookId: number;
    }[]
  >`
    select d.id, d.status, count(a.*)::int as attempts, coalesce(array_agg(a.attempt order by a.attempt) filter (where a.attempt is not null), '{}') as "attemptNumbers",
           w.target, d.event_id as "eventId", d.webhook_id as "webhookId"
    from webhook_deliveries d join webhooks w on w.id = d.webhook_id
    left join webhook_delivery_attempts a on a.delivery_id = d.id
    where d.organization_id = any(${organizationIds}) and not d.redelivery group by d.id, w.target`;
  const toFailingHook = (target: string) => target.endsWith('/fail');
  const wrongDeliveries = deliveries.filter((delivery) =>
    toFailingHook(delivery.target)
      ? delivery.status !== 'failed' ||
        JSON.stringify(delivery.attemptNumbers) !==
          JSON.stringify([...Array(WEBHOOK_ATTEMPTS).keys()].map((n) => n + 1))
      : delivery.status !== 'delivered' || delivery.attempts < 1,
  );
  expect(wrongDeliveries).toEqual([]);
  const failing = deliveries.filter((delivery) => toFailingHook(delivery.target));
  // The failing hook listens to collection.received of the first organization: one delivery per accepted payment there.
  const acceptedInFirst = lifecycles.filter(
    (lifecycle) => lifecycle.organization === organizations[0]!.id && lifecycle.kind === 'accept',
  ).length;
  expect(failing.length).toBe(acceptedInFirst);
  const received = new Map<string, number>();
  for (const organization of organizations) {
    for (const request of receiver.requests(`/ok/${organization.id}`)) {
      const id = request.headers['webhook-id'] ?? '';
      received.set(id, (received.get(id) ?? 0) + 1);
    }
  }
  const delivered = deliveries.filter((delivery) => delivery.status === 'delivered');
  const receivedOnce = [...received.values()].filter((count) => count === 1).length;
  expect(received.size).toBe(delivered.length);

  const hiccups = [...lifecycles, ...payouts].flatMap((client) => client.hiccups);
  const count = (what: string) => hiccups.filter((hiccup) => hiccup === what).length;
  // An outage is a 503 with Retry-After, never a 500.
  expect(count('500')).toBe(0);
  const lines = [
    `| fault | at (s) | took (ms) |`,
    `|---|---:|---:|`,
    ...faults.map((fault) => `| ${fault.fault} | ${fault.atSeconds} | ${fault.tookMs} |`),
    '',
    `| count | value |`,
    `|---|---:|`,
    `| lifecycles (requests created) | ${LIFECYCLES} |`,
    `| requests successful (payment accepted; then reversed) | ${requests.filter((request) => request.status === 'successful' || request.status === 'reversed').length} (${requests.filter((request) => request.status === 'reversed').length}) |`,
    `| requests expired (payment rejected by the verification URL) | ${requests.filter((request) => request.status === 'expired').length} |`,
    `| requests in a wrong state | ${wrongState.length} |`,
    `| requests expired before their workflow prompted anyone (no payment) | ${LIFECYCLES - prompted} |`,
    `| collections (credited once / rejected, never credited / arrived after expiry, unmatched) | ${collections.length} (${collections.filter((c) => c.credits === 1).length} / ${collections.filter((c) => c.status === 'failed').length} / ${unmatchedAfterExpiry}) |`,
    `| payments completed / rejected by the network, amount released | ${completedPayments} / ${PAYMENTS - completedPayments} |`,
    `| collections reversed (request reversed, wallet debited once) | ${reversing.length} |`,
    `| wallets checked, balance = sum of transactions | ${wallets.length} |`,
    `| events (collection.received) | ${eventCounts!.events} (${eventCounts!.received}) |`,
    `| events recorded twice | ${duplicates!.n} |`,
    `| webhook deliveries delivered | ${delivered.length} |`,
    `| webhook deliveries failed after 10 logged attempts | ${failing.length} (${failing.reduce((total, d) => total + d.attempts, 0)} attempts) |`,
    `| delivered webhooks received once / more than once (at least once by design) | ${receivedOnce} / ${received.size - receivedOnce} |`,
    `| client retries after a network error / 503 / 409 / 500 | ${count('network error')} / ${count('503')} / ${count('409')} / ${count('500')} |`,
    `| seconds to launch all and inject all faults / to drain | ${launchedAt} / ${drainedAt} |`,
  ];
  const report = `Fault injection, ${new Date().toISOString()}\n\n${lines.join('\n')}\n`;
  writeFileSync(join(dataDir, 'report.md'), report);
  console.log(report);
}, 900_000);

/** (event, matching hook) pairs that have no first delivery yet. */
async function missingDeliveries(organizationIds: number[]): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from events e
    join webhooks w on w.organization_id = e.organization_id and w.event = e.type and w.deleted_at is null
    where e.organization_id = any(${organizationIds})
      and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.webhook_id = w.id and not d.redelivery)`;
  return row!.n;
}
