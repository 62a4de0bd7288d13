import * as v from 'valibot';
import type { Sql } from '../db';
import { withLeadingPlus } from '../domain/phone';
import { parseFilterDate } from '../domain/time';
import { assertStorableText } from './request';

/** A date filter value (`YYYY-MM-DD HH:MM`, UTC). */
export const filterDate = v.optional(
  v.pipe(
    v.string(),
    v.description('A date and time, `YYYY-MM-DD HH:MM` (also `YYYY-MM-DD`, seconds, an offset; UTC without one); inclusive.'),
    v.transform(parseFilterDate),
    v.custom<Date>((value) => value instanceof Date, 'Enter a valid date/time, such as 2024-05-01 13:45.'),
  ),
);

export const filterText = v.optional(v.pipe(v.string(), v.description('Exact match.')));

/** A phone number filter: `+` is added when missing (api.md 4.1, 4.4). */
export const filterPhoneNumber = v.optional(v.pipe(v.string(), v.description('A phone number in full (`+` added when missing).'), v.transform(withLeadingPlus)));

/**
 * The query string as a flat object for a filter schema (the last value of a repeated key wins);
 * 400 when a value holds text PostgreSQL cannot store.
 */
export function queryObject(searchParams: URLSearchParams): Record<string, string> {
  const query = Object.fromEntries(searchParams.entries());
  assertStorableText(query);
  return query;
}

export { timeRange } from '../services/time-range';
