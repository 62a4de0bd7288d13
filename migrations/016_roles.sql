-- Roles (src/domain/roles.ts) replace the single "Manage Users and Organization Settings"
-- permission: users who held it become admins, the others finance (what they could do before:
-- everything but users, settings, keys and webhooks); each organization's first user is its owner.
alter table users add column role text not null default 'viewer'
  check (role in ('owner', 'admin', 'developer', 'finance', 'viewer'));
update users set role = case when 'Manage Users and Organization Settings' = any(permissions) then 'admin' else 'finance' end;
update users u set role = 'owner'
  where u.id = (select min(first.id) from users first where first.organization_id = u.organization_id and first.removed_at is null);
alter table users drop column permissions;

-- A key may hold a narrower role than its user; null acts with the user's role, whatever it becomes.
alter table api_keys add column role text check (role in ('owner', 'admin', 'developer', 'finance', 'viewer'));
