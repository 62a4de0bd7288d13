/**
 * The delivery queue: the pending delivery rows, each with the attempt it makes next and when
 * (migration 021). The dispatch pool (activities/webhook-dispatcher.ts) claims due rows across
 * webhooks under a lease, fairly by organization and by receiver, and logs each attempt with its
 * next schedule in one statement (services/webhooks/webhook-deliveries.ts, `logAttempt`). The backlog
 * lives here, never in workflow state, so it may be of any size.
 */
import type { DeliveryId, EventId, WebhookId } from '../../domain/ids';
import type { Queryable } from '../../db';

/** A row a sender took: the attempt it makes, and whether an earlier sender's lease on it lapsed unlogged. */
export type ClaimedDelivery = {
  webhookId: WebhookId;
  deliveryId: DeliveryId;
  attempt: number;
  redelivery: boolean;
  /** An earlier sender took this attempt and stopped before logging it: whether it reached the receiver is unknown. */
  lapsed: boolean;
  dueAt: Date;
  event: { id: EventId; data: Record<string, unknown>; created: Date; traceparent: string | null };
};

/** How a claim shares the pool: what each webhook, receiver and organization may have in flight at once. */
export type ClaimShares = {
  /** Deliveries of one webhook in flight (`WEBHOOK_CONCURRENCY`). */
  perWebhook: number;
  /**
   * Deliveries to one receiver (origin) in flight: the outgoing connection pool's limit per origin too
   * (`WEBHOOK_RECEIVER_CONCURRENCY`).
   */
  perReceiver: number;
  /** Deliveries of one organization in flight, all its webhooks together (`WEBHOOK_ORGANIZATION_CONCURRENCY`). */
  perOrganization: number;
};

/** POSTs in flight to a receiver being probed (it timed out or refused `PROBE_AFTER_FAULTS` times in a row). */
const PROBE_IN_FLIGHT = 1;
/** Consecutive timeouts or connection failures after which a receiver is probed. */
export const PROBE_AFTER_FAULTS = 3;
/**
 * The longest wait, in seconds, between two probes of a receiver. A probe that fails waits as long as
 * the receiver has been probed (at least a second) before the next: a receiver that refuses at once
 * is not asked a hundred times a second, and one down for hours is asked twice a minute.
 */
export const PROBE_SPACING_MAX_SECONDS = 30;

type ClaimedRow = Omit<ClaimedDelivery, 'event'> & {
  eventId: EventId;
  data: Record<string, unknown>;
  eventCreated: Date;
  traceparent: string | null;
};

/**
 * The room of each webhook with due rows that no other claim holds now (their rows and their
 * receivers' locked): what it, its receiver and its organization have in flight and may still take.
 */
function claimRoom(sql: Queryable, dispatchQueue: string | null, shares: ClaimShares, limit: number) {
  return sql`
    ready as (
      select w.id, w.organization_id, w.receiver, w.dispatched_at, r.probing_since is not null as probing,
             coalesce(r.probe_after <= now(), true) as probe_due,
             (select count(*) from webhook_deliveries l
              where l.webhook_id = w.id and l.status = 'pending' and l.leased_until >= now())::int as in_flight
      from webhooks w join webhook_receivers r on r.origin = w.receiver
      where w.deleted_at is null and w.disabled_at is null
        and (${dispatchQueue}::text is null or w.dispatch_queue = ${dispatchQueue})
        -- Asked of each webhook by its own queue (OFFSET 0 keeps it a per-webhook look-up: as a join, a plan scanned
        -- every webhook's due rows for each webhook, 180 ms a claim with 4,000 rows waiting on a probed receiver).
        and exists (select 1 from webhook_deliveries d where d.webhook_id = w.id and d.status = 'pending'
                      and d.next_attempt_at <= now() and (d.leased_until is null or d.leased_until < now()) offset 0)
      for no key update of w, r skip locked),
    -- What each receiver and organization may still take, as one-row maps each webhook looks itself up in: joins of
    -- these sets (which the planner cannot estimate) ran as nested loops, 100 ms a claim with 220 receivers.
    receivers as materialized (
      select jsonb_object_agg(receiver, free) as free from (
        select receiver, (case when not bool_or(probing) then ${shares.perReceiver}::int
                               when bool_and(probe_due) then ${PROBE_IN_FLIGHT}::int else 0 end) - (
          select coalesce(sum((select count(*) from webhook_deliveries l
                               where l.webhook_id = lw.id and l.status = 'pending' and l.leased_until >= now())), 0)
          from webhooks lw where lw.receiver = ready.receiver)::int as free
        from ready group by receiver) r),
    organizations as materialized (
      select jsonb_object_agg(organization_id::text, in_flight) as in_flight from (
        select organization_id, (
          select count(*) from webhook_deliveries l
          where l.organization_id = ready.organization_id and l.status = 'pending' and l.leased_until >= now()
        )::int as in_flight
        from ready group by organization_id) o),
    counted as (
      select ready.*, (receivers.free->>ready.receiver)::int as receiver_free,
             (organizations.in_flight->>ready.organization_id::text)::int as organization_in_flight,
             max(ready.dispatched_at) over (partition by ready.organization_id) as organization_dispatched_at
      from ready, receivers, organizations),
    room as (
      select counted.*,
             least(${shares.perWebhook}::int - in_flight, receiver_free,
                   ${shares.perOrganization}::int - organization_in_flight, ${limit}::int) as free
      from counted)`;
}

