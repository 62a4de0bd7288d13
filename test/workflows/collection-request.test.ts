/**
 * The collection-request and subscription workflows on the real worker (Node) and the real dev
 * server, with durations of seconds passed in as data.
 */
import { asId } from '../../src/domain/ids';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { RequestStatus } from '../../src/domain/collection-requests';
import { networkForNumber } from '../../src/domain/networks';
import { insertCollectionRequest, type NewCollectionRequest } from '../../src/services/collections/request-creation';
import { launcherFromConfig } from '../../src/temporal/launcher';
import { createCollectionRequestActivities } from '../../src/activities/collection-requests';
import type { NetworkAdapter } from '../../src/network/adapter';
import { subscriptionWorkflowId } from '../../src/contracts/subscription';
import { collectionRequestStateQuery, collectionRequestWorkflowId } from '../../src/contracts/collection-request';
import {
  createMerchant,
  eventually,
  numberSequence,
  recordHistory,
  startWorker,
  testApp,
  testClient,
  testConfig,
  testSql,
  uniqueTaskQueue,
  type TestApp,
  type TestMerchant,
  type WorkerProcess,
} from '../helpers';

const WORKER_ENV = { SANDBOX_PAYMENT_DELAY_SECONDS: '1', FAILED_PROMPT_RETRY_SECONDS: '1' };
const taskQueue = uniqueTaskQueue('requests');
let worker: WorkerProcess;
let ctx: TestApp;
let merchant: TestMerchant;

beforeAll(async () => {
  worker = await startWorker(taskQueue, WORKER_ENV);
  ctx = await testApp(taskQueue);
  merchant = await createMerchant(ctx.app);
});

afterAll(async () => {
  await worker.stop();
});

const nextNumber = numberSequence('+256772');
/** A date as subscription settings store it (`DD/MM/YYYY HH:MM:SS`, UTC). */
const storedDate = (date: Date) => {
  const iso = date.toISOString();
  return `${iso.slice(8, 10)}/${iso.slice(5, 7)}/${iso.slice(0, 4)} ${iso.slice(11, 19)}`;
};
const inSeconds = (seconds: number) => new Date(Date.now() + seconds * 1000);

async function createRequest(
  overrides: Partial<NewCollectionRequest> = {},
  queue = taskQueue,
  owner: TestMerchant = merchant,
): Promise<number> {
  const phoneNumber = overrides.phoneNumber ?? nextNumber();
  const created = await insertCollectionRequest(testSql(), {
    organizationId: owner.organization.id,
    author: owner.user.id,
    phoneNumber,
    network: networkForNumber(phoneNumber)!.name,
    amount: '500',
    currency: 'BXC',
    accountId: null,
    firstName: 'Test',
    lastName: 'Payer',
    reason: 'Order',
    metadata: null,
    successMessage: 'Thanks {customer} for {amount}',
    sendInstructions: true,
    instructions: null,
    expiresAt: inSeconds(30),
    startAt: null,
    retryIntervalSeconds: null,
    maxAttempts: 3,
    subscriptionSettings: null,
    ...overrides,
  });
  await launcherFromConfig(
    ctx.client,
    testConfig({ TASK_QUEUE: queue, FAILED_PROMPT_RETRY_SECONDS: '1' }),
    () => {},
  ).startCollectionRequest(created.request);
  return created.request.id;
}

const handleOf = (requestId: number) =>
  ctx.client.workflow.getHandle(collectionRequestWorkflowId(asId('CollectionRequest', requestId)));

async function finalRow(requestId: number) {
  await handleOf(requestId).result();
  const [row] = await testSql()<
    { status: RequestStatus; attempts: number; errorMessage: string | null; collectionId: number | null }[]
  >`
    select status, attempts, error_message as "errorMessage", collection_id as "collectionId" from collection_requests where id = ${requestId}`;
  return row!;
}

/** The statuses its `collectionrequest.status.changed` events carry, in order. */
async function statusEvents(requestId: number): Promise<string[]> {
  const rows = await testSql()<{ status: string }[]>`
    select data->>'status' as status from events
    where type = 'collectionrequest.status.changed' and (data->>'id')::bigint = ${requestId} order by id`;
  return rows.map((row) => row.status);
}

