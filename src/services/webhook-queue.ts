/**
 * The delivery queue of a webhook: its pending delivery rows, each with the attempt it makes next
 * and when (migration 021). The webhook's sender (activities/webhook-sender.ts) claims due rows a
 * window at a time under a lease, logs each attempt with its next schedule in one statement
 * (services/webhooks.ts, `logAttempt`), and keeps `webhooks.delivering_until` ahead while it runs;
 * the launcher wakes a webhook's actor only when no sender holds it. The backlog lives here, never
 * in workflow state, so it may be of any size.
 */
import type { Queryable } from '../db';
import type { OrganizationId } from '../domain/ids';

/** A row a sender took: the attempt it makes, and whether an earlier sender's lease on it lapsed unlogged. */
export type ClaimedDelivery = {
  deliveryId: number;
  attempt: number;
  redelivery: boolean;
  /** An earlier sender took this attempt and stopped before logging it: whether it reached the receiver is unknown. */
  lapsed: boolean;
  dueAt: Date;
  event: { id: number; data: Record<string, unknown>; created: Date };
};

/**
 * Takes up to `limit` due deliveries of the webhook, soonest first, leased for `leaseMs`: no other
 * sender takes them meanwhile (rows locked by another claim are skipped, not waited for). One
 * statement, with each row's event.
 */
export async function claimDue(sql: Queryable, webhookId: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
  const rows = await sql<(Omit<ClaimedDelivery, 'event'> & { eventId: number; data: Record<string, unknown>; eventCreated: Date })[]>`
    with due as (
      select id, leased_until from webhook_deliveries
      where webhook_id = ${webhookId} and status = 'pending' and next_attempt_at <= now() and (leased_until is null or leased_until < now())
      order by next_attempt_at, id limit ${limit}
      for update skip locked),
    claimed as (
      update webhook_deliveries d set leased_until = now() + ${leaseMs}::int * interval '1 millisecond',
        workflow_started_at = coalesce(d.workflow_started_at, now())
      from due where d.id = due.id
      returning d.id, d.event_id, d.redelivery, d.next_attempt, d.next_attempt_at, due.leased_until is not null as lapsed)
    select c.id as "deliveryId", c.next_attempt as attempt, c.redelivery, c.lapsed, c.next_attempt_at as "dueAt",
           e.id as "eventId", e.data, e.created as "eventCreated"
    from claimed c join events e on e.id = c.event_id
    order by c.next_attempt_at, c.id`;
  return rows.map(({ eventId, data, eventCreated, ...row }) => ({ ...row, event: { id: eventId, data, created: eventCreated } }));
}

/** A claimed row given back unattempted (the sender stopped before sending it): due again at once. */
export async function releaseClaims(sql: Queryable, deliveryIds: readonly number[]): Promise<void> {
  if (deliveryIds.length === 0) return;
  await sql`update webhook_deliveries set leased_until = null where id = any(${deliveryIds as number[]}::bigint[]) and status = 'pending'`;
}

/** Keeps the webhook marked as being drained for `leaseMs` more (the sender's heartbeat). */
export async function holdWebhook(sql: Queryable, webhookId: number, leaseMs: number): Promise<void> {
  await sql`update webhooks set delivering_until = now() + ${leaseMs}::int * interval '1 millisecond' where id = ${webhookId}`;
}

/**
 * The sender lets the webhook go: from now on a commit wakes its actor. Then, so that no delivery
 * recorded meanwhile is left with nobody to send it, it answers when the queue is next due:
 * `now` when something is due already (the sender goes on), else the soonest due time, or null
 * when nothing is pending.
 */
export async function letGo(sql: Queryable, webhookId: number): Promise<{ dueNow: boolean; nextDueAt: Date | null }> {
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
export async function cancelPending(sql: Queryable, webhookId: number): Promise<number> {
  const rows = await sql`
    update webhook_deliveries set status = 'cancelled', finished_at = now(), next_attempt_at = null, leased_until = null
    where webhook_id = ${webhookId} and status = 'pending'
      and exists (select 1 from webhooks w where w.id = ${webhookId} and (w.deleted_at is not null or w.disabled_at is not null))
    returning id`;
  return rows.length;
}

/**
 * After a commit recorded deliveries: marks them handed over, and answers which of their
 * webhooks no sender holds (their actors are to be woken). A webhook a sender holds finds the
 * rows itself: it lets go only after looking again (`letGo`), so none is left behind.
 */
export async function webhooksToWake(sql: Queryable, deliveryIds: readonly number[], webhookIds: readonly number[]): Promise<number[]> {
  const rows = await sql<{ id: number }[]>`
    with marked as (
      update webhook_deliveries set workflow_started_at = now()
      where id = any(${deliveryIds as number[]}::bigint[]) and workflow_started_at is null)
    select id from webhooks where id = any(${webhookIds as number[]}::bigint[]) and (delivering_until is null or delivering_until < now())`;
  return rows.map((row) => row.id);
}

/**
 * Webhooks with deliveries overdue by more than `graceSeconds` and no sender holding them: their
 * actor was never woken or was stopped from outside. The outbox sweep wakes them (every
 * organization's: not a tenant query).
 */
export async function stalledWebhooks(sql: Queryable, graceSeconds: number, limit: number): Promise<{ webhookId: number; organizationId: OrganizationId }[]> {
  return await sql<{ webhookId: number; organizationId: OrganizationId }[]>`
    select w.id as "webhookId", w.organization_id as "organizationId" from webhooks w
    where w.deleted_at is null and w.disabled_at is null and (w.delivering_until is null or w.delivering_until < now())
      and exists (select 1 from webhook_deliveries d where d.webhook_id = w.id and d.status = 'pending'
                    and d.next_attempt_at < now() - ${graceSeconds}::int * interval '1 second'
                    and (d.leased_until is null or d.leased_until < now()))
    order by w.id limit ${limit}`;
}
