/**
 * What the console's overview shows an organization: wallets, today's requests, collections received and payments sent,
 * failures.
 */
import type { Sql } from '../../db';
import type { CollectionRequestId, DeliveryId, EventId, OrganizationId, WalletId, WebhookId } from '../../domain/ids';
import { tenantScope } from '../platform/queries';

export type Wallet = { id: WalletId; label: string; currency: string; balance: string; status: string };

export async function walletBalances(sql: Sql, organizationId: OrganizationId): Promise<Wallet[]> {
  return await sql<Wallet[]>`
    select id, label, currency, balance::text as balance, status from accounts
    where ${tenantScope(sql, organizationId).owned()} order by created, id`;
}

/** Requests created since `since` (the start of today, UTC), counted by their current status. */
export async function requestCountsByStatus(
  sql: Sql,
  organizationId: OrganizationId,
  since: Date,
): Promise<{ status: string; count: number }[]> {
  return await sql<{ status: string; count: number }[]>`
    select status, count(*)::int as count from collection_requests
    where ${tenantScope(sql, organizationId).owned()} and created >= ${since} group by status order by status`;
}

/** One UTC day's count and its total per currency. */
export type DailyMoney = { day: string; count: number; totals: { currency: string; amount: string }[] };

/** Rows of (day, currency, count, amount) as one entry per day. */
function byDay(rows: readonly { day: string; currency: string; count: number; amount: string }[]): DailyMoney[] {
  const days = new Map<string, DailyMoney>();
  for (const row of rows) {
    const day = days.get(row.day) ?? { day: row.day, count: 0, totals: [] };
    day.count += row.count;
    day.totals.push({ currency: row.currency, amount: row.amount });
    days.set(row.day, day);
  }
  return [...days.values()];
}

/** Collections credited to the organization per UTC day from `since` on (days without any are absent). */
export async function collectionsByDay(sql: Sql, organizationId: OrganizationId, since: Date): Promise<DailyMoney[]> {
  return byDay(
    await sql<{ day: string; currency: string; count: number; amount: string }[]>`
    select to_char(created at time zone 'UTC', 'YYYY-MM-DD') as day, currency, count(*)::int as count,
      sum(amount)::text as amount
    from collections where ${tenantScope(sql, organizationId).owned()} and status = 'successful' and created >= ${since}
    group by 1, 2 order by 1, 2`,
  );
}

/**
 * Payments sent per UTC day from `since` on: those the network completed, on the day it did (a
 * completed payment is never changed again, so its `modified` is when it completed).
 */
export async function paymentsSentByDay(sql: Sql, organizationId: OrganizationId, since: Date): Promise<DailyMoney[]> {
  return byDay(
    await sql<{ day: string; currency: string; count: number; amount: string }[]>`
    select to_char(modified at time zone 'UTC', 'YYYY-MM-DD') as day, currency, count(*)::int as count,
      sum(amount)::text as amount
    from payments where ${tenantScope(sql, organizationId).owned()} and state = 'completed' and modified >= ${since}
    group by 1, 2 order by 1, 2`,
  );
}

type FailedRequest = {
  id: CollectionRequestId;
  phoneNumber: string;
  amount: string;
  currency: string;
  errorMessage: string | null;
  modified: Date;
};
type FailingDelivery = {
  id: DeliveryId;
  webhookId: WebhookId;
  eventId: EventId;
  eventType: string;
  status: string;
  target: string;
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
};

/** The latest failed requests, and deliveries that failed for good or whose last attempt failed (still retrying). */
export async function recentFailures(
  sql: Sql,
  organizationId: OrganizationId,
  limit = 5,
): Promise<{ requests: FailedRequest[]; deliveries: FailingDelivery[] }> {
  const { owned } = tenantScope(sql, organizationId);
  const [requests, deliveries] = await Promise.all([
    sql<FailedRequest[]>`
      select id, phone_number as "phoneNumber", amount::text as amount, currency, error_message as "errorMessage",
        modified
      from collection_requests where ${owned()} and status = 'failed'
      order by modified desc, id desc limit ${limit}`,
    sql<FailingDelivery[]>`
      select d.id, d.webhook_id as "webhookId", d.event_id as "eventId", e.type as "eventType", d.status, w.target,
             a.started_at as "lastAttemptAt", a.status_code as "lastStatusCode", a.error as "lastError"
      from webhook_deliveries d
      join events e on e.id = d.event_id
      join webhooks w on w.id = d.webhook_id
      join lateral (select started_at, status_code, error, outcome from webhook_delivery_attempts
                    where delivery_id = d.id order by attempt desc limit 1) a on true
      where ${owned('d')} and (d.status = 'failed' or (d.status = 'pending' and a.outcome = 'failed'))
      order by d.id desc limit ${limit}`,
  ]);
  return { requests, deliveries };
}
