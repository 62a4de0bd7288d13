import type { Queryable, Sql } from '../db';

export type RequestKind = 'read' | 'write';
export type ThrottleLimits = { reads: number; writes: number };
type RequestSlot = { count: number; limit: number; retryAfterSeconds: number };

/**
 * Counts one request against the organization's fixed window and returns the count with the limit
 * that applies (the organization's own, else the default). One statement, so API instances that
 * share the database share the count and no two requests can both take the last slot: the row
 * lock of `on conflict do update` serialises them. A request from a newer window restarts the
 * count; one from an older window (a slow clock read) is counted in the current one.
 */
export async function takeRequestSlot(
  sql: Sql,
  input: { organizationId: number; kind: RequestKind; defaults: ThrottleLimits; windowSeconds: number },
): Promise<RequestSlot> {
  const { organizationId, kind, windowSeconds } = input;
  const defaultLimit = kind === 'read' ? input.defaults.reads : input.defaults.writes;
  const [slot] = await sql<RequestSlot[]>`
    with counter as (
      insert into throttle_counters as c (organization_id, kind, window_start, count)
      values (${organizationId}, ${kind}, to_timestamp(floor(extract(epoch from now()) / ${windowSeconds}) * ${windowSeconds}), 1)
      on conflict (organization_id, kind) do update set
        count = case when excluded.window_start > c.window_start then 1 else c.count + 1 end,
        window_start = greatest(c.window_start, excluded.window_start)
      returning count, window_start
    )
    select counter.count,
      coalesce(case when ${kind} = 'read' then o.throttle_reads else o.throttle_writes end, ${defaultLimit})::int as "limit",
      greatest(1, ceil(extract(epoch from counter.window_start + make_interval(secs => ${windowSeconds}) - now())))::int
        as "retryAfterSeconds"
    from counter join organizations o on o.id = ${organizationId}`;
  if (!slot) throw new Error(`throttle count for organization ${organizationId} returned no row`);
  return slot;
}

/** Sets an organization's own limits; null puts a limit back to the configured default. */
export async function setThrottleLimits(
  sql: Queryable,
  organizationId: number,
  limits: { reads?: number | null; writes?: number | null },
): Promise<{ id: number; reads: number | null; writes: number | null }> {
  const [row] = await sql<{ id: number; reads: number | null; writes: number | null }[]>`
    update organizations set
      throttle_reads = ${limits.reads === undefined ? sql`throttle_reads` : limits.reads},
      throttle_writes = ${limits.writes === undefined ? sql`throttle_writes` : limits.writes},
      modified = now()
    where id = ${organizationId}
    returning id, throttle_reads as reads, throttle_writes as writes`;
  if (!row) throw new Error(`Organization ${organizationId} does not exist`);
  return row;
}
