/**
 * Incoming collections end to end on the real worker and dev server: the sandbox network pays a
 * request, the collection is stored, matched, verified by a local verification server, credited
 * once and announced; claims; the network callback route.
 */
import { asId } from '../../src/domain/ids';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { updateCollectionSettings } from '../../src/services/merchants/organizations';
import { incomingCollectionWorkflowId } from '../../src/contracts/incoming-collection';
import { collectionRequestStateQuery, collectionRequestWorkflowId } from '../../src/contracts/collection-request';
import { makeCertificate, startReceiver, type Certificate, type Receiver } from '../webhook-receiver';
import { ConsoleClient, PASSWORD, consoleUser } from '../console-helpers';
import {
  LIVE_METRICS_TOKEN,
  ROOT,
  createMerchant,
  eventually,
  numberSequence,
  recordHistory,
  requester,
  uniqueNumber,
  startWorker,
  testApp,
  testSql,
  uniqueTaskQueue,
  type TestApp,
  type TestMerchant,
  type WorkerProcess,
} from '../helpers';

const VERIFICATION_TIMEOUT_SECONDS = 2;
let WORKER_ENV: Record<string, string>;
const taskQueue = uniqueTaskQueue('collections');
let worker: WorkerProcess;
let ctx: TestApp;

/** The merchant's verification server: how it answers depends on the payer's number. */
type Mode = 'accept' | 'reject' | 'garbage' | 'silent' | 'slow-accept';
const modes = new Map<string, Mode>();
const asked: {
  phonenumber: string;
  remote_transaction_id: string;
  amount: string;
  currency_code: string;
  reference: string;
}[] = [];
let verifier: ReturnType<typeof Bun.serve>;

let certificate: Certificate;
let receiver: Receiver;

beforeAll(async () => {
  certificate = makeCertificate();
  receiver = await startReceiver(certificate);
  WORKER_ENV = {
    SANDBOX_PAYMENT_DELAY_SECONDS: '1',
    FAILED_PROMPT_RETRY_SECONDS: '1',
    VERIFICATION_TIMEOUT_SECONDS: String(VERIFICATION_TIMEOUT_SECONDS),
    WEBHOOK_CA_FILE: certificate.certFile,
    WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms',
  };
  verifier = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const body = (await request.json()) as (typeof asked)[number];
      asked.push(body);
      const mode = modes.get(body.phonenumber) ?? 'accept';
      if (mode === 'silent') await Bun.sleep((VERIFICATION_TIMEOUT_SECONDS + 1) * 1000);
      if (mode === 'slow-accept') await Bun.sleep(1500);
      if (mode === 'garbage') return new Response('maybe later');
      if (mode === 'reject') return new Response(`REJECT ${body.remote_transaction_id} Order cancelled`);
      return new Response(`ACCEPT ${body.remote_transaction_id}`);
    },
  });
  worker = await startWorker(taskQueue, WORKER_ENV);
  ctx = await testApp(taskQueue, WORKER_ENV);
});

afterAll(async () => {
  await worker?.stop();
  verifier?.stop(true);
  await receiver?.close();
});

/** A network's callback secret, issued by the admin CLI as an operator would (it replaces any earlier one). */
function networkSecret(name: string): string {
  const created = spawnSync(
    process.execPath,
    ['src/admin.ts', 'network', 'secret', 'create', '--network', name, '--json'],
    { cwd: ROOT, env: process.env, encoding: 'utf8' },
  );
  return (JSON.parse(created.stdout) as { secret: string }).secret;
}

const nextNumber = numberSequence('+256772');

async function merchantWithVerification(acceptByDefault: boolean): Promise<TestMerchant> {
  const merchant = await createMerchant(ctx.app);
  await updateCollectionSettings(
    testSql(),
    { organizationId: merchant.organization.id },
    { verificationUrl: `http://127.0.0.1:${verifier.port}/verify`, acceptByDefault },
  );
  return merchant;
}

