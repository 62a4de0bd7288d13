/**
 * Webhook recovery: what a merchant does when a receiver was down, and what the service does when
 * it stays down.
 *
 * - A recovery delivers every event of a webhook's type created in a period again (`since` up to
 *   `until`, now when not given): one fresh delivery per event, each with its own 10 attempts,
 *   through the webhook's actor like any other. Bounded (at most RECOVERY_MAX_EVENTS events, and
 *   events are kept for the retention period only) and throttled (one recovery per webhook
 *   delivering at a time; the actor attempts a limited batch at once).
 * - A webhook whose target has failed every attempt for the configured period (the failing streak
 *   begins with a failed attempt and ends with a delivered one; 5 days by default) is disabled: no
 *   deliveries are recorded for it, what its actor held is cancelled, and a `webhook.disabled`
 *   event is recorded in the same transaction (the console shows it; another webhook can receive
 *   it). The merchant enables it again and recovers the events it missed. A merchant can also
 *   disable a webhook by hand.
 */
import * as v from 'valibot';
import type { Fragment } from 'postgres';
import type { Queryable, Sql } from '../../db';
import { NotFoundError, RefusedError, fieldErrors } from '../../domain/errors';
import type { OrganizationId, RecoveryId, WebhookId } from '../../domain/ids';
import { REQUIRED, instantField } from '../../domain/input';
import {
  DELIVERY_STATUSES,
  serializeWebhook,
  type RecoveryRow,
  type WebhookDisabledReason,
  type WebhookRow,
} from '../../domain/webhooks';
import type { Actor, OrganizationActor, ServiceDeps } from '../platform/deps';
import { writeOnce, type DuplicateCheck } from '../collections/duplicate-checks';
import { recordEvent, recordRedeliveries, type RecordedEvent } from './events';
import { cancelPending } from './webhook-queue';
import { tenantScope } from '../platform/queries';
import { WEBHOOK_COLUMNS, findOwnWebhook } from './webhooks';

/** The most events one recovery delivers again; a longer period is recovered in parts (`until`). */
export const RECOVERY_MAX_EVENTS = 10_000;

export const RecoveryInput = v.object(
  {
    since: instantField('Events created at or after this time (UTC without an offset) are delivered again.'),
    until: v.optional(instantField('Up to this time, not included (now when not given).')),
  },
  REQUIRED,
);

type Deps = Pick<ServiceDeps, 'sql' | 'launcher'>;

/**
 * Disables the webhook in the caller's transaction, with its `webhook.disabled` event; `failingFor`
 * (hours) disables it only when its failing streak is at least that old. Null when nothing changed
 * (already disabled, deleted, a payment's callback, or not failing long enough).
 */
async function disable(
  tx: Queryable,
  webhookId: WebhookId,
  reason: WebhookDisabledReason,
  failingFor?: number,
): Promise<RecordedEvent | null> {
  const stillFailing =
    failingFor === undefined
      ? tx``
      : tx`and failing_since <= now() - ${failingFor}::double precision * interval '1 hour'`;
  const [webhook] = await tx<WebhookRow[]>`
    update webhooks set disabled_at = now(), disabled_reason = ${reason}, updated = now()
    where id = ${webhookId} and disabled_at is null and deleted_at is null and payment_id is null ${stillFailing}
    returning ${tx.unsafe(WEBHOOK_COLUMNS)}`;
  if (!webhook) return null;
  // Nothing more is sent: what was pending is cancelled with the disabling (a recovery delivers it again once enabled).
  await cancelPending(tx, webhookId);
  return await recordEvent(tx, {
    organizationId: webhook.organizationId,
    type: 'webhook.disabled',
    data: serializeWebhook(webhook),
    author: null,
  });
}

/**
 * Disables the webhook when its target has failed every attempt for `failingForHours`: the check
 * the dispatcher makes after a failed attempt. True when it disabled it now.
 */
export async function disableIfFailing(
  { sql }: Pick<Deps, 'sql'>,
  webhookId: WebhookId,
  failingForHours: number,
): Promise<boolean> {
  const event = await sql.begin((tx) => disable(tx, webhookId, 'failing', failingForHours));
  if (event === null) return false;
  return true;
}

/**
 * The merchant disables the webhook: no deliveries from now on, what was pending cancelled. Unchanged when already
 * disabled.
 */
export async function disableOwnWebhook(
  deps: Deps,
  actor: OrganizationActor,
  id: WebhookId,
  duplicateCheck: DuplicateCheck | null,
): Promise<WebhookRow> {
  const webhook = await findOwnWebhook(deps.sql, actor.organizationId, id);
  await writeOnce(deps.sql, actor, duplicateCheck, (tx) => disable(tx, webhook.id, 'manual'));
  return await findOwnWebhook(deps.sql, actor.organizationId, id);
}

/**
 * The merchant enables the webhook again: it receives events from now on (and what it missed through a recovery); its
 * failing streak starts afresh.
 */
export async function enableOwnWebhook(
  sql: Sql,
  actor: OrganizationActor,
  id: WebhookId,
  duplicateCheck: DuplicateCheck | null,
): Promise<WebhookRow> {
  const webhook = await findOwnWebhook(sql, actor.organizationId, id);
  await writeOnce(
    sql,
    actor,
    duplicateCheck,
    (tx) => tx`
    update webhooks set disabled_at = null, disabled_reason = null, failing_since = null, updated = now()
    where id = ${webhook.id} and disabled_at is not null and deleted_at is null`,
  );
  return await findOwnWebhook(sql, actor.organizationId, id);
}

