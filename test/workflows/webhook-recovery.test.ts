import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { RECOVERY_MAX_EVENTS } from '../../src/services/webhooks/webhook-recovery';
import {
  createMerchant,
  eventually,
  numberSequence,
  startWorker,
  testApp,
  testSql,
  uniqueTaskQueue,
  type TestApp,
  type TestMerchant,
  type WorkerProcess,
} from '../helpers';
import { makeCertificate, startReceiver, type Certificate, type Receiver } from '../webhook-receiver';

let certificate: Certificate;
let receiver: Receiver;
let ctx: TestApp;
let worker: WorkerProcess;

beforeAll(async () => {
  certificate = makeCertificate();
  receiver = await startReceiver(certificate);
  const env = {
    WEBHOOK_CA_FILE: certificate.certFile,
    WEBHOOK_RETRY_SCHEDULE: '50ms,100ms,150ms,200ms,250ms,300ms,350ms,400ms,450ms',
  };
  const taskQueue = uniqueTaskQueue('webhook-recovery');
  worker = await startWorker(taskQueue, env);
  ctx = await testApp(taskQueue, env);
});

afterAll(async () => {
  await worker.stop();
  await receiver.close();
});

let pathCounter = 0;
const nextPath = (name: string) => `/recovery/${name}-${++pathCounter}`;
const nextNumber = numberSequence('+256773');

async function createHook(merchant: TestMerchant, target: string, event = 'contact.created'): Promise<{ id: number }> {
  const response = await merchant.request('/api/webhooks', { form: { event, target } });
  expect(response.status).toBe(201);
  return response.body;
}

/** A contact through the API: one `contact.created` event. Returns the event's id. */
async function createContact(merchant: TestMerchant): Promise<number> {
  const response = await merchant.request('/api/contacts', {
    form: { phone_number: nextNumber(), first_name: 'Recovery', last_name: 'Test' },
  });
  expect(response.status).toBe(201);
  const [event] = await testSql()<{ id: number }[]>`
    select id from events
    where organization_id = ${merchant.organization.id} and type = 'contact.created' and (data->>'id')::bigint = ${response.body.id}`;
  return event!.id;
}

/** The database's clock now, as the API takes a time (events are stamped by it). */
async function databaseNow(): Promise<string> {
  const [row] = await testSql()<{ now: Date }[]>`select clock_timestamp() as now`;
  return row!.now.toISOString();
}

const eventIdsReceived = (path: string): number[] =>
  receiver.requests(path).map((request) => Number(request.headers['webhook-id']!.split('_')[1]));

async function finishedRecovery(merchant: TestMerchant, webhookId: number, recoveryId: number) {
  return await eventually(
    'the recovery to finish',
    async () => {
      const response = await merchant.request(`/api/webhooks/${webhookId}/recoveries/${recoveryId}`);
      expect(response.status).toBe(200);
      return response.body.status === 'finished' ? response.body : undefined;
    },
    60_000,
  );
}

