/**
 * The health of each route of a network (migration 029), shared by every process through
 * PostgreSQL: which routes an operation may take now, in which order, and what each outcome does to
 * a route. docs/going-live.md#routes-health-and-failover
 *
 * - Only route faults count: no answer, a refused connection, a 5xx, the operator's "system busy"
 *   or "network down" answers, an empty float. A subscriber's refusal (declined, insufficient funds,
 *   wrong PIN) is no fault of the route.
 * - From the third fault in a row the route is left for 5 s, doubling up to 30 s each time it fails
 *   again; then it is probed: one operation at a time (in the whole service) takes it, and the first
 *   success gives it full traffic again.
 * - An operator may pause a route or reorder a network's routes (`npm run admin -- network routes`);
 *   pawaPay's availability of a provider (closed) takes that route out until it reopens.
 *
 * A process keeps the table in memory for a second: the healthy path reads nothing and writes only
 * its outcome counts, once every few seconds.
 */
import type { Queryable, Sql } from '../../db';

export type RouteOperation = 'collect' | 'payout';
export type RouteKey = { network: string; route: string; operation: RouteOperation };
export type Availability = 'operational' | 'delayed' | 'closed';

/** A route's row: absent for a route nothing has happened to yet (healthy, in the registry's order). */
type RouteRow = RouteKey & {
  position: number | null;
  paused: boolean;
  faultsInRow: number;
  leftCount: number;
  leftUntil: Date | null;
  probeUntil: Date | null;
  availability: Availability | null;
  lastFault: string | null;
  lastFaultAt: Date | null;
};

/**
 * Where a route stands: taking traffic (`up`), left and waiting for its probe (`down`), probed (`probing`), `paused` or
 * `closed` by its aggregator.
 */
type RouteState = 'up' | 'probing' | 'down' | 'paused' | 'closed';

/** Consecutive route faults after which a route is left. */
const FAULTS_TO_LEAVE = 3;
/** How long a left route waits for its first probe; doubled each time a probe fails, up to `LEAVE_MAX_SECONDS`. */
const LEAVE_FIRST_SECONDS = 5;
const LEAVE_MAX_SECONDS = 30;
/** How long one probe holds the route for itself (a probe that never reports back frees it then). */
const PROBE_HOLD_SECONDS = 20;
const CACHE_MS = 1_000;
const FLUSH_MS = 5_000;

const COLUMNS = `network, route, operation, position, paused, faults_in_row as "faultsInRow", left_count as "leftCount",
  left_until as "leftUntil",
  probe_until as "probeUntil", availability, last_fault as "lastFault", last_fault_at as "lastFaultAt"`;

const keyOf = (key: RouteKey) => `${key.network}\u0000${key.route}\u0000${key.operation}`;

/** A row's state now. */
function stateOf(
  row: Pick<RouteRow, 'paused' | 'availability' | 'leftUntil' | 'probeUntil'> | undefined,
  now = Date.now(),
): RouteState {
  if (!row) return 'up';
  if (row.paused) return 'paused';
  if (row.availability === 'closed') return 'closed';
  if (row.leftUntil === null) return 'up';
  return row.leftUntil.getTime() > now ? 'down' : 'probing';
}

/** A route as an operation may take it: `probe` when it is this operation's turn to try a route that was left. */
type UsableRoute = { route: string; probe: boolean };

export type RouteHealth = ReturnType<typeof createRouteHealth>;

/** Counts of one route's outcomes, added to the database at the next flush (and seen by `onOutcome`, the metrics). */
type Tally = RouteKey & { succeeded: number; faulted: number };

type HealthOptions = { scope?: string; onOutcome?: (key: RouteKey, outcome: 'succeeded' | 'faulted') => void };

/**
 * The routes' health as one process keeps it, built once by `createRouteHealth` and read and changed by the functions
 * below: the rows it read last (and when), and the outcome counts not yet written.
 */
type HealthState = {
  sql: Sql;
  options: HealthOptions;
  scope: string;
  rows: Map<string, RouteRow>;
  readAt: number;
  reading: Promise<void> | null;
  tallies: Map<string, Tally>;
  flushing: Promise<void> | null;
};

