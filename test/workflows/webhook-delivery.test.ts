import { asId } from '../../src/domain/ids';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { WorkflowHandle } from '@temporalio/client';
import { createServer } from 'node:https';
import { Webhook } from 'standardwebhooks';
import {
  rotateSigningSecret,
  setBasicCredentials,
  showSigningSecret,
} from '../../src/services/webhooks/webhook-secrets';
import { webhookMessageId } from '../../src/domain/webhooks';
import { webhookDispatcherId } from '../../src/contracts/webhook-dispatcher';
import {
  createMerchant,
  eventually,
  numberSequence,
  recordHistory,
  startWorker,
  testApp,
  testClient,
  testSql,
  uniqueTaskQueue,
  type TestApp,
  type TestMerchant,
  type WorkerProcess,
} from '../helpers';
import { makeCertificate, startReceiver, type Certificate, type Receiver } from '../webhook-receiver';

/** Short, increasing waits: the production schedule's shape at test speed (the dev server fires timers at ~1 s granularity). */
const TEST_SCHEDULE_MS = [50, 100, 150, 200, 250, 300, 350, 400, 450];
const TEST_JITTER = 0.2;

let certificate: Certificate;
let receiver: Receiver;
let ctx: TestApp;
const workers: WorkerProcess[] = [];

function workerEnv(schedule: number[] = TEST_SCHEDULE_MS): Record<string, string> {
  return {
    WEBHOOK_CA_FILE: certificate.certFile,
    WEBHOOK_RETRY_SCHEDULE: schedule.map((ms) => `${ms}ms`).join(','),
    WEBHOOK_RETRY_JITTER: String(TEST_JITTER),
  };
}

beforeAll(async () => {
  certificate = makeCertificate();
  receiver = await startReceiver(certificate);
  const taskQueue = uniqueTaskQueue('webhooks');
  workers.push(await startWorker(taskQueue, workerEnv()));
  // The process that records an event starts its deliveries, with its own configuration's schedule.
  ctx = await testApp(taskQueue, workerEnv());
});

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  await receiver.close();
});

let pathCounter = 0;
const nextPath = (name: string) => `/hooks/${name}-${++pathCounter}`;
const nextNumber = numberSequence('+256772');

type Hook = { id: number; user: number; event: string; target: string; created: string; updated: string };

async function createHook(merchant: TestMerchant, target: string, event = 'contact.created'): Promise<Hook> {
  const response = await merchant.request('/api/webhooks', { form: { event, target } });
  expect(response.status).toBe(201);
  return response.body;
}

/** Creates a contact through the merchant's app: a `contact.created` event, dispatched to that app's task queue. */
async function createContact(merchant: TestMerchant): Promise<{ contact: Record<string, unknown>; eventId: number }> {
  const response = await merchant.request('/api/contacts', {
    form: { phone_number: nextNumber(), first_name: 'Hook', last_name: 'Test' },
  });
  expect(response.status).toBe(201);
  const [event] = await testSql()<{ id: number }[]>`
    select id from events where organization_id = ${merchant.organization.id} and (data->>'id')::bigint = ${response.body.id}`;
  return { contact: response.body, eventId: event!.id };
}

/** A dispatcher of the pool of the worker on `taskQueue`, once that worker started it. */
async function dispatcherHandle(taskQueue: string, slot = 0): Promise<WorkflowHandle> {
  const client = await testClient();
  const handle = client.workflow.getHandle(webhookDispatcherId(taskQueue, slot));
  await eventually('the dispatcher to start', async () =>
    handle.describe().then(
      (described) => described.status.name === 'RUNNING',
      () => false,
    ),
  );
  return handle;
}

/** Every workflow task of the histories of `handles` that failed or timed out. */
async function failedTasks(handles: readonly WorkflowHandle[]): Promise<number> {
  let failed = 0;
  for (const handle of handles) {
    const events = (await handle.fetchHistory()).events ?? [];
    failed += events.filter(
      (event) => event.workflowTaskFailedEventAttributes || event.workflowTaskTimedOutEventAttributes,
    ).length;
  }
  return failed;
}

