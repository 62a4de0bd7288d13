/**
 * Events and their deliveries (docs/architecture.md#events-and-the-outbox: no workflow for an event nobody listens to):
 * the transaction that records an event records one delivery row per live webhook of its type, and the
 * dispatch pool sends those rows (woken by the commit, or finding them itself when nobody woke it); no
 * event is lost and none is delivered twice. Events recorded before delivery rows existed (never
 * dispatched) get their delivery rows from migration 024 and reach their webhooks the same way.
 */
import { asId } from '../../src/domain/ids';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { recordEvent } from '../../src/services/webhooks/events';
import { deleteWebhook } from '../../src/services/webhooks/webhooks';
import { outboxSweepScheduleId } from '../../src/contracts/sweeps';
import {
  ROOT,
  createMerchant,
  eventually,
  numberSequence,
  startWorker,
  testApp,
  testClient,
  testSql,
  uniqueTaskQueue,
  type TestMerchant,
  type WorkerProcess,
  type WorkerRuntime,
} from '../helpers';
import { makeCertificate, startReceiver, type Certificate, type Receiver } from '../webhook-receiver';

const workers: WorkerProcess[] = [];
const schedules: string[] = [];
let certificate: Certificate;
let receiver: Receiver;

beforeAll(async () => {
  certificate = makeCertificate();
  receiver = await startReceiver(certificate);
});

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  await receiver?.close();
  const client = await testClient();
  await Promise.all(
    schedules.map((id) =>
      client.schedule
        .getHandle(id)
        .delete()
        .catch(() => {}),
    ),
  );
});

async function launch(
  taskQueue: string,
  env: Record<string, string> = {},
  runtime?: WorkerRuntime,
): Promise<WorkerProcess> {
  const worker = await startWorker(taskQueue, { WEBHOOK_CA_FILE: certificate.certFile, ...env }, runtime);
  workers.push(worker);
  return worker;
}

const nextNumber = numberSequence('+254712');
let pathCounter = 0;
const nextPath = () => `/events/${++pathCounter}`;

async function createContacts(merchant: TestMerchant, count: number): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    const response = await merchant.request('/api/contacts', {
      form: { phone_number: nextNumber(), first_name: 'W', last_name: `F${index}` },
    });
    expect(response.status).toBe(201);
  }
}

async function hook(merchant: TestMerchant, path: string, event = 'contact.created'): Promise<number> {
  const response = await merchant.request('/api/webhooks', { form: { event, target: receiver.url(path) } });
  expect(response.status).toBe(201);
  return response.body.id;
}

/** Workflow executions Temporal holds for an organization, of any type (visibility). */
async function executions(organizationId: number): Promise<number> {
  const client = await testClient();
  const query = `OrganizationId = '${organizationId}'`;
  return (await client.workflow.count(query)).count;
}

const deliveriesOf = async (organizationId: number) =>
  await testSql()<{ eventId: number; webhookId: number; status: string; workflowStartedAt: Date | null }[]>`
    select event_id as "eventId", webhook_id as "webhookId", status, workflow_started_at as "workflowStartedAt"
    from webhook_deliveries where organization_id = ${organizationId} order by event_id, webhook_id`;

