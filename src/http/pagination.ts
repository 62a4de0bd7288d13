import * as v from 'valibot';
import { validate } from '../domain/input';
import { requestSchema } from './route-docs';
import { clientPathname } from './versions';
import { listForVersion, type VersionContext } from '../domain/versions';

const DEFAULT_PAGE_SIZE = 10;

export type Page = { limit: number; offset: number; limitGiven: boolean };
type PagedList<T> = { count: number; next: string | null; previous: string | null; results: T[] };

/** A whole number of at most `digits` digits (a longer one is refused as no integer: 400). */
const wholeNumber = (minimum: number, description: string, digits: number) =>
  v.optional(
    v.pipe(
      v.string(),
      v.regex(new RegExp(`^\\d{1,${digits}}$`), 'A valid integer is required.'),
      v.description(description),
      v.transform(Number),
      v.minValue(minimum, `Ensure this value is greater than or equal to ${minimum}.`),
    ),
  );
const PageQuery = v.object({
  // Any whole number of items is a limit (a larger one than the maximum is cut to it, however large);
  // an offset is one PostgreSQL and JavaScript both count exactly.
  limit: wholeNumber(
    1,
    [
      `Items per page: ${DEFAULT_PAGE_SIZE} when not given;`,
      'more than the maximum (PAGE_SIZE_MAX, 100 by default) is cut to it.',
    ].join(' '),
    400,
  ),
  offset: wholeNumber(0, 'Items to skip.', 15),
});

/**
 * The query of a list route: its filters and `limit`/`offset`, as the route declares it (`query: listQuery(Filters)`).
 */
export const listQuery = <const TEntries extends v.ObjectEntries>(filters: v.ObjectSchema<TEntries, undefined>) =>
  requestSchema(v.object({ ...filters.entries, ...PageQuery.entries }));

/**
 * `limit` (default 10, above the maximum is cut to it) and `offset` from the query string (the last of repeated keys,
 * as for filters).
 */
export function parsePage(searchParams: URLSearchParams, maxLimit: number): Page {
  const query = validate(PageQuery, {
    limit: searchParams.getAll('limit').at(-1),
    offset: searchParams.getAll('offset').at(-1),
  });
  return {
    limit: Math.min(query.limit ?? DEFAULT_PAGE_SIZE, maxLimit),
    offset: query.offset ?? 0,
    limitGiven: query.limit !== undefined,
  };
}

/**
 * The list envelope (docs/api.md#api-behaviour-worth-knowing), with absolute `next`/`previous` URLs (base URL
 * overridable for proxies).
 */
export function pagedList<T>(
  request: Request,
  publicBaseUrl: string | undefined,
  page: Page,
  count: number,
  results: T[],
): PagedList<T> {
  const url = new URL(request.url);
  const base = publicBaseUrl ?? url.origin;
  const link = (offset: number): string => {
    const params = new URLSearchParams(url.searchParams);
    params.delete('offset');
    params.delete('limit');
    if (page.limitGiven) params.set('limit', String(page.limit));
    if (offset > 0) params.set('offset', String(offset));
    const query = params.toString();
    return `${base}${clientPathname(request)}${query ? `?${query}` : ''}`;
  };
  const nextOffset = page.offset + page.limit;
  return {
    count,
    next: nextOffset < count ? link(nextOffset) : null,
    previous: page.offset > 0 ? link(Math.max(0, page.offset - page.limit)) : null,
    results,
  };
}

/**
 * A list's answer: the list envelope (docs/api.md#api-behaviour-worth-knowing) with absolute links, as the caller's API
 * version shows it (a bare array before v2).
 */
export function listAnswer<T>(
  request: Request,
  publicBaseUrl: string | undefined,
  page: Page,
  list: { count: number; results: T[] },
  apiVersion: VersionContext,
) {
  return listForVersion(pagedList(request, publicBaseUrl, page, list.count, list.results), apiVersion);
}