async function messages(requestId: number) {
  return await testSql()<{ kind: string; attempt: number; text: string }[]>`
    select kind, attempt, text from sandbox_messages where request_id = ${requestId} order by id`;
}

describe('collection request workflow', () => {
  test('prompts (SMS, then USSD push) and succeeds when the sandbox subscriber pays and the collection is matched', async () => {
    const requestId = await createRequest();
    const row = await finalRow(requestId);
    const [collection] = await testSql()<
      { id: number }[]
    >`select id from collections where collection_request_id = ${requestId}`;
    expect(row).toMatchObject({ status: 'successful', collectionId: collection!.id, attempts: 1 });
    expect(await statusEvents(requestId)).toEqual(['instructions_sent', 'processing_started', 'successful']);
    const sent = await messages(requestId);
    expect(sent.map((message) => message.kind)).toEqual(['instructions', 'success']);
    expect(sent[1]!.text).toBe('Thanks Test Payer for 500 - via Collections');
    expect(await handleOf(requestId).query(collectionRequestStateQuery)).toMatchObject({
      status: 'successful',
      collectionId: collection!.id,
      payment: { collectionId: collection!.id, outcome: 'accepted', decidedBy: 'not-asked' },
    });
    // The sandbox's subscriber paid a second later: the workflow asked its status query then, and received the payment itself.
    expect(
      await ctx.client.workflow
        .getHandle(`collection-mtn-uganda-SBX-${requestId}`)
        .describe()
        .then(
          () => 'started',
          () => 'none',
        ),
    ).toBe('none');
    await recordHistory(
      ctx.client,
      collectionRequestWorkflowId(asId('CollectionRequest', requestId)),
      'collection-request-successful',
    );
  });

  test("a subscriber who pays at once: the network's answer is the confirmation, received in the same workflow", async () => {
    const queue = uniqueTaskQueue('requests-at-once');
    const atOnce = await startWorker(queue, { ...WORKER_ENV, SANDBOX_PAYMENT_DELAY_SECONDS: '0' });
    try {
      const requestId = await createRequest({}, queue);
      expect(await finalRow(requestId)).toMatchObject({ status: 'successful', attempts: 1 });
      expect(await statusEvents(requestId)).toEqual(['instructions_sent', 'processing_started', 'successful']);
      const history = (await handleOf(requestId).fetchHistory()).events ?? [];
      // One prompt, one success text: no status query, no timer, no other workflow.
      expect(
        history
          .filter((event) => event.activityTaskScheduledEventAttributes)
          .map((event) => event.activityTaskScheduledEventAttributes!.activityType!.name),
      ).toEqual(['promptSubscriber', 'sendSuccessMessage']);
      expect(history.some((event) => event.timerStartedEventAttributes)).toBe(false);
      await recordHistory(
        ctx.client,
        collectionRequestWorkflowId(asId('CollectionRequest', requestId)),
        'collection-request-paid-at-once',
      );
    } finally {
      await atOnce.stop();
    }
  });

  test('without send_instructions nobody is prompted: pending, then expired', async () => {
    const requestId = await createRequest({ sendInstructions: false, expiresAt: inSeconds(2) });
    const row = await finalRow(requestId);
    expect(row.status).toBe('expired');
    expect(await statusEvents(requestId)).toEqual(['pending', 'expired']);
    expect(await messages(requestId)).toHaveLength(0);
    await recordHistory(
      ctx.client,
      collectionRequestWorkflowId(asId('CollectionRequest', requestId)),
      'collection-request-unprompted-expired',
    );
  });

  test('instructions "skip" sends no text message but still pushes the prompt', async () => {
    const requestId = await createRequest({
      instructions: 'skip',
      phoneNumber: '+80000000009',
      expiresAt: inSeconds(2),
    });
    expect((await finalRow(requestId)).status).toBe('expired');
    expect(await statusEvents(requestId)).toEqual(['processing_started', 'expired']);
    expect(await messages(requestId)).toHaveLength(0);
  });

  test('a scheduled request stays new until its start date', async () => {
    const startAt = inSeconds(3);
    const requestId = await createRequest({ startAt, sendInstructions: false, expiresAt: inSeconds(5) });
    const queried = await handleOf(requestId).query(collectionRequestStateQuery);
    const [row] = await testSql()<{ status: string }[]>`select status from collection_requests where id = ${requestId}`;
    // What was read before the start date says `new` (read after it, by a process stalled for
    // seconds, it may rightly say `pending`; the time of the change is checked below either way).
    if (Date.now() < startAt.getTime()) expect([queried.status, row!.status]).toEqual(['new', 'new']);
    const pendingAt = await eventually('the start', async () => {
      const [current] = await testSql()<
        { status: string; modified: Date }[]
      >`select status, modified from collection_requests where id = ${requestId}`;
      return current!.status === 'pending' ? current!.modified : undefined;
    });
    const [request] = await testSql()<
      { startDate: Date }[]
    >`select start_date as "startDate" from collection_requests where id = ${requestId}`;
    expect(pendingAt.getTime()).toBeGreaterThanOrEqual(request!.startDate.getTime());
    expect((await finalRow(requestId)).status).toBe('expired');
    expect(await statusEvents(requestId)).toEqual(['pending', 'expired']);
  });

  test('Cancelled By User: retries up to max_attempts, then failed with the error', async () => {
    const requestId = await createRequest({ phoneNumber: '+80000000001', maxAttempts: 2, retryIntervalSeconds: 1 });
    const row = await finalRow(requestId);
    expect(row).toMatchObject({ status: 'failed', attempts: 3, errorMessage: 'Cancelled By User' });
    expect(await statusEvents(requestId)).toEqual(['instructions_sent', 'failed']);
    expect((await messages(requestId)).map((message) => message.attempt)).toEqual([1, 2, 3]);
    await recordHistory(
      ctx.client,
      collectionRequestWorkflowId(asId('CollectionRequest', requestId)),
      'collection-request-retried-failed',
    );
  });

  test('max_attempts 0: one prompt, no retry', async () => {
    const requestId = await createRequest({ phoneNumber: '+80000000001', maxAttempts: 0 });
    expect(await finalRow(requestId)).toMatchObject({
      status: 'failed',
      attempts: 1,
      errorMessage: 'Cancelled By User',
    });
  });

  test('an unpaid prompt is repeated every retry interval while retries remain, then waits for expiry', async () => {
    const requestId = await createRequest({
      phoneNumber: '+80000000009',
      maxAttempts: 2,
      retryIntervalSeconds: 1,
      expiresAt: inSeconds(6),
    });
    const row = await finalRow(requestId);
    expect(row).toMatchObject({ status: 'expired', attempts: 3 });
    expect((await messages(requestId)).map((message) => message.attempt)).toEqual([1, 2, 3]);
    await recordHistory(
      ctx.client,
      collectionRequestWorkflowId(asId('CollectionRequest', requestId)),
      'collection-request-prompted-expired',
    );
  });

  test('a prompt whose database steps wait longer than the heartbeat timeout still runs once: it heartbeats throughout', async () => {
    const requestId = await createRequest({ startAt: inSeconds(2) });
    // The row held for 16 s from before the prompt starts: its status write waits about 14 s, past the prompt's
    // 10-second heartbeat timeout, as it does behind a slow or distant database.
    await testSql().begin(async (tx) => {
      await tx`select id from collection_requests where id = ${requestId} for update`;
      await Bun.sleep(16_000);
    });
    expect((await finalRow(requestId)).status).toBe('successful');
    const history = (await handleOf(requestId).fetchHistory()).events ?? [];
    const started = history.filter((event) => event.activityTaskStartedEventAttributes);
    const prompt = history.find(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'promptSubscriber',
    );
    const promptStart = started.find(
      (event) => String(event.activityTaskStartedEventAttributes!.scheduledEventId) === String(prompt!.eventId),
    );
    expect(promptStart!.activityTaskStartedEventAttributes!.attempt).toBe(1);
  }, 60_000);

  test('operators filter request workflows by organization and status', async () => {
    // Its own organization and requests: two that fail, one that expires.
    const operated = await createMerchant(ctx.app);
    const failing = [
      await createRequest({ phoneNumber: '+80000000001', maxAttempts: 0 }, taskQueue, operated),
      await createRequest({ phoneNumber: '+80000000001', maxAttempts: 0 }, taskQueue, operated),
    ];
    const expiring = await createRequest({ sendInstructions: false, expiresAt: inSeconds(2) }, taskQueue, operated);
    for (const requestId of [...failing, expiring]) await finalRow(requestId);
    const client = await testClient();
    const query = (status: string) =>
      `WorkflowType = 'collectionRequest' AND OrganizationId = '${operated.organization.id}' AND RequestStatus = '${status}'`;
    await eventually('visibility to catch up', async () => (await client.workflow.count(query('failed'))).count === 2);
    await eventually('visibility to catch up', async () => (await client.workflow.count(query('expired'))).count === 1);
    const listed: string[] = [];
    for await (const execution of client.workflow.list({ query: query('failed') })) listed.push(execution.workflowId);
    expect(listed.sort()).toEqual(
      failing.map((id) => collectionRequestWorkflowId(asId('CollectionRequest', id))).sort(),
    );
  });
});

