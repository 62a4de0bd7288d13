/**
 * The delivery queue of a webhook: its pending delivery rows, each with the attempt it makes next
 * and when (migration 021). The webhook's sender (the earlier per-webhook actor's, in
 * activities/legacy/) claims due rows a window at a time under a lease, logs each attempt with its
 * next schedule in one statement (services/webhooks.ts, `logAttempt`), and keeps
 * `webhooks.delivering_until` ahead while it runs; the launcher wakes a webhook's actor only when no
 * sender holds it. The backlog lives here, never in workflow state, so it may be of any size.
 */
import type { DeliveryId, EventId, WebhookId } from '../domain/ids';
import type { Queryable } from '../db';

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

/**
 * Takes up to `limit` due deliveries of the webhook, soonest first, leased for `leaseMs`: no other
 * sender takes them meanwhile (rows locked by another claim are skipped, not waited for). One
 * statement, with each row's event.
 */
export async function claimDue(sql: Queryable, webhookId: WebhookId, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
  const rows = await sql<(Omit<ClaimedDelivery, 'event'> & { eventId: EventId; data: Record<string, unknown>; eventCreated: Date; traceparent: string | null })[]>`
    with due as (
      select id, leased_until from webhook_deliveries
      where webhook_id = ${webhookId} and status = 'pending' and next_attempt_at <= now() and (leased_until is null or leased_until < now())
      order by next_attempt_at, id limit ${limit}
      for update skip locked),
    claimed as (
      update webhook_deliveries d set leased_until = now() + ${leaseMs}::int * interval '1 millisecond',
        workflow_started_at = coalesce(d.workflow_started_at, now())
      from due where d.id = due.id
      returning d.id, d.webhook_id, d.event_id, d.redelivery, d.next_attempt, d.next_attempt_at, due.leased_until is not null as lapsed)
    select c.id as "deliveryId", c.webhook_id as "webhookId", c.next_attempt as attempt, c.redelivery, c.lapsed, c.next_attempt_at as "dueAt",
           e.id as "eventId", e.data, e.created as "eventCreated", e.traceparent
    from claimed c join events e on e.id = c.event_id
    order by c.next_attempt_at, c.id`;
  return rows.map(({ eventId, data, eventCreated, traceparent, ...row }) => ({ ...row, event: { id: eventId, data, created: eventCreated, traceparent } }));
}

/**
 * Takes up to `limit` due deliveries across every live webhook for a dispatcher of the pool
 * (activities/webhook-dispatcher.ts), leased for `leaseMs`, in one statement with each row's event:
 * - each webhook keeps to `perWebhook` deliveries in flight (its leased rows), whichever
 *   dispatcher holds them: a webhook's rows are claimed under its row's lock, so two dispatchers
 *   never count its room at once (one that finds it locked passes it over, not waits);
 * - turn by turn across webhooks: every webhook's soonest due row before any webhook's second, so
 *   no backlog delays another webhook's first attempt;
 * - rows another claim holds are skipped, not waited for.
 * Every organization's rows: not a tenant query.
 */