async function requestPayment(
  merchant: TestMerchant,
  phone: string,
  amount = '250',
  sendInstructions = true,
): Promise<number> {
  const response = await merchant.request('/api/collectionrequests', {
    form: {
      phonenumber: phone,
      amount,
      currency: 'BXC',
      send_instructions: String(sendInstructions),
      expiry_date: '1 minute',
      first_name: 'Pat',
      last_name: 'Payer',
    },
  });
  expect(response.status).toBe(201);
  return response.body.id;
}

async function balance(organizationId: number): Promise<string> {
  const [row] = await testSql()<
    { balance: string }[]
  >`select balance::text from accounts where organization_id = ${organizationId} and currency = 'BXC' order by id limit 1`;
  return row!.balance;
}

/** How the request's workflow decided the payment its prompt brought (it receives it itself), as its status query shows it. */
async function paymentResult(requestId: number) {
  const handle = ctx.client.workflow.getHandle(collectionRequestWorkflowId(asId('CollectionRequest', requestId)));
  return await eventually(
    'the request to receive its payment',
    async () => (await handle.query(collectionRequestStateQuery)).payment,
  );
}

async function eventCount(organizationId: number, type: string): Promise<number> {
  const [row] = await testSql()<
    { n: number }[]
  >`select count(*)::int as n from events where organization_id = ${organizationId} and type = ${type}`;
  return row!.n;
}