describe('subscriptions', () => {
  test('a minutely subscription creates one request per later occurrence and stops at end_date', async () => {
    const start = new Date(Math.ceil((Date.now() + 2000) / 1000) * 1000);
    const end = new Date(start.getTime() + 61_000);
    const stored = (date: Date) => {
      const iso = date.toISOString();
      return `${iso.slice(8, 10)}/${iso.slice(5, 7)}/${iso.slice(0, 4)} ${iso.slice(11, 19)}`;
    };
    const requestId = await createRequest({
      sendInstructions: false,
      startAt: start,
      expiresAt: new Date(start.getTime() + 5000),
      subscriptionSettings: { start_date: stored(start), end_date: stored(end), frequency: 'minutely' },
    });
    const subscription = ctx.client.workflow.getHandle(subscriptionWorkflowId(asId('CollectionRequest', requestId)));
    const result = await subscription.result();
    expect(result).toMatchObject({ created: 1, nextOccurrence: null });
    await recordHistory(
      ctx.client,
      subscriptionWorkflowId(asId('CollectionRequest', requestId)),
      'subscription-minutely',
    );
    const occurrences = await testSql()<{ id: number; occurrenceAt: Date }[]>`
      select id, occurrence_at as "occurrenceAt" from collection_requests where subscription_id = ${requestId}`;
    expect(occurrences.map((row) => row.occurrenceAt.toISOString())).toEqual([
      new Date(start.getTime() + 60_000).toISOString(),
    ]);
    // Each occurrence is a request with its own workflow.
    expect(
      (
        await ctx.client.workflow
          .getHandle(collectionRequestWorkflowId(asId('CollectionRequest', occurrences[0]!.id)))
          .describe()
      ).type,
    ).toBe('collectionRequest');
  }, 120_000);
});