/** Waits until the delivery of the event (its redelivery with `redelivery`) is final in the log: its outcome and the attempts made. */
async function deliveryResult(
  merchant: TestMerchant,
  webhookId: number,
  eventId: number,
  redelivery = false,
): Promise<{ outcome: string; attempts: number }> {
  return await eventually(
    'the delivery to be final',
    async () => {
      const delivery = (await attemptLog(merchant, webhookId, eventId)).find((row) => row.redelivery === redelivery);
      return delivery && delivery.status !== 'pending'
        ? { outcome: delivery.status, attempts: delivery.attempts.length }
        : undefined;
    },
    60_000,
  );
}

type LoggedAttempt = {
  attempt: number;
  time: string;
  outcome: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  response: string | null;
};

async function attemptLog(merchant: TestMerchant, webhookId: number, eventId: number) {
  const response = await merchant.request(`/api/webhooks/${webhookId}/deliveries?event=${eventId}`);
  expect(response.status).toBe(200);
  return response.body.results as { id: number; status: string; redelivery: boolean; attempts: LoggedAttempt[] }[];
}

/** The delivery's row as the queue holds it: the attempt it makes next, and whether a sender holds it now. */
async function queueRow(
  webhookId: number,
  eventId: number,
): Promise<{ nextAttempt: number; leased: boolean; status: string } | undefined> {
  const [row] = await testSql()<{ nextAttempt: number; leased: boolean; status: string }[]>`
    select next_attempt as "nextAttempt", coalesce(leased_until > now(), false) as leased, status
    from webhook_deliveries where webhook_id = ${webhookId} and event_id = ${eventId} and not redelivery`;
  return row;
}

async function signingSecret(merchant: TestMerchant): Promise<string> {
  return (await showSigningSecret(testSql(), { organizationId: merchant.organization.id })).signingSecret;
}

