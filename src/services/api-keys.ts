/** API keys: the caller a key names, and the keys as the web console manages them (issued to a user and shown once, listed by prefix, revoked). */
import { API_KEY_PATTERN, issueApiKey, keyMatches, keyPrefix } from '../auth/keys';
import type { Queryable, Sql } from '../db';
import type { ApiKeyId, OrganizationId, UserId } from '../domain/ids';
import { capabilitiesOf, mayRevokeKey, type Capability, type Role } from '../domain/roles';
import { writeAs } from './audit';
import type { Actor } from './deps';
import { tenantScope } from './queries';

/**
 * Who calls with a key: its organization and user, what the key may do (its role within its
 * user's current one), the organization's saved API version (null until its first request), and
 * the key's id (what the audit trail names it by).
 */
export type KeyHolder = {
  organizationId: OrganizationId; userId: UserId; capabilities: Capability[]; organizationName: string; savedApiVersion: number | null; keyId: ApiKeyId;
};

/**
 * The holder of a live key, or null (not a key, unknown, revoked): looked up by its prefix, compared
 * by its digest. Authentication, so across organizations: the key says whose it is.
 */
export async function keyHolder(sql: Queryable, key: string): Promise<KeyHolder | null> {
  if (!API_KEY_PATTERN.test(key)) return null;
  const [row] = await sql<(Omit<KeyHolder, 'capabilities'> & { digest: Uint8Array; userRole: Role; keyRole: Role | null })[]>`
    select k.digest, k.id as "keyId", k.organization_id as "organizationId", k.user_id as "userId", u.role as "userRole", k.role as "keyRole",
           o.name as "organizationName", o.api_version as "savedApiVersion"
    from api_keys k join users u on u.id = k.user_id join organizations o on o.id = k.organization_id
    where k.prefix = ${keyPrefix(key)} and k.revoked_at is null`;
  if (!row || !keyMatches(key, row.digest)) return null;
  const { digest: _digest, userRole, keyRole, ...holder } = row;
  return { ...holder, capabilities: capabilitiesOf(userRole, keyRole) };
}

type ApiKeyRow = { id: ApiKeyId; prefix: string; userId: UserId; userName: string; role: Role | null; created: Date; revokedAt: Date | null };

/**
 * A new key acting as `holder`'s user, with `role` (null: whatever role the user holds); only its
 * digest is stored. The caller checks that the role is one the user may give a key (`keyRolesFor`).
 */
export async function issueKeyForUser(sql: Sql, holder: Actor, role: Role | null = null): Promise<{ id: ApiKeyId; apiKey: string }> {
  const { organizationId, userId } = holder;
  const issued = issueApiKey();
  const [row] = await writeAs(sql, holder, (tx) => tx<{ id: ApiKeyId }[]>`
    insert into api_keys (organization_id, user_id, prefix, digest, role)
    select ${organizationId}, id, ${issued.prefix}, ${issued.digest}, ${role} from users
    where id = ${userId} and ${tenantScope(tx, organizationId).owned()} and removed_at is null
    returning id`);
  if (!row) throw new Error(`user ${userId} of organization ${organizationId} cannot hold a key`);
  return { id: row.id, apiKey: issued.key };
}

export async function listApiKeys(sql: Sql, organizationId: OrganizationId): Promise<ApiKeyRow[]> {
  return await sql<ApiKeyRow[]>`
    select k.id, k.prefix, k.user_id as "userId", u.name as "userName", k.role, k.created, k.revoked_at as "revokedAt"
    from api_keys k join users u on u.id = k.user_id
    where ${tenantScope(sql, organizationId).owned('k')} order by k.revoked_at is not null, k.id desc`;
}

/**
 * Revokes a key of the organization (the API answers it 401 from then on), when `revoker` may
 * (`mayRevokeKey`: their own key, or any with `administer`); 'missing' when there is no such live key.
 */
export async function revokeApiKey(sql: Sql, revoker: Actor & { role: Role }, keyId: ApiKeyId): Promise<'revoked' | 'forbidden' | 'missing'> {
  return await writeAs(sql, revoker, async (tx) => {
    const [key] = await tx<{ userId: UserId }[]>`
      select user_id as "userId" from api_keys
      where id = ${keyId} and ${tenantScope(tx, revoker.organizationId).owned()} and revoked_at is null for update`;
    if (key === undefined) return 'missing';
    if (!mayRevokeKey(revoker.role, key.userId === revoker.userId)) return 'forbidden';
    await tx`update api_keys set revoked_at = now() where id = ${keyId}`;
    return 'revoked';
  });
}
