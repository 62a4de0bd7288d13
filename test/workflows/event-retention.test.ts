import { afterAll, expect, test } from 'bun:test';
import { writeAs } from '../../src/services/merchants/audit';
import { createOrganization } from '../../src/services/merchants/organizations';
import { recordEvent } from '../../src/services/webhooks/events';
import { createWebhook } from '../../src/services/webhooks/webhooks';
import { logAttempt } from '../../src/services/webhooks/webhook-deliveries';
import { eventRetentionScheduleId } from '../../src/contracts/sweeps';
import {
  eventually,
  recordHistory,
  startWorker,
  testClient,
  testSql,
  uniqueTaskQueue,
  type WorkerProcess,
} from '../helpers';

const workers: WorkerProcess[] = [];
const schedules: string[] = [];

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
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

test('the retention Schedule deletes events older than the retention with their deliveries and attempts, and keeps younger ones', async () => {
  const sql = testSql();
  const { organization, user } = await createOrganization(sql, 'Retention');
  const webhook = await createWebhook(sql, {
    organizationId: organization.id,
    userId: user.id,
    event: 'contact.created',
    target: 'https://merchant.example/h',
  });
  const record = async (ageDays: number) => {
    const event = await recordEvent(sql, {
      organizationId: organization.id,
      type: 'contact.created',
      data: { ageDays },
      author: null,
    });
    await sql`update events set created = now() - ${ageDays}::int * interval '1 day' - interval '1 minute' where id = ${event.id}`;
    // The event recorded its delivery to the webhook; its one attempt delivered it.
    const deliveryId = event.deliveries[0]!.id;
    await logAttempt(sql, {
      deliveryId,
      webhookId: webhook.id,
      attempt: 1,
      startedAt: new Date(),
      durationMs: 1,
      outcome: 'delivered',
      statusCode: 200,
      error: null,
      responseExcerpt: null,
      final: true,
      nextAttemptAt: null,
    });
    return { eventId: event.id, deliveryId };
  };
  const expired = await record(31);
  const kept = await record(29);

  const taskQueue = uniqueTaskQueue('retention');
  schedules.push(eventRetentionScheduleId(taskQueue));
  workers.push(
    await startWorker(taskQueue, {
      RETENTION_SWEEP: 'true',
      RETENTION_SWEEP_INTERVAL_SECONDS: '1',
      EVENT_RETENTION_DAYS: '30',
    }),
  );

  const exists = async (
    table: 'events' | 'webhook_deliveries' | 'webhook_delivery_attempts',
    column: string,
    id: number,
  ) => (await sql`select 1 from ${sql(table)} where ${sql(column)} = ${id}`).length > 0;
  await eventually(
    'the expired event to be deleted',
    async () => !(await exists('events', 'id', expired.eventId)),
    30_000,
  );
  expect(await exists('webhook_deliveries', 'id', expired.deliveryId)).toBe(false);
  expect(await exists('webhook_delivery_attempts', 'delivery_id', expired.deliveryId)).toBe(false);
  expect(await exists('events', 'id', kept.eventId)).toBe(true);
  expect(await exists('webhook_delivery_attempts', 'delivery_id', kept.deliveryId)).toBe(true);

  const client = await testClient();
  const description = await client.schedule.getHandle(eventRetentionScheduleId(taskQueue)).describe();
  expect(description.action).toMatchObject({
    workflowType: 'eventRetention',
    args: [{ retentionDays: 30, batchSize: 1000 }],
  });
  const run = await eventually('a finished retention run', async () => {
    for await (const execution of client.workflow.list({
      query: `WorkflowType = 'eventRetention' AND TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Completed'`,
    }))
      return execution;
    return undefined;
  });
  await recordHistory(client, run.workflowId, 'event-retention', run.runId);
}, 60_000);

test("the retention Schedule deletes audit entries older than AUDIT_RETENTION_DAYS only, however old the events' retention is", async () => {
  const sql = testSql();
  const { organization, user } = await createOrganization(sql, 'Audit retention');
  const actor = {
    organizationId: organization.id,
    userId: user.id,
    audit: {
      userId: user.id,
      apiKeyId: null,
      channel: 'console' as const,
      clientAddress: null,
      action: 'POST /console/webhooks',
    },
  };
  /** One audited change (a webhook created through the console), made `ageDays` ago. */
  const entryAged = async (ageDays: number) => {
    const hook = await writeAs(sql, actor, (tx) =>
      createWebhook(tx, {
        organizationId: organization.id,
        userId: user.id,
        event: 'contact.created',
        target: 'https://merchant.example/a',
      }),
    );
    const [entry] = await sql<{ id: number }[]>`
      update audit_events set created = now() - ${ageDays}::int * interval '1 day' - interval '1 minute'
      where object_type = 'webhook' and object_id = ${hook.id} returning id`;
    return entry!.id;
  };
  const expired = await entryAged(41);
  // Older than the events' retention (30 days) but within the audit trail's (40): kept.
  const kept = await entryAged(39);

  const taskQueue = uniqueTaskQueue('audit-retention');
  schedules.push(eventRetentionScheduleId(taskQueue));
  workers.push(
    await startWorker(taskQueue, {
      RETENTION_SWEEP: 'true',
      RETENTION_SWEEP_INTERVAL_SECONDS: '1',
      EVENT_RETENTION_DAYS: '30',
      AUDIT_RETENTION_DAYS: '40',
    }),
  );

  const exists = async (id: number) => (await sql`select 1 from audit_events where id = ${id}`).length > 0;
  await eventually('the expired audit entry to be deleted', async () => !(await exists(expired)), 30_000);
  expect(await exists(kept)).toBe(true);
  const description = await (await testClient()).schedule.getHandle(eventRetentionScheduleId(taskQueue)).describe();
  expect(description.action).toMatchObject({
    workflowType: 'eventRetention',
    args: [{ retentionDays: 30, auditRetentionDays: 40 }],
  });
}, 60_000);