describe('recovering a webhook', () => {
  test('delivers every event of its type since the time again, once each and in order; nothing of another type or organization', async () => {
    const merchant = await createMerchant(ctx.app);
    const other = await createMerchant(ctx.app);
    const path = nextPath('since');
    const hook = await createHook(merchant, receiver.url(path));
    await createHook(other, receiver.url(path));
    const before = await createContact(merchant);
    await eventually('the first delivery', async () => eventIdsReceived(path).includes(before));
    const since = await databaseNow();
    const wanted = [await createContact(merchant), await createContact(merchant)];
    await createContact(other);
    // An event of another type in the period is not the webhook's.
    await testSql()`insert into events (organization_id, type, data) values (${merchant.organization.id}, 'collection.received', '{}')`;
    await eventually('the live deliveries', async () => wanted.every((id) => eventIdsReceived(path).includes(id)));

    const response = await merchant.request(`/api/webhooks/${hook.id}/recover`, { body: { since } });
    expect(response.status).toBe(202);
    const recoveryId: number = response.body.id;
    expect({ ...response.body }).toMatchObject({
      id: expect.any(Number),
      webhook: hook.id,
      user: merchant.user.id,
      events: 2,
      status: expect.any(String),
      since: expect.stringMatching(/Z$/),
      until: expect.stringMatching(/Z$/),
    });
    const finished = await finishedRecovery(merchant, hook.id, recoveryId);
    expect(finished.deliveries).toEqual({ pending: 0, delivered: 2, failed: 0, gone: 0, cancelled: 0 });
    // Each recovered event arrived twice in all (live, then recovered), the one before `since` once.
    const received = eventIdsReceived(path);
    for (const id of wanted) expect(received.filter((value) => value === id)).toHaveLength(2);
    expect(received.filter((value) => value === before)).toHaveLength(1);
    const log = await merchant.request(`/api/webhooks/${hook.id}/deliveries`);
    expect(
      log.body.results
        .filter((row: { redelivery: boolean }) => row.redelivery)
        .map((row: { event: number }) => row.event)
        .sort(),
    ).toEqual([...wanted].sort());
    const listed = await merchant.request(`/api/webhooks/${hook.id}/recoveries`);
    expect(listed.body.map((row: { id: number }) => row.id)).toEqual([recoveryId]);
  });

  test('asked twice at once: one recovery, each event delivered again once; a second while it delivers is refused', async () => {
    const merchant = await createMerchant(ctx.app);
    const path = nextPath('twice');
    // The receiver is slow, so the first recovery is still delivering when the next is asked for.
    receiver.script(path, [], { status: 200, delayMs: 300 });
    const hook = await createHook(merchant, receiver.url(path));
    const since = await databaseNow();
    const events = [await createContact(merchant), await createContact(merchant), await createContact(merchant)];
    const answers = await Promise.all(
      [0, 1].map(() => merchant.request(`/api/webhooks/${hook.id}/recover`, { body: { since } })),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([202, 400]);
    expect(answers.find((answer) => answer.status === 400)!.body).toEqual({
      detail: 'An earlier recovery of this webhook is still delivering: ask again when it has finished.',
    });
    const recovery = answers.find((answer) => answer.status === 202)!.body;
    const rows = await testSql()<{ eventId: number }[]>`
      select event_id as "eventId" from webhook_deliveries where webhook_id = ${hook.id} and recovery_id is not null order by event_id`;
    expect(rows.map((row) => Number(row.eventId))).toEqual(events);
    await finishedRecovery(merchant, hook.id, recovery.id);
    // Finished, the webhook can be recovered again.
    const again = await merchant.request(`/api/webhooks/${hook.id}/recover`, { body: { since } });
    expect(again.status).toBe(202);
    expect(again.body.events).toBe(3);
  });

  test("a bad period, too many events, another organization's webhook: refused with the API's error bodies, nothing recorded", async () => {
    const merchant = await createMerchant(ctx.app);
    const other = await createMerchant(ctx.app);
    const hook = await createHook(merchant, receiver.url(nextPath('refused')));
    const recover = (body: unknown, owner = merchant, id = hook.id) =>
      owner.request(`/api/webhooks/${id}/recover`, { body });
    expect(await recover({})).toMatchObject({ status: 400, body: { since: ['This field is required.'] } });
    expect(await recover({ since: 'yesterday-ish' })).toMatchObject({
      status: 400,
      body: { since: ['Enter a valid date/time, such as 2024-05-01 13:45.'] },
    });
    expect(await recover({ since: '2025-05-02 00:00', until: '2025-05-01 00:00' })).toMatchObject({
      status: 400,
      body: { since: ['Must be before until (now when not given).'] },
    });
    expect(await recover({ since: '2025-05-01 00:00', until: '2099-01-01 00:00' })).toMatchObject({
      status: 400,
      body: { until: ['Must not be in the future.'] },
    });
    expect((await recover({ since: '2025-05-01 00:00' }, other)).status).toBe(403);
    expect((await merchant.request(`/api/webhooks/${hook.id}/recoveries/987654321`)).status).toBe(404);
    expect((await merchant.request(`/api/webhooks/${hook.id}/recoveries/abc`)).status).toBe(404);

    await testSql()`
      insert into events (organization_id, type, data, created)
      select ${merchant.organization.id}, 'contact.created', '{}', now() - interval '1 hour' from generate_series(1, ${RECOVERY_MAX_EVENTS + 1})`;
    const tooMany = await recover({ since: new Date(Date.now() - 2 * 3600_000).toISOString() });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.until[0]).toContain(`a recovery delivers at most ${RECOVERY_MAX_EVENTS}`);
    const [recorded] = await testSql()<{ count: number }[]>`
      select count(*)::int as count from webhook_recoveries where webhook_id = ${hook.id}`;
    expect(recorded!.count).toBe(0);
  });
});

