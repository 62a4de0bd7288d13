/**
 * Both Prometheus endpoints around real work: the app's `/metrics` and the real worker process's
 * metrics port, scraped before and after a full lifecycle (request → sandbox payment → the
 * merchant's verification → credit → a webhook that succeeds at its second attempt), and around
 * throttled, duplicate and unknown requests. Every counter and histogram must move by exactly
 * what happened.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { networkInterfaces } from 'node:os';
import { freePort } from '../../scripts/infra.mjs';
import { insertCollectionRequest } from '../../src/services/collections/request-creation';
import { updateCollectionSettings } from '../../src/services/merchants/organizations';
import { collectionRequestWorkflowId } from '../../src/contracts/collection-request';
import {
  LIVE_METRICS_TOKEN,
  awayFromWindowEdge,
  createMerchant,
  eventually,
  startWorker,
  testApp,
  testSql,
  uniqueNumber,
  uniqueTaskQueue,
  type TestApp,
  type WorkerProcess,
} from '../helpers';
import { parseScrape, type Scrape } from '../metrics';
import { makeCertificate, startReceiver, type Receiver } from '../webhook-receiver';

const taskQueue = uniqueTaskQueue('metrics');
let hooks: Receiver;
let verifier: ReturnType<typeof Bun.serve>;
let worker: WorkerProcess;
let workerMetricsPort: number;
let ctx: TestApp;

beforeAll(async () => {
  const certificate = makeCertificate();
  hooks = await startReceiver(certificate);
  verifier = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const body = (await request.json()) as { remote_transaction_id: string };
      return new Response(`ACCEPT ${body.remote_transaction_id}`);
    },
  });
  workerMetricsPort = (await freePort()) as number;
  worker = await startWorker(taskQueue, {
    WORKER_METRICS_PORT: String(workerMetricsPort),
    SANDBOX_PAYMENT_DELAY_SECONDS: '1',
    VERIFICATION_TIMEOUT_SECONDS: '5',
    WEBHOOK_CA_FILE: certificate.certFile,
    WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms',
  });
  ctx = await testApp(taskQueue);
});

afterAll(async () => {
  await worker?.stop();
  verifier?.stop(true);
  await hooks?.close();
});

async function scrapeApi(app = ctx.app): Promise<Scrape> {
  const response = await app.handle(new Request('http://localhost/metrics'));
  expect(response.status).toBe(200);
  return parseScrape(await response.text());
}

async function scrapeWorker(): Promise<Scrape> {
  const response = await fetch(`http://127.0.0.1:${workerMetricsPort}/metrics`);
  expect(response.status).toBe(200);
  return parseScrape(await response.text());
}

/** How much each named series moved between two scrapes. */
function moved(
  before: Scrape,
  after: Scrape,
  series: [name: string, labels?: Record<string, string>][],
): Record<string, number> {
  return Object.fromEntries(
    series.map(([name, labels = {}]) => [
      `${name}${JSON.stringify(labels)}`,
      after.value(name, labels) - before.value(name, labels),
    ]),
  );
}

const http = (route: string, method: string, status: number) =>
  ['http_request_duration_seconds_count', { route, method, status: String(status) }] as [
    string,
    Record<string, string>,
  ];