/**
 * Takes up to `limit` due deliveries across every live webhook for a dispatcher of the pool
 * (activities/webhook-dispatcher.ts), leased for `leaseMs`, in one statement with each row's event.
 * How it shares the pool (docs/architecture.md, How the pool shares itself):
 * - **in flight is counted, never queued**: a webhook, its receiver (the target's origin) and its
 *   organization each keep to their share of deliveries in flight (leased rows), whichever
 *   dispatcher holds them; a receiver being probed to `PROBE_IN_FLIGHT`. Nothing is claimed that
 *   cannot start at once, so no claimed row waits for a connection while it holds a slot;
 * - **organizations first, then webhooks**: every organization's first row before any
 *   organization's second, and within an organization every webhook's first before any webhook's
 *   second; ties go to the row due longest, so an organization passed over by a full claim is first
 *   in the next one (round robin with a quantum of one delivery: no starvation);
 * - a receiver's rows are counted and claimed under its row's lock (and each webhook's under its
 *   own), so two dispatchers never count the same room at once: one that finds them locked passes
 *   them over, not waits.
 * Every organization's rows: not a tenant query.
 */
export async function claimDueAcrossWebhooks(
  sql: Queryable,
  {
    limit,
    leaseMs,
    dispatchQueue,
    shares,
  }: { limit: number; leaseMs: number; dispatchQueue: string | null; shares: ClaimShares },
): Promise<ClaimedDelivery[]> {
  if (limit <= 0) return [];
  const rows = await sql<ClaimedRow[]>`
    with ${claimRoom(sql, dispatchQueue, shares, limit)},
    due as (
      select d.id, d.leased_until, d.next_attempt_at, room.id as webhook_id, room.organization_id, room.receiver,
             room.dispatched_at, room.receiver_free, room.organization_in_flight, room.organization_dispatched_at,
             room.in_flight + row_number() over (partition by room.id order by d.next_attempt_at, d.id) as webhook_turn
      from room cross join lateral (
        select id, leased_until, next_attempt_at from webhook_deliveries d
        where d.webhook_id = room.id and d.status = 'pending' and d.next_attempt_at <= now()
          and (d.leased_until is null or d.leased_until < now())
        order by d.next_attempt_at, d.id limit greatest(room.free, 0)) d),
    fair as (
      select due.*, organization_in_flight + row_number() over (
               partition by organization_id order by webhook_turn, dispatched_at nulls first, next_attempt_at, id
             ) as organization_turn
      from due),
    within_receiver as (
      select * from (
        select fair.*, row_number() over (
                 partition by receiver
                 order by organization_turn, organization_dispatched_at nulls first, next_attempt_at, id
               ) as receiver_turn
        from fair) f
      where receiver_turn <= receiver_free),
    within_organization as (
      select * from (
        select within_receiver.*, row_number() over (partition by organization_id order by organization_turn) as kept
        from within_receiver) f
      where organization_in_flight + kept <= ${shares.perOrganization}::int),
    chosen as (
      select * from within_organization
      order by organization_turn, organization_dispatched_at nulls first, next_attempt_at, id limit ${limit}),
    claimed as (
      update webhook_deliveries d
      set leased_until = now() + ${leaseMs}::int * interval '1 millisecond',
          workflow_started_at = coalesce(d.workflow_started_at, now())
      where d.id = any(array(select id from chosen)) and d.status = 'pending'
        and (d.leased_until is null or d.leased_until < now())
      returning d.id, d.webhook_id, d.event_id, d.redelivery, d.next_attempt, d.next_attempt_at),
    -- When the pool last served each webhook (and so its organization): the next claim's ties go to the one
    -- served longest ago.
    served as (update webhooks w set dispatched_at = now() where w.id in (select webhook_id from chosen))
    select c.id as "deliveryId", c.webhook_id as "webhookId", c.next_attempt as attempt, c.redelivery,
           chosen.leased_until is not null as lapsed, c.next_attempt_at as "dueAt",
           e.id as "eventId", e.data, e.created as "eventCreated", e.traceparent
    from claimed c join chosen using (id) join events e on e.id = c.event_id
    order by chosen.organization_turn, chosen.organization_dispatched_at nulls first, c.next_attempt_at, c.id`;
  return rows.map(withEvent);
}

function withEvent({ eventId, data, eventCreated, traceparent, ...row }: ClaimedRow): ClaimedDelivery {
  return { ...row, event: { id: eventId, data, created: eventCreated, traceparent } };
}

/** A claimed row given back unattempted (the sender stopped before sending it): due again at once. */
export async function releaseClaims(sql: Queryable, deliveryIds: readonly number[]): Promise<void> {
  if (deliveryIds.length === 0) return;
  await sql`
    update webhook_deliveries set leased_until = null
    where id = any(${deliveryIds as number[]}::bigint[]) and status = 'pending'`;
}

/**
 * Closes every pending delivery of a webhook that is deleted, disabled or gone: `cancelled`,
 * nothing sent. A webhook enabled again meanwhile keeps its deliveries (a recovery's included).
 */
export async function cancelPending(sql: Queryable, webhookId: WebhookId): Promise<number> {
  const rows = await sql`
    update webhook_deliveries set status = 'cancelled', finished_at = now(), next_attempt_at = null, leased_until = null
    where webhook_id = ${webhookId} and status = 'pending'
      and exists (select 1 from webhooks w
                  where w.id = ${webhookId} and (w.deleted_at is not null or w.disabled_at is not null))
    returning id`;
  return rows.length;
}
