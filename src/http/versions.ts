/**
 * How a request selects its API version (docs/api.md#throttling-duplicates-versions): an `/api/vN/...` prefix, else an
 * `Api-Version: vN` header, else the organization's saved version (set to the current one on its
 * first request). The serialisation per version is in src/domain/versions.ts.
 */
import { ApiError } from './errors';
import {
  CURRENT_API_VERSION,
  formatApiVersion,
  isApiVersion,
  parseApiVersion,
  type ApiVersion,
} from '../domain/versions';

export const API_VERSION_HEADER = 'Api-Version';
const VERSION_PREFIX = /^\/api\/(v[^/]*)(\/.*)?$/i;

/**
 * Paths as the client wrote them, and the client's own requests, for requests re-entered without their version prefix.
 */
const clientPaths = new WeakMap<Request, string>();
const clientRequests = new WeakMap<Request, Request>();

/** True for the request `withoutVersionPrefix` made: the client's own request is already on its way through the app. */
export function isVersionReentry(request: Request): boolean {
  return clientPaths.has(request);
}

/** The request the client sent (the connection's), for a request re-entered without its prefix. */
export function clientRequest(request: Request): Request {
  return clientRequests.get(request) ?? request;
}

/** The path the client asked for (`/api/v3/contacts` for a prefixed request), for links back to it. */
export function clientPathname(request: Request): string {
  return clientPaths.get(request) ?? new URL(request.url).pathname;
}

const invalidVersion = (where: string): ApiError => new ApiError(400, { detail: `Invalid version in ${where}.` });

/** The version an `Api-Version` header asks for; undefined when the header is absent. */
function headerApiVersion(request: Request): ApiVersion | undefined {
  const header = request.headers.get(API_VERSION_HEADER);
  if (header === null || header.trim() === '') return undefined;
  const version = parseApiVersion(header);
  if (version === null) throw invalidVersion(`"${API_VERSION_HEADER}" header`);
  return version;
}

/** The request's version: its header, else the saved one (an unknown saved value counts as current). */
export function requestApiVersion(request: Request, savedVersion: number | null): ApiVersion {
  return headerApiVersion(request) ?? (isApiVersion(savedVersion) ? savedVersion : CURRENT_API_VERSION);
}

/**
 * `/api/v3/contacts` → the same request at `/api/contacts` with `Api-Version: v3` (the prefix wins
 * over a header), so every route serves under every version prefix without being declared twice.
 * Returns null for a path without a version prefix; `/api/vX/...` with an unknown version is 400.
 */
export function withoutVersionPrefix(request: Request): Request | null {
  const url = new URL(request.url);
  const match = VERSION_PREFIX.exec(url.pathname);
  if (!match || !/^v\d/i.test(match[1] ?? '')) return null;
  const version = parseApiVersion(match[1] ?? '');
  if (version === null) throw invalidVersion('URL path');
  url.pathname = `/api${match[2] ?? ''}`;
  const headers = new Headers(request.headers);
  headers.set(API_VERSION_HEADER, formatApiVersion(version));
  const hasBody = request.body !== null && !['GET', 'HEAD'].includes(request.method);
  const unprefixed = new Request(url.toString(), {
    method: request.method,
    headers,
    body: hasBody ? request.body : null,
    signal: request.signal,
    // Required by the fetch spec for a streamed body; not yet in TypeScript's RequestInit.
    ...(hasBody ? { duplex: 'half' } : {}),
  } as RequestInit);
  clientPaths.set(unprefixed, clientPathname(request));
  clientRequests.set(unprefixed, clientRequest(request));
  return unprefixed;
}
