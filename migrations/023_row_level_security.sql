-- The tenant boundary in the database (docs/architecture.md, Tenant boundary): the role
-- `collections_tenant` has no BYPASSRLS and sees, inserts, changes and deletes only the rows of
-- the organization its transaction names in `app.organization_id`. The API and the console run
-- every statement of a request that knows its organization as that role (src/db/tenancy.ts); the
-- connecting role owns the tables, so the worker, the sweeps, the operators' callbacks and the
-- admin commands, which run as it, are not subject to the policies.

-- Roles belong to the whole server: another database of the same server may have made it already.
do $$
begin
  create role collections_tenant nologin nobypassrls;
exception when duplicate_object then null;
end $$;

-- The connecting role switches to the tenant role inside transactions (`set_config('role', ...)`),
-- which needs membership unless it is a superuser.
do $$
begin
  if not (select rolsuper from pg_roles where rolname = current_user) then
    execute format('grant collections_tenant to %I', current_user);
  end if;
end $$;

grant usage on schema public to collections_tenant;
grant select, insert, update, delete on all tables in schema public to collections_tenant;
grant usage, select on all sequences in schema public to collections_tenant;
-- Tables and sequences of later migrations too (a test checks each organization's table has a policy).
alter default privileges in schema public grant select, insert, update, delete on tables to collections_tenant;
alter default privileges in schema public grant usage, select on sequences to collections_tenant;

-- The organization the transaction acts for, or null (then no row is the tenant's).
create function current_organization() returns bigint language sql stable as $$
  select nullif(current_setting('app.organization_id', true), '')::bigint
$$;

-- Puts a table holding organizations' rows behind the boundary: its rows are the organization's in
-- its organization_id column. A later migration adding such a table calls it. The organization is
-- read once per statement, as a one-element array (`array(select ...)`, an InitPlan), and compared
-- with `= any`: beside the query's own `organization_id = $1` that is one more index condition, and
-- in a sequential scan one cheap test per row. A plain equality would add a gating node above the
-- scan's every row, and `array[...]` would build the array again for each row: counting 100,000 of
-- an organization's collections by a sequential scan took 1.5 ms longer this way, 5 and 7 ms those.
create function guard_tenant_table(holder regclass) returns void language plpgsql as $$
begin
  execute format('alter table %s enable row level security', holder);
  execute format('create policy tenant_rows on %s to collections_tenant using (organization_id = any (array(select current_organization())))', holder);
end $$;

-- Every table with an organization_id column.
select guard_tenant_table(c.oid::regclass)
from pg_class c join pg_attribute a on a.attrelid = c.oid
where c.relnamespace = 'public'::regnamespace and c.relkind = 'r' and a.attname = 'organization_id' and not a.attisdropped;

-- The organization itself.
alter table organizations enable row level security;
create policy tenant_rows on organizations to collections_tenant using (id = any (array(select current_organization())));

-- Rows that belong to an organization through their parent: the parent's own policy decides (the
-- subquery runs as the tenant too). An organization has a few wallets and users: their ids are read
-- once per statement and each row tested against them, as above. Its batches and deliveries are
-- many: a row of one is tested by its parent's index.
alter table transactions enable row level security;
create policy tenant_rows on transactions to collections_tenant
  using (account_id = any (array(select id from accounts)));
alter table console_sessions enable row level security;
create policy tenant_rows on console_sessions to collections_tenant
  using (user_id = any (array(select id from users)));
alter table payment_batch_rows enable row level security;
create policy tenant_rows on payment_batch_rows to collections_tenant
  using (exists (select 1 from payment_batches b where b.id = payment_batch_rows.batch_id));
alter table webhook_delivery_attempts enable row level security;
create policy tenant_rows on webhook_delivery_attempts to collections_tenant
  using (exists (select 1 from webhook_deliveries d where d.id = webhook_delivery_attempts.delivery_id));

-- Nothing a merchant's request runs reads the migrations applied or the operators' callback credentials.
revoke all on schema_migrations, network_credentials from collections_tenant;
