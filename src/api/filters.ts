import * as v from 'valibot';
import { withLeadingPlus } from '../domain/phone';
import { parseFilterDate } from '../domain/time';
import { assertStorableText } from './http';

/** A date filter value (`YYYY-MM-DD HH:MM`, UTC). */
export const filterDate = v.optional(
  v.pipe(
    v.string(),
    v.transform(parseFilterDate),
    v.custom<Date>((value) => value instanceof Date, 'Enter a valid date/time, such as 2024-05-01 13:45.'),
  ),
);

export const filterText = v.optional(v.string());

/** A phone number filter: `+` is added when missing (api.md 4.1, 4.4). */
export const filterPhoneNumber = v.optional(v.pipe(v.string(), v.transform(withLeadingPlus)));

/**
 * The query string as a flat object for a filter schema (the last value of a repeated key wins);
 * 400 when a value holds text PostgreSQL cannot store.
 */
export function queryObject(searchParams: URLSearchParams): Record<string, string> {
  const query = Object.fromEntries(searchParams.entries());
  assertStorableText(query);
  return query;
}
