-- Webhook delivery at any receiver's pace (docs/architecture.md, Webhook delivery): the delivery
-- rows are the queue. A pending row says which attempt it makes next and when; the webhook's actor
-- pulls due rows a window at a time, so a backlog of any size lives here and never in workflow state.

-- The attempt a pending delivery makes next, and when it is due (null once the delivery is final).
alter table webhook_deliveries add column next_attempt smallint not null default 1 check (next_attempt >= 1);
alter table webhook_deliveries add column next_attempt_at timestamptz default now();
-- Set when a sender takes the row for `next_attempt`: until then no other sender takes it. A lease
-- that lapsed with no attempt logged means the sender stopped mid-attempt (its outcome unknown).
alter table webhook_deliveries add column leased_until timestamptz;

-- Rows pending when this migration runs were held by actors of the earlier shape: each goes on with
-- the attempt after the last one logged, due now.
update webhook_deliveries d set
  next_attempt = coalesce((select max(a.attempt) from webhook_delivery_attempts a where a.delivery_id = d.id), 0) + 1,
  next_attempt_at = now()
where status = 'pending';
update webhook_deliveries set next_attempt_at = null where status <> 'pending';

-- The queue of each webhook, soonest first.
create index webhook_deliveries_due_idx on webhook_deliveries (webhook_id, next_attempt_at, id) where status = 'pending';

-- While a sender drains a webhook's rows it keeps this in the future (its heartbeat): a commit that
-- records a delivery for the webhook then has nobody to wake, the sender finds the row itself.
alter table webhooks add column delivering_until timestamptz;

-- New deliveries wake the sender draining their webhook at once (LISTEN webhook_deliveries), one
-- notification per statement, naming each webhook once.
create function notify_webhook_deliveries() returns trigger language plpgsql as $$
begin
  perform pg_notify('webhook_deliveries', string_agg(distinct webhook_id::text, ','))
  from added having count(*) > 0;
  return null;
end $$;
create trigger webhook_deliveries_notify after insert on webhook_deliveries
  referencing new table as added for each statement execute function notify_webhook_deliveries();