/** The organization's webhooks that are disabled (what the console warns of), newest first. */
export async function disabledWebhooks(sql: Sql, organizationId: OrganizationId): Promise<WebhookRow[]> {
  return await sql<WebhookRow[]>`
    select ${sql.unsafe(WEBHOOK_COLUMNS)} from webhooks
    where ${tenantScope(sql, organizationId).owned()} and disabled_at is not null and deleted_at is null
      and payment_id is null
    order by disabled_at desc, id desc`;
}

/** Each delivery status and the count of a recovery's deliveries in it, as the arguments of `json_build_object`. */
const COUNT_BY_STATUS = DELIVERY_STATUSES.map(
  (status) => `'${status}', count(d.id) filter (where d.status = '${status}')`,
).join(', ');

/** Recoveries with their deliveries counted by status as they stand, newest first: one statement. */
async function recoveriesWhere(sql: Queryable, where: Fragment, limit: number): Promise<RecoveryRow[]> {
  return await sql<RecoveryRow[]>`
    select r.id, r.webhook_id as "webhookId", r.user_id as "userId", r.since, r.until, r.events, r.created,
           json_build_object(${sql.unsafe(COUNT_BY_STATUS)}) as deliveries
    from webhook_recoveries r left join webhook_deliveries d on d.recovery_id = r.id
    ${where}
    group by r.id order by r.id desc limit ${limit}`;
}

/** The webhook's recovery `recoveryId` with its deliveries' progress (404 when the webhook has none of that id). */
export async function findRecovery(sql: Sql, webhook: WebhookRow, recoveryId: RecoveryId): Promise<RecoveryRow> {
  const [row] = await recoveriesWhere(sql, sql`where r.id = ${recoveryId} and r.webhook_id = ${webhook.id}`, 1);
  if (!row) throw new NotFoundError();
  return row;
}

/** The webhook's recoveries, newest first (at most `limit`), each with its progress. */
export async function listRecoveries(sql: Sql, webhookId: WebhookId, limit = 20): Promise<RecoveryRow[]> {
  return await recoveriesWhere(sql, sql`where r.webhook_id = ${webhookId}`, limit);
}

/**
 * The recovery and its delivery rows, in one transaction that holds the webhook's row lock (one recovery delivering at
 * a time).
 */
async function recordRecovery(
  tx: Queryable,
  webhook: WebhookRow,
  actor: Actor,
  since: Date,
  until: Date,
): Promise<{ id: RecoveryId }> {
  // The lock first, the check in a statement of its own: under READ COMMITTED that statement sees what a recovery that
  // held the lock before committed.
  await tx`select id from webhooks where id = ${webhook.id} for update`;
  const [state] = await tx<{ disabled: boolean; deleted: boolean; delivering: boolean }[]>`
    select disabled_at is not null as disabled, deleted_at is not null as deleted,
           exists (select 1 from webhook_deliveries d
                   where d.webhook_id = w.id and d.recovery_id is not null and d.status = 'pending') as delivering
    from webhooks w where w.id = ${webhook.id}`;
  if (!state || state.deleted) throw new RefusedError('The webhook was deleted.');
  if (state.disabled)
    throw new RefusedError('The webhook is disabled: enable it first (POST /api/webhooks/<id>/enable).');
  if (state.delivering)
    throw new RefusedError('An earlier recovery of this webhook is still delivering: ask again when it has finished.');
  const inPeriod = tx`
    from events
    where ${tenantScope(tx, webhook.organizationId).owned()} and type = ${webhook.event}
      and created >= ${since} and created < ${until}`;
  const [{ count } = { count: 0 }] = await tx<{ count: number }[]>`select count(*)::int as count ${inPeriod}`;
  if (count > RECOVERY_MAX_EVENTS) {
    throw fieldErrors({
      until: [
        [
          `${count} events in this period; a recovery delivers at most ${RECOVERY_MAX_EVENTS}:`,
          'recover a shorter period (set until), then the next.',
        ].join(' '),
      ],
    });
  }
  const [recovery] = await tx<{ id: RecoveryId }[]>`
    insert into webhook_recoveries (organization_id, webhook_id, user_id, since, until, events)
    values (${webhook.organizationId}, ${webhook.id}, ${actor.userId}, ${since}, ${until}, ${count}) returning id`;
  if (!recovery) throw new Error('insert into webhook_recoveries returned no row');
  await recordRedeliveries(
    tx,
    {
      organizationId: webhook.organizationId,
      webhookId: webhook.id,
      recoveryId: recovery.id,
    },
    tx`select id ${inPeriod}`,
  );
  return { id: recovery.id };
}

/**
 * Delivers every event of the webhook's type created in [since, until) again (until: now when not
 * given). The dispatch pool sends the delivery rows once they are committed (woken by the commit's
 * notification). 400 for a bad period, too many events, a disabled
 * webhook, or an earlier recovery still delivering.
 */
export async function recoverWebhook(
  deps: Deps,
  actor: Actor,
  webhook: WebhookRow,
  input: v.InferOutput<typeof RecoveryInput>,
  duplicateCheck: DuplicateCheck | null,
): Promise<RecoveryRow> {
  const now = new Date();
  const until = input.until ?? now;
  if (input.since >= until) throw fieldErrors({ since: ['Must be before until (now when not given).'] });
  if (until > now) throw fieldErrors({ until: ['Must not be in the future.'] });
  const recorded = await writeOnce(
    deps.sql,
    actor,
    duplicateCheck,
    (tx) => recordRecovery(tx, webhook, actor, input.since, until),
    (row) => ({ type: 'webhook_recovery', id: row.id }),
  );
  return await findRecovery(deps.sql, webhook, recorded.id);
}
