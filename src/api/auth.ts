import { Elysia } from 'elysia';
import type { Sql } from '../db';
import { API_KEY_PATTERN, keyMatches, keyPrefix } from '../auth/keys';
import { invalidToken, permissionDenied } from './errors';

export const MANAGE_ORGANIZATION = 'Manage Users and Organization Settings';

/** Who is calling: resolved from `Authorization: Token <key>` on every main API route. */
export type Principal = { organizationId: number; userId: number; permissions: string[] };

type KeyRow = { digest: Uint8Array; organizationId: number; userId: number; permissions: string[] };

export async function authenticate(sql: Sql, authorization: string | undefined): Promise<Principal> {
  const match = /^(?:Token|Bearer)\s+(\S+)\s*$/i.exec(authorization ?? '');
  const key = match?.[1]?.toLowerCase();
  if (key === undefined || !API_KEY_PATTERN.test(key)) throw invalidToken();
  const [row] = await sql<KeyRow[]>`
    select k.digest, k.organization_id as "organizationId", k.user_id as "userId", u.permissions
    from api_keys k join users u on u.id = k.user_id
    where k.prefix = ${keyPrefix(key)} and k.revoked_at is null`;
  if (!row || !keyMatches(key, row.digest)) throw invalidToken();
  return { organizationId: row.organizationId, userId: row.userId, permissions: row.permissions };
}

/**
 * `{ auth: true }` on a route resolves `principal` or answers 401; `{ permission: NAME }` does the
 * same and then answers 403 unless the caller's user holds that permission.
 */
export const authPlugin = (sql: Sql) =>
  new Elysia({ name: 'auth' }).macro({
    auth: {
      async resolve({ request }) {
        return { principal: await authenticate(sql, request.headers.get('authorization') ?? undefined) };
      },
    },
    permission: (permission: string) => ({
      async resolve({ request }) {
        const principal = await authenticate(sql, request.headers.get('authorization') ?? undefined);
        if (!principal.permissions.includes(permission)) throw permissionDenied();
        return { principal };
      },
    }),
  });
