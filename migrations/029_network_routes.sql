-- Two roads to a network. An operation that may move money is journaled before it is sent, with the
-- route (connector) that takes it and what is known of it: `recorded` (about to be sent),
-- `accepted` (the route took it), `refused` (nothing happened there: the route answered no, its
-- connection was refused, or its own status query said it holds no such operation) or `unknown`
-- (no answer, a 5xx: only the route's status query can tell). A refused operation may be tried on
-- the next route under the same reference of ours, so the reference is unique among the operations
-- that are not refused. Rows from before the routes were journaled are the direct route's, accepted.
alter table network_operations
  add column route text,
  add column state text not null default 'accepted' check (state in ('recorded', 'accepted', 'refused', 'unknown')),
  add column fault text;
alter table network_operations drop constraint network_operations_network_reference_key;
create unique index network_operations_live_reference_idx on network_operations (network, reference) where state <> 'refused';
-- The routes that refused a reference for their own reasons, read at every send (tried after the others).
create index network_operations_refused_reference_idx on network_operations (network, reference) where state = 'refused';
-- A route's own id may come back when the same reference is tried there again (MoMo derives it from ours).
drop index network_operations_operator_reference_idx;
create unique index network_operations_operator_reference_idx on network_operations (network, operator_reference)
  where operator_reference is not null and state <> 'refused';

-- The health of each route of a network for one operation (collect, pay out), shared by every
-- process: consecutive route faults (timeouts, connection failures, 5xx, "system busy"; never a
-- subscriber's refusal); from the third the route is left until `left_until`, then probed by one
-- operation at a time (`probe_until`) until one succeeds; an operator's pause; the aggregator's
-- own availability; the operator's order of routes (`position`, lowest first; null: the registry's).
create table network_routes (
  -- The deployment whose health this is: '' for the whole service; a task queue's name where
  -- NETWORK_ROUTES_SCOPE=task-queue (the test suite, whose files run side by side on one database).
  scope          text not null default '',
  network        text not null,
  route          text not null,
  operation      text not null check (operation in ('collect', 'payout')),
  position       integer,
  paused         boolean not null default false,
  faults_in_row  integer not null default 0,
  left_count     integer not null default 0,
  left_until     timestamptz,
  probe_until    timestamptz,
  availability   text check (availability in ('operational', 'delayed', 'closed')),
  availability_at timestamptz,
  last_fault     text,
  last_fault_at  timestamptz,
  modified       timestamptz not null default now(),
  primary key (scope, network, route, operation)
);

-- Outcomes per route, operation and minute (succeeded, route faults): the recent success rate
-- operators see. Each process adds its counts every few seconds.
create table network_route_outcomes (
  scope     text not null default '',
  network   text not null,
  route     text not null,
  operation text not null,
  minute    timestamptz not null,
  succeeded integer not null default 0,
  faulted   integer not null default 0,
  primary key (scope, network, route, operation, minute)
);

-- The service's own bookkeeping: no merchant reads or writes it.
revoke all on network_routes, network_route_outcomes from collections_tenant;
