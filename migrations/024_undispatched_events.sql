-- Events recorded before migration 008 and never dispatched were handed, by every outbox sweep, to
-- the earlier eventDispatch workflow (docs/architecture.md, Retiring a workflow shape). They are
-- handed to the current path once, here, and the sweep no longer looks for them: each gets the
-- delivery rows its dispatch would have planned (one per live webhook of its organization and type
-- that existed when it happened; no payment's callback URL did), which the outbox sweep hands to
-- their webhooks' actors like any delivery whose start never came. A row takes the workflow id a
-- delivery of the earlier shape would have had, so one such delivery already under way is the same
-- row, not a second one. Nothing records an event undispatched since migration 008 (dispatched_at
-- defaults to now()).
insert into webhook_deliveries (workflow_id, organization_id, webhook_id, event_id, redelivery)
select 'webhook-delivery-' || e.id || '-' || w.id, w.organization_id, w.id, e.id, false
from events e
join webhooks w on w.organization_id = e.organization_id and w.event = e.type and w.created <= e.created
  and w.deleted_at is null and w.disabled_at is null and w.payment_id is null
where e.dispatched_at is null
order by e.id, w.id
on conflict (workflow_id) do nothing;

-- No sweep sets events aside any more: those it had set aside are handed over above too.
delete from sweep_failures where kind = 'outbox-event';

update events set dispatched_at = now() where dispatched_at is null;
