/**
 * Events (docs/api.md#events): recorded in the transaction of the change they report, with one delivery
 * row per live webhook of their type (the outbox); the list and an event by id within the
 * organization; the status timelines the console shows.
 */
import * as v from 'valibot';
import type { Fragment } from 'postgres';
import { currentTraceparent } from '../../telemetry/trace-context';
import type { Queryable, Sql } from '../../db';
import { EVENT_TYPES, type EventRow, type EventType } from '../../domain/events';
import type {
  CollectionRequestId,
  DeliveryId,
  EventId,
  OrganizationId,
  PaymentId,
  RecoveryId,
  WebhookId,
} from '../../domain/ids';
import { choiceMessage } from '../../domain/input';
import { tenantScope, type ListPage, type PageWindow } from '../platform/queries';
import { deleteInBatches, notSetAside } from '../platform/sweeps';

const EVENT_COLUMNS = `id, organization_id as "organizationId", type, data, author, updated_by as "updatedBy",
  created, modified`;

type NewEvent = {
  organizationId: OrganizationId;
  type: EventType;
  data: Record<string, unknown>;
  author: number | null;
};

/**
 * A delivery row as recorded (its key `webhook-delivery-<event>-<webhook>`, or a redelivery's own):
 * pending until the dispatch pool sends it (woken by the commit's notification).
 */
type PendingDelivery = { id: DeliveryId; organizationId: OrganizationId; webhookId: WebhookId; eventId: EventId };

/** An event as recorded, with the deliveries its transaction recorded for it. */
export type RecordedEvent = EventRow & { deliveries: PendingDelivery[] };

/**
 * Writes an event in the caller's transaction (the outbox), so it exists exactly when the change
 * it reports does, together with one delivery row per live webhook of the organization subscribed
 * to its type, and, for a payment's event, per callback URL of that payment. One statement. After the commit
 * the dispatch pool sends those deliveries; an event nobody listens to costs nothing more.
 */
export async function recordEvent(tx: Queryable, event: NewEvent): Promise<RecordedEvent> {
  const [row] = await tx<RecordedEvent[]>`
    with event as (
      insert into events (organization_id, type, data, author, traceparent)
      values (${event.organizationId}, ${event.type}, ${tx.json(event.data as Parameters<typeof tx.json>[0])},
              ${event.author}, ${currentTraceparent()})
      returning ${tx.unsafe(EVENT_COLUMNS)}
    ), deliveries as (
      insert into webhook_deliveries
        (workflow_id, organization_id, webhook_id, event_id, redelivery, workflow_started_at)
      select 'webhook-delivery-' || event.id || '-' || w.id, w.organization_id, w.id, event.id, false, now()
      from event join webhooks w on w.organization_id = event."organizationId" and w.event = event.type
        and w.deleted_at is null and w.disabled_at is null
        -- A payment's callback URL hears of that payment only.
        and (w.payment_id is null or w.payment_id = (event.data->>'id')::bigint)
      returning id, organization_id as "organizationId", webhook_id as "webhookId", event_id as "eventId"
    )
    select event.*,
           coalesce((select json_agg(deliveries order by deliveries."webhookId") from deliveries), '[]') as deliveries
    from event`;
  if (!row) throw new Error('insert into events returned no row');
  return row;
}

type RedeliveryTarget = { organizationId: OrganizationId; webhookId: WebhookId; recoveryId?: RecoveryId };

/**
 * Redelivery rows, in the caller's transaction: one per event id `eventIds` selects (a statement
 * yielding a column `id`), in event order, each under its own key; a recovery's name it.
 */
export async function recordRedeliveries(
  tx: Queryable,
  target: RedeliveryTarget,
  eventIds: Fragment,
): Promise<PendingDelivery[]> {
  const rows = await tx<{ id: DeliveryId; eventId: EventId }[]>`
    insert into webhook_deliveries
      (id, workflow_id, organization_id, webhook_id, event_id, redelivery, recovery_id, workflow_started_at)
    select next.id,
           'webhook-delivery-' || next.event_id || '-' || ${target.webhookId}::bigint || '-redelivery-' || next.id,
           ${target.organizationId}, ${target.webhookId}, next.event_id, true, ${target.recoveryId ?? null}::bigint,
           now()
    from (select nextval(pg_get_serial_sequence('webhook_deliveries', 'id'))::bigint as id, wanted.id as event_id
          from (${eventIds}) wanted order by wanted.id) next
    order by next.id
    returning id, event_id as "eventId"`;
  return rows.map((row) => ({
    id: row.id,
    organizationId: target.organizationId,
    webhookId: target.webhookId,
    eventId: row.eventId,
  }));
}