describe('cancelling a subscription', () => {
  test('through the API: the workflow ends cancelled and creates nothing more; the prompt in flight is paid', async () => {
    const start = new Date(Math.ceil((Date.now() + 2000) / 1000) * 1000);
    const requestId = await createRequest({
      startAt: start,
      expiresAt: new Date(start.getTime() + 30_000),
      subscriptionSettings: {
        start_date: storedDate(start),
        end_date: storedDate(new Date(start.getTime() + 600_000)),
        frequency: 'minutely',
      },
    });
    const workflowId = subscriptionWorkflowId(asId('CollectionRequest', requestId));
    // The first occurrence (the request itself) is prompted; the subscription waits for the next minute.
    await eventually(
      'the first request to be prompted',
      async () => (await merchant.request(`/api/collectionrequests/${requestId}`)).body.status !== 'new',
      20_000,
    );
    const cancelled = await merchant.request(`/api/collectionrequests/${requestId}/subscription/cancel`, { body: {} });
    expect(cancelled.status).toBe(200);
    expect(JSON.parse(cancelled.body.subscription_settings)).toHaveProperty('cancelled_at');
    await eventually(
      'the subscription workflow to end cancelled',
      async () => (await ctx.client.workflow.getHandle(workflowId).describe()).status.name === 'CANCELLED',
      15_000,
    );
    await eventually(
      'the prompt in flight to be paid',
      async () => (await merchant.request(`/api/collectionrequests/${requestId}`)).body.status === 'successful',
      20_000,
    );
    const occurrences = await testSql()`select id from collection_requests where subscription_id = ${requestId}`;
    expect(occurrences.count).toBe(0);
  }, 60_000);

  test('an occurrence due after the cancel is not created, even where the workflow did not hear of it', async () => {
    const start = inSeconds(3600);
    const requestId = await createRequest({
      sendInstructions: false,
      startAt: start,
      expiresAt: new Date(start.getTime() + 30_000),
      subscriptionSettings: {
        start_date: storedDate(start),
        end_date: storedDate(new Date(start.getTime() + 10 * 86_400_000)),
        frequency: 'daily',
      },
    });
    const activities = createCollectionRequestActivities({
      sql: testSql(),
      launcher: ctx.launcher,
      network: {} as NetworkAdapter,
    });
    const occurrenceAt = new Date(start.getTime() + 86_400_000).toISOString();
    expect(
      (await merchant.request(`/api/collectionrequests/${requestId}/subscription/cancel`, { body: {} })).status,
    ).toBe(200);
    expect(
      await activities.createSubscriptionOccurrence({ requestId: asId('CollectionRequest', requestId), occurrenceAt }),
    ).toBeNull();
    const occurrences = await testSql()`select id from collection_requests where subscription_id = ${requestId}`;
    expect(occurrences.count).toBe(0);
  });
});

