/**
 * The outbox figures behind the `outbox_backlog` and `outbox_oldest_age_seconds` gauges: rows a
 * process wrote and should have handed to Temporal right after its commit, which the outbox sweep
 * takes over when that process died. One query, read at each scrape of the worker's metrics; the
 * partial indexes on both conditions keep it cheap. Adapt it when an outbox table changes.
 */
import type { Queryable } from '../db';
import type { OutboxBacklog } from './metrics';

export async function outboxBacklog(sql: Queryable): Promise<OutboxBacklog[]> {
  return await sql<OutboxBacklog[]>`
    select 'events' as kind, count(*)::int as count,
           coalesce(extract(epoch from now() - min(created)), 0)::float8 as "oldestAgeSeconds"
    from events where dispatched_at is null
    union all
    select 'collection_requests', count(*)::int,
           coalesce(extract(epoch from now() - min(created)), 0)::float8
    from collection_requests where workflow_started_at is null
    union all
    select 'webhook_deliveries', count(*)::int,
           coalesce(extract(epoch from now() - min(created)), 0)::float8
    from webhook_deliveries where workflow_started_at is null and status = 'pending'`;
}
