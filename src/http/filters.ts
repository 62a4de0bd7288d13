import type * as v from 'valibot';
import { assertStorableText } from './request';
import { validate } from '../domain/input';

/**
 * The query string as a flat object for a filter schema (the last value of a repeated key wins);
 * 400 when a value holds text PostgreSQL cannot store.
 */
export function queryObject(searchParams: URLSearchParams): Record<string, string> {
  const query = Object.fromEntries(searchParams.entries());
  assertStorableText(query);
  return query;
}

/** The list filters of `schema` from a query string (400 with field errors). */
export const parseFilters = <const TSchema extends v.GenericSchema>(
  schema: TSchema,
  searchParams: URLSearchParams,
): v.InferOutput<TSchema> => validate(schema, queryObject(searchParams));
