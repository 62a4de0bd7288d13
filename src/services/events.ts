import type { Queryable } from '../db';
import type { EventRow, EventType } from '../domain/events';

export const EVENT_COLUMNS = `id, organization_id as "organizationId", type, data, author, updated_by as "updatedBy", created, modified`;

export type NewEvent = { organizationId: number; type: EventType; data: Record<string, unknown>; author: number | null };

/**
 * Writes an event in the caller's transaction (the outbox), so it exists exactly when the change
 * it reports does. Dispatch happens after commit.
 */
export async function recordEvent(tx: Queryable, event: NewEvent): Promise<EventRow> {
  const [row] = await tx<EventRow[]>`
    insert into events (organization_id, type, data, author)
    values (${event.organizationId}, ${event.type}, ${tx.json(event.data as Parameters<typeof tx.json>[0])}, ${event.author})
    returning ${tx.unsafe(EVENT_COLUMNS)}`;
  if (!row) throw new Error('insert into events returned no row');
  return row;
}

export type StatusChange = { eventId: number; status: string; errorMessage: string | null; created: Date };

/** A collection request's status timeline: each `collectionrequest.status.changed` event for it, oldest first. */
export async function requestStatusTimeline(sql: Queryable, organizationId: number, requestId: number): Promise<StatusChange[]> {
  return await sql<StatusChange[]>`
    select id as "eventId", data->>'status' as status, data->>'error_message' as "errorMessage", created from events
    where organization_id = ${organizationId} and type = 'collectionrequest.status.changed' and data->>'id' = ${String(requestId)}
    order by id`;
}