describe('a request paid through the sandbox network', () => {
  test('ACCEPT: stored, matched, verified, credited once, request successful, events recorded', async () => {
    const merchant = await merchantWithVerification(false);
    const phone = nextNumber();
    const before = await balance(merchant.organization.id);
    const requestId = await requestPayment(merchant, phone);
    const result = await paymentResult(requestId);
    expect(result).toMatchObject({ outcome: 'accepted', requestId, decidedBy: 'merchant' });
    await ctx.client.workflow.getHandle(collectionRequestWorkflowId(asId('CollectionRequest', requestId))).result();
    await recordHistory(
      ctx.client,
      collectionRequestWorkflowId(asId('CollectionRequest', requestId)),
      'collection-request-verified',
    );
    expect(asked.find((body) => body.phonenumber === phone)).toEqual({
      phonenumber: phone,
      amount: '250.0000',
      currency_code: 'BXC',
      reference: merchant.organization.name,
      remote_transaction_id: `SBX-${requestId}`,
    });
    await ctx.client.workflow.getHandle(collectionRequestWorkflowId(asId('CollectionRequest', requestId))).result();
    const request = await merchant.request(`/api/collectionrequests/${requestId}`);
    expect(request.body).toMatchObject({ status: 'successful', collection: result.collectionId });
    const collection = await merchant.request(`/api/collections/${result.collectionId}`);
    expect(collection.status).toBe(200);
    expect(collection.body).toMatchObject({
      id: result.collectionId,
      organization: merchant.organization.id,
      amount: '250.0000',
      currency: 'BXC',
      phonenumber: phone,
      remote_transaction_id: `SBX-${requestId}`,
      status: 'successful',
      collection_request: { id: requestId },
      contact: { phone_number: phone, first_name: 'Pat' },
      transaction: {
        amount: '250.0000',
        currency: 'BXC',
        type: 'mobile_collection',
        fee_transaction: null,
        account: { organization: merchant.organization.id, currency: 1 },
      },
    });
    expect(Number(await balance(merchant.organization.id)) - Number(before)).toBe(250);
    expect(await eventCount(merchant.organization.id, 'collection.received')).toBe(1);
    const statuses = await testSql()<{ status: string }[]>`select data->>'status' as status from events
      where type = 'collectionrequest.status.changed' and (data->>'id')::bigint = ${requestId} order by id`;
    expect(statuses.map((row) => row.status)).toEqual(['instructions_sent', 'processing_started', 'successful']);
  });

  test("collection.received and collectionrequest.status.changed reach the merchant's webhooks", async () => {
    const merchant = await merchantWithVerification(true);
    for (const event of ['collection.received', 'collectionrequest.status.changed']) {
      const created = await merchant.request('/api/webhooks', {
        form: { event, target: receiver.url(`/hooks/${merchant.organization.id}/${event}`) },
      });
      expect(created.status).toBe(201);
    }
    const phone = nextNumber();
    const requestId = await requestPayment(merchant, phone);
    const { collectionId } = await paymentResult(requestId);
    await ctx.client.workflow.getHandle(collectionRequestWorkflowId(asId('CollectionRequest', requestId))).result();
    const received = await eventually('the collection.received delivery', async () => {
      const requests = receiver.requests(`/hooks/${merchant.organization.id}/collection.received`);
      return requests.length > 0 ? requests : undefined;
    });
    expect(JSON.parse(received[0]!.body)).toMatchObject({
      hook: { event: 'collection.received' },
      data: { id: collectionId, status: 'successful' },
    });
    const statuses = await eventually('the three status deliveries', async () => {
      const requests = receiver.requests(`/hooks/${merchant.organization.id}/collectionrequest.status.changed`);
      return requests.length >= 3 ? requests : undefined;
    });
    expect(statuses.map((request) => JSON.parse(request.body).data.status).sort()).toEqual([
      'instructions_sent',
      'processing_started',
      'successful',
    ]);
  });

  test('REJECT: the collection fails with the reason passed to the network; nothing credited', async () => {
    const merchant = await merchantWithVerification(true);
    const phone = nextNumber();
    modes.set(phone, 'reject');
    const before = await balance(merchant.organization.id);
    const requestId = await requestPayment(merchant, phone);
    const result = await paymentResult(requestId);
    expect(result).toMatchObject({ outcome: 'rejected', decidedBy: 'merchant' });
    // The request waits on for another payment: its history so far.
    await recordHistory(
      ctx.client,
      collectionRequestWorkflowId(asId('CollectionRequest', requestId)),
      'collection-request-rejected-waiting',
    );
    const [collection] =
      await testSql()`select status, rejection_reason from collections where id = ${result.collectionId}`;
    expect(collection).toEqual({ status: 'failed', rejection_reason: 'Order cancelled' });
    const [rejection] =
      await testSql()`select reason from sandbox_rejections where remote_transaction_id = ${`SBX-${requestId}`}`;
    expect(rejection?.reason).toBe('Order cancelled');
    expect(await balance(merchant.organization.id)).toBe(before);
    expect(await eventCount(merchant.organization.id, 'collection.received')).toBe(0);
    const request = await merchant.request(`/api/collectionrequests/${requestId}`);
    expect(request.body.collection).toBeNull();
    expect(request.body.status).toBe('processing_started');
  });

  test.each([
    ['garbage', true, 'accepted'],
    ['garbage', false, 'rejected'],
    ['silent', true, 'accepted'],
    ['silent', false, 'rejected'],
  ] as const)('%s answer with accept-by-default %p → %s', async (mode, acceptByDefault, outcome) => {
    const merchant = await merchantWithVerification(acceptByDefault);
    const phone = nextNumber();
    modes.set(phone, mode);
    const result = await paymentResult(await requestPayment(merchant, phone));
    expect(result).toMatchObject({ outcome, decidedBy: 'default' });
    expect(await eventCount(merchant.organization.id, 'collection.received')).toBe(outcome === 'accepted' ? 1 : 0);
  });

  test('a network without verification support is accepted without asking', async () => {
    const merchant = await merchantWithVerification(false);
    const phone = uniqueNumber('+256701'); // Airtel Uganda: no verification
    expect(await paymentResult(await requestPayment(merchant, phone))).toMatchObject({
      outcome: 'accepted',
      decidedBy: 'not-asked',
    });
    expect(asked.some((body) => body.phonenumber === phone)).toBe(false);
  });
});

