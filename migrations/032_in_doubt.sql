-- In doubt is not refused. An operation whose answer says nothing (a timeout, a connection dropped
-- after the request was sent, a 5xx the operator does not document as final) is `in_doubt`, the
-- state formerly called `unknown`: it stays on its route until that route's own evidence settles it
-- (a final status answer, a resend under the same reference answered "already exists", or "not
-- found" asked again after the operator's in-flight window has passed since the last send).
-- `sent_at` is that last send; `sends` counts the sends under this entry (a resend repeats the
-- reference, so the operator's deduplication keeps it one operation).
alter table network_operations drop constraint network_operations_state_check;
update network_operations set state = 'in_doubt' where state = 'unknown';
alter table network_operations
  add constraint network_operations_state_check check (state in ('recorded', 'accepted', 'refused', 'in_doubt')),
  add column sent_at timestamptz,
  add column sends integer not null default 0;
-- Rows from before: their last send is taken as their last change.
update network_operations set sent_at = modified, sends = 1 where state <> 'refused';