describe('events and their deliveries', () => {
  test("an event with two live webhooks of its type reaches both webhooks' actors; one nobody listens to reaches none", async () => {
    const taskQueue = uniqueTaskQueue('deliveries');
    await launch(taskQueue);
    const ctx = await testApp(taskQueue);
    const merchant = await createMerchant(ctx.app);
    await createContacts(merchant, 1);
    const [unheard] = await testSql()<
      { id: number }[]
    >`select id from events where organization_id = ${merchant.organization.id}`;
    const [first, second] = [nextPath(), nextPath()];
    const hooks = [await hook(merchant, first), await hook(merchant, second)];
    await hook(merchant, nextPath(), 'collection.received');
    const deleted = await hook(merchant, nextPath());
    await deleteWebhook(testSql(), asId('Webhook', deleted), 'deleted');
    await createContacts(merchant, 1);
    await eventually(
      'both receivers to get the event',
      async () => receiver.requests(first).length === 1 && receiver.requests(second).length === 1,
    );
    const rows = await deliveriesOf(merchant.organization.id);
    expect(rows.map((row) => row.webhookId)).toEqual(hooks);
    // No workflow per webhook (the dispatch pool sends them); an event nobody listens to recorded no delivery and started nothing.
    expect(await testSql()`select 1 from webhook_deliveries where event_id = ${unheard!.id}`).toHaveLength(0);
    expect(await executions(merchant.organization.id)).toBe(0);
  });

  test('an event committed by a process that died before anything else is delivered: the pool finds its row', async () => {
    const taskQueue = uniqueTaskQueue('sweep');
    schedules.push(outboxSweepScheduleId(taskQueue));
    await launch(taskQueue, { OUTBOX_SWEEP: 'true', OUTBOX_SWEEP_INTERVAL_SECONDS: '1' });
    const ctx = await testApp(taskQueue);
    const merchant = await createMerchant(ctx.app);
    const path = nextPath();
    await hook(merchant, path);
    // Written as the API writes it, but never handed to Temporal: the process "died" after commit.
    const orphan = await recordEvent(testSql(), {
      organizationId: merchant.organization.id,
      type: 'contact.created',
      data: { orphan: true },
      author: null,
    });
    expect(orphan.deliveries).toHaveLength(1);
    await eventually(
      'the pool to deliver the orphaned event',
      async () => receiver.requests(path).length === 1,
      30_000,
    );
    expect(JSON.parse(receiver.requests(path)[0]!.body).data).toEqual({ orphan: true });
  });

  test('killing the worker while events are recorded loses none, and each is delivered exactly once', async () => {
    const taskQueue = uniqueTaskQueue('crash');
    schedules.push(outboxSweepScheduleId(taskQueue));
    const sweepEnv = { OUTBOX_SWEEP: 'true', OUTBOX_SWEEP_INTERVAL_SECONDS: '1' };
    const first = await launch(taskQueue, sweepEnv);
    const ctx = await testApp(taskQueue);
    const merchant = await createMerchant(ctx.app);
    const path = nextPath();
    await hook(merchant, path);
    await createContacts(merchant, 10);
    await first.kill();
    // Recorded while no worker runs: their workflows wait in Temporal.
    await createContacts(merchant, 10);
    // And some whose API process died after their commit: only the dispatch pool's look at their rows finds them.
    for (let index = 0; index < 5; index += 1) {
      await recordEvent(testSql(), {
        organizationId: merchant.organization.id,
        type: 'contact.created',
        data: { index },
        author: null,
      });
    }
    await launch(taskQueue, sweepEnv);
    await eventually(
      'every event to be delivered',
      async () => new Set(receiver.requests(path).map((request) => request.headers['webhook-id'])).size === 25,
      60_000,
    );
    await eventually(
      'every delivery to be closed',
      async () => (await deliveriesOf(merchant.organization.id)).every((row) => row.status === 'delivered'),
      60_000,
    );
    expect(await deliveriesOf(merchant.organization.id)).toHaveLength(25);
    // Every attempt logged once and sent at most once. One the killed worker was making when it died is
    // logged as failed with an unknown outcome (not sent again under its number) and followed by the next.
    const [attempts] = await testSql()<{ n: number; unknown: number }[]>`
      select count(*)::int as n, count(*) filter (where a.status_code is null and a.error like 'The sender stopped during this attempt%')::int as unknown
      from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id where d.organization_id = ${merchant.organization.id}`;
    expect(attempts!.n).toBe(25 + attempts!.unknown);
    expect(receiver.requests(path).length).toBeLessThanOrEqual(attempts!.n);
    // Sent by the dispatch pool: no workflow per webhook.
    expect(await executions(merchant.organization.id)).toBe(0);
  });

  test('events recorded before deliveries were (never dispatched) get their delivery rows from migration 024, and the dispatch pool sends them', async () => {
    const taskQueue = uniqueTaskQueue('undispatched');
    schedules.push(outboxSweepScheduleId(taskQueue));
    await launch(taskQueue, { OUTBOX_SWEEP: 'true', OUTBOX_SWEEP_INTERVAL_SECONDS: '1' });
    const ctx = await testApp(taskQueue);
    const merchant = await createMerchant(ctx.app);
    const path = nextPath();
    const webhookId = await hook(merchant, path);
    const sql = testSql();
    // As migration 008 left such events: no delivery rows, not dispatched; one of them set aside by a sweep of that time.
    const undispatched = async (type: string) =>
      (
        await sql<{ id: number }[]>`
      insert into events (organization_id, type, data, dispatched_at) values (${merchant.organization.id}, ${type}, '{"undispatched": true}', null)
      returning id`
      )[0]!.id;
    const heard = await undispatched('contact.created');
    const unheard = await undispatched('collection.received');
    await sql`insert into sweep_failures (kind, row_id, error) values ('outbox-event', ${heard}, 'set aside by an earlier sweep')`;
    // The current sweep runs, and leaves them alone: it no longer looks for such events.
    await eventually(
      'a sweep of the current type to finish',
      async () =>
        (
          await ctx.client.workflow.count(
            `WorkflowType = 'outboxSweep' AND TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Completed'`,
          )
        ).count > 0,
      30_000,
    );
    expect(await deliveriesOf(merchant.organization.id)).toHaveLength(0);

    // The migration, as a deploy applies it (it only touches events never dispatched, so applying it again here is safe).
    const migration = readFileSync(join(ROOT, 'migrations/024_undispatched_events.sql'), 'utf8');
    await sql.begin((tx) => tx.unsafe(migration));
    const events = await sql<{ id: number; dispatched: boolean }[]>`
      select id, dispatched_at is not null as dispatched from events where id in ${sql([heard, unheard])} order by id`;
    expect([...events]).toEqual([
      { id: heard, dispatched: true },
      { id: unheard, dispatched: true },
    ]);
    expect(await sql`select 1 from sweep_failures where kind = 'outbox-event'`).toHaveLength(0);
    const [row] = await sql<
      { workflowId: string }[]
    >`select workflow_id as "workflowId" from webhook_deliveries where event_id = ${heard}`;
    expect(row!.workflowId).toBe(`webhook-delivery-${heard}-${webhookId}`);

    await eventually('the pool to deliver the event', async () => receiver.requests(path).length === 1, 30_000);
    expect(JSON.parse(receiver.requests(path)[0]!.body).data).toEqual({ undispatched: true });
    await eventually(
      'the delivery to be closed',
      async () => (await deliveriesOf(merchant.organization.id))[0]?.status === 'delivered',
      30_000,
    );
    expect(
      (await deliveriesOf(merchant.organization.id)).map((delivery) => [delivery.eventId, delivery.webhookId]),
    ).toEqual([[heard, webhookId]]);
    expect(await executions(merchant.organization.id)).toBe(0);
  });

  test('the worker also runs on Bun (experimental in the SDK; Node stays the default)', async () => {
    const taskQueue = uniqueTaskQueue('bun');
    await launch(taskQueue, {}, 'bun');
    const ctx = await testApp(taskQueue);
    const merchant = await createMerchant(ctx.app);
    const path = nextPath();
    await hook(merchant, path);
    await createContacts(merchant, 2);
    await eventually('both events to be delivered by the Bun worker', async () => receiver.requests(path).length === 2);
  });
});