async function fresh(health: HealthState): Promise<Map<string, RouteRow>> {
  if (Date.now() - health.readAt < CACHE_MS) return health.rows;
  const { sql, scope } = health;
  health.reading ??= (async () => {
    try {
      const read = await sql<RouteRow[]>`select ${sql.unsafe(COLUMNS)} from network_routes where scope = ${scope}`;
      health.rows = new Map(read.map((row) => [keyOf(row), row]));
      health.readAt = Date.now();
    } finally {
      health.reading = null;
    }
  })();
  await health.reading;
  return health.rows;
}

const remember = (health: HealthState, row: RouteRow | undefined) => {
  if (row) health.rows.set(keyOf(row), row);
};

/** Claims the probe of a left route whose wait is over: true for the one operation (service-wide) that may try it. */
async function claimProbe(health: HealthState, key: RouteKey): Promise<boolean> {
  const { sql, scope } = health;
  const [row] = await sql<RouteRow[]>`
    update network_routes set probe_until = now() + ${PROBE_HOLD_SECONDS} * interval '1 second', modified = now()
    where scope = ${scope} and network = ${key.network} and route = ${key.route} and operation = ${key.operation}
      and left_until <= now() and (probe_until is null or probe_until < now())
    returning ${sql.unsafe(COLUMNS)}`;
  remember(health, row);
  return row !== undefined;
}

function tally(health: HealthState, key: RouteKey, outcome: 'succeeded' | 'faulted') {
  const held = health.tallies.get(keyOf(key)) ?? { ...key, succeeded: 0, faulted: 0 };
  held[outcome] += 1;
  health.tallies.set(keyOf(key), held);
  health.options.onOutcome?.(key, outcome);
}

async function flush(health: HealthState): Promise<void> {
  const { sql, scope, tallies } = health;
  if (tallies.size === 0) return;
  await health.flushing;
  const batch = [...tallies.values()];
  tallies.clear();
  health.flushing = (async () => {
    await sql`
      insert into network_route_outcomes (scope, network, route, operation, minute, succeeded, faulted)
      select ${scope}, network, route, operation, date_trunc('minute', now()), succeeded, faulted
      from jsonb_to_recordset(${sql.json(batch)}::jsonb)
        as t(network text, route text, operation text, succeeded int, faulted int)
      on conflict (scope, network, route, operation, minute)
      do update set
        succeeded = network_route_outcomes.succeeded + excluded.succeeded,
        faulted = network_route_outcomes.faulted + excluded.faulted`;
  })().finally(() => {
    health.flushing = null;
  });
  await health.flushing;
}

async function usableRoutes(
  health: HealthState,
  network: string,
  operation: RouteOperation,
  routes: readonly string[],
): Promise<UsableRoute[]> {
  const known = await fresh(health);
  const ordered = routes
    .map((route, index) => ({ route, index, row: known.get(keyOf({ network, route, operation })) }))
    .sort((a, b) => (a.row?.position ?? a.index) - (b.row?.position ?? b.index) || a.index - b.index);
  const usable: UsableRoute[] = [];
  for (const { route, row } of ordered) {
    const state = stateOf(row);
    if (state === 'up') usable.push({ route, probe: false });
    else if (state === 'probing' && (await claimProbe(health, { network, route, operation })))
      usable.push({ route, probe: true });
  }
  return usable;
}

async function recordSuccess(health: HealthState, key: RouteKey): Promise<void> {
  tally(health, key, 'succeeded');
  const row = (await fresh(health)).get(keyOf(key));
  if (!row || (row.faultsInRow === 0 && row.leftUntil === null)) return;
  const { sql, scope } = health;
  const [updated] = await sql<RouteRow[]>`
    update network_routes
    set faults_in_row = 0, left_count = 0, left_until = null, probe_until = null, modified = now()
    where scope = ${scope} and network = ${key.network} and route = ${key.route} and operation = ${key.operation}
    returning ${sql.unsafe(COLUMNS)}`;
  remember(health, updated);
}