describe('webhook delivery', () => {
  test('delivered at the first attempt: {hook, data} JSON, signed per Standard Webhooks, no Authorization header', async () => {
    const merchant = await createMerchant(ctx.app);
    const path = nextPath('first');
    const hook = await createHook(merchant, receiver.url(path));
    const { contact, eventId } = await createContact(merchant);
    const result = await deliveryResult(merchant, hook.id, eventId);
    expect(result).toMatchObject({ outcome: 'delivered', attempts: 1 });

    const [request] = receiver.requests(path);
    expect(receiver.requests(path)).toHaveLength(1);
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers.authorization).toBeUndefined();
    expect(JSON.parse(request!.body)).toEqual({ hook, data: contact });
    // An independent implementation of the spec accepts the signature.
    const verified = new Webhook(await signingSecret(merchant)).verify(request!.body, request!.headers);
    expect(verified).toEqual({ hook, data: contact });
    expect(request!.headers['webhook-id']).toBe(`msg_${eventId}_${hook.id}`);
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(request!.body, request!.headers),
    ).toThrow();

    const [delivery] = await attemptLog(merchant, hook.id, eventId);
    expect(delivery).toMatchObject({ status: 'delivered', redelivery: false });
    expect(delivery!.attempts).toEqual([
      {
        attempt: 1,
        time: expect.any(String),
        duration_ms: expect.any(Number),
        outcome: 'delivered',
        status_code: 200,
        error: null,
        response: 'status 200',
      },
    ]);
  });

  test('500, then a redirect (3xx is not delivered), then 200: three attempts, one message id', async () => {
    const merchant = await createMerchant(ctx.app);
    const path = nextPath('retry');
    receiver.script(path, [{ status: 500, body: 'boom' }, { status: 302 }]);
    const hook = await createHook(merchant, receiver.url(path));
    const { eventId } = await createContact(merchant);
    expect(await deliveryResult(merchant, hook.id, eventId)).toMatchObject({ outcome: 'delivered', attempts: 3 });
    const requests = receiver.requests(path);
    expect(requests).toHaveLength(3);
    expect(new Set(requests.map((request) => request.headers['webhook-id'])).size).toBe(1);
    const secret = await signingSecret(merchant);
    for (const request of requests)
      expect(() => new Webhook(secret).verify(request.body, request.headers)).not.toThrow();
    const [delivery] = await attemptLog(merchant, hook.id, eventId);
    expect(
      delivery!.attempts.map((attempt) => [attempt.attempt, attempt.status_code, attempt.outcome, attempt.response]),
    ).toEqual([
      [1, 500, 'failed', 'boom'],
      [2, 302, 'failed', 'status 302'],
      [3, 200, 'delivered', 'status 200'],
    ]);
  });

  test('a receiver that answers after 5 s has timed out; the next attempt succeeds', async () => {
    const merchant = await createMerchant(ctx.app);
    const path = nextPath('slow');
    // Its answer comes well after the 5 s timeout, so a loaded machine's late timer still ends the attempt first.
    const answersAfterMs = 8000;
    receiver.script(path, [{ status: 200, delayMs: answersAfterMs }]);
    const hook = await createHook(merchant, receiver.url(path));
    const { eventId } = await createContact(merchant);
    expect(await deliveryResult(merchant, hook.id, eventId)).toMatchObject({ outcome: 'delivered', attempts: 2 });
    const [delivery] = await attemptLog(merchant, hook.id, eventId);
    const [first, second] = delivery!.attempts;
    expect(first).toMatchObject({
      attempt: 1,
      outcome: 'failed',
      status_code: null,
      error: 'timeout: no response within 5 s',
    });
    expect(first!.duration_ms).toBeGreaterThanOrEqual(5000);
    expect(first!.duration_ms).toBeLessThan(answersAfterMs);
    expect(second).toMatchObject({ attempt: 2, outcome: 'delivered', status_code: 200 });
  }, 30_000);

  test('10 failures: exactly 10 attempts on the increasing schedule, then given up', async () => {
    const merchant = await createMerchant(ctx.app);
    const path = nextPath('down');
    receiver.script(path, [], { status: 503 });
    const hook = await createHook(merchant, receiver.url(path));
    const { eventId } = await createContact(merchant);
    expect(await deliveryResult(merchant, hook.id, eventId)).toMatchObject({ outcome: 'failed', attempts: 10 });
    expect(receiver.requests(path)).toHaveLength(10);
    // The waits between attempts are the schedule, each drawn within ±jitter of its length: never sooner, and later
    // only by the sender's wake-up after it, which two test files at once on a loaded two-core machine have seen
    // delayed by 600 ms (far below the production schedule's shortest wait, 10 s).
    const WAKE_UP_MS = 1500;
    const attempts = await testSql()<{ startedAt: Date; durationMs: number }[]>`
      select a.started_at as "startedAt", a.duration_ms as "durationMs" from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id
      where d.webhook_id = ${hook.id} and d.event_id = ${eventId} order by a.attempt`;
    const waits = attempts
      .slice(1)
      .map(
        (attempt, index) =>
          attempt.startedAt.getTime() - attempts[index]!.startedAt.getTime() - attempts[index]!.durationMs,
      );
    expect(waits).toHaveLength(9);
    waits.forEach((waited, index) => {
      expect(waited).toBeGreaterThanOrEqual(Math.floor(TEST_SCHEDULE_MS[index]! * (1 - TEST_JITTER)) - 5);
      expect(waited).toBeLessThanOrEqual(Math.ceil(TEST_SCHEDULE_MS[index]! * (1 + TEST_JITTER)) + WAKE_UP_MS);
    });
    const [delivery] = await attemptLog(merchant, hook.id, eventId);
    expect(delivery!.status).toBe('failed');
    expect(delivery!.attempts.map((attempt) => attempt.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(delivery!.attempts.every((attempt) => attempt.status_code === 503)).toBe(true);
    // The webhook stays: only a 410 deletes it.
    expect((await merchant.request(`/api/webhooks/${hook.id}`)).status).toBe(200);
  });

  test('410: the webhook is deleted after one attempt and gets no further events', async () => {
    const merchant = await createMerchant(ctx.app);
    const path = nextPath('gone');
    receiver.script(path, [], { status: 410 });
    const hook = await createHook(merchant, receiver.url(path));
    const { eventId } = await createContact(merchant);
    expect(await deliveryResult(merchant, hook.id, eventId)).toMatchObject({ outcome: 'gone', attempts: 1 });
    expect(receiver.requests(path)).toHaveLength(1);
    expect((await merchant.request(`/api/webhooks/${hook.id}`)).status).toBe(404);
    const [delivery] = await attemptLog(merchant, hook.id, eventId);
    expect(delivery).toMatchObject({ status: 'gone', attempts: [{ attempt: 1, status_code: 410, outcome: 'gone' }] });

    // The hook is gone: the next event records no delivery for it.
    const next = await createContact(merchant);
    expect(await testSql()`select 1 from webhook_deliveries where event_id = ${next.eventId}`).toHaveLength(0);
    expect(receiver.requests(path)).toHaveLength(1);
  });

  test('Authorization: Basic is sent only while the organization has credentials', async () => {
    const merchant = await createMerchant(ctx.app);
    const path = nextPath('basic');
    const hook = await createHook(merchant, receiver.url(path));
    await setBasicCredentials(
      testSql(),
      { organizationId: merchant.organization.id },
      { username: 'acme', password: 'pa:ss wörd' },
    );
    const withCredentials = await createContact(merchant);
    await deliveryResult(merchant, hook.id, withCredentials.eventId);
    await setBasicCredentials(testSql(), { organizationId: merchant.organization.id }, null);
    const without = await createContact(merchant);
    await deliveryResult(merchant, hook.id, without.eventId);
    const [first, second] = receiver.requests(path);
    expect(first!.headers.authorization).toBe(`Basic ${Buffer.from('acme:pa:ss wörd').toString('base64')}`);
    expect(second!.headers.authorization).toBeUndefined();
  });

  test('after a secret rotation both secrets verify for the overlap', async () => {
    const merchant = await createMerchant(ctx.app);
    const path = nextPath('rotate');
    const hook = await createHook(merchant, receiver.url(path));
    const before = await signingSecret(merchant);
    const after = (await rotateSigningSecret(testSql(), { organizationId: merchant.organization.id })).signingSecret;
    expect(after).not.toBe(before);
    const { eventId } = await createContact(merchant);
    await deliveryResult(merchant, hook.id, eventId);
    const [request] = receiver.requests(path);
    expect(request!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const secret of [before, after])
      expect(() => new Webhook(secret).verify(request!.body, request!.headers)).not.toThrow();
  });

  test('every matching webhook gets its own delivery; other event types none', async () => {
    const merchant = await createMerchant(ctx.app);
    const [a, b, c] = [nextPath('fan-a'), nextPath('fan-b'), nextPath('fan-c')];
    const hookA = await createHook(merchant, receiver.url(a));
    const hookB = await createHook(merchant, receiver.url(b));
    await createHook(merchant, receiver.url(c), 'collection.received');
    const { eventId } = await createContact(merchant);
    await Promise.all([deliveryResult(merchant, hookA.id, eventId), deliveryResult(merchant, hookB.id, eventId)]);
    expect([receiver.requests(a).length, receiver.requests(b).length, receiver.requests(c).length]).toEqual([1, 1, 0]);
  });

  test("no workflow per webhook and no signal per event: the pool's dispatchers send every webhook, their histories a few events", async () => {
    const merchant = await createMerchant(ctx.app);
    const hook = await createHook(merchant, receiver.url(nextPath('pool')));
    const contacts = await Promise.all(Array.from({ length: 5 }, () => createContact(merchant)));
    for (const { eventId } of contacts)
      expect(await deliveryResult(merchant, hook.id, eventId)).toMatchObject({ outcome: 'delivered', attempts: 1 });
    const client = await testClient();
    const forWebhook = [];
    for await (const execution of client.workflow.list({ query: `OrganizationId = "${merchant.organization.id}"` }))
      forWebhook.push(execution);
    expect(forWebhook).toEqual([]);
    const dispatchers = [await dispatcherHandle(ctx.taskQueue, 0), await dispatcherHandle(ctx.taskQueue, 1)];
    for (const handle of dispatchers) {
      const events = (await handle.fetchHistory()).events ?? [];
      expect(events.filter((event) => event.workflowExecutionSignaledEventAttributes)).toHaveLength(0);
      expect(events.length).toBeLessThan(40);
    }
    // A dispatcher's history while it runs (its activity in flight): what the next change of its code must replay.
    await recordHistory(client, dispatchers[0]!.workflowId, 'webhook-dispatcher-running');
  });

  test('redelivery sends the same event again as a new delivery with its own log', async () => {
    const merchant = await createMerchant(ctx.app);
    const path = nextPath('again');
    const hook = await createHook(merchant, receiver.url(path));
    const { eventId } = await createContact(merchant);
    await deliveryResult(merchant, hook.id, eventId);
    const response = await merchant.request(`/api/webhooks/${hook.id}/deliveries`, {
      form: { event: String(eventId) },
    });
    expect(response.status).toBe(202);
    expect(await deliveryResult(merchant, hook.id, eventId, true)).toMatchObject({ outcome: 'delivered', attempts: 1 });
    const [first, second] = receiver.requests(path);
    expect(second!.body).toBe(first!.body);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    const log = await attemptLog(merchant, hook.id, eventId);
    expect(log.map((delivery) => [delivery.redelivery, delivery.status, delivery.attempts.length])).toEqual([
      [true, 'delivered', 1],
      [false, 'delivered', 1],
    ]);
  });

  test('deleting the webhook while a delivery waits to retry ends it without another request', async () => {
    const taskQueue = uniqueTaskQueue('webhooks-slow');
    const slowEnv = workerEnv([5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000]);
    workers.push(await startWorker(taskQueue, slowEnv));
    const slowCtx = await testApp(taskQueue, slowEnv);
    const merchant = await createMerchant(slowCtx.app);
    const path = nextPath('deleted');
    receiver.script(path, [], { status: 500 });
    const hook = await createHook(merchant, receiver.url(path));
    const { eventId } = await createContact(merchant);
    await eventually('the first attempt to fail', async () => (await queueRow(hook.id, eventId))?.nextAttempt === 2);
    expect((await merchant.request(`/api/webhooks/${hook.id}`, { method: 'DELETE' })).status).toBe(204);
    // Cancelled with the deletion, in its transaction.
    const [delivery] = await attemptLog(merchant, hook.id, eventId);
    expect(delivery).toMatchObject({ status: 'cancelled' });
    await Bun.sleep(6000);
    expect(receiver.requests(path)).toHaveLength(1);
  });
});

