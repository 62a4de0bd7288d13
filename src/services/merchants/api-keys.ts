/**
 * API keys: the caller a key names, and the keys as the web console manages them (issued to a user and shown once,
 * listed by prefix, revoked).
 */
import { API_KEY_PATTERN, issueApiKey, keyMatches, keyPrefix } from '../../auth/keys';
import type { Queryable, Sql } from '../../db';
import { ForbiddenError } from '../../domain/errors';
import type { ApiKeyId, OrganizationId, UserId } from '../../domain/ids';
import { capabilitiesOf, mayRevokeKey, type Capability, type Role } from '../../domain/roles';
import { writeAs } from './audit';
import type { Actor } from '../platform/deps';
import { tenantScope } from '../platform/queries';

/**
 * Who calls with a key: its organization and user, what the key may do (its role within its
 * user's current one), the organization's saved API version (null until its first request), and
 * the key's id (what the audit trail names it by).
 */
export type KeyHolder = {
  organizationId: OrganizationId;
  userId: UserId;
  capabilities: Capability[];
  organizationName: string;
  savedApiVersion: number | null;
  keyId: ApiKeyId;
};

/**
 * The holder of a live key, or null (not a key, unknown, revoked, or its user removed): looked up by
 * its prefix, compared by its digest, in one statement. A removed user's key is dead whether or not
 * its own row was revoked (a key acts as its user; rows the removal missed before it locked key
 * creation out stay harmless). Authentication, so across organizations: the key says whose it is.
 */
export async function keyHolder(sql: Queryable, key: string): Promise<KeyHolder | null> {
  if (!API_KEY_PATTERN.test(key)) return null;
  const [row] = await sql<
    (Omit<KeyHolder, 'capabilities'> & { digest: Uint8Array; userRole: Role; keyRole: Role | null })[]
  >`
    select k.digest, k.id as "keyId", k.organization_id as "organizationId", k.user_id as "userId",
           u.role as "userRole", k.role as "keyRole", o.name as "organizationName", o.api_version as "savedApiVersion"
    from api_keys k join users u on u.id = k.user_id join organizations o on o.id = k.organization_id
    where k.prefix = ${keyPrefix(key)} and k.revoked_at is null and u.removed_at is null`;
  if (!row || !keyMatches(key, row.digest)) return null;
  const { digest: _digest, userRole, keyRole, ...holder } = row;
  return { ...holder, capabilities: capabilitiesOf(userRole, keyRole) };
}

type ApiKeyRow = {
  id: ApiKeyId;
  prefix: string;
  userId: UserId;
  userName: string;
  role: Role | null;
  created: Date;
  revokedAt: Date | null;
};

/** No key was made: its user is removed, or was removed while the key was being made (403). */
export class KeyHolderRemoved extends ForbiddenError {}

/**
 * A new key acting as `holder`'s user, with `role` (null: whatever role the user holds); only its
 * digest is stored. The caller checks that the role is one the user may give a key (`keyRolesFor`).
 *
 * The insert holds the user's row `for share` until it commits, and a removal (`removeUser`) holds
 * it `for update`: a key made first is committed before the removal revokes the user's keys, so it
 * is revoked with them; one made while a removal is under way waits for it, then finds the user
 * removed and makes nothing (KeyHolderRemoved). No key of a removed user is left live.
 */
export async function issueKeyForUser(
  sql: Sql,
  holder: Actor,
  role: Role | null = null,
): Promise<{ id: ApiKeyId; apiKey: string }> {
  const { organizationId, userId } = holder;
  const issued = issueApiKey();
  const [row] = await writeAs(
    sql,
    holder,
    (tx) => tx<{ id: ApiKeyId }[]>`
    insert into api_keys (organization_id, user_id, prefix, digest, role)
    select ${organizationId}, id, ${issued.prefix}, ${issued.digest}, ${role} from users
    where id = ${userId} and ${tenantScope(tx, organizationId).owned()} and removed_at is null
    for share
    returning id`,
  );
  if (!row) throw new KeyHolderRemoved();
  return { id: row.id, apiKey: issued.key };
}

/**
 * The organization's keys, live first; a removed user's key shows as revoked from the removal on, as the API treats it.
 */
export async function listApiKeys(sql: Sql, organizationId: OrganizationId): Promise<ApiKeyRow[]> {
  return await sql<ApiKeyRow[]>`
    select k.id, k.prefix, k.user_id as "userId", u.name as "userName", k.role, k.created,
           coalesce(k.revoked_at, u.removed_at) as "revokedAt"
    from api_keys k join users u on u.id = k.user_id
    where ${tenantScope(sql, organizationId).owned('k')}
    order by coalesce(k.revoked_at, u.removed_at) is not null, k.id desc`;
}

/**
 * Revokes a key of the organization (the API answers it 401 from then on), when `revoker` may
 * (`mayRevokeKey`: their own key, or any with `administer`); 'missing' when there is no such live key.
 */
export async function revokeApiKey(
  sql: Sql,
  revoker: Actor & { role: Role },
  keyId: ApiKeyId,
): Promise<'revoked' | 'forbidden' | 'missing'> {
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
