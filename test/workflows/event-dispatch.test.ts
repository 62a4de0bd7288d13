import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { recordEvent } from '../../src/services/events';
import { eventDispatchStatusQuery } from '../../src/workflows/event-dispatch';
import { eventDispatchWorkflowId, outboxSweepScheduleId } from '../../src/workflows/shared';
import {
  createMerchant, eventually, startWorker, testApp, testClient, testSql, uniqueTaskQueue, type TestMerchant, type WorkerProcess, type WorkerRuntime,
} from '../helpers';

const workers: WorkerProcess[] = [];
const schedules: string[] = [];

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  const client = await testClient();
  await Promise.all(schedules.map((id) => client.schedule.getHandle(id).delete().catch(() => {})));
});

async function launch(taskQueue: string, env: Record<string, string> = {}, runtime?: WorkerRuntime): Promise<WorkerProcess> {
  const worker = await startWorker(taskQueue, env, runtime);
  workers.push(worker);
  return worker;
}

let counter = 20000;
const nextNumber = () => `+2547123${String(counter++).padStart(5, '0')}`;

async function createContacts(merchant: TestMerchant, count: number): Promise<number[]> {
  const ids: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const response = await merchant.request('/api/contacts', { form: { phone_number: nextNumber(), first_name: 'W', last_name: `F${index}` } });
    expect(response.status).toBe(201);
    ids.push(response.body.id);
  }
  return ids;
}

async function eventIds(organizationId: number): Promise<number[]> {
  const rows = await testSql()<{ id: number }[]>`select id from events where organization_id = ${organizationId} order by id`;
  return rows.map((row) => row.id);
}

async function undispatched(organizationId: number): Promise<number> {
  const [row] = await testSql()<{ n: number }[]>`
    select count(*)::int as n from events where organization_id = ${organizationId} and dispatched_at is null`;
  return row?.n ?? -1;
}

/** How many dispatch workflow executions Temporal holds for an organization (visibility). */
async function dispatchExecutions(organizationId: number, status?: 'Completed'): Promise<number> {
  const client = await testClient();
  const query = `WorkflowType = 'eventDispatch' AND OrganizationId = '${organizationId}'${status ? ` AND ExecutionStatus = '${status}'` : ''}`;
  return (await client.workflow.count(query)).count;
}

describe('event dispatch', () => {
  test('a recorded event gets its workflow, with search attributes, and is marked dispatched', async () => {
    const taskQueue = uniqueTaskQueue('dispatch');
    await launch(taskQueue);
    const ctx = await testApp(taskQueue);
    const merchant = await createMerchant(ctx.app);
    const [contactId] = await createContacts(merchant, 1);
    const [eventId] = await eventIds(merchant.organization.id);
    const handle = ctx.client.workflow.getHandle(eventDispatchWorkflowId(eventId!));
    await handle.result();
    expect(await handle.query(eventDispatchStatusQuery)).toBe('dispatched');
    const description = await handle.describe();
    expect(description.typedSearchAttributes.getAll().map((pair) => [pair.key.name, pair.value])).toEqual(
      expect.arrayContaining([['OrganizationId', String(merchant.organization.id)], ['EventType', 'contact.created']]),
    );
    const [row] = await testSql()<{ dispatchedAt: Date | null; data: { id: number } }[]>`
      select dispatched_at as "dispatchedAt", data from events where id = ${eventId!}`;
    expect(row?.dispatchedAt).toBeInstanceOf(Date);
    expect(row?.data.id).toBe(contactId!);
    // An operator filters by organization in the UI with the same query.
    await eventually('visibility to list the workflow', async () => (await dispatchExecutions(merchant.organization.id, 'Completed')) === 1);
  });

  test('a second start for the same event is refused: one workflow per event', async () => {
    const taskQueue = uniqueTaskQueue('dedupe');
    await launch(taskQueue);
    const ctx = await testApp(taskQueue);
    const merchant = await createMerchant(ctx.app);
    await createContacts(merchant, 1);
    const [eventId] = await eventIds(merchant.organization.id);
    await ctx.client.workflow.getHandle(eventDispatchWorkflowId(eventId!)).result();
    const { startEventDispatch } = await import('../../src/temporal/events');
    const again = await startEventDispatch(ctx.client, taskQueue, { eventId: eventId!, organizationId: merchant.organization.id, type: 'contact.created' });
    expect(again).toBe(false);
    expect(await dispatchExecutions(merchant.organization.id)).toBe(1);
  });

  test('the outbox sweep dispatches events whose starter died before starting their workflow', async () => {
    const taskQueue = uniqueTaskQueue('sweep');
    schedules.push(outboxSweepScheduleId(taskQueue));
    await launch(taskQueue, { OUTBOX_SWEEP: 'true', OUTBOX_SWEEP_INTERVAL_SECONDS: '1', OUTBOX_GRACE_SECONDS: '0' });
    const ctx = await testApp(taskQueue);
    const merchant = await createMerchant(ctx.app);
    // Written as the API writes it, but never handed to Temporal: the process "died" after commit.
    const orphan = await recordEvent(testSql(), { organizationId: merchant.organization.id, type: 'contact.created', data: { orphan: true }, author: null });
    await eventually('the sweep to dispatch the orphaned event', async () => (await undispatched(merchant.organization.id)) === 0, 30_000);
    const result = await ctx.client.workflow.getHandle(eventDispatchWorkflowId(orphan.id)).describe();
    expect(result.taskQueue).toBe(taskQueue);
    expect(await dispatchExecutions(merchant.organization.id)).toBe(1);
  });

  test('killing the worker while events are recorded loses none, and each is dispatched exactly once', async () => {
    const taskQueue = uniqueTaskQueue('crash');
    schedules.push(outboxSweepScheduleId(taskQueue));
    const sweepEnv = { OUTBOX_SWEEP: 'true', OUTBOX_SWEEP_INTERVAL_SECONDS: '1', OUTBOX_GRACE_SECONDS: '2' };
    const first = await launch(taskQueue, sweepEnv);
    const ctx = await testApp(taskQueue);
    const merchant = await createMerchant(ctx.app);
    await createContacts(merchant, 10);
    await first.kill();
    // Recorded while no worker runs: their workflows wait in Temporal.
    await createContacts(merchant, 10);
    // And some whose API process died between commit and start: only the sweep can find them.
    for (let index = 0; index < 5; index += 1) {
      await recordEvent(testSql(), { organizationId: merchant.organization.id, type: 'contact.created', data: { index }, author: null });
    }
    expect(await undispatched(merchant.organization.id)).toBeGreaterThan(0);
    await launch(taskQueue, sweepEnv);
    const ids = await eventIds(merchant.organization.id);
    expect(ids).toHaveLength(25);
    await eventually('every event to be dispatched', async () => (await undispatched(merchant.organization.id)) === 0, 60_000);
    await eventually('every dispatch workflow to show as completed', async () => (await dispatchExecutions(merchant.organization.id, 'Completed')) === 25);
    expect(await dispatchExecutions(merchant.organization.id)).toBe(25);
  });

  test('the worker also runs on Bun (experimental in the SDK; Node stays the default)', async () => {
    const taskQueue = uniqueTaskQueue('bun');
    await launch(taskQueue, {}, 'bun');
    const ctx = await testApp(taskQueue);
    const merchant = await createMerchant(ctx.app);
    await createContacts(merchant, 2);
    await eventually('both events to be dispatched by the Bun worker', async () => (await undispatched(merchant.organization.id)) === 0);
    expect(await dispatchExecutions(merchant.organization.id)).toBe(2);
  });
});
