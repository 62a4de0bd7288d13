/**
 * What every authenticated request goes through after its key is checked, whichever route it
 * reaches (`apiAuthentication` in auth.ts applies it to every `/api/...` request before routing,
 * the `auth` macro to any other route that asks, so routes added later get it too): throttling
 * (docs/api.md#throttling-duplicates-versions: a GET whose query asks for a write, a claim, counts
 * as a write), the API version and reading the `Duplicate-Check-Key`, which the route's
 * write then claims in its own transaction (`writeOnce`). The named plugin `requestPolicyPlugin`
 * provides it to the app and serves every route under `/api/vN/`.
 */
import { Elysia } from 'elysia';
import type { Config } from '../config';
import type { Sql } from '../db';
import { CURRENT_API_VERSION, type VersionContext } from '../domain/versions';
import type { DuplicateCheck } from '../services/collections/duplicate-checks';
import { takeRequestSlot, type RequestKind } from '../services/platform/throttling';
import { queryWriteAsked } from './query-writes';
import { saveFirstApiVersion } from '../services/merchants/organizations';
import type { KeyHolder } from '../services/merchants/api-keys';
import type { Actor } from '../services/platform/deps';
import { clientAddress } from './client-address';
import { ApiError } from './errors';
import { countThrottledRequest } from '../telemetry/metrics';
import { annotateActiveSpan } from '../telemetry/trace-context';
import { requestApiVersion, withoutVersionPrefix } from './versions';

export const DUPLICATE_CHECK_HEADER = 'Duplicate-Check-Key';
export const DUPLICATE_CHECK_KEY_MAX_LENGTH = 255;
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * What the `auth` macro adds to a route's context besides `principal`. `duplicateCheck` is the key a
 * write sent, to be claimed in the transaction of that write; null on reads and writes without one.
 */
/**
 * Who is calling: resolved from `Authorization: Token <key>` on every main API route (./auth.ts). A
 * route's `principal` also carries its audit context (the key, the address, the route): a write it
 * hands to a service is recorded with it.
 */
export type Principal = KeyHolder & Pick<Actor, 'audit'>;

export type Admission = { apiVersion: VersionContext; duplicateCheck: DuplicateCheck | null };
export type RequestPolicy = {
  admit(request: Request, principal: Principal): Promise<Admission>;
  /** The caller's address (client-address.ts), as the configuration says to tell it. */
  clientAddress(request: Request, server: Parameters<typeof clientAddress>[1]): string | null;
};

const isReadMethod = (method: string): boolean => READ_METHODS.has(method.toUpperCase());

/** A write by its method, or a read whose query asks its route to write (a claim: query-writes.ts). */
function requestKind(request: Request): RequestKind {
  if (!isReadMethod(request.method)) return 'write';
  const url = new URL(request.url);
  return queryWriteAsked(request.method, url.pathname, url.searchParams) === null ? 'read' : 'write';
}

export const throttled = (retryAfterSeconds: number): ApiError =>
  new ApiError(
    429,
    {
      detail: [
        'Request was throttled.',
        `Expected available in ${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'}.`,
      ].join(' '),
    },
    { 'Retry-After': String(retryAfterSeconds) },
  );

function duplicateCheckKey(request: Request): string | null {
  const key = request.headers.get(DUPLICATE_CHECK_HEADER)?.trim() ?? '';
  if (key === '') return null;
  if (key.length > DUPLICATE_CHECK_KEY_MAX_LENGTH) {
    throw new ApiError(400, {
      detail: `${DUPLICATE_CHECK_HEADER} must have at most ${DUPLICATE_CHECK_KEY_MAX_LENGTH} characters.`,
    });
  }
  return key;
}

function createRequestPolicy({ sql, config }: { sql: Sql; config: Config }): RequestPolicy {
  return {
    async admit(request, principal) {
      annotateActiveSpan({ 'organization.id': principal.organizationId });
      const kind = requestKind(request);
      const slot = await takeRequestSlot(sql, {
        organizationId: principal.organizationId,
        kind,
        defaults: config.throttle,
        windowSeconds: config.throttle.windowSeconds,
      });
      if (slot.count > slot.limit) {
        countThrottledRequest(kind);
        throw throttled(slot.retryAfterSeconds);
      }

      const version = requestApiVersion(request, principal.savedApiVersion);
      if (principal.savedApiVersion === null) {
        await saveFirstApiVersion(sql, principal.organizationId, CURRENT_API_VERSION);
      }

      // Only the write methods carry a Duplicate-Check-Key: a claim is a GET, and claiming again
      // answers the same collection without crediting it twice.
      const key = isReadMethod(request.method) ? null : duplicateCheckKey(request);
      const duplicateCheck: DuplicateCheck | null =
        key === null
          ? null
          : {
              organizationId: principal.organizationId,
              key,
              method: request.method,
              path: new URL(request.url).pathname,
              ttlSeconds: config.duplicateCheckTtlSeconds,
            };
      return { apiVersion: { version, organizationName: principal.organizationName }, duplicateCheck };
    },
    clientAddress: (request, server) => clientAddress(request, server, config.console.trustProxy),
  };
}

/**
 * Provides the request policy to the `auth` macro and serves every route under `/api/vN/` too (the
 * request is handed to `handle` again without the prefix).
 */
export const requestPolicyPlugin = (
  deps: { sql: Sql; config: Config },
  handle: (request: Request) => Promise<Response>,
) =>
  new Elysia({ name: 'request-policy' })
    .decorate('requestPolicy', createRequestPolicy(deps))
    .onRequest(({ request }) => {
      const unprefixed = withoutVersionPrefix(request);
      if (unprefixed !== null) return handle(unprefixed);
    });
