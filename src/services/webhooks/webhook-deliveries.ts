/**
 * Webhook deliveries (docs/api.md#webhooks): each attempt as the delivery workflow records it, a webhook's delivery
 * log, and the redelivery of an event.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import { fieldErrors } from '../../domain/errors';
import type { EventType } from '../../domain/events';
import type { DeliveryId, EventId, WebhookId } from '../../domain/ids';
import { REQUIRED } from '../../domain/input';
import type { OrganizationActor, ServiceDeps } from '../platform/deps';
import { writeOnce, type DuplicateCheck } from '../collections/duplicate-checks';
import { recordRedelivery } from './events';
import { PROBE_AFTER_FAULTS, PROBE_SPACING_MAX_SECONDS } from './webhook-queue';
import { tenantScope, type ListPage, type PageWindow } from '../platform/queries';
import type {
  AttemptOutcome,
  AttemptRow,
  DeliveryRow,
  DeliveryStatus,
  ReceiverProbing,
  WebhookRow,
} from '../../domain/webhooks';
import { integerId } from './webhooks';

const ATTEMPT_COLUMNS = `attempt, started_at as "startedAt", duration_ms as "durationMs", outcome,
  status_code as "statusCode", error, response_excerpt as "responseExcerpt"`;

/**
 * What an attempt says of its receiver: it answered (any HTTP status), or a fault (a timeout, a
 * refused or broken connection: no status at all).
 */
type ReceiverNote = 'answered' | 'fault';

type NewAttempt = Omit<AttemptRow, 'outcome'> & {
  deliveryId: DeliveryId;
  outcome: AttemptOutcome;
  webhookId: WebhookId;
};

/**
 * Logs an attempt once per (delivery, attempt number), in one statement: when it is final (any
 * outcome but a failure with attempts left) the delivery is closed with it, otherwise its row is
 * due again at `nextAttemptAt` for the next attempt (the queue, services/webhooks/webhook-queue.ts); a 410
 * retires the webhook. Returns the attempt as logged: when another run of the activity logged it
 * first, that record wins and nothing else changes.
 */
export async function logAttempt(
  sql: Queryable,
  attempt: NewAttempt & { final: boolean; nextAttemptAt: Date | null; receiver?: ReceiverNote },
): Promise<AttemptRow> {
  const note = attempt.receiver ?? null;
  const [logged] = await sql<AttemptRow[]>`
    with inserted as (
      insert into webhook_delivery_attempts
        (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_excerpt)
      values (${attempt.deliveryId}, ${attempt.attempt}, ${attempt.startedAt}, ${attempt.durationMs},
              ${attempt.outcome}, ${attempt.statusCode}, ${attempt.error}, ${attempt.responseExcerpt})
      on conflict (delivery_id, attempt) do nothing
      returning ${sql.unsafe(ATTEMPT_COLUMNS)}),
    -- The delivery's row moves with it: closed by a final attempt, else due again at its next one.
    queued as (
      update webhook_deliveries set
        status = case when ${attempt.final}::boolean then ${attempt.outcome} else status end,
        finished_at = case when ${attempt.final}::boolean then coalesce(finished_at, now()) else finished_at end,
        next_attempt = case when ${attempt.final}::boolean then next_attempt else ${attempt.attempt + 1} end,
        next_attempt_at = case when ${attempt.final}::boolean then null else ${attempt.nextAttemptAt}::timestamptz end,
        leased_until = null
      where id = ${attempt.deliveryId} and exists (select 1 from inserted)),
    gone as (
      update webhooks set deleted_at = now(), deleted_reason = 'gone', updated = now()
      where id = ${attempt.webhookId} and ${attempt.outcome} = 'gone' and deleted_at is null
        and exists (select 1 from inserted)),
    -- The failing streak (webhook-recovery.ts): begun by a failure, ended by a delivery; written only when it changes.
    streak as (
      update webhooks
      set failing_since = case when ${attempt.outcome} = 'delivered' then null
                               else ${attempt.startedAt}::timestamptz end
      where id = ${attempt.webhookId} and exists (select 1 from inserted)
        and ((${attempt.outcome} = 'delivered' and failing_since is not null)
          or (${attempt.outcome} = 'failed' and failing_since is null))),
    -- The receiver's health (webhook-queue.ts, PROBE_AFTER_FAULTS): a fault counts towards probing it, any answer ends
    -- that; written only when it changes, so a healthy receiver's attempts write nothing here.
    receiver as (
      update webhook_receivers r set
        failures = case when ${note} = 'answered' then 0 else r.failures + 1 end,
        probing_since = case when ${note} = 'answered' then null
                             when r.failures + 1 >= ${PROBE_AFTER_FAULTS}::int then coalesce(r.probing_since, now())
                             else r.probing_since end,
        probe_after = case when ${note} = 'answered' or r.failures + 1 < ${PROBE_AFTER_FAULTS}::int then null
                           else now() + least(greatest(extract(epoch from now() - coalesce(r.probing_since, now())), 1),
                                              ${PROBE_SPACING_MAX_SECONDS}::int) * interval '1 second' end,
        last_fault = case when ${note} = 'answered' then r.last_fault else ${attempt.error} end,
        last_fault_at = case when ${note} = 'answered' then r.last_fault_at else now() end
      from webhooks w
      where w.id = ${attempt.webhookId} and r.origin = w.receiver and ${note}::text is not null
        and exists (select 1 from inserted)
        and (${note} = 'fault' or r.failures > 0 or r.probing_since is not null))
    select * from inserted
    union all
    select ${sql.unsafe(ATTEMPT_COLUMNS)} from webhook_delivery_attempts
    where delivery_id = ${attempt.deliveryId} and attempt = ${attempt.attempt} and not exists (select 1 from inserted)`;
  if (!logged) throw new Error(`attempt ${attempt.attempt} of delivery ${attempt.deliveryId} vanished`);
  return logged;
}

