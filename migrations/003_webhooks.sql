-- Webhooks: the hooks an organization registers, its signing secret and optional HTTP Basic
-- credentials for outgoing deliveries, and the log of every delivery and every attempt.
-- (002 is reserved for another change.)

-- Deleted hooks are kept (deleted_at) so their delivery log stays readable and provable.
create table webhooks (
  id              bigserial primary key,
  organization_id bigint not null references organizations(id),
  user_id         bigint not null references users(id),
  event           text not null,
  target          text not null,
  created         timestamptz not null default now(),
  updated         timestamptz not null default now(),
  deleted_at      timestamptz,
  deleted_reason  text check (deleted_reason in ('deleted', 'gone'))
);
create index webhooks_organization_idx on webhooks (organization_id, id desc) where deleted_at is null;
create index webhooks_organization_event_idx on webhooks (organization_id, event) where deleted_at is null;

-- One row per organization, made on first use. The secret is the Standard Webhooks `whsec_`
-- form; after a rotation the previous secret keeps signing alongside the new one until
-- previous_secret_expires_at, so a merchant can switch without dropping a delivery. The Basic
-- password has to be sent as it is, so it is stored as it is; the API never returns it.
create table webhook_settings (
  organization_id           bigint primary key references organizations(id),
  signing_secret            text not null,
  previous_signing_secret   text,
  previous_secret_expires_at timestamptz,
  basic_username            text,
  basic_password            text,
  created                   timestamptz not null default now(),
  modified                  timestamptz not null default now(),
  check ((basic_username is null) = (basic_password is null))
);

-- One row per delivery workflow: the first delivery of an event to a hook, or a redelivery the
-- merchant asked for. Rows go with their event when retention deletes it.
create table webhook_deliveries (
  id              bigserial primary key,
  workflow_id     text not null unique,
  organization_id bigint not null references organizations(id),
  webhook_id      bigint not null references webhooks(id),
  event_id        bigint not null references events(id) on delete cascade,
  redelivery      boolean not null default false,
  status          text not null default 'pending'
                    check (status in ('pending', 'delivered', 'failed', 'gone', 'cancelled')),
  created         timestamptz not null default now(),
  finished_at     timestamptz
);
create index webhook_deliveries_webhook_idx on webhook_deliveries (webhook_id, id desc);
create index webhook_deliveries_event_idx on webhook_deliveries (event_id);

-- Every attempt, exactly once: the key is (delivery, attempt number), so a retried activity finds
-- the attempt it already made instead of logging a second one.
create table webhook_delivery_attempts (
  delivery_id      bigint not null references webhook_deliveries(id) on delete cascade,
  attempt          smallint not null check (attempt >= 1),
  started_at       timestamptz not null,
  duration_ms      integer not null,
  outcome          text not null check (outcome in ('delivered', 'failed', 'gone')),
  status_code      smallint,
  error            text,
  response_excerpt text,
  primary key (delivery_id, attempt)
);