async function recordFault(health: HealthState, key: RouteKey, fault: string): Promise<void> {
  tally(health, key, 'faulted');
  const { sql, scope } = health;
  const [updated] = await sql<RouteRow[]>`
    insert into network_routes as r (scope, network, route, operation, faults_in_row, last_fault, last_fault_at)
    values (${scope}, ${key.network}, ${key.route}, ${key.operation}, 1, ${fault}, now())
    on conflict (scope, network, route, operation)
    do update set
      faults_in_row = r.faults_in_row + 1,
      last_fault = excluded.last_fault,
      last_fault_at = now(),
      modified = now(),
      left_until = case
        when (r.left_until is null and r.faults_in_row + 1 >= ${FAULTS_TO_LEAVE}) or r.left_until <= now()
          then now() + least(${LEAVE_MAX_SECONDS}, ${LEAVE_FIRST_SECONDS} * power(2, r.left_count))
            * interval '1 second'
        else r.left_until end,
      left_count = case
        when (r.left_until is null and r.faults_in_row + 1 >= ${FAULTS_TO_LEAVE}) or r.left_until <= now()
          then r.left_count + 1
        else r.left_count end,
      probe_until = null
    returning ${sql.unsafe(COLUMNS)}`;
  remember(health, updated);
}

async function recordAvailability(
  health: HealthState,
  route: string,
  states: readonly { network: string; operation: RouteOperation; availability: Availability }[],
): Promise<void> {
  if (states.length === 0) return;
  const { sql, scope } = health;
  await sql`
    insert into network_routes as r (scope, network, route, operation, availability, availability_at)
    select ${scope}, network, ${route}, operation, availability, now()
    from jsonb_to_recordset(${sql.json(states as never)}::jsonb) as t(network text, operation text, availability
      text)
    on conflict (scope, network, route, operation) do update set availability = excluded.availability,
      availability_at = now(), modified = now()`;
  health.readAt = 0;
}

/**
 * The routes' health as a process keeps it. `scope`: whose rows ('' for the whole service; a task
 * queue under NETWORK_ROUTES_SCOPE=task-queue); `onOutcome` sees each outcome (the metrics).
 */
export function createRouteHealth(sql: Sql, options: HealthOptions = {}) {
  const health: HealthState = {
    sql,
    options,
    scope: options.scope ?? '',
    rows: new Map(),
    readAt: 0,
    reading: null,
    tallies: new Map(),
    flushing: null,
  };
  const timer = setInterval(() => void flush(health).catch(() => {}), FLUSH_MS);
  timer.unref?.();

  return {
    /**
     * The routes an operation on `network` may take now, in order: the operator's order, else
     * `routes` as given (the registry's: direct first). Paused, closed and left routes are out; a
     * left route whose wait is over is in for this one operation when it wins the probe.
     */
    usable(network: string, operation: RouteOperation, routes: readonly string[]): Promise<UsableRoute[]> {
      return usableRoutes(health, network, operation, routes);
    },

    /** The route answered (whatever the subscriber did): a route that was faulting or left takes full traffic again. */
    succeeded(key: RouteKey): Promise<void> {
      return recordSuccess(health, key);
    },

    /** A route fault: counted, and from the third in a row (or a failed probe) the route is left for a while. */
    faulted(key: RouteKey, fault: string): Promise<void> {
      return recordFault(health, key, fault);
    },

    /** The aggregator's word on its providers (pawaPay's availability), per network and operation of one route. */
    setAvailability(
      route: string,
      states: readonly { network: string; operation: RouteOperation; availability: Availability }[],
    ): Promise<void> {
      return recordAvailability(health, route, states);
    },

    /** Adds the counts not yet written (at a process's stop). */
    flush(): Promise<void> {
      return flush(health);
    },

    stop(): void {
      clearInterval(timer);
    },
  };
}