describe('exactly once', () => {
  test('the same remote transaction reported twice gives one collection, one credit, one event', async () => {
    const merchant = await merchantWithVerification(true);
    const phone = nextNumber();
    // Nobody is prompted, so the only payment is the one this test reports (twice).
    const requestId = await requestPayment(merchant, phone, '75', false);
    const before = await balance(merchant.organization.id);
    const payment = {
      network: 'MTN Uganda',
      remoteTransactionId: `DUP-${requestId}`,
      phoneNumber: phone,
      amount: '75',
      currency: 'BXC',
      reference: 'x',
      paymentDate: new Date().toISOString(),
    };
    const first = await ctx.launcher.startIncomingCollection(payment);
    const second = await ctx.launcher.startIncomingCollection(payment);
    expect(first.duplicate).toBe(false);
    expect(second).toEqual({ workflowId: first.workflowId, duplicate: true });
    await ctx.client.workflow.getHandle(first.workflowId).result();
    const rows = await testSql()`select id from collections where remote_transaction_id = ${`DUP-${requestId}`}`;
    expect(rows).toHaveLength(1);
    expect(Number(await balance(merchant.organization.id)) - Number(before)).toBe(75);
    expect(await eventCount(merchant.organization.id, 'collection.received')).toBe(1);
    await ctx.client.workflow.getHandle(collectionRequestWorkflowId(asId('CollectionRequest', requestId))).result();
    expect((await merchant.request(`/api/collectionrequests/${requestId}`)).body).toMatchObject({
      status: 'successful',
      collection: rows[0]!.id,
    });
  });

  test('killing the worker during verification still gives one collection, one credit, one event of each kind', async () => {
    const crashQueue = uniqueTaskQueue('collections-crash');
    const first = await startWorker(crashQueue, WORKER_ENV);
    const merchant = await merchantWithVerification(false);
    const phone = nextNumber();
    modes.set(phone, 'slow-accept');
    const crashCtx = await testApp(crashQueue, WORKER_ENV);
    // Read before the request exists: the sandbox may pay (and the credit land) soon after it does.
    const before = await balance(merchant.organization.id);
    const response = await requester(crashCtx.app, merchant.apiKey)('/api/collectionrequests', {
      form: { phonenumber: phone, amount: '40', currency: 'BXC', send_instructions: 'true', expiry_date: '2 minutes' },
    });
    const requestId = response.body.id as number;
    await eventually(
      'verification to be under way',
      async () => asked.some((body) => body.phonenumber === phone),
      20_000,
    );
    await first.kill();
    const second = await startWorker(crashQueue, WORKER_ENV);
    try {
      await ctx.client.workflow.getHandle(collectionRequestWorkflowId(asId('CollectionRequest', requestId))).result();
      const result = await paymentResult(requestId);
      expect(result.outcome).toBe('accepted');
      expect(
        await testSql()`select id from collections where remote_transaction_id = ${`SBX-${requestId}`}`,
      ).toHaveLength(1);
      expect(Number(await balance(merchant.organization.id)) - Number(before)).toBe(40);
      const [credits] = await testSql()<
        { n: number }[]
      >`select count(*)::int as n from transactions where collection_id = ${result.collectionId}`;
      expect(credits!.n).toBe(1);
      expect(await eventCount(merchant.organization.id, 'collection.received')).toBe(1);
      const successes = await testSql()`select id from events where type = 'collectionrequest.status.changed'
        and (data->>'id')::bigint = ${requestId} and data->>'status' = 'successful'`;
      expect(successes).toHaveLength(1);
    } finally {
      await second.stop();
    }
  }, 120_000);
});

describe('a credit no retry can fix', () => {
  test('a wallet sum that would leave its column ends the collection failed, uncredited, instead of retrying forever', async () => {
    const merchant = await merchantWithVerification(true);
    const phone = nextNumber();
    const requestId = await requestPayment(merchant, phone, '500', false);
    // A wallet already at the column's edge: the credit is a numeric overflow, which no retry fixes.
    await testSql()`update accounts set balance = 9999999999999999 where organization_id = ${merchant.organization.id}`;
    const started = await ctx.launcher.startIncomingCollection({
      network: 'MTN Uganda',
      remoteTransactionId: `OVERFLOW-${requestId}`,
      phoneNumber: phone,
      amount: '500',
      currency: 'BXC',
      reference: 'x',
      paymentDate: new Date().toISOString(),
    });
    const result = await ctx.client.workflow.getHandle(started.workflowId).result();
    expect(result).toMatchObject({ outcome: 'failed', requestId });
    const [collection] = await testSql()<{ status: string; reason: string; credits: number }[]>`
      select c.status, c.rejection_reason as reason, (select count(*)::int from transactions t where t.collection_id = c.id) as credits
      from collections c where c.remote_transaction_id = ${`OVERFLOW-${requestId}`}`;
    expect(collection).toMatchObject({ status: 'failed', credits: 0 });
    expect(collection!.reason).toContain('numeric field overflow');
    expect(await balance(merchant.organization.id)).toBe('9999999999999999.0000');
    const [request] = await testSql()<
      { collectionId: number | null }[]
    >`select collection_id as "collectionId" from collection_requests where id = ${requestId}`;
    expect(request!.collectionId).toBeNull();
  });
});

