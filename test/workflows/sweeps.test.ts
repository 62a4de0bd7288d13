/**
 * One bad row never stops a sweep (docs/architecture.md#events-and-the-outbox): a poisoned row in each sweep's table is set aside
 * with its error, visible to operators (the table and the admin CLI), and the sweep's other rows
 * are processed, by the real Schedules on the real worker.
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { insertCollectionRequest } from '../../src/services/collections/request-creation';
import { recordEvent } from '../../src/services/webhooks/events';
import { createOrganization, fundWallet } from '../../src/services/merchants/organizations';
import { eventRetentionScheduleId, outboxSweepScheduleId } from '../../src/contracts/sweeps';
import {
  ROOT,
  ageRequests,
  eventually,
  recordHistory,
  startWorker,
  testClient,
  testSql,
  uniqueNumber,
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

const setAside = async (kind: string, rowId: number) =>
  (
    await testSql()<{ error: string }[]>`select error from sweep_failures where kind = ${kind} and row_id = ${rowId}`
  )[0];

function adminJson(args: string[]): Record<string, unknown> {
  const result = spawnSync(process.execPath, ['src/admin.ts', ...args, '--json'], {
    cwd: ROOT,
    env: process.env,
    encoding: 'utf8',
  });
  expect(result.status).toBe(0);
  return JSON.parse(result.stdout);
}

async function organization(name: string) {
  const created = await createOrganization(testSql(), `${name} ${Date.now()}`);
  await fundWallet(testSql(), created.organization.id, 'BXC', '100');
  return created;
}

describe('the outbox sweep', () => {
  test('sets aside a request it cannot start, and starts the others', async () => {
    const sql = testSql();
    const { organization: org, user } = await organization('Outbox poison');
    const orphan = (phone: string, subscriptionSettings: Record<string, unknown> | null) =>
      insertCollectionRequest(sql, {
        organizationId: org.id,
        author: user.id,
        phoneNumber: phone,
        network: 'MTN Uganda',
        amount: '10',
        currency: 'BXC',
        accountId: null,
        firstName: null,
        lastName: null,
        reason: 'sweep',
        metadata: null,
        successMessage: null,
        sendInstructions: false,
        instructions: null,
        expiresAt: new Date(Date.now() + 60_000),
        startAt: null,
        retryIntervalSeconds: null,
        maxAttempts: 0,
        subscriptionSettings,
      });
    // Committed, never launched (the API "died") long enough ago for the sweep; one of them holds settings no launch can read.
    const poisonedRequest = await orphan(uniqueNumber('+256772'), {
      start_date: '03/92/+021 22T12:03',
      end_date: 'never',
      frequency: 'weekly',
    });
    const goodRequest = await orphan(uniqueNumber('+256772'), null);
    await ageRequests([poisonedRequest.request.id, goodRequest.request.id]);
    const taskQueue = uniqueTaskQueue('outbox-poison');
    schedules.push(outboxSweepScheduleId(taskQueue));
    workers.push(
      await startWorker(taskQueue, {
        OUTBOX_SWEEP: 'true',
        OUTBOX_SWEEP_INTERVAL_SECONDS: '1',
      }),
    );

    await eventually(
      'the good request to be launched',
      async () =>
        (
          await sql`select 1 from collection_requests where id = ${goodRequest.request.id} and workflow_started_at is not null`
        ).length > 0,
      30_000,
    );
    const client = await testClient();
    const sweep = await eventually('a finished sweep', async () => {
      for await (const execution of client.workflow.list({
        query: `WorkflowType = 'outboxSweep' AND TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Completed'`,
      }))
        return execution;
      return undefined;
    });
    await recordHistory(client, sweep.workflowId, 'outbox-sweep', sweep.runId);
    expect(
      (
        await eventually(
          'the poisoned request to be set aside',
          () => setAside('outbox-request', poisonedRequest.request.id),
          30_000,
        )
      ).error,
    ).toContain('unreadable subscription dates');
    const [poisoned] =
      await sql`select workflow_started_at from collection_requests where id = ${poisonedRequest.request.id}`;
    expect(poisoned!.workflow_started_at).toBeNull();

    // Operators see it, and can put it back once its cause is fixed.
    const listed = adminJson(['sweeps', 'failures']) as { failures: { kind: string; rowId: number }[] };
    expect(listed.failures).toContainEqual(
      expect.objectContaining({ kind: 'outbox-request', rowId: poisonedRequest.request.id }),
    );
    await sql`update collection_requests set subscription_settings = null where id = ${poisonedRequest.request.id}`;
    expect(
      adminJson(['sweeps', 'retry', '--kind', 'outbox-request', '--id', String(poisonedRequest.request.id)]),
    ).toMatchObject({ retried: true });
    await eventually(
      'the mended request to be launched',
      async () =>
        (
          await sql`select 1 from collection_requests where id = ${poisonedRequest.request.id} and workflow_started_at is not null`
        ).length > 0,
      30_000,
    );
  }, 90_000);
});

describe('retention', () => {
  test('sets aside an event it cannot delete, deletes the other expired ones and the expired Duplicate-Check-Keys', async () => {
    const sql = testSql();
    const { organization: org } = await organization('Retention poison');
    const expiredEvent = async () => {
      const event = await recordEvent(sql, { organizationId: org.id, type: 'contact.created', data: {}, author: null });
      await sql`update events set created = now() - interval '31 days' where id = ${event.id}`;
      return event.id;
    };
    const pinned = await expiredEvent();
    const expired = await Promise.all([expiredEvent(), expiredEvent()]);
    // Something else still refers to the pinned event, so deleting it fails (a foreign key without cascade).
    const pins = `retention_pins_${Date.now()}`;
    await sql.unsafe(`create table ${pins} (event_id bigint references events(id))`);
    await sql`insert into ${sql(pins)} (event_id) values (${pinned})`;
    const [liveKey, expiredKey] = await sql<{ id: number }[]>`
      insert into duplicate_check_keys (organization_id, key, method, path, expires_at)
      values (${org.id}, 'live', 'POST', '/api/contacts', now() + interval '1 hour'),
             (${org.id}, 'expired', 'POST', '/api/contacts', now() - interval '1 second')
      returning id`;
    try {
      const taskQueue = uniqueTaskQueue('retention-poison');
      schedules.push(eventRetentionScheduleId(taskQueue));
      workers.push(
        await startWorker(taskQueue, {
          RETENTION_SWEEP: 'true',
          RETENTION_SWEEP_INTERVAL_SECONDS: '1',
          EVENT_RETENTION_DAYS: '30',
        }),
      );
      await eventually(
        'the other expired events to be deleted',
        async () => (await sql`select 1 from events where id in ${sql(expired)}`).length === 0,
        30_000,
      );
      expect(
        (await eventually('the pinned event to be set aside', () => setAside('retention-event', pinned), 30_000)).error,
      ).toContain('foreign key');
      expect(await sql`select 1 from events where id = ${pinned}`).toHaveLength(1);
      await eventually(
        'the expired key to be deleted',
        async () => (await sql`select 1 from duplicate_check_keys where id = ${expiredKey!.id}`).length === 0,
        30_000,
      );
      expect(await sql`select 1 from duplicate_check_keys where id = ${liveKey!.id}`).toHaveLength(1);
    } finally {
      await sql.unsafe(`drop table ${pins}`);
    }
  }, 90_000);
});