describe('the dispatch pool', () => {
  test('deliveries that arrive together are sent side by side, each once', async () => {
    const merchant = await createMerchant(ctx.app);
    const path = nextPath('together');
    const hook = await createHook(merchant, receiver.url(path));
    const contacts = await Promise.all(Array.from({ length: 12 }, () => createContact(merchant)));
    for (const { eventId } of contacts)
      expect(await deliveryResult(merchant, hook.id, eventId)).toMatchObject({ outcome: 'delivered', attempts: 1 });
    const received = receiver.requests(path).map((request) => request.headers['webhook-id']);
    expect(received).toHaveLength(12);
    expect(new Set(received).size).toBe(12);
  });

  test('a burst for a receiver that refuses connections: no workflow task fails, the receiver is probed, and all arrive once it is back', async () => {
    // A port with nothing listening: every connection is refused until the receiver starts on it.
    const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') });
    const port = probe.port;
    probe.stop(true);
    const taskQueue = uniqueTaskQueue('webhooks-burst');
    const env = workerEnv([500, 500, 500, 500, 500, 500, 500, 500, 500]);
    workers.push(await startWorker(taskQueue, env));
    const burstCtx = await testApp(taskQueue, env);
    const merchant = await createMerchant(burstCtx.app);
    const hook = await createHook(merchant, `https://127.0.0.1:${port}/dead`);
    const BURST = 400;
    const created: number[] = [];
    // 16 clients, as fast as they go.
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (created.length < BURST) {
          created.push(0);
          await createContact(merchant);
        }
      }),
    );
    // Refused from the first POSTs on, the receiver is probed: a POST at a time, spaced, while the rest wait with their attempts.
    await eventually('the receiver to be probed', async () => {
      const [row] = await testSql()<{ probed: boolean }[]>`
        select probing_since is not null as probed from webhook_receivers where origin = ${`https://127.0.0.1:${port}`}`;
      return row?.probed;
    });
    const [whileDown] = await testSql()<{ attempted: number; failed: number }[]>`
      select count(distinct a.delivery_id)::int as attempted, count(*) filter (where d.status = 'failed')::int as failed
      from webhook_deliveries d join webhook_delivery_attempts a on a.delivery_id = d.id where d.webhook_id = ${hook.id}`;
    expect(whileDown!.attempted).toBeLessThan(BURST);
    expect(whileDown!.failed).toBe(0);
    let arrived = 0;
    const back = createServer({ key: certificate.key, cert: certificate.cert }, (request, response) => {
      arrived += 1;
      request.resume();
      response.writeHead(204).end();
    });
    await new Promise<void>((resolve) => back.listen(port, '127.0.0.1', resolve));
    try {
      await eventually(
        'every delivery to arrive',
        async () => {
          const [row] = await testSql()<{ delivered: number }[]>`
          select count(*)::int as delivered from webhook_deliveries where webhook_id = ${hook.id} and status = 'delivered'`;
          return row!.delivered === BURST;
        },
        60_000,
      );
    } finally {
      back.closeAllConnections();
      back.close();
    }
    expect(arrived).toBe(BURST);
    expect(await failedTasks([await dispatcherHandle(taskQueue, 0), await dispatcherHandle(taskQueue, 1)])).toBe(0);
  }, 150_000);

  test("fair across webhooks: one webhook's backlog does not delay another's first attempt, and each keeps to its own concurrency", async () => {
    const busy = await createMerchant(ctx.app);
    const busyPath = nextPath('backlog');
    receiver.script(busyPath, [], { status: 200, delayMs: 1500 });
    const busyHook = await createHook(busy, receiver.url(busyPath));
    await Promise.all(Array.from({ length: 80 }, () => createContact(busy)));
    await eventually('the backlog under way', async () => receiver.requests(busyPath).length >= 16);
    const quiet = await createMerchant(ctx.app);
    const quietPath = nextPath('first');
    const quietHook = await createHook(quiet, receiver.url(quietPath));
    const committed = Date.now();
    const { eventId } = await createContact(quiet);
    expect(await deliveryResult(quiet, quietHook.id, eventId)).toMatchObject({ outcome: 'delivered', attempts: 1 });
    expect(Date.now() - committed).toBeLessThan(3000);
    const [pending] = await testSql()<
      { count: number }[]
    >`select count(*)::int as count from webhook_deliveries where webhook_id = ${busyHook.id} and status = 'pending'`;
    expect(pending!.count).toBeGreaterThan(0);
    // The busy webhook never had more than its concurrency (16) in flight: its receiver saw at most that many at once.
    expect(receiver.maxInFlight(busyPath)).toBeLessThanOrEqual(16);
  }, 60_000);

  test('no delivery waits for another: while one POST hangs past the timeout, the next ones are delivered', async () => {
    const merchant = await createMerchant(ctx.app);
    const path = nextPath('slow-one');
    receiver.script(path, [{ status: 200, delayMs: 6000 }]);
    const hook = await createHook(merchant, receiver.url(path));
    const slow = await createContact(merchant);
    await eventually('the slow POST to be under way', async () => receiver.requests(path).length === 1);
    const quick = await Promise.all(Array.from({ length: 10 }, () => createContact(merchant)));
    for (const { eventId } of quick)
      expect(await deliveryResult(merchant, hook.id, eventId)).toMatchObject({ outcome: 'delivered', attempts: 1 });
    // All delivered while the first attempt of the slow one is still in flight, unlogged.
    expect(await queueRow(hook.id, slow.eventId)).toMatchObject({ status: 'pending', nextAttempt: 1, leased: true });
    expect(await deliveryResult(merchant, hook.id, slow.eventId)).toMatchObject({ outcome: 'delivered', attempts: 2 });
  }, 30_000);
});