describe('the endpoints', () => {
  test('/metrics of the API and of the worker: Prometheus text, no key, past the JSON-only Accept rule', async () => {
    const response = await ctx.app.handle(
      new Request('http://localhost/metrics', { headers: { Accept: 'text/plain' } }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toStartWith('text/plain; version=0.0.4');
    const api = parseScrape(await response.text());
    expect(api.text).toContain('# TYPE http_request_duration_seconds histogram');
    expect(api.text).not.toContain('webhook_deliveries_total');

    const worker = await scrapeWorker();
    expect(worker.text).toContain('# TYPE webhook_deliveries_total counter');
    expect(worker.text).toContain('# TYPE outbox_backlog gauge');
    expect(worker.text).not.toContain('http_request_duration_seconds');
    // The Temporal SDK's own worker metrics, for this worker's task queue (its pollers count once their polls are out).
    await eventually(
      "the SDK to count the worker's pollers",
      async () => (await scrapeWorker()).value('temporal_num_pollers', { task_queue: taskQueue }) > 0,
    );
    expect((await fetch(`http://127.0.0.1:${workerMetricsPort}/`)).status).toBe(404);
  });

  test("METRICS_TOKEN: both endpoints want Authorization: Bearer <token>; the worker's listens on loopback only by default", async () => {
    const token = `scrape-${crypto.randomUUID()}`;
    const { app } = await testApp(taskQueue, { METRICS_TOKEN: token });
    const apiScrape = (authorization?: string) =>
      app.handle(
        new Request('http://localhost/metrics', { headers: authorization ? { Authorization: authorization } : {} }),
      );
    const refused = await apiScrape();
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer');
    expect((await apiScrape('Bearer wrong-token-of-some-length')).status).toBe(401);
    expect((await apiScrape(`Token ${token}`)).status).toBe(401);
    expect((await apiScrape(`Bearer ${token}`)).status).toBe(200);

    const port = (await freePort()) as number;
    const guarded = await startWorker(uniqueTaskQueue('metrics-token'), {
      WORKER_METRICS_PORT: String(port),
      METRICS_TOKEN: token,
    });
    try {
      const workerScrape = (authorization?: string) =>
        fetch(`http://127.0.0.1:${port}/metrics`, { headers: authorization ? { Authorization: authorization } : {} });
      expect((await workerScrape()).status).toBe(401);
      expect((await workerScrape('Bearer wrong-token-of-some-length')).status).toBe(401);
      const scraped = await workerScrape(`Bearer ${token}`);
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toContain('# TYPE webhook_deliveries_total counter');
      // Not reachable on the machine's other addresses: it is bound to loopback.
      const outside = Object.values(networkInterfaces())
        .flat()
        .filter((address) => address && !address.internal && address.family === 'IPv4');
      for (const address of outside) {
        const reached = await fetch(`http://${address!.address}:${port}/metrics`, {
          headers: { Authorization: `Bearer ${token}` },
        }).then(
          () => true,
          () => false,
        );
        expect({ address: address!.address, reached }).toEqual({ address: address!.address, reached: false });
      }
    } finally {
      await guarded.stop();
    }
  });

  test("outside sandbox mode neither process starts without METRICS_TOKEN, and the API's /metrics wants it", async () => {
    const live = { SANDBOX: 'false', PUBLIC_BASE_URL: 'https://collections.example' };
    await expect(testApp(taskQueue, live)).rejects.toThrow(/METRICS_TOKEN: required when SANDBOX=false/);
    await expect(startWorker(uniqueTaskQueue('metrics-live'), live)).rejects.toThrow(
      /METRICS_TOKEN: required when SANDBOX=false/,
    );
    const { app } = await testApp(taskQueue, { ...live, METRICS_TOKEN: LIVE_METRICS_TOKEN });
    const scrape = (headers: Record<string, string> = {}) =>
      app.handle(new Request('http://localhost/metrics', { headers }));
    expect((await scrape()).status).toBe(401);
    const scraped = await scrape({ Authorization: `Bearer ${LIVE_METRICS_TOKEN}` });
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain('wallet_movement_amount_total');
  });

  test('METRICS=false: the API has no /metrics and records nothing', async () => {
    const before = await scrapeApi();
    const { app } = await testApp(taskQueue, { METRICS: 'false' });
    expect((await app.handle(new Request('http://localhost/metrics'))).status).toBe(404);
    expect((await app.handle(new Request('http://localhost/livez'))).status).toBe(200);
    const after = await scrapeApi();
    expect(moved(before, after, [http('/livez', 'GET', 200), http('/metrics', 'GET', 404)])).toEqual({
      [`http_request_duration_seconds_count${JSON.stringify({ route: '/livez', method: 'GET', status: '200' })}`]: 0,
      [`http_request_duration_seconds_count${JSON.stringify({ route: '/metrics', method: 'GET', status: '404' })}`]: 0,
    });
  });
});

describe('the API', () => {
  test('requests by route template, method and status; throttled, duplicate, versioned and unknown requests', async () => {
    const limited = await createMerchant(ctx.app, 'Metrics Throttled', { throttle: { reads: 2, writes: 1000 } });
    const merchant = await createMerchant(ctx.app);
    const before = await scrapeApi();
    await awayFromWindowEdge(ctx.config.throttle.windowSeconds, 5000);
    expect((await limited.request('/api/contacts')).status).toBe(200);
    // Under a version prefix: one request, measured as the route it reaches.
    expect((await limited.request('/api/v3/contacts')).status).toBe(200);
    expect((await limited.request('/api/contacts')).status).toBe(429);
    const contact = {
      form: { phone_number: '+256772300001', first_name: 'Count', last_name: 'Me' },
      headers: { 'Duplicate-Check-Key': 'metrics-once' },
    };
    expect((await merchant.request('/api/contacts', contact)).status).toBe(201);
    expect((await merchant.request('/api/contacts', contact)).status).toBe(409);
    expect((await merchant.request('/api/contacts/123456789')).status).toBe(404);
    expect((await merchant.request('/no/such/path')).status).toBe(404);
    const after = await scrapeApi();

    expect(
      moved(before, after, [
        http('/api/contacts', 'GET', 200),
        http('/api/contacts', 'GET', 429),
        http('/api/contacts', 'POST', 201),
        http('/api/contacts', 'POST', 409),
        http('/api/contacts/:id', 'GET', 404),
        http('unmatched', 'GET', 404),
        ['requests_throttled_total', { kind: 'read' }],
        ['requests_throttled_total', { kind: 'write' }],
        ['duplicate_requests_total'],
      ]),
    ).toEqual({
      'http_request_duration_seconds_count{"route":"/api/contacts","method":"GET","status":"200"}': 2,
      'http_request_duration_seconds_count{"route":"/api/contacts","method":"GET","status":"429"}': 1,
      'http_request_duration_seconds_count{"route":"/api/contacts","method":"POST","status":"201"}': 1,
      'http_request_duration_seconds_count{"route":"/api/contacts","method":"POST","status":"409"}': 1,
      'http_request_duration_seconds_count{"route":"/api/contacts/:id","method":"GET","status":"404"}': 1,
      'http_request_duration_seconds_count{"route":"unmatched","method":"GET","status":"404"}': 1,
      'requests_throttled_total{"kind":"read"}': 1,
      'requests_throttled_total{"kind":"write"}': 0,
      'duplicate_requests_total{}': 1,
    });
    // Durations are observed, not counted only: the sum moved, and every request fits the largest finite bucket.
    const sum =
      after.value('http_request_duration_seconds_sum', { route: '/api/contacts' }) -
      before.value('http_request_duration_seconds_sum', { route: '/api/contacts' });
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(10);
    expect(
      after.value('http_request_duration_seconds_bucket', {
        route: '/api/contacts',
        method: 'GET',
        status: '200',
        le: '10',
      }) -
        before.value('http_request_duration_seconds_bucket', {
          route: '/api/contacts',
          method: 'GET',
          status: '200',
          le: '10',
        }),
    ).toBe(2);
  });
});

describe('the worker', () => {
  test('outbox gauges: rows waiting to be handed to Temporal, and the age of the oldest', async () => {
    const merchant = await createMerchant(ctx.app);
    // Requests committed but never handed to Temporal (the API "died" after the commit; this worker runs no outbox sweep).
    const requests = await Promise.all(
      [1, 2, 3].map(
        async () =>
          (
            await insertCollectionRequest(testSql(), {
              organizationId: merchant.organization.id,
              author: merchant.user.id,
              phoneNumber: uniqueNumber('+256772'),
              network: 'MTN Uganda',
              amount: '10',
              currency: 'BXC',
              accountId: null,
              firstName: null,
              lastName: null,
              reason: 'gauges',
              metadata: null,
              successMessage: null,
              sendInstructions: false,
              instructions: null,
              expiresAt: new Date(Date.now() + 60_000),
              startAt: null,
              retryIntervalSeconds: null,
              maxAttempts: 0,
              subscriptionSettings: null,
            })
          ).request.id,
      ),
    );
    await testSql()`update collection_requests set created = timestamptz '2001-01-01T00:00:00Z', workflow_started_at = null where id in ${testSql()(requests)}`;
    try {
      const after = await scrapeWorker();
      // The gauge counts the whole table: a file running beside this one may hand one of its own rows
      // to Temporal between the two scrapes, so ours are at least counted, never fewer.
      expect(after.value('outbox_backlog', { kind: 'collection_requests' })).toBeGreaterThanOrEqual(3);
      const expectedAge = (Date.now() - Date.parse('2001-01-01T00:00:00Z')) / 1000;
      expect(
        Math.abs(after.value('outbox_oldest_age_seconds', { kind: 'collection_requests' }) - expectedAge),
      ).toBeLessThan(60);
      // The four outbox kinds, and nothing else (webhook deliveries go to the dispatch pool as they are recorded).
      for (const kind of ['collection_requests', 'payments', 'reversals', 'payment_batches'])
        expect(after.text).toContain(`outbox_backlog{kind="${kind}"}`);
      expect(after.text).not.toContain('outbox_backlog{kind="webhook_deliveries"}');
      expect(after.text).not.toContain('outbox_backlog{kind="events"}');
    } finally {
      await testSql()`update collection_requests set workflow_started_at = now() where id in ${testSql()(requests)}`;
    }
    // Ours handed over, the oldest waiting row is no longer one of 2001 (a whole-table count could move by another file's rows).
    const cleared = await scrapeWorker();
    expect(cleared.value('outbox_oldest_age_seconds', { kind: 'collection_requests' })).toBeLessThan(
      (Date.now() - Date.parse('2001-01-01T00:00:00Z')) / 1000 - 86_400,
    );
  });

  test('a full lifecycle: request → payment → match → verification → credit → successful → webhook (second attempt) moves each figure by one', async () => {
    const merchant = await createMerchant(ctx.app);
    await updateCollectionSettings(
      testSql(),
      { organizationId: merchant.organization.id },
      { verificationUrl: `http://127.0.0.1:${verifier.port}/verify`, acceptByDefault: false },
    );
    const hookPath = '/hooks/metrics';
    hooks.script(hookPath, [{ status: 500 }]);
    const apiBefore = await scrapeApi();
    const workerBefore = await scrapeWorker();

    const hook = await merchant.request('/api/webhooks', {
      form: { event: 'collection.received', target: hooks.url(hookPath) },
    });
    expect(hook.status).toBe(201);
    const created = await merchant.request('/api/collectionrequests', {
      form: {
        phonenumber: uniqueNumber('+256772'),
        amount: '300',
        currency: 'BXC',
        send_instructions: 'true',
        expiry_date: '1 minute',
        first_name: 'Met',
        last_name: 'Rics',
      },
    });
    expect(created.status).toBe(201);
    expect(await ctx.client.workflow.getHandle(collectionRequestWorkflowId(created.body.id)).result()).toMatchObject({
      status: 'successful',
    });
    const [event] = await eventually('the collection.received event', async () => {
      const rows = await testSql()<
        { id: number }[]
      >`select id from events where organization_id = ${merchant.organization.id} and type = 'collection.received'`;
      return rows.length > 0 ? rows : undefined;
    });
    const delivery = await eventually('the delivery to be delivered', async () => {
      const [row] = await testSql()<{ status: string; attempts: number }[]>`
        select d.status, (select count(*)::int from webhook_delivery_attempts a where a.delivery_id = d.id) as attempts
        from webhook_deliveries d where d.event_id = ${event!.id} and d.webhook_id = ${hook.body.id}`;
      return row?.status === 'delivered' ? row : undefined;
    });
    expect(delivery).toEqual({ status: 'delivered', attempts: 2 });
    expect(hooks.requests(hookPath)).toHaveLength(2);

    const apiAfter = await scrapeApi();
    expect(
      moved(apiBefore, apiAfter, [http('/api/webhooks', 'POST', 201), http('/api/collectionrequests', 'POST', 201)]),
    ).toEqual({
      'http_request_duration_seconds_count{"route":"/api/webhooks","method":"POST","status":"201"}': 1,
      'http_request_duration_seconds_count{"route":"/api/collectionrequests","method":"POST","status":"201"}': 1,
    });

    // The worker counts a delivery just after its row says delivered, and the SDK counts a completed
    // workflow on its own, not when the client hears of the completion: scrape once both have moved,
    // then compare every figure.
    const workerAfter = await eventually("the worker's figures of the lifecycle", async () => {
      const scrape = await scrapeWorker();
      const settled = moved(workerBefore, scrape, [
        ['webhook_deliveries_total', { outcome: 'delivered' }],
        ['temporal_workflow_completed', { task_queue: taskQueue, workflow_type: 'collectionRequest' }],
      ]);
      return Object.values(settled).every((change) => change >= 1) ? scrape : undefined;
    });
    expect(
      moved(workerBefore, workerAfter, [
        ['verification_answers_total', { outcome: 'accept' }],
        ['verification_answers_total', { outcome: 'default' }],
        ['verification_duration_seconds_count', { outcome: 'accept' }],
        ['webhook_deliveries_total', { outcome: 'delivered' }],
        ['webhook_deliveries_total', { outcome: 'failed' }],
        ['webhook_delivery_attempts_count', { outcome: 'delivered' }],
        ['webhook_delivery_attempts_sum', { outcome: 'delivered' }],
        ['webhook_delivery_attempts_bucket', { outcome: 'delivered', le: '1' }],
        ['webhook_delivery_attempts_bucket', { outcome: 'delivered', le: '2' }],
        ['webhook_time_to_delivery_seconds_count'],
        ['collection_requests_final_total', { status: 'successful' }],
        ['collections_matched_total', { outcome: 'prompt_reference' }],
        ['collections_matched_total', { outcome: 'unassigned' }],
        ['wallet_movements_total', { type: 'mobile_collection', direction: 'credit' }],
        ['wallet_movement_amount_total', { currency: 'BXC', direction: 'credit' }],
        ['temporal_workflow_completed', { task_queue: taskQueue, workflow_type: 'collectionRequest' }],
      ]),
    ).toEqual({
      'verification_answers_total{"outcome":"accept"}': 1,
      'verification_answers_total{"outcome":"default"}': 0,
      'verification_duration_seconds_count{"outcome":"accept"}': 1,
      'webhook_deliveries_total{"outcome":"delivered"}': 1,
      'webhook_deliveries_total{"outcome":"failed"}': 0,
      'webhook_delivery_attempts_count{"outcome":"delivered"}': 1,
      'webhook_delivery_attempts_sum{"outcome":"delivered"}': 2,
      'webhook_delivery_attempts_bucket{"outcome":"delivered","le":"1"}': 0,
      'webhook_delivery_attempts_bucket{"outcome":"delivered","le":"2"}': 1,
      'webhook_time_to_delivery_seconds_count{}': 1,
      'collection_requests_final_total{"status":"successful"}': 1,
      'collections_matched_total{"outcome":"prompt_reference"}': 1,
      'collections_matched_total{"outcome":"unassigned"}': 0,
      'wallet_movements_total{"type":"mobile_collection","direction":"credit"}': 1,
      'wallet_movement_amount_total{"currency":"BXC","direction":"credit"}': 300,
      [`temporal_workflow_completed${JSON.stringify({ task_queue: taskQueue, workflow_type: 'collectionRequest' })}`]: 1,
    });
    // Time to delivery runs from the event to the 2xx: after the first attempt's failure and the retry wait.
    const timeToDelivery =
      workerAfter.value('webhook_time_to_delivery_seconds_sum') -
      workerBefore.value('webhook_time_to_delivery_seconds_sum');
    expect(timeToDelivery).toBeGreaterThan(0.05);
    expect(timeToDelivery).toBeLessThan(30);
    const verification =
      workerAfter.value('verification_duration_seconds_sum', { outcome: 'accept' }) -
      workerBefore.value('verification_duration_seconds_sum', { outcome: 'accept' });
    expect(verification).toBeGreaterThan(0);
    expect(verification).toBeLessThan(5);
  }, 60_000);
});
