-- A payment's state timeline on its console page: its state-change events, found by the payment id
-- the event data carries (as events_request_status_idx does for a request's timeline).
create index events_payment_state_idx on events (organization_id, (data->>'id'), id)
  where type = 'payment.status.changed';