describe('the pool shared by organization and receiver', () => {
  const originOf = (hanging: Receiver) => `https://127.0.0.1:${hanging.port}`;

  async function deleteHooks(merchant: TestMerchant, hooks: readonly Hook[]): Promise<void> {
    for (const hook of hooks)
      expect((await merchant.request(`/api/webhooks/${hook.id}`, { method: 'DELETE' })).status).toBe(204);
  }

  test("60 webhooks of one merchant on a receiver that never answers: another merchant's delivery arrives within a second", async () => {
    const hanging = await startReceiver(certificate);
    const noisy = await createMerchant(ctx.app);
    const hooks: Hook[] = [];
    try {
      for (let index = 0; index < 60; index++) {
        hanging.script(`/hang/${index}`, [], { status: 200, delayMs: 60_000 });
        hooks.push(await createHook(noisy, hanging.url(`/hang/${index}`)));
      }
      // 360 deliveries that hang: more than the pool's window (2 dispatchers × 128).
      await Promise.all(Array.from({ length: 6 }, () => createContact(noisy)));
      await eventually('the receiver to hang', async () => hanging.inFlightNow() >= 16);
      const healthy = await createMerchant(ctx.app);
      const path = nextPath('beside-hanging');
      const hook = await createHook(healthy, receiver.url(path));
      const committed = Date.now();
      const { eventId } = await createContact(healthy);
      expect(await deliveryResult(healthy, hook.id, eventId)).toMatchObject({ outcome: 'delivered', attempts: 1 });
      expect(receiver.requests(path)[0]!.receivedAt - committed).toBeLessThan(1000);
      // Never more in flight to one receiver than its share (WEBHOOK_RECEIVER_CONCURRENCY, 32): nothing waits for a connection.
      expect(hanging.mostInFlight()).toBeLessThanOrEqual(32);
    } finally {
      await deleteHooks(noisy, hooks);
      await hanging.close();
    }
  }, 60_000);

  test('a receiver that hangs is probed with one POST at a time while its deliveries wait with their attempts; once it answers, every one is delivered', async () => {
    const flaky = await startReceiver(certificate);
    const merchant = await createMerchant(ctx.app);
    const path = '/probed';
    flaky.script(path, [], { status: 200, delayMs: 60_000 });
    const hook = await createHook(merchant, flaky.url(path));
    try {
      const events = await Promise.all(Array.from({ length: 8 }, () => createContact(merchant)));
      const probingSince = async () => {
        const [row] = await testSql()<
          { since: Date | null }[]
        >`select probing_since as since from webhook_receivers where origin = ${originOf(flaky)}`;
        return row?.since ?? undefined;
      };
      const since = await eventually('the receiver to be probed after its timeouts', probingSince, 20_000);
      await eventually('the first POSTs to time out', async () => flaky.inFlightNow() <= 1);
      flaky.resetMostInFlight();
      const log = await merchant.request(`/api/webhooks/${hook.id}/deliveries`);
      const waiting = (
        log.body.results as { status: string; waiting: string | null; next_attempt_at: string | null }[]
      ).filter((delivery) => delivery.status === 'pending' && delivery.waiting !== null);
      expect(waiting.length).toBeGreaterThan(0);
      expect(waiting[0]!.waiting).toContain(`${originOf(flaky)} has not answered its last`);
      expect(waiting[0]!.next_attempt_at).not.toBeNull();
      // A probe times out: one POST at a time meanwhile.
      await eventually(
        'a probe to fail',
        async () => {
          const [row] = await testSql()<{ count: number }[]>`
          select count(*)::int as count from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id
          where d.webhook_id = ${hook.id} and a.started_at > ${since} and a.outcome = 'failed'`;
          return row!.count >= 1;
        },
        20_000,
      );
      expect(flaky.mostInFlight()).toBe(1);
      flaky.script(path, [], { status: 200 });
      for (const { eventId } of events)
        expect((await deliveryResult(merchant, hook.id, eventId)).outcome).toBe('delivered');
      expect(await probingSince()).toBeUndefined();
    } finally {
      await deleteHooks(merchant, [hook]);
      await flaky.close();
    }
  }, 90_000);
});

