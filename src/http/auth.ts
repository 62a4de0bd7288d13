import { Elysia } from 'elysia';
import type { Sql } from '../db';
import { enterOrganization } from '../db/tenancy';
import { keyHolder } from '../services/merchants/api-keys';
import type { AuditContext } from '../services/platform/deps';
import { invalidToken, permissionDenied } from './errors';
import { queryWriteAsked } from './query-writes';
import type { Admission, Principal, RequestPolicy } from './request-policy';
import { API_VERSION_HEADER } from './versions';
import { formatApiVersion } from '../domain/versions';
import { CAPABILITY_DETAIL, type Capability } from '../domain/roles';

export type { Principal } from './request-policy';

export async function authenticate(sql: Sql, authorization: string | undefined): Promise<Principal> {
  const match = /^(?:Token|Bearer)\s+(\S+)\s*$/i.exec(authorization ?? '');
  const key = match?.[1]?.toLowerCase();
  const holder = key === undefined ? null : await keyHolder(sql, key);
  if (holder === null) throw invalidToken();
  return holder;
}

/** The request policy `createApp` decorates every request with (src/http/request-policy.ts). */
function requestPolicyOf(context: object): RequestPolicy {
  const policy = (context as { requestPolicy?: RequestPolicy }).requestPolicy;
  if (!policy) throw new Error('authPlugin needs the request policy that createApp provides');
  return policy;
}

type AdmissionContext = { request: Request; set: { headers: Record<string, unknown> } };
type RouteContext = AdmissionContext & { route: string; server: Parameters<RequestPolicy['clientAddress']>[1] };
type Admitted = { principal: Principal } & Admission;

/** Requests admitted before routing (`apiAuthentication`), so a route's hooks take what was found. */
const admitted = new WeakMap<Request, Admitted>();

/** `/api` and every path under it: each needs a valid key, whether a route serves it or not. */
const isApiPath = (pathname: string): boolean => pathname === '/api' || pathname.startsWith('/api/');

/** The key (401), then the request policy (throttling 429, API version 400, Duplicate-Check-Key 400). */
async function admit(sql: Sql, context: AdmissionContext): Promise<Admitted> {
  const { request, set } = context;
  const found = admitted.get(request);
  if (found) return found;
  const principal = await authenticate(sql, request.headers.get('authorization') ?? undefined);
  const { apiVersion, duplicateCheck } = await requestPolicyOf(context).admit(request, principal);
  // From here on the request's statements run inside the tenant boundary (src/db/tenancy.ts).
  enterOrganization(principal.organizationId);
  set.headers[API_VERSION_HEADER] = formatApiVersion(apiVersion.version);
  const admission = { principal, apiVersion, duplicateCheck };
  admitted.set(request, admission);
  return admission;
}

/**
 * Admits every request to an `/api/...` path before routing, before its body is read: a missing or
 * wrong key is 401 on every such path, known or not (an unknown path with a valid key stays 404),
 * and every authenticated request counts against the organization's throttle.
 */
export const apiAuthentication = (sql: Sql) =>
  new Elysia({ name: 'api-authentication' }).onRequest(async (context) => {
    if (isApiPath(new URL(context.request.url).pathname)) await admit(sql, context as unknown as AdmissionContext);
  });

/** The admission of a request to a route, its principal carrying the audit context of what the route writes. */
async function admitToRoute(sql: Sql, context: RouteContext): Promise<Admitted> {
  const admission = await admit(sql, context);
  const { principal } = admission;
  const audit: AuditContext = {
    userId: principal.userId,
    apiKeyId: principal.keyId,
    channel: 'api',
    clientAddress: requestPolicyOf(context).clientAddress(context.request, context.server),
    action: `${context.request.method.toUpperCase()} ${context.route}`,
  };
  return { ...admission, principal: { ...principal, audit } };
}

/**
 * `{ can: CAPABILITY }` on every authenticated route resolves `principal`, `apiVersion` and
 * `duplicateCheck` (admitting the request now if `apiAuthentication` did not) and answers 403
 * unless the key may do that (domain/roles.ts), and, when the query asks the route to write (a
 * claim: query-writes.ts), that too, before the query or the body is validated. The capability is
 * written into the route's `detail`, where the OpenAPI document and the roles tables read it.
 */
export const authPlugin = (sql: Sql) =>
  new Elysia({ name: 'auth' }).macro({
    can: (capability: Capability) => ({
      detail: { [CAPABILITY_DETAIL]: capability } as Record<string, unknown>,
      transform: async (context) => {
        const { principal } = await admit(sql, context);
        if (!principal.capabilities.includes(capability)) throw permissionDenied();
        // A read whose query asks for a write (a claim) needs the write's capability too.
        const asked = queryWriteAsked(context.request.method, context.route, new URL(context.request.url).searchParams);
        if (asked !== null && !principal.capabilities.includes(asked.capability)) throw permissionDenied();
      },
      resolve: (context) => admitToRoute(sql, context),
    }),
  });