describe('claims', () => {
  let claimer: TestMerchant;
  let rival: TestMerchant;

  beforeAll(async () => {
    claimer = await createMerchant(ctx.app);
    rival = await createMerchant(ctx.app);
  });

  async function unmatched(
    remoteTransactionId: string,
    phone: string,
    amount = '33',
    network = 'MTN Uganda',
  ): Promise<number> {
    const started = await ctx.launcher.startIncomingCollection({
      network,
      remoteTransactionId,
      phoneNumber: phone,
      amount,
      currency: 'BXC',
      reference: 'walk-in',
      paymentDate: new Date().toISOString(),
    });
    const result = await ctx.client.workflow.getHandle(started.workflowId).result();
    expect(result.outcome).toBe('unmatched');
    return result.collectionId;
  }

  test('rule 1: claim needs amount, remote_transaction_id and phonenumber', async () => {
    const response = await claimer.request('/api/collections?claim=True&amount=33');
    expect(response.status).toBe(400);
    expect(Object.keys(response.body).sort()).toEqual(['phonenumber', 'remote_transaction_id']);
  });

  test('rules 2 and 4: an exact match (+ added) is assigned and credited, answered as a list; a partial number finds nothing', async () => {
    const phone = nextNumber();
    const id = await unmatched('CLAIM-1', phone);
    expect((await claimer.request(`/api/collections/${id}`)).status).toBe(404);
    const partial = await claimer.request(
      `/api/collections?claim=true&amount=33&remote_transaction_id=CLAIM-1&phonenumber=${phone.slice(1, -2)}`,
    );
    expect(partial.body).toEqual([]);
    const before = await balance(claimer.organization.id);
    const claimed = await claimer.request(
      `/api/collections?claim=True&amount=33&remote_transaction_id=CLAIM-1&phonenumber=${phone.slice(1)}`,
    );
    expect(claimed.status).toBe(200);
    expect(Array.isArray(claimed.body)).toBe(true);
    expect(claimed.body).toHaveLength(1);
    expect(claimed.body[0]).toMatchObject({
      id,
      organization: claimer.organization.id,
      status: 'successful',
      collection_request: null,
    });
    expect(Number(await balance(claimer.organization.id)) - Number(before)).toBe(33);
    const again = await claimer.request(
      `/api/collections?claim=1&amount=33&remote_transaction_id=CLAIM-1&phonenumber=${encodeURIComponent(phone)}`,
    );
    expect(again.body.map((collection: { id: number }) => collection.id)).toEqual([id]);
    expect(Number(await balance(claimer.organization.id)) - Number(before)).toBe(33);
    expect(
      (
        await rival.request(
          `/api/collections?claim=1&amount=33&remote_transaction_id=CLAIM-1&phonenumber=${encodeURIComponent(phone)}`,
        )
      ).body,
    ).toEqual([]);
    expect((await rival.request(`/api/collections/${id}`)).status).toBe(403);
  });

  test('a present but empty parameter is sent: the search runs and finds nothing (an empty list)', async () => {
    const phone = nextNumber();
    await unmatched('CLAIM-EMPTY', phone, '12');
    for (const query of [
      `amount=12&remote_transaction_id=&phonenumber=${encodeURIComponent(phone)}`,
      `amount=12&remote_transaction_id=CLAIM-EMPTY&phonenumber=`,
    ]) {
      const response = await claimer.request(`/api/collections?claim=True&${query}`);
      expect({ query, status: response.status, body: response.body }).toEqual({ query, status: 200, body: [] });
    }
    const missing = await claimer.request(
      `/api/collections?claim=True&amount=12&phonenumber=${encodeURIComponent(phone)}`,
    );
    expect(missing.status).toBe(400);
    expect(Object.keys(missing.body)).toEqual(['remote_transaction_id']);
  });

  test('rule 3: more than one match fails', async () => {
    const phone = nextNumber();
    await unmatched('CLAIM-2', phone, '10', 'MTN Uganda');
    await unmatched('CLAIM-2', phone, '10', 'Airtel Uganda');
    const response = await claimer.request(
      `/api/collections?claim=True&amount=10&remote_transaction_id=CLAIM-2&phonenumber=${encodeURIComponent(phone)}`,
    );
    expect(response.status).toBe(400);
    expect(response.body.detail).toContain('More than one collection');
  });

  test('two concurrent claims of one collection credit it once', async () => {
    const phone = nextNumber();
    const id = await unmatched('CLAIM-3', phone, '21');
    const query = `/api/collections?claim=True&amount=21&remote_transaction_id=CLAIM-3&phonenumber=${encodeURIComponent(phone)}`;
    const [a, b] = await Promise.all([claimer.request(query), rival.request(query)]);
    const winners = [a, b].filter((response) => response.body.length === 1);
    expect(winners).toHaveLength(1);
    const [credits] = await testSql()<
      { n: number }[]
    >`select count(*)::int as n from transactions where collection_id = ${id}`;
    expect(credits!.n).toBe(1);
  });
});