describe('crash recovery', () => {
  test('killing the worker while requests wait (for start, between retries, for payment) changes no outcome', async () => {
    const crashQueue = uniqueTaskQueue('requests-crash');
    const first = await startWorker(crashQueue, WORKER_ENV);
    // Margins cover the dead worker's sticky queue timeout (10 s) before another worker takes over.
    const waitingForStart = await createRequest(
      { startAt: inSeconds(3), sendInstructions: false, expiresAt: inSeconds(25) },
      crashQueue,
    );
    const betweenRetries = await createRequest(
      { phoneNumber: '+80000000001', maxAttempts: 2, retryIntervalSeconds: 3, expiresAt: inSeconds(90) },
      crashQueue,
    );
    const waitingForPayment = await createRequest(
      { phoneNumber: '+80000000009', expiresAt: inSeconds(120) },
      crashQueue,
    );
    const toBePaid = await createRequest({ expiresAt: inSeconds(90) }, crashQueue);
    await eventually('the prompts to go out', async () => {
      const states = await Promise.all(
        [betweenRetries, waitingForPayment, toBePaid].map(
          async (id) => (await handleOf(id).query(collectionRequestStateQuery)).status,
        ),
      );
      return states.every((status) => status !== 'new');
    });
    await first.kill();
    await Bun.sleep(1000);
    const second = await startWorker(crashQueue, WORKER_ENV);
    try {
      expect((await finalRow(waitingForStart)).status).toBe('expired');
      expect(await finalRow(betweenRetries)).toMatchObject({ status: 'failed', attempts: 3 });
      expect((await finalRow(toBePaid)).status).toBe('successful');
      await handleOf(waitingForPayment).terminate('test done');
      expect(await statusEvents(waitingForStart)).toEqual(['pending', 'expired']);
      expect(await statusEvents(betweenRetries)).toEqual(['instructions_sent', 'failed']);
      expect(await statusEvents(toBePaid)).toEqual(['instructions_sent', 'processing_started', 'successful']);
      expect(await statusEvents(waitingForPayment)).toEqual(['instructions_sent', 'processing_started']);
    } finally {
      await second.stop();
    }
  }, 120_000);
});