describe('disabling a webhook', () => {
  test('a target failing every attempt for the period: disabled, told by an event, no deliveries recorded until enabled; then recovered', async () => {
    const merchant = await createMerchant(ctx.app);
    const failingPath = nextPath('failing');
    const noticePath = nextPath('notices');
    receiver.script(failingPath, [], { status: 503 });
    const hook = await createHook(merchant, receiver.url(failingPath));
    const notices = await createHook(merchant, receiver.url(noticePath), 'webhook.disabled');
    // Its target has failed every attempt for just over the default period (120 hours).
    await testSql()`update webhooks set failing_since = now() - interval '121 hours' where id = ${hook.id}`;
    const missed = await createContact(merchant);

    const disabled = await eventually('the webhook to be disabled', async () => {
      const response = await merchant.request(`/api/webhooks/${hook.id}`);
      return response.body.status === 'disabled' ? response.body : undefined;
    });
    expect(disabled).toMatchObject({
      status: 'disabled',
      disabled_at: expect.stringMatching(/Z$/),
      disabled_reason: 'failing',
    });
    // The merchant hears of it: an event, delivered to the webhook listening to it.
    const notice = await eventually('the webhook.disabled delivery', async () => receiver.requests(noticePath)[0]);
    expect(JSON.parse(notice.body).data).toEqual(disabled);
    const events = await merchant.request('/api/events?type=webhook.disabled');
    expect(events.body.results.map((event: { data: { id: number } }) => event.data.id)).toEqual([hook.id]);
    // The failing delivery's later attempts are cancelled with the disabling.
    const [delivery] = (await merchant.request(`/api/webhooks/${hook.id}/deliveries?event=${missed}`)).body.results;
    expect(delivery).toMatchObject({ status: 'cancelled', attempts: [{ attempt: 1, status_code: 503 }] });
    // While disabled, nothing is recorded for it.
    const whileDisabled = await createContact(merchant);
    const [none] = await testSql()<
      { count: number }[]
    >`select count(*)::int as count from webhook_deliveries where event_id = ${whileDisabled} and webhook_id = ${hook.id}`;
    expect(none!.count).toBe(0);
    expect(
      await merchant.request(`/api/webhooks/${hook.id}/recover`, { body: { since: '2025-05-01 00:00' } }),
    ).toMatchObject({
      status: 400,
      body: { detail: 'The webhook is disabled: enable it first (POST /api/webhooks/<id>/enable).' },
    });

    // The receiver is fixed; the merchant enables the webhook and recovers what it missed.
    receiver.script(failingPath, [], { status: 200 });
    const enabled = await merchant.request(`/api/webhooks/${hook.id}/enable`, { method: 'POST' });
    expect(enabled).toMatchObject({
      status: 200,
      body: { status: 'enabled', disabled_at: null, disabled_reason: null },
    });
    const [streak] = await testSql()<
      { failingSince: Date | null }[]
    >`select failing_since as "failingSince" from webhooks where id = ${hook.id}`;
    expect(streak!.failingSince).toBeNull();
    const recovery = await merchant.request(`/api/webhooks/${hook.id}/recover`, {
      body: { since: new Date(Date.now() - 3600_000).toISOString() },
    });
    expect(recovery.status).toBe(202);
    expect((await finishedRecovery(merchant, hook.id, recovery.body.id)).deliveries.delivered).toBe(2);
    const received = receiver
      .requests(failingPath)
      .filter((request) => request.headers['webhook-id'] !== undefined)
      .map((request) => Number(request.headers['webhook-id']!.split('_')[1]));
    expect(received.filter((id) => id === missed).length).toBeGreaterThanOrEqual(2);
    expect(received).toContain(whileDisabled);
    expect(notices.id).toBeGreaterThan(0);
  });

  test('a delivered attempt ends the failing streak; a failure begins it', async () => {
    const merchant = await createMerchant(ctx.app);
    const path = nextPath('streak');
    // Every attempt fails until the streak has been seen: a state that lasts, not the moment
    // between a failed attempt and the next one (a poll could miss it).
    receiver.script(path, [], { status: 500 });
    const hook = await createHook(merchant, receiver.url(path));
    const streak = async () =>
      (
        await testSql()<
          { failingSince: Date | null }[]
        >`select failing_since as "failingSince" from webhooks where id = ${hook.id}`
      )[0]!.failingSince;
    await createContact(merchant);
    await eventually('a failed attempt to begin the streak', async () => (await streak()) !== null);
    receiver.script(path, [], { status: 200 });
    // The failing delivery's next attempt, or this one's first (should the other have used up its attempts), is delivered.
    await createContact(merchant);
    await eventually('a delivered attempt to end the streak', async () => (await streak()) === null);
    const [row] = await testSql()<
      { disabledAt: Date | null }[]
    >`select disabled_at as "disabledAt" from webhooks where id = ${hook.id}`;
    expect(row!.disabledAt).toBeNull();
  });

  test('disabled by hand: its actor ends and cancels what waited; enabled again, it receives new events', async () => {
    const merchant = await createMerchant(ctx.app);
    const path = nextPath('manual');
    // Attempts fail, so the delivery waits in the delivery queue between them.
    receiver.script(path, [], { status: 500 });
    const hook = await createHook(merchant, receiver.url(path));
    await testSql()`update webhooks set failing_since = null where id = ${hook.id}`;
    const waiting = await createContact(merchant);
    await eventually('the first attempt', async () => receiver.requests(path).length >= 1);
    const response = await merchant.request(`/api/webhooks/${hook.id}/disable`, { method: 'POST' });
    expect(response).toMatchObject({ status: 200, body: { status: 'disabled', disabled_reason: 'manual' } });
    expect((await merchant.request(`/api/webhooks/${hook.id}/disable`, { method: 'POST' })).body.disabled_at).toBe(
      response.body.disabled_at,
    );
    // What was pending is cancelled in the disabling's own transaction.
    const [delivery] = (await merchant.request(`/api/webhooks/${hook.id}/deliveries?event=${waiting}`)).body.results;
    expect(delivery.status).not.toBe('pending');

    receiver.script(path, [], { status: 200 });
    expect((await merchant.request(`/api/webhooks/${hook.id}/enable`, { method: 'POST' })).body.status).toBe('enabled');
    const next = await createContact(merchant);
    await eventually('the next event delivered', async () => eventIdsReceived(path).includes(next));
  });
});