describe('webhook delivery through a worker crash', () => {
  test("kill -9 mid-retry: another worker's sender goes on from the attempt reached, each attempt sent and logged once", async () => {
    const taskQueue = uniqueTaskQueue('webhooks-crash');
    // Attempts 1-3 close together; a 3 s wait after the 3rd, long enough to kill the worker in it.
    const schedule = [100, 100, 3000, 100, 100, 100, 100, 100, 100];
    const first = await startWorker(taskQueue, workerEnv(schedule));
    workers.push(first);
    const crashCtx = await testApp(taskQueue, workerEnv(schedule));
    const merchant = await createMerchant(crashCtx.app);
    const path = nextPath('crash');
    receiver.script(path, [{ status: 500 }, { status: 500 }, { status: 500 }, { status: 502 }], { status: 204 });
    const hook = await createHook(merchant, receiver.url(path));
    const { eventId } = await createContact(merchant);
    await eventually(
      'the wait after the 3rd attempt',
      async () => (await queueRow(hook.id, eventId))?.nextAttempt === 4,
    );
    await first.kill();
    expect(receiver.requests(path)).toHaveLength(3);
    workers.push(await startWorker(taskQueue, workerEnv(schedule)));
    expect(await deliveryResult(merchant, hook.id, eventId)).toMatchObject({ outcome: 'delivered', attempts: 5 });
    const requests = receiver.requests(path);
    expect(requests).toHaveLength(5);
    const [delivery] = await attemptLog(merchant, hook.id, eventId);
    expect(delivery!.attempts.map((attempt) => [attempt.attempt, attempt.status_code])).toEqual([
      [1, 500],
      [2, 500],
      [3, 500],
      [4, 502],
      [5, 204],
    ]);
    const [row] = await testSql()<{ count: number }[]>`
      select count(*)::int as count from webhook_delivery_attempts where delivery_id = ${delivery!.id}`;
    expect(row?.count).toBe(5);
  }, 90_000);
  test('two workers share the deliveries; SIGKILL of the one sending loses none and sends none twice per attempt', async () => {
    const taskQueue = uniqueTaskQueue('webhooks-two');
    const env = workerEnv([100, 100, 100, 100, 100, 100, 100, 100, 100]);
    const pair = [await startWorker(taskQueue, env), await startWorker(taskQueue, env)];
    workers.push(...pair);
    const twoCtx = await testApp(taskQueue, env);
    const merchant = await createMerchant(twoCtx.app);
    const path = nextPath('two-workers');
    receiver.script(path, [], { status: 200, delayMs: 150 });
    const hook = await createHook(merchant, receiver.url(path));
    const events: number[] = [];
    for (let index = 0; index < 40; index += 1) events.push((await createContact(merchant)).eventId);
    // A worker running a dispatcher now (its identity is `<pid>@<host>`) is killed mid-POST.
    const dispatchers = [await dispatcherHandle(taskQueue, 0), await dispatcherHandle(taskQueue, 1)];
    const sending = await eventually('a dispatcher under way', async () => {
      for (const handle of dispatchers) {
        const identity = (await handle.describe()).raw.pendingActivities?.[0]?.lastWorkerIdentity ?? '';
        const worker = pair.find((candidate) => identity.startsWith(`${candidate.child.pid}@`));
        if (worker) return worker;
      }
      return undefined;
    });
    await eventually('POSTs in flight', async () => receiver.requests(path).length >= 5);
    await sending.kill();
    for (let index = 0; index < 20; index += 1) events.push((await createContact(merchant)).eventId);
    for (const eventId of events) expect((await deliveryResult(merchant, hook.id, eventId)).outcome).toBe('delivered');
    const logged = await testSql()<{ eventId: number; attempts: number }[]>`
      select d.event_id as "eventId", count(a.*)::int as attempts from webhook_deliveries d join webhook_delivery_attempts a on a.delivery_id = d.id
      where d.webhook_id = ${hook.id} group by d.event_id`;
    expect(logged).toHaveLength(60);
    const posts = new Map<string, number>();
    for (const request of receiver.requests(path))
      posts.set(request.headers['webhook-id']!, (posts.get(request.headers['webhook-id']!) ?? 0) + 1);
    for (const { eventId, attempts } of logged)
      expect(posts.get(webhookMessageId(asId('Event', eventId), asId('Webhook', hook.id))) ?? 0).toBeLessThanOrEqual(
        attempts,
      );
  }, 120_000);
});
