/**
 * Reads that write: GET routes that change data when a flag of their query asks them to (the claim
 * of docs/api.md#collections assigns a payment and credits a wallet). Such a request is a write
 * wherever a request is weighed: the request policy counts it as one (request-policy.ts), the `can`
 * macro (auth.ts) refuses it, 403, to a key without the write's capability, whatever the route's
 * own, and the OpenAPI document and docs/roles.md name the roles of both.
 */
import { asksClaim } from '../domain/collections';
import type { Capability } from '../domain/roles';

type QueryWrite = {
  /** The route's path, as it is declared (a request's path is compared without the `/api/vN` prefix). */
  path: string;
  /** The query parameter that asks for the write, and which of its values do. */
  flag: string;
  asks: (value: string | undefined) => boolean;
  capability: Capability;
};

const QUERY_WRITES: readonly QueryWrite[] = [
  // Claiming a collection is money in: the `collect` capability, as the console's claim form.
  { path: '/api/collections', flag: 'claim', asks: asksClaim, capability: 'collect' },
];

/** A path as routes are matched: a trailing slash names the same route. */
const routePath = (path: string): string => path.replace(/(?<=.)\/+$/, '');

/** The writes the query of a GET to `path` can ask for (none for most routes). */
export const queryWritesOf = (method: string, path: string): QueryWrite[] =>
  ['GET', 'HEAD'].includes(method.toUpperCase()) ? QUERY_WRITES.filter((write) => write.path === routePath(path)) : [];

/**
 * The write a GET to `path` with this query asks for, or null. A repeated parameter counts by its
 * last value, as the route reads it (`queryObject` in filters.ts).
 */
export const queryWriteAsked = (method: string, path: string, query: URLSearchParams): QueryWrite | null =>
  queryWritesOf(method, path).find((write) => write.asks(query.getAll(write.flag).at(-1))) ?? null;