export async function claimDueAcrossWebhooks(
  sql: Queryable, { limit, perWebhook, leaseMs, dispatchQueue }: { limit: number; perWebhook: number; leaseMs: number; dispatchQueue: string | null },
): Promise<ClaimedDelivery[]> {
  if (limit <= 0) return [];
  const rows = await sql<(Omit<ClaimedDelivery, 'event'> & { eventId: EventId; data: Record<string, unknown>; eventCreated: Date; traceparent: string | null })[]>`
    with ready as (
      select w.id from webhooks w
      where w.deleted_at is null and w.disabled_at is null
        and (${dispatchQueue}::text is null or w.dispatch_queue = ${dispatchQueue})
        and exists (select 1 from webhook_deliveries d where d.webhook_id = w.id and d.status = 'pending'
                      and d.next_attempt_at <= now() and (d.leased_until is null or d.leased_until < now()))
      for no key update of w skip locked),
    room as (
      select ready.id as webhook_id, ${perWebhook}::int - (
        select count(*) from webhook_deliveries l where l.webhook_id = ready.id and l.status = 'pending' and l.leased_until >= now())::int as free
      from ready),
    due as (
      select d.id, d.leased_until, d.next_attempt_at, row_number() over (partition by room.webhook_id order by d.next_attempt_at, d.id) as turn
      from room cross join lateral (
        select id, leased_until, next_attempt_at from webhook_deliveries d
        where d.webhook_id = room.webhook_id and d.status = 'pending' and d.next_attempt_at <= now() and (d.leased_until is null or d.leased_until < now())
        order by d.next_attempt_at, d.id limit greatest(room.free, 0)
        for update skip locked) d),
    chosen as (select * from due order by turn, next_attempt_at, id limit ${limit}),
    claimed as (
      update webhook_deliveries d set leased_until = now() + ${leaseMs}::int * interval '1 millisecond',
        workflow_started_at = coalesce(d.workflow_started_at, now())
      from chosen where d.id = chosen.id
      returning d.id, d.webhook_id, d.event_id, d.redelivery, d.next_attempt, d.next_attempt_at, chosen.leased_until is not null as lapsed, chosen.turn)
    select c.id as "deliveryId", c.webhook_id as "webhookId", c.next_attempt as attempt, c.redelivery, c.lapsed, c.next_attempt_at as "dueAt",
           e.id as "eventId", e.data, e.created as "eventCreated", e.traceparent
    from claimed c join events e on e.id = c.event_id
    order by c.turn, c.next_attempt_at, c.id`;
  return rows.map(({ eventId, data, eventCreated, traceparent, ...row }) => ({ ...row, event: { id: eventId, data, created: eventCreated, traceparent } }));
}

/** A claimed row given back unattempted (the sender stopped before sending it): due again at once. */
export async function releaseClaims(sql: Queryable, deliveryIds: readonly number[]): Promise<void> {
  if (deliveryIds.length === 0) return;
  await sql`update webhook_deliveries set leased_until = null where id = any(${deliveryIds as number[]}::bigint[]) and status = 'pending'`;
}

/** Keeps the webhook marked as being drained for `leaseMs` more (the sender's heartbeat). */
export async function holdWebhook(sql: Queryable, webhookId: WebhookId, leaseMs: number): Promise<void> {
  await sql`update webhooks set delivering_until = now() + ${leaseMs}::int * interval '1 millisecond' where id = ${webhookId}`;
}

/**
 * The sender lets the webhook go: from now on a commit wakes its actor. Then, so that no delivery
 * recorded meanwhile is left with nobody to send it, it answers when the queue is next due:
 * `now` when something is due already (the sender goes on), else the soonest due time, or null
 * when nothing is pending.
 */
export async function letGo(sql: Queryable, webhookId: WebhookId): Promise<{ dueNow: boolean; nextDueAt: Date | null }> {
  await sql`update webhooks set delivering_until = null where id = ${webhookId}`;
  const [next] = await sql<{ dueAt: Date; dueNow: boolean }[]>`
    select greatest(next_attempt_at, coalesce(leased_until, next_attempt_at)) as "dueAt",
           greatest(next_attempt_at, coalesce(leased_until, next_attempt_at)) <= now() as "dueNow"
    from webhook_deliveries where webhook_id = ${webhookId} and status = 'pending'
    order by next_attempt_at, id limit 1`;
  return { dueNow: next?.dueNow ?? false, nextDueAt: next?.dueAt ?? null };
}

/**
 * Closes every pending delivery of a webhook that is deleted, disabled or gone: `cancelled`,
 * nothing sent. A webhook enabled again meanwhile keeps its deliveries (a recovery's included).
 */
export async function cancelPending(sql: Queryable, webhookId: WebhookId): Promise<number> {
  const rows = await sql`
    update webhook_deliveries set status = 'cancelled', finished_at = now(), next_attempt_at = null, leased_until = null
    where webhook_id = ${webhookId} and status = 'pending'
      and exists (select 1 from webhooks w where w.id = ${webhookId} and (w.deleted_at is not null or w.disabled_at is not null))
    returning id`;
  return rows.length;
}