describe('GET /api/collections', () => {
  test("lists the organization's collections with filters; read only", async () => {
    const merchant = await merchantWithVerification(true);
    const phone = nextNumber();
    const requestId = await requestPayment(merchant, phone, '61');
    const { collectionId } = await paymentResult(requestId);
    await ctx.client.workflow.getHandle(collectionRequestWorkflowId(asId('CollectionRequest', requestId))).result();
    const all = await merchant.request('/api/collections');
    expect(all.body.count).toBe(1);
    for (const query of [
      'amount=61',
      'currency=BXC',
      `phonenumber=${phone.slice(1)}`,
      'status=successful',
      'network=mtn uganda',
      'contact_first_name=Pat',
      'contact_last_name=Payer',
      `remote_transaction_id=SBX-${requestId}`,
      `reference=${encodeURIComponent(merchant.organization.name)}`,
    ]) {
      const response = await merchant.request(`/api/collections?${query}`);
      expect({ query, ids: response.body.results.map((c: { id: number }) => c.id) }).toEqual({
        query,
        ids: [collectionId],
      });
    }
    for (const query of ['amount=62', 'status=failed', 'network=Safaricom', 'contact_first_name=Sam']) {
      expect((await merchant.request(`/api/collections?${query}`)).body.count).toBe(0);
    }
    expect((await merchant.request('/api/collections?status=lost')).status).toBe(400);
    const v2 = await merchant.request(`/api/collections/${collectionId}`, { headers: { 'Api-Version': 'v2' } });
    expect(v2.body.collection_request).toBe(requestId);
    expect(v2.body.transaction).toBeUndefined();
    const post = await merchant.request('/api/collections', { body: { amount: 1 } });
    expect(post.status).toBe(405);
  });
});

