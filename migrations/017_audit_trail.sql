-- The audit trail: every change a write through the API or the web console makes to an
-- organization's objects and settings, recorded in the transaction of that write.
--
-- The application marks such a transaction with who writes and through what
-- (`set_config('app.audit', <json>, true)`, src/services/audit.ts): organization, user, API key id
-- (null in the console), channel, client address and action. The row triggers below turn each
-- insert, update and delete of an audited table into one row here while that mark is present. Writes
-- without it (workflows, sweeps, the admin CLI) are not API or console writes and are not recorded;
-- for them the trigger's WHEN clause is false, so the trigger function is never even called.

create table audit_events (
  id              bigserial primary key,
  organization_id bigint not null references organizations(id),
  created         timestamptz not null default now(),
  user_id         bigint references users(id),
  -- The key's id (api_keys.id), never the key or its digest; null for the console.
  api_key_id      bigint references api_keys(id),
  channel         text not null check (channel in ('api', 'console')),
  client_address  text,
  -- The route the write came through: method and route pattern (`POST /api/payments`).
  action          text not null,
  object_type     text not null,
  object_id       bigint not null,
  -- {"before": {...}, "after": {...}}: the changed fields of an update, every field of an insert
  -- (before null) or a delete (after null); secrets appear as "[redacted]".
  change          jsonb not null
);
create index audit_events_organization_idx on audit_events (organization_id, created desc, id desc);
create index audit_events_object_idx on audit_events (organization_id, object_type, object_id, created desc, id desc);
create index audit_events_user_idx on audit_events (organization_id, user_id, created desc, id desc);
create index audit_events_action_idx on audit_events (organization_id, action, created desc, id desc);
-- The retention sweep deletes by age across organizations.
create index audit_events_created_idx on audit_events (created);

-- Trigger arguments: the object type, the column holding the object's id, then the columns whose
-- values are secrets (shown as "[redacted]" when set, so the entry says that they changed).
create function record_audit_event() returns trigger language plpgsql as $$
declare
  source  jsonb := current_setting('app.audit')::jsonb;
  before  jsonb := case when tg_op <> 'INSERT' then to_jsonb(old) end;
  after   jsonb := case when tg_op <> 'DELETE' then to_jsonb(new) end;
  changed text[];
  secret  text;
begin
  if tg_op = 'UPDATE' then
    select coalesce(array_agg(field.key), '{}') into changed
      from jsonb_each(after) field where field.value is distinct from before -> field.key;
    if cardinality(changed) = 0 then return null; end if;
    select jsonb_object_agg(key, before -> key), jsonb_object_agg(key, after -> key) into before, after
      from unnest(changed) key;
  end if;
  foreach secret in array tg_argv[2:] loop
    if before ->> secret is not null then before := jsonb_set(before, array[secret], '"[redacted]"'); end if;
    if after ->> secret is not null then after := jsonb_set(after, array[secret], '"[redacted]"'); end if;
  end loop;
  insert into audit_events (organization_id, user_id, api_key_id, channel, client_address, action, object_type, object_id, change)
  values ((source ->> 'organization')::bigint, (source ->> 'user')::bigint, (source ->> 'api_key')::bigint,
          source ->> 'channel', source ->> 'address', source ->> 'action',
          tg_argv[0], (to_jsonb(coalesce(new, old)) ->> tg_argv[1])::bigint,
          jsonb_build_object('before', before, 'after', after));
  return null;
end $$;

-- The organization's objects and settings a merchant changes. Not audited: the ledger (accounts,
-- transactions) and events, which follow from the audited object's change in the same write;
-- delivery rows, except a redelivery asked for by hand; a batch's rows (its batch is audited).
create trigger organizations_audit after update on organizations for each row
  when (coalesce(current_setting('app.audit', true), '') <> '') execute function record_audit_event('organization', 'id');
create trigger users_audit after insert or update or delete on users for each row
  when (coalesce(current_setting('app.audit', true), '') <> '') execute function record_audit_event('user', 'id', 'password_hash');
create trigger api_keys_audit after insert or update or delete on api_keys for each row
  when (coalesce(current_setting('app.audit', true), '') <> '') execute function record_audit_event('api_key', 'id', 'digest');
create trigger contacts_audit after insert or update or delete on contacts for each row
  when (coalesce(current_setting('app.audit', true), '') <> '') execute function record_audit_event('contact', 'id');
create trigger collection_requests_audit after insert or update or delete on collection_requests for each row
  when (coalesce(current_setting('app.audit', true), '') <> '') execute function record_audit_event('collection_request', 'id');
create trigger collections_audit after update on collections for each row
  when (coalesce(current_setting('app.audit', true), '') <> '') execute function record_audit_event('collection', 'id');
create trigger payments_audit after insert or update or delete on payments for each row
  when (coalesce(current_setting('app.audit', true), '') <> '') execute function record_audit_event('payment', 'id');
create trigger payment_batches_audit after insert or update or delete on payment_batches for each row
  when (coalesce(current_setting('app.audit', true), '') <> '') execute function record_audit_event('payment_batch', 'id');
create trigger reversals_audit after insert or update or delete on reversals for each row
  when (coalesce(current_setting('app.audit', true), '') <> '') execute function record_audit_event('reversal', 'id');
create trigger webhooks_audit after insert or update or delete on webhooks for each row
  when (coalesce(current_setting('app.audit', true), '') <> '') execute function record_audit_event('webhook', 'id');
create trigger webhook_settings_audit after insert or update or delete on webhook_settings for each row
  when (coalesce(current_setting('app.audit', true), '') <> '')
  execute function record_audit_event('webhook_settings', 'organization_id', 'signing_secret', 'previous_signing_secret', 'basic_password');
create trigger webhook_recoveries_audit after insert or update or delete on webhook_recoveries for each row
  when (coalesce(current_setting('app.audit', true), '') <> '') execute function record_audit_event('webhook_recovery', 'id');
create trigger webhook_deliveries_audit after insert on webhook_deliveries for each row
  when (new.redelivery and new.recovery_id is null and coalesce(current_setting('app.audit', true), '') <> '')
  execute function record_audit_event('webhook_delivery', 'id');
