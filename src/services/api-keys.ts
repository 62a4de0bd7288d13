/** API keys as the web console manages them: issued to a user (shown once), listed by prefix, revoked. */
import { issueApiKey } from '../auth/keys';
import type { Sql } from '../db';

export type ApiKeyRow = { id: number; prefix: string; userId: number; userName: string; created: Date; revokedAt: Date | null };

/** A new key acting as `userId` (with that user's permissions); only its digest is stored. */
export async function issueKeyForUser(sql: Sql, organizationId: number, userId: number): Promise<{ id: number; apiKey: string }> {
  const issued = issueApiKey();
  const [row] = await sql<{ id: number }[]>`
    insert into api_keys (organization_id, user_id, prefix, digest)
    select ${organizationId}, id, ${issued.prefix}, ${issued.digest} from users
    where id = ${userId} and organization_id = ${organizationId} and removed_at is null
    returning id`;
  if (!row) throw new Error(`user ${userId} of organization ${organizationId} cannot hold a key`);
  return { id: row.id, apiKey: issued.key };
}

export async function listApiKeys(sql: Sql, organizationId: number): Promise<ApiKeyRow[]> {
  return await sql<ApiKeyRow[]>`
    select k.id, k.prefix, k.user_id as "userId", u.name as "userName", k.created, k.revoked_at as "revokedAt"
    from api_keys k join users u on u.id = k.user_id
    where k.organization_id = ${organizationId} order by k.revoked_at is not null, k.id desc`;
}

/** Revokes a key of the organization: the API answers it 401 from then on. False when there is no such live key. */
export async function revokeApiKey(sql: Sql, organizationId: number, keyId: number): Promise<boolean> {
  const rows = await sql`
    update api_keys set revoked_at = now() where id = ${keyId} and organization_id = ${organizationId} and revoked_at is null returning id`;
  return rows.length > 0;
}
