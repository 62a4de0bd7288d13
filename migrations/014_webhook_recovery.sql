-- Webhook recovery: a webhook whose target has failed every delivery for a period is disabled (no
-- deliveries are recorded for it until it is enabled again), and a merchant can have every event of
-- a webhook's type since a time delivered again.

-- failing_since: the first failed attempt since the last delivered one (null while the target
-- answers). disabled_at/disabled_reason: set by the service ('failing') or by the merchant ('manual').
alter table webhooks
  add column failing_since   timestamptz,
  add column disabled_at     timestamptz,
  add column disabled_reason text check (disabled_reason in ('failing', 'manual')),
  add constraint webhooks_disabled_reason check ((disabled_at is null) = (disabled_reason is null));

-- One row per recovery a merchant asked for; its deliveries name it. A webhook has at most one
-- recovery delivering at a time (the recovery takes the webhook's row lock to check).
create table webhook_recoveries (
  id              bigserial primary key,
  organization_id bigint not null references organizations(id),
  webhook_id      bigint not null references webhooks(id),
  user_id         bigint references users(id),
  since           timestamptz not null,
  until           timestamptz not null,
  events          integer not null check (events >= 0),
  created         timestamptz not null default now(),
  check (since < until)
);
create index webhook_recoveries_webhook_idx on webhook_recoveries (webhook_id, id desc);

alter table webhook_deliveries add column recovery_id bigint references webhook_recoveries(id);
create index webhook_deliveries_recovery_idx on webhook_deliveries (recovery_id, status) where recovery_id is not null;