/** The redelivery row of an event to a webhook (the merchant asked for it), in the caller's transaction. */
export async function recordRedelivery(
  tx: Queryable,
  input: Omit<RedeliveryTarget, 'recoveryId'> & { eventId: EventId },
): Promise<PendingDelivery> {
  const [row] = await recordRedeliveries(tx, input, tx`select ${input.eventId}::bigint as id`);
  if (!row) throw new Error('insert into webhook_deliveries returned no row');
  return row;
}

export type TimelineEntry = { eventId: EventId; status: string; error: string | null; created: Date };

/**
 * The status changes of one object: each event of `type` about it, oldest first, with the status and error fields its
 * data names.
 */
async function timeline(
  sql: Queryable,
  organizationId: OrganizationId,
  type: EventType,
  id: number,
  fields: { status: string; error: string },
): Promise<TimelineEntry[]> {
  return await sql<TimelineEntry[]>`
    select id as "eventId", data->>${fields.status} as status, data->>${fields.error} as error, created from events
    where ${tenantScope(sql, organizationId).owned()} and type = ${type} and data->>'id' = ${String(id)}
    order by id`;
}

/** A collection request's status timeline: each `collectionrequest.status.changed` event for it, oldest first. */
export const requestStatusTimeline = (
  sql: Queryable,
  organizationId: OrganizationId,
  requestId: CollectionRequestId,
): Promise<TimelineEntry[]> =>
  timeline(sql, organizationId, 'collectionrequest.status.changed', requestId, {
    status: 'status',
    error: 'error_message',
  });

/** A payment's state timeline: each `payment.status.changed` event for it, oldest first. */
export const paymentStateTimeline = (
  sql: Queryable,
  organizationId: OrganizationId,
  paymentId: PaymentId,
): Promise<TimelineEntry[]> =>
  timeline(sql, organizationId, 'payment.status.changed', paymentId, { status: 'state', error: 'last_error' });

export const EventFilters = v.object({ type: v.optional(v.picklist(EVENT_TYPES, choiceMessage)) });
type EventFilterValues = v.InferOutput<typeof EventFilters>;

/** One page of an organization's events (newest first) of a type or all, with the total count. */
export async function listEvents(
  sql: Sql,
  organizationId: OrganizationId,
  filters: EventFilterValues,
  page: PageWindow,
): Promise<ListPage<EventRow>> {
  return await tenantScope(sql, organizationId).listPage<EventRow>(
    {
      columns: sql.unsafe(EVENT_COLUMNS),
      from: sql`events`,
      filters: sql`${filters.type !== undefined ? sql`and type = ${filters.type}` : sql``}`,
      orderBy: sql`order by id desc`,
    },
    page,
  );
}

/** The organization's event `id` (403 when another organization's, 404 when none). */
export async function findOwnEvent(sql: Queryable, organizationId: OrganizationId, id: EventId): Promise<EventRow> {
  return await tenantScope(sql, organizationId).ownRow<EventRow>({
    table: 'events',
    id,
    columns: sql.unsafe(EVENT_COLUMNS),
  });
}

// ---------------------------------------------------------------------------------------------
/**
 * Deletes events older than `retentionDays`, in batches so no transaction holds many locks; their
 * deliveries and attempt logs go with them (foreign keys cascade). An event that cannot be
 * deleted is set aside (sweeps.ts) and the others still go.
 */
export async function deleteExpiredEvents(
  sql: Sql,
  { retentionDays, batchSize }: { retentionDays: number; batchSize: number },
  onProgress: (deleted: number) => void,
): Promise<{ deleted: number; setAside: number }> {
  return await deleteInBatches(
    sql,
    'retention-event',
    batchSize,
    async (limit) =>
      (
        await sql<{ id: number }[]>`
      select id from events where created < now() - ${retentionDays}::int * interval '1 day'
        ${notSetAside(sql, 'retention-event', 'events.id')}
      order by id limit ${limit}`
      ).map((row) => row.id),
    async (ids) => (await sql`delete from events where id in ${sql(ids)} returning id`).length,
    onProgress,
  );
}
