import { Elysia } from 'elysia';
import type { Sql } from '../db';
import { API_KEY_PATTERN, keyMatches, keyPrefix } from '../auth/keys';
import { invalidToken, permissionDenied } from './errors';
import type { RequestPolicy } from './request-policy';
import { API_VERSION_HEADER } from './versions';
import { formatApiVersion } from '../domain/versions';

export const MANAGE_ORGANIZATION = 'Manage Users and Organization Settings';

/** Who is calling: resolved from `Authorization: Token <key>` on every main API route. */
export type Principal = {
  organizationId: number;
  userId: number;
  permissions: string[];
  organizationName: string;
  /** The organization's saved API version; null until its first request. */
  savedApiVersion: number | null;
};

type KeyRow = Principal & { digest: Uint8Array };

export async function authenticate(sql: Sql, authorization: string | undefined): Promise<Principal> {
  const match = /^(?:Token|Bearer)\s+(\S+)\s*$/i.exec(authorization ?? '');
  const key = match?.[1]?.toLowerCase();
  if (key === undefined || !API_KEY_PATTERN.test(key)) throw invalidToken();
  const [row] = await sql<KeyRow[]>`
    select k.digest, k.organization_id as "organizationId", k.user_id as "userId", u.permissions,
           o.name as "organizationName", o.api_version as "savedApiVersion"
    from api_keys k join users u on u.id = k.user_id join organizations o on o.id = k.organization_id
    where k.prefix = ${keyPrefix(key)} and k.revoked_at is null`;
  if (!row || !keyMatches(key, row.digest)) throw invalidToken();
  const { digest: _digest, ...principal } = row;
  return principal;
}

/** The request policy `createApp` decorates every request with (src/api/request-policy.ts). */
function requestPolicyOf(context: object): RequestPolicy {
  const policy = (context as { requestPolicy?: RequestPolicy }).requestPolicy;
  if (!policy) throw new Error('authPlugin needs the request policy that createApp provides');
  return policy;
}

type ResolveContext = { request: Request; set: { headers: Record<string, unknown> } };

/**
 * `{ auth: true }` on a route resolves `principal` or answers 401, then applies the request policy
 * (throttling 429, API version 400, Duplicate-Check-Key 409) and resolves `apiVersion` and
 * `duplicateCheck` too. `{ permission: NAME }` does the same and answers 403 unless the caller's
 * user holds that permission.
 */
export const authPlugin = (sql: Sql) => {
  async function admit(context: ResolveContext, permission?: string) {
    const { request, set } = context;
    const principal = await authenticate(sql, request.headers.get('authorization') ?? undefined);
    if (permission !== undefined && !principal.permissions.includes(permission)) throw permissionDenied();
    const { apiVersion, duplicateCheck } = await requestPolicyOf(context).admit(request, principal);
    set.headers[API_VERSION_HEADER] = formatApiVersion(apiVersion.version);
    return { principal, apiVersion, duplicateCheck };
  }
  return new Elysia({ name: 'auth' }).macro({
    auth: {
      resolve: (context) => admit(context),
    },
    permission: (permission: string) => ({
      resolve: (context) => admit(context, permission),
    }),
  });
};
