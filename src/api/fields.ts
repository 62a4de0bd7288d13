/** valibot field builders whose messages match the error bodies the spec's clients expect. */
import * as v from 'valibot';
import { normalizePhoneNumber } from '../domain/phone';
import { fieldErrors } from './errors';

export const REQUIRED = 'This field is required.';

/** A string field; numbers are taken as their text, as form-encoding clients would send them. */
export const text = (maxLength: number) =>
  v.pipe(
    v.union([v.string(), v.number()], 'Not a valid string.'),
    v.transform((value) => String(value).trim()),
    v.nonEmpty('This field may not be blank.'),
    v.maxLength(maxLength, `Ensure this field has no more than ${maxLength} characters.`),
  );

/** An optional string where `""` and null both mean "not given". */
export const optionalText = (maxLength: number) =>
  v.optional(
    v.pipe(
      v.union([v.literal(''), v.null(), text(maxLength)], 'Not a valid string.'),
      v.transform((value) => (value === '' ? null : value)),
    ),
    null,
  );

export const email = v.pipe(text(254), v.email('Enter a valid email address.'));
export const optionalEmail = v.optional(
  v.pipe(
    v.union([v.literal(''), v.null(), email], 'Enter a valid email address.'),
    v.transform((value) => (value === '' ? null : value)),
  ),
  null,
);

export const PHONE_MESSAGE = 'Enter a valid phone number in international format, for example +256772123456.';
export const phoneNumber = v.pipe(
  text(32),
  v.check((value) => normalizePhoneNumber(value) !== null, PHONE_MESSAGE),
  v.transform((value) => normalizePhoneNumber(value) ?? value),
);

export const METADATA_LIMITS = { keys: 50, keyLength: 40, valueLength: 500 } as const;
type Metadata = Record<string, unknown>;

/** Custom attributes: a hash, a JSON string of one, or `metadata.key` form fields; sizes bounded. */
export const metadata = v.optional(
  v.pipe(
    v.union([v.record(v.string(), v.unknown()), v.string(), v.null()], 'Value must be a JSON object.'),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      let value: unknown = dataset.value;
      if (typeof value === 'string') {
        if (value.trim() === '') return null;
        try {
          value = JSON.parse(value);
        } catch {
          addIssue({ message: 'Value must be valid JSON.' });
          return NEVER;
        }
      }
      if (value === null) return null;
      if (typeof value !== 'object' || Array.isArray(value)) {
        addIssue({ message: 'Value must be a JSON object.' });
        return NEVER;
      }
      const entries = Object.entries(value as Metadata);
      const { keys, keyLength, valueLength } = METADATA_LIMITS;
      if (entries.length > keys) addIssue({ message: `Ensure there are no more than ${keys} keys.` });
      for (const [key, item] of entries) {
        if (key.length > keyLength) addIssue({ message: `Ensure each key has no more than ${keyLength} characters.` });
        if (JSON.stringify(item ?? null).length > valueLength) {
          addIssue({ message: `Ensure each value has no more than ${valueLength} characters.` });
        }
      }
      return value as Metadata;
    }),
  ),
  null,
);

/** Validates a request body or query against a schema; failures become a 400 `{field: [messages]}`. */
export function validate<const TSchema extends v.GenericSchema>(schema: TSchema, input: unknown): v.InferOutput<TSchema> {
  const result = v.safeParse(schema, input);
  if (result.success) return result.output;
  const flat = v.flatten<TSchema>(result.issues);
  const errors: Record<string, string[]> = {};
  for (const [path, messages] of Object.entries(flat.nested ?? {})) {
    const field = path.split('.')[0] ?? path;
    errors[field] = [...new Set([...(errors[field] ?? []), ...((messages as string[] | undefined) ?? [])])];
  }
  if (flat.root) errors.non_field_errors = flat.root;
  throw fieldErrors(Object.keys(errors).length > 0 ? errors : { non_field_errors: ['Invalid input.'] });
}
