/**
 * What every authenticated request goes through after its key is checked, whichever route it
 * reaches (the `auth` macro applies it, so routes added later get it too): throttling (api.md 8),
 * the API version (api.md 9) and the `Duplicate-Check-Key` claim (api.md 7). The named plugin
 * `requestPolicyPlugin` provides it to the app, serves every route under `/api/vN/` and gives a
 * key back when its request was refused.
 */
import { Elysia } from 'elysia';
import type { Config } from '../config';
import type { Sql } from '../db';
import { CURRENT_API_VERSION, type VersionContext } from '../domain/versions';
import { claimDuplicateCheckKey, releaseDuplicateCheckKey, type DuplicateClaim } from '../services/duplicate-checks';
import { takeRequestSlot, type RequestKind } from '../services/throttling';
import type { Principal } from './auth';
import { ApiError } from './errors';
import { findApiError } from './http';
import { logger } from '../log';
import { countDuplicateRequest, countThrottledRequest } from '../telemetry/metrics';
import { annotateActiveSpan } from '../telemetry/trace-context';
import { requestApiVersion, withoutVersionPrefix } from './versions';

export const DUPLICATE_CHECK_HEADER = 'Duplicate-Check-Key';
const DUPLICATE_CHECK_KEY_MAX_LENGTH = 255;
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** What the `auth` macro adds to a route's context besides `principal`. */
export type Admission = { apiVersion: VersionContext; duplicateCheck: DuplicateClaim | null };
export type RequestPolicy = { admit(request: Request, principal: Principal): Promise<Admission> };

export const requestKind = (method: string): RequestKind => (READ_METHODS.has(method.toUpperCase()) ? 'read' : 'write');

export const throttled = (retryAfterSeconds: number): ApiError =>
  new ApiError(
    429,
    { detail: `Request was throttled. Expected available in ${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'}.` },
    { 'Retry-After': String(retryAfterSeconds) },
  );
export const duplicateRequest = (): ApiError => new ApiError(409, { detail: 'Duplicate Request Detected!' });

function duplicateCheckKey(request: Request): string | null {
  const key = request.headers.get(DUPLICATE_CHECK_HEADER)?.trim() ?? '';
  if (key === '') return null;
  if (key.length > DUPLICATE_CHECK_KEY_MAX_LENGTH) {
    throw new ApiError(400, { detail: `${DUPLICATE_CHECK_HEADER} must have at most ${DUPLICATE_CHECK_KEY_MAX_LENGTH} characters.` });
  }
  return key;
}

export function createRequestPolicy({ sql, config }: { sql: Sql; config: Config }): RequestPolicy {
  return {
    async admit(request, principal) {
      annotateActiveSpan({ 'organization.id': principal.organizationId });
      const kind = requestKind(request.method);
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
        await sql`update organizations set api_version = ${CURRENT_API_VERSION}
                  where id = ${principal.organizationId} and api_version is null`;
      }

      const key = kind === 'write' ? duplicateCheckKey(request) : null;
      let duplicateCheck: DuplicateClaim | null = null;
      if (key !== null) {
        duplicateCheck = await claimDuplicateCheckKey(sql, {
          organizationId: principal.organizationId,
          key,
          method: request.method,
          path: new URL(request.url).pathname,
          ttlSeconds: config.duplicateCheckTtlSeconds,
        });
        if (duplicateCheck === null) {
          countDuplicateRequest();
          throw duplicateRequest();
        }
      }
      return { apiVersion: { version, organizationName: principal.organizationName }, duplicateCheck };
    },
  };
}

/** A client error (4xx) means nothing was written, so the key is given back for a corrected retry. */
function isClientError(code: unknown, error: unknown): boolean {
  const apiError = findApiError(error);
  if (apiError) return apiError.status >= 400 && apiError.status < 500;
  return code === 'VALIDATION' || code === 'PARSE' || code === 'NOT_FOUND' || code === 'INVALID_COOKIE_SIGNATURE';
}

/**
 * Provides the request policy to the `auth` macro, serves every route under `/api/vN/` too (the
 * request is handed to `handle` again without the prefix), and releases the `Duplicate-Check-Key`
 * of a refused write before its error response goes out, so an immediate retry is not a duplicate.
 * A server error (5xx) keeps the key: the write may have happened.
 */
export const requestPolicyPlugin = (deps: { sql: Sql; config: Config }, handle: (request: Request) => Promise<Response>) =>
  new Elysia({ name: 'request-policy' })
    .decorate('requestPolicy', createRequestPolicy(deps))
    .onRequest(({ request }) => {
      const unprefixed = withoutVersionPrefix(request);
      if (unprefixed !== null) return handle(unprefixed);
    })
    .onError({ as: 'global' }, async (context) => {
      const claim = (context as { duplicateCheck?: DuplicateClaim | null }).duplicateCheck;
      if (!claim || !isClientError(context.code, context.error)) return;
      // A key that could not be given back only delays the retry until it expires.
      await releaseDuplicateCheckKey(deps.sql, claim).catch((error: unknown) =>
        logger.warn('could not release a Duplicate-Check-Key', { claimId: claim.id, error }),
      );
    });
