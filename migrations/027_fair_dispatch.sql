-- The delivery pool shared fairly (docs/architecture.md, Webhook delivery): by organization first,
-- then by webhook, with what is in flight counted per receiver, the origin of a webhook's target
-- (scheme, host and port, as the outgoing connection pool keys its connections), and a receiver
-- that times out or refuses probed with one POST at a time until it answers again.

-- A target's origin: lower-cased, without user information, path or query, without the scheme's
-- default port. Computed by the database, so no way of writing a target can leave it stale.
alter table webhooks add column receiver text generated always as (
  case lower(substring(target from '^([A-Za-z][A-Za-z0-9+.-]*):'))
    when 'https' then 'https://' || regexp_replace(lower(substring(target from '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^/?#]*)')), ':443$', '')
    when 'http' then 'http://' || regexp_replace(lower(substring(target from '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^/?#]*)')), ':80$', '')
    else lower(target)
  end) stored;
create index webhooks_receiver_idx on webhooks (receiver);

-- One row per receiver: its health, shared by every dispatcher of every worker. `failures` counts
-- the timeouts and connection failures since it last answered anything; from the third on it is
-- probed (`probing_since`): the pool keeps one POST in flight to it, no sooner than `probe_after`,
-- until one is answered. Dispatchers lock a receiver's row while they count and claim its deliveries.
create table webhook_receivers (
  origin        text primary key,
  failures      integer not null default 0,
  probing_since timestamptz,
  probe_after   timestamptz,
  last_fault    text,
  last_fault_at timestamptz
);
insert into webhook_receivers (origin) select distinct receiver from webhooks on conflict do nothing;

-- A webhook's receiver row exists as soon as the webhook does, whoever writes the target: a
-- merchant's request (as the tenant role, which does not write receivers itself) included.
create function add_webhook_receiver() returns trigger language plpgsql security definer set search_path = public as $$
begin
  insert into webhook_receivers (origin) values (new.receiver) on conflict do nothing;
  return null;
end $$;
create trigger webhooks_receiver after insert or update of target on webhooks
  for each row execute function add_webhook_receiver();

-- A merchant reads the state of the receivers of its own webhooks only (why a delivery waits).
revoke insert, update, delete on webhook_receivers from collections_tenant;
alter table webhook_receivers enable row level security;
create policy tenant_rows on webhook_receivers to collections_tenant
  using (exists (select 1 from webhooks w where w.receiver = webhook_receivers.origin));

-- An organization's deliveries in flight (its leased rows), counted at every claim.
create index webhook_deliveries_leased_organization_idx on webhook_deliveries (organization_id, leased_until)
  where status = 'pending' and leased_until is not null;

-- When the pool last claimed a delivery of the webhook: among organizations (and webhooks) with as
-- many deliveries in flight, the one served longest ago goes first.
alter table webhooks add column dispatched_at timestamptz;
