import type { Queryable, Sql } from '../../db';
import type { OrganizationId } from '../../domain/ids';

export type RequestKind = 'read' | 'write';
export type ThrottleLimits = { reads: number; writes: number };
type RequestSlot = { count: number; limit: number; retryAfterSeconds: number };

/**
 * Counts one request against `key`'s fixed window, as a fragment that returns the row's `count` and
 * `window_start`. One statement, so API instances that share the database share the count and no
 * two requests can both take the last slot: the row lock of `on conflict do update` serialises
 * them. A request from a newer window restarts the count; one from an older window (a slow clock
 * read) is counted in the current one. Every throttle of the service counts through here.
 */
const countInWindow = (sql: Sql, key: string, windowSeconds: number) => sql`
  insert into request_counters as c (key, window_start, count)
  values (${key}, to_timestamp(floor(extract(epoch from now()) / ${windowSeconds}) * ${windowSeconds}), 1)
  on conflict (key) do update set
    count = case when excluded.window_start > c.window_start then 1 else c.count + 1 end,
    window_start = greatest(c.window_start, excluded.window_start)
  returning count, window_start`;

/** Seconds until the counted row's window ends (at least 1), for `Retry-After`. */
const secondsLeft = (sql: Sql, windowSeconds: number) => sql`
  greatest(1, ceil(extract(epoch from counter.window_start + make_interval(secs => ${windowSeconds}) - now())))::int`;

/**
 * Counts one request against the organization's fixed window (reads and writes apart) and returns
 * the count with the limit that applies (the organization's own, else the default).
 */
export async function takeRequestSlot(
  sql: Sql,
  input: { organizationId: OrganizationId; kind: RequestKind; defaults: ThrottleLimits; windowSeconds: number },
): Promise<RequestSlot> {
  const { organizationId, kind, windowSeconds } = input;
  const defaultLimit = kind === 'read' ? input.defaults.reads : input.defaults.writes;
  const [slot] = await sql<RequestSlot[]>`
    with counter as (${countInWindow(sql, `organization:${organizationId}:${kind}`, windowSeconds)})
    select counter.count,
      coalesce(
        case when ${kind} = 'read' then o.throttle_reads else o.throttle_writes end, ${defaultLimit}
      )::int as "limit",
      ${secondsLeft(sql, windowSeconds)} as "retryAfterSeconds"
    from counter join organizations o on o.id = ${organizationId}`;
  if (!slot) throw new Error(`throttle count for organization ${organizationId} returned no row`);
  return slot;
}

type WindowCount = { count: number; retryAfterSeconds: number };

async function countRequest(sql: Sql, key: string, windowSeconds: number): Promise<WindowCount> {
  const [counted] = await sql<WindowCount[]>`
    with counter as (${countInWindow(sql, key, windowSeconds)})
    select counter.count, ${secondsLeft(sql, windowSeconds)} as "retryAfterSeconds" from counter`;
  if (!counted) throw new Error(`throttle count for ${key} returned no row`);
  return counted;
}

const CALLBACK_ADDRESS_KEY = 'callback-address:';

type CallbackLimits = { perAddress: number; perOperator: number; windowSeconds: number };
type CallbackAdmission =
  | { admitted: true }
  | { admitted: false; limit: 'address' | 'operator'; retryAfterSeconds: number };

/**
 * Counts an operator callback against its source address, then, when the address is within its
 * limit, against its operator: an address over its own limit does not use up the operator's, so one
 * flooding source cannot throttle the others. The first request of an operator's window clears the
 * address counters of past windows, so a flood from many addresses leaves no more rows than one
 * window's addresses.
 */
export async function admitOperatorCallback(
  sql: Sql,
  input: { address: string; operator: string; limits: CallbackLimits },
): Promise<CallbackAdmission> {
  const { perAddress, perOperator, windowSeconds } = input.limits;
  const byAddress = await countRequest(sql, `${CALLBACK_ADDRESS_KEY}${input.address}`, windowSeconds);
  if (byAddress.count > perAddress)
    return { admitted: false, limit: 'address', retryAfterSeconds: byAddress.retryAfterSeconds };
  const byOperator = await countRequest(sql, `callback-operator:${input.operator}`, windowSeconds);
  if (byOperator.count === 1) {
    await sql`
      delete from request_counters
      where starts_with(key, ${CALLBACK_ADDRESS_KEY})
        and window_start < now() - make_interval(secs => ${windowSeconds})`;
  }
  if (byOperator.count > perOperator)
    return { admitted: false, limit: 'operator', retryAfterSeconds: byOperator.retryAfterSeconds };
  return { admitted: true };
}

/** Sets an organization's own limits; null puts a limit back to the configured default. */
export async function setThrottleLimits(
  sql: Queryable,
  organizationId: OrganizationId,
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