/** One route of a network as operators and merchants see it. */
export type RouteView = RouteKey & {
  /** 1 for the route tried first. */
  order: number;
  state: RouteState;
  /** Succeeded over all outcomes in the last 15 minutes; null with none. */
  successRate: number | null;
  outcomes: number;
  lastFault: string | null;
  lastFaultAt: Date | null;
  availability: Availability | null;
};

/**
 * Every route of every network: `routes` are the configured ones (the registry's order), read with
 * their rows and their last 15 minutes of outcomes.
 */
export async function routeViews(sql: Queryable, routes: readonly RouteKey[], scope = ''): Promise<RouteView[]> {
  if (routes.length === 0) return [];
  const rows = await sql<RouteRow[]>`select ${sql.unsafe(COLUMNS)} from network_routes where scope = ${scope}`;
  const counts = await sql<(RouteKey & { succeeded: number; faulted: number })[]>`
    select network, route, operation, sum(succeeded)::int as succeeded, sum(faulted)::int as faulted
    from network_route_outcomes where scope = ${scope} and minute > now() - interval '15 minutes' group by network,
      route, operation`;
  const rowOf = new Map(rows.map((row) => [keyOf(row), row]));
  const countOf = new Map(counts.map((row) => [keyOf(row), row]));
  const views = routes.map((key, index) => {
    const row = rowOf.get(keyOf(key));
    const count = countOf.get(keyOf(key));
    const outcomes = (count?.succeeded ?? 0) + (count?.faulted ?? 0);
    return {
      ...key,
      index,
      position: row?.position ?? null,
      state: stateOf(row),
      successRate: outcomes === 0 ? null : Math.round((count!.succeeded / outcomes) * 1000) / 1000,
      outcomes,
      lastFault: row?.lastFault ?? null,
      lastFaultAt: row?.lastFaultAt ?? null,
      availability: row?.availability ?? null,
    };
  });
  // Each network's routes for one operation, in the order they are tried.
  const groups = new Map<string, typeof views>();
  for (const view of views) {
    const group = `${view.network}\u0000${view.operation}`;
    groups.set(group, [...(groups.get(group) ?? []), view]);
  }
  return [...groups.values()].flatMap((group) =>
    group
      .sort((a, b) => (a.position ?? a.index) - (b.position ?? b.index) || a.index - b.index)
      .map(({ index: _index, position: _position, ...view }, at) => ({ ...view, order: at + 1 })),
  );
}

/** Sets the order of a network's routes for `operation` (both when null): `routes` first to last. */
export async function orderRoutes(
  sql: Queryable,
  network: string,
  operation: RouteOperation | null,
  routes: readonly string[],
  scope = '',
): Promise<void> {
  for (const each of operation ? [operation] : (['collect', 'payout'] as const)) {
    for (const [position, route] of routes.entries()) {
      await sql`
        insert into network_routes (scope, network, route, operation, position) values
          (${scope}, ${network}, ${route}, ${each}, ${position})
        on conflict (scope, network, route, operation) do update set position = excluded.position, modified = now()`;
    }
  }
}

/** Pauses (or resumes) a route of a network for `operation` (both when null): an operator's manual switch. */
export async function pauseRoute(
  sql: Queryable,
  network: string,
  route: string,
  operation: RouteOperation | null,
  paused: boolean,
  scope = '',
): Promise<void> {
  for (const each of operation ? [operation] : (['collect', 'payout'] as const)) {
    await sql`
      insert into network_routes (scope, network, route, operation, paused) values
        (${scope}, ${network}, ${route}, ${each}, ${paused})
      on conflict (scope, network, route, operation) do update set paused = excluded.paused, modified = now()`;
  }
}

/**
 * A network's availability for one operation, as merchants see it: `operational` when its first
 * route is up, `degraded` when only a later route is, `down` when none is.
 */
export function availabilityOf(
  views: readonly Pick<RouteView, 'order' | 'state'>[],
): 'operational' | 'degraded' | 'down' {
  const taking = views.filter((view) => view.state === 'up' || view.state === 'probing');
  if (taking.length === 0) return 'down';
  return taking.some((view) => view.order === 1 && view.state === 'up') ? 'operational' : 'degraded';
}