describe('the network callback route', () => {
  test("needs the network's secret; a repeat is a no-op", async () => {
    const created = spawnSync(
      process.execPath,
      ['src/admin.ts', 'network', 'secret', 'create', '--network', 'Safaricom', '--json'],
      { cwd: ROOT, env: process.env, encoding: 'utf8' },
    );
    const { secret } = JSON.parse(created.stdout) as { secret: string };
    const network = requester(ctx.app, null);
    const report = {
      network: 'Safaricom',
      remote_transaction_id: 'MPESA-777',
      phonenumber: '+254712000777',
      amount: '99',
      currency: 'KES',
      reference: 'INV 9',
    };
    const denied = await network('/network/payments', { body: report, headers: { Authorization: 'Bearer wrong' } });
    expect(denied.status).toBe(401);
    const accepted = await network('/network/payments', {
      body: report,
      headers: { Authorization: `Bearer ${secret}` },
    });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toEqual({ status: 'accepted', workflow_id: 'collection-safaricom-MPESA-777' });
    const repeated = await network('/network/payments', {
      body: report,
      headers: { Authorization: `Bearer ${secret}` },
    });
    expect(repeated.body.status).toBe('duplicate');
    const invalid = await network('/network/payments', {
      body: { ...report, amount: '-1' },
      headers: { Authorization: `Bearer ${secret}` },
    });
    expect(invalid.status).toBe(400);
    // No open request looks like it: stored unassigned, for its merchant to claim.
    expect(await ctx.client.workflow.getHandle('collection-safaricom-MPESA-777').result()).toMatchObject({
      outcome: 'unmatched',
    });
    expect(await testSql()`select id from collections where remote_transaction_id = 'MPESA-777'`).toHaveLength(1);
    await recordHistory(ctx.client, 'collection-safaricom-MPESA-777', 'incoming-collection-unmatched');
  });

  test('a network reports its own currency from its own numbers; credentials are checked before the body', async () => {
    const mtn = networkSecret('MTN Uganda');
    const network = requester(ctx.app, null);
    const send = (body: Record<string, unknown>, secret = mtn) =>
      network('/network/payments', { body, headers: { Authorization: `Bearer ${secret}` } });
    const report = {
      network: 'MTN Uganda',
      remote_transaction_id: 'MTN-CUR-1',
      phonenumber: nextNumber(),
      amount: '500',
      currency: 'UGX',
    };
    // A Kenyan payment in KES reported with MTN Uganda's secret (it was credited once).
    const kenyan = await send({ ...report, phonenumber: '+254712000901', currency: 'KES' });
    expect(kenyan.status).toBe(400);
    expect(kenyan.body.currency).toEqual(['MTN Uganda reports payments in UGX only.']);
    const wrongNumber = await send({ ...report, phonenumber: '+254712000901' });
    expect(wrongNumber.body).toEqual({ phonenumber: ['This number is not on MTN Uganda.'] });
    expect((await send({ ...report, phonenumber: '+256701000901' })).status).toBe(400);
    expect((await send({ ...report, currency: 'BXC' })).status).toBe(400);
    // Another network's name in the body, or no valid secret: 401 before the body is judged.
    expect((await send({ ...report, network: 'Safaricom' })).status).toBe(401);
    expect((await send({ nonsense: true }, 'not-a-secret')).status).toBe(401);
    expect((await network('/network/payments', { body: { nonsense: true } })).status).toBe(401);
    expect((await send({ nonsense: true })).status).toBe(400);
    expect(await testSql()`select id from collections where remote_transaction_id = 'MTN-CUR-1'`).toHaveLength(0);
    const accepted = await send(report);
    expect(accepted.status).toBe(202);
    await ctx.client.workflow.getHandle(accepted.body.workflow_id).result();
    const [stored] = await testSql()<
      { network: string; currency: string }[]
    >`select network, currency from collections where remote_transaction_id = 'MTN-CUR-1'`;
    expect(stored).toEqual({ network: 'MTN Uganda', currency: 'UGX' });
  });

  test('the sandbox reports BXC, and real currencies only for the networks it simulates in sandbox mode', async () => {
    const sandbox = networkSecret('Sandbox');
    const send = (app: TestApp['app'], body: Record<string, unknown>) =>
      requester(app, null)('/network/payments', {
        body: { network: 'Sandbox', ...body },
        headers: { Authorization: `Bearer ${sandbox}` },
      });
    const bxc = await send(ctx.app, {
      remote_transaction_id: 'SBX-CUR-1',
      phonenumber: '+80000000057',
      amount: '5',
      currency: 'BXC',
    });
    expect(bxc.status).toBe(202);
    // A sandbox test number never pays in a real currency.
    expect(
      (
        await send(ctx.app, {
          remote_transaction_id: 'SBX-CUR-2',
          phonenumber: '+80000000057',
          amount: '5',
          currency: 'KES',
        })
      ).status,
    ).toBe(400);
    // In sandbox mode the sandbox simulates MTN Uganda: a UGX payment from its number is recorded on that network.
    const simulated = await send(ctx.app, {
      remote_transaction_id: 'SBX-CUR-3',
      phonenumber: nextNumber(),
      amount: '5',
      currency: 'UGX',
    });
    expect(simulated.status).toBe(202);
    expect(simulated.body.workflow_id).toBe(incomingCollectionWorkflowId('MTN Uganda', 'SBX-CUR-3'));
    expect(
      (
        await send(ctx.app, {
          remote_transaction_id: 'SBX-CUR-4',
          phonenumber: '+254712000902',
          amount: '5',
          currency: 'UGX',
        })
      ).status,
    ).toBe(400);
    // Outside sandbox mode the sandbox reports no real currency, and no test number.
    const live = await testApp(taskQueue, {
      ...WORKER_ENV,
      WEBHOOK_CA_FILE: '',
      SANDBOX: 'false',
      PUBLIC_BASE_URL: 'https://collections.example',
      METRICS_TOKEN: LIVE_METRICS_TOKEN,
    });
    const refused = await send(live.app, {
      remote_transaction_id: 'SBX-CUR-5',
      phonenumber: nextNumber(),
      amount: '5',
      currency: 'UGX',
    });
    expect(refused.status).toBe(400);
    expect(refused.body.currency[0]).toContain('MTN Uganda is not connected to this service');
    expect(
      (
        await send(live.app, {
          remote_transaction_id: 'SBX-CUR-6',
          phonenumber: '+80000000057',
          amount: '5',
          currency: 'BXC',
        })
      ).status,
    ).toBe(400);
    await ctx.client.workflow.getHandle(bxc.body.workflow_id).result();
    await ctx.client.workflow.getHandle(simulated.body.workflow_id).result();
  });
});