export async function finishDelivery(
  sql: Queryable,
  deliveryId: DeliveryId,
  status: Exclude<DeliveryStatus, 'pending'>,
): Promise<void> {
  await sql`
    update webhook_deliveries
    set status = ${status}, finished_at = coalesce(finished_at, now()), next_attempt_at = null, leased_until = null
    where id = ${deliveryId}`;
}

const DELIVERY_COLUMNS = `
  d.id, d.organization_id as "organizationId", d.webhook_id as "webhookId", d.event_id as "eventId",
  e.type as "eventType", d.redelivery, d.status, d.created, d.finished_at as "finishedAt",
  d.next_attempt_at as "nextAttemptAt",
  (select json_build_object('origin', r.origin, 'faults', r.failures, 'since', r.probing_since,
                            'lastFault', r.last_fault)
   from webhooks w join webhook_receivers r on r.origin = w.receiver
   where w.id = d.webhook_id and d.status = 'pending' and r.probing_since is not null) as probing,
  coalesce((select json_agg(json_build_object(
              'attempt', a.attempt, 'startedAt', a.started_at, 'durationMs', a.duration_ms, 'outcome', a.outcome,
              'statusCode', a.status_code, 'error', a.error, 'responseExcerpt', a.response_excerpt
            ) order by a.attempt)
            from webhook_delivery_attempts a where a.delivery_id = d.id), '[]') as attempts`;
const DELIVERY_FROM = 'webhook_deliveries d join events e on e.id = d.event_id';

type RawDeliveryRow = Omit<DeliveryRow, 'attempts' | 'probing'> & {
  attempts: (Omit<AttemptRow, 'startedAt'> & { startedAt: string })[];
  probing: (Omit<ReceiverProbing, 'since'> & { since: string }) | null;
};

function toDeliveryRow({ probing, ...row }: RawDeliveryRow): DeliveryRow {
  return {
    ...row,
    attempts: row.attempts.map((attempt) => ({ ...attempt, startedAt: new Date(attempt.startedAt) })),
    probing: probing === null ? null : { ...probing, since: new Date(probing.since) },
  };
}

/** One page of an organization's webhook's deliveries (newest first), each with its attempts. */
export async function listDeliveries(
  sql: Sql,
  webhook: Pick<WebhookRow, 'id' | 'organizationId'>,
  filters: { eventId?: EventId },
  page: PageWindow,
): Promise<ListPage<DeliveryRow>> {
  const ofEvent = filters.eventId === undefined ? sql`` : sql`and d.event_id = ${filters.eventId}`;
  const { count, rows } = await tenantScope(sql, webhook.organizationId).listPage<RawDeliveryRow>(
    {
      columns: sql.unsafe(DELIVERY_COLUMNS),
      from: sql.unsafe(DELIVERY_FROM),
      alias: 'd',
      filters: sql`and d.webhook_id = ${webhook.id} ${ofEvent}`,
      orderBy: sql`order by d.id desc`,
    },
    page,
  );
  return { count, rows: rows.map(toDeliveryRow) };
}

async function findDelivery(sql: Sql, deliveryId: DeliveryId): Promise<DeliveryRow | undefined> {
  const [row] = await sql<RawDeliveryRow[]>`
    select ${sql.unsafe(DELIVERY_COLUMNS)} from ${sql.unsafe(DELIVERY_FROM)} where d.id = ${deliveryId}`;
  return row === undefined ? undefined : toDeliveryRow(row);
}

/** An event's id as a caller names it (one that names no event of the webhook's finds nothing). */
const eventId = v.pipe(
  integerId,
  v.transform((value) => value as EventId),
);
export const DeliveryFilters = v.object({ event: v.optional(v.pipe(eventId, v.description('An event id.'))) });
export const Redelivery = v.object(
  { event: v.pipe(eventId, v.description("The event to deliver again: an event of the webhook's type.")) },
  REQUIRED,
);

/**
 * A fresh delivery of one of the organization's events to one of its webhooks (manual redelivery,
 * docs/api.md#webhooks): 400 when the event does not exist in the organization or is of another type. The
 * delivery row (claiming the Duplicate-Check-Key) is sent by the dispatch pool once committed
 * (woken by the commit's notification).
 */
export async function redeliverEvent(
  { sql }: Pick<ServiceDeps, 'sql'>,
  actor: OrganizationActor,
  webhook: WebhookRow,
  eventId: EventId,
  duplicateCheck: DuplicateCheck | null,
): Promise<DeliveryRow> {
  const organizationId = webhook.organizationId;
  const [event] = await sql<{ type: EventType }[]>`
    select type from events where id = ${eventId} and ${tenantScope(sql, organizationId).owned()}`;
  if (!event) throw fieldErrors({ event: [`Invalid pk "${eventId}" - object does not exist.`] });
  if (event.type !== webhook.event) {
    throw fieldErrors({
      event: [`Event ${eventId} is a ${event.type} event; this webhook receives ${webhook.event} events.`],
    });
  }
  const pending = await writeOnce(
    sql,
    actor,
    duplicateCheck,
    (tx) => recordRedelivery(tx, { organizationId, webhookId: webhook.id, eventId }),
    (row) => ({ type: 'webhook_delivery', id: row.id }),
  );
  const delivery = await findDelivery(sql, pending.id);
  if (!delivery) throw new Error(`delivery ${pending.id} vanished after it was opened`);
  return delivery;
}
