/**
 * Building blocks of the valibot output schemas that type each serialiser and describe its object
 * in the OpenAPI document (src/api/openapi.ts): what a serialiser returns is checked against them
 * by the compiler, and every response the test suite sees is checked against the document.
 */
import * as v from 'valibot';
import { listedCodes, SUPPORTED_CURRENCIES } from './money';

export const described = <const TSchema extends v.GenericSchema>(schema: TSchema, description: string) =>
  v.pipe(schema, v.description(description));

export const Id = v.pipe(v.number(), v.integer(), v.description('Unique id.'), v.examples([42]));
export const Timestamp = v.pipe(
  v.string(),
  v.description('UTC, `YYYY-MM-DDTHH:MM:SSZ`.'),
  v.examples(['2025-05-01T13:45:00Z']),
);
export const NullableTimestamp = v.nullable(Timestamp);
export const Author = v.pipe(
  v.nullable(v.pipe(v.number(), v.integer())),
  v.description('Id of the user who created it; null when not created by a user.'),
);
export const UpdatedBy = v.pipe(
  v.nullable(v.string()),
  v.description('Id of the user who changed it last, as a string; null when not changed by a user.'),
);
export const OwningOrganization = v.pipe(v.number(), v.integer(), v.description('Owning organization.'));
/** Money as the API returns it: a decimal string with four decimals. */
export const Amount = v.pipe(
  v.string(),
  v.regex(/^\d+\.\d{4}$/),
  v.description('Decimal string with four decimals.'),
  v.examples(['1500.0000']),
);
export const CurrencyCode = v.pipe(
  v.string(),
  v.description(`3-letter currency code: ${listedCodes(SUPPORTED_CURRENCIES)} (BXC is the sandbox currency).`),
  v.examples(['UGX']),
);
export const PhoneNumber = v.pipe(
  v.string(),
  v.description('International (E.164) format, starting with `+`.'),
  v.examples(['+256772123456']),
);
export const Metadata = v.pipe(
  v.nullable(v.record(v.string(), v.unknown())),
  v.description('Custom attributes given at creation (a hash), or null.'),
);