describe("the console's sandbox page", () => {
  test("completes the signed-in organization's requests only; a look-alike of another organization stays untouched", async () => {
    const owner = await createMerchant(ctx.app);
    const stranger = await createMerchant(ctx.app);
    const phone = nextNumber();
    const ownersRequest = await requestPayment(owner, phone, '44', false);
    const user = await consoleUser(stranger.organization.id);
    const browser = new ConsoleClient(ctx.app);
    expect((await browser.signIn(user.email, PASSWORD)).status).toBe(303);
    const page = await browser.get('/console/sandbox');
    expect(page.text).toContain('only your own');
    const paid = await browser.post('/console/sandbox/payments', {
      phonenumber: phone,
      amount: '44',
      currency: 'BXC',
      reference: 'not yours',
    });
    expect(paid.status).toBe(200);
    const workflowId = /\(workflow ([^)]+)\)/.exec(paid.text)![1]!;
    const result = await ctx.client.workflow.getHandle(workflowId).result();
    expect(result.outcome).toBe('unmatched');
    expect((await owner.request(`/api/collectionrequests/${ownersRequest}`)).body.status).not.toBe('successful');
    // The owner's own page completes the owner's request.
    const ownerUser = await consoleUser(owner.organization.id);
    const ownerBrowser = new ConsoleClient(ctx.app);
    expect((await ownerBrowser.signIn(ownerUser.email, PASSWORD)).status).toBe(303);
    await ownerBrowser.get('/console/sandbox');
    const own = await ownerBrowser.post('/console/sandbox/payments', {
      phonenumber: phone,
      amount: '44',
      currency: 'BXC',
    });
    const ownResult = await ctx.client.workflow.getHandle(/\(workflow ([^)]+)\)/.exec(own.text)![1]!).result();
    expect(ownResult).toMatchObject({ outcome: 'accepted', requestId: ownersRequest });
  });
});
