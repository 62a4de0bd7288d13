-- The lean durable core (DESIGN.md, Workflows): no workflow for an event nobody listens to.
-- The transaction that records an event records one delivery row per live webhook of its type,
-- and only those rows become webhook-delivery workflows, started after the commit and, when the
-- process died first, by the outbox sweep.

-- Set by the delivery's first attempt (or by the sweep); a pending row without it is the outbox.
alter table webhook_deliveries add column workflow_started_at timestamptz;
update webhook_deliveries set workflow_started_at = created;
create index webhook_deliveries_unstarted_idx on webhook_deliveries (created)
  where workflow_started_at is null and status = 'pending';

-- Events recorded from now on have their deliveries in the same transaction: dispatched at birth.
-- Only events recorded before this migration and never dispatched still go through the legacy
-- eventDispatch workflow (the outbox sweep starts it for them).
alter table events alter column dispatched_at set default now();

-- A throttle count is worth no WAL flush per request: the table is unlogged (a PostgreSQL crash
-- empties it, which only restarts the current windows).
alter table throttle_counters set unlogged;

-- The sandbox network pays through the prompt it answers (its first one, whatever the retries).
alter table sandbox_payments add column prompt_reference text;
