/**
 * valibot field builders whose messages match the error bodies the provider's clients expect
 * (docs/api.md#api-behaviour-worth-knowing).
 */
import * as v from 'valibot';
import { MAX_AMOUNT, amountProblem, groupedAmount } from './money';
import { normalizePhoneNumber } from './phone';
import { jsonDepthExceeds, valueDepth } from '../formats/json';
import { parsePythonDict } from '../formats/python-literal';
import { DATE_HORIZON_TEXT, isBeyondHorizon, parseRequestDate } from '../formats/dates';
import { withLeadingPlus } from './phone';
import { parseFilterDate } from '../formats/time';
import { fieldErrors, type FieldErrors } from './errors';
import { MAX_JSON_DEPTH } from '../formats/json';
import { EMAIL_MAX_LENGTH, INVALID_EMAIL, emailCharacters } from './emails';

export const REQUIRED = 'This field is required.';

/**
 * A string field; numbers are taken as their text, as form-encoding clients would send them. The
 * description is what the OpenAPI document says of the field (rules after the first transformation
 * are not converted to JSON Schema, so it states them).
 */
export const text = (maxLength: number, description = `Text of at most ${maxLength} characters.`) =>
  v.pipe(
    v.union([v.string(), v.number()], 'Not a valid string.'),
    v.description(description),
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

/** An email address (its case kept): no invisible characters and no mixed scripts (emails.ts), then the usual shape. */
export const email = v.pipe(text(EMAIL_MAX_LENGTH, 'An email address.'), emailCharacters, v.email(INVALID_EMAIL));
export const optionalEmail = v.optional(
  v.pipe(
    v.union([v.literal(''), v.null(), email], 'Enter a valid email address.'),
    v.transform((value) => (value === '' ? null : value)),
  ),
  null,
);

const PHONE_MESSAGE = 'Enter a valid phone number in international format, for example +256772123456.';
export const phoneNumber = v.pipe(
  text(32, 'A phone number in international format (`+` added when missing), stored in E.164.'),
  v.check((value) => normalizePhoneNumber(value) !== null, PHONE_MESSAGE),
  v.transform((value) => normalizePhoneNumber(value) ?? value),
);

const METADATA_LIMITS = { keys: 50, keyLength: 40, valueLength: 500, depth: 8 } as const;
type Metadata = Record<string, unknown>;

/** Custom attributes: a hash, a JSON string of one, or `metadata.key` form fields; sizes bounded. */
export const metadata = v.optional(
  v.pipe(
    jsonObjectOrNull(),
    v.description(
      [
        'Custom attributes: a hash (a JSON string of one, or `metadata.key` / `metadata[key]` form fields)',
        `of at most ${METADATA_LIMITS.keys} keys of at most ${METADATA_LIMITS.keyLength} characters,`,
        `each value at most ${METADATA_LIMITS.valueLength} characters of JSON.`,
      ].join(' '),
    ),
    v.rawCheck(({ dataset, addIssue }) => {
      if (!dataset.typed || dataset.value === null) return;
      const entries = Object.entries(dataset.value as Metadata);
      const { keys, keyLength, valueLength, depth } = METADATA_LIMITS;
      if (entries.length > keys) addIssue({ message: `Ensure there are no more than ${keys} keys.` });
      // Depth first, without recursion, so the size check below never walks a pathological value.
      if (valueDepth(dataset.value) > depth) {
        addIssue({ message: `Ensure values nest no more than ${depth - 1} levels deep.` });
        return;
      }
      for (const [key, item] of entries) {
        if (key.length > keyLength) addIssue({ message: `Ensure each key has no more than ${keyLength} characters.` });
        if (JSON.stringify(item ?? null).length > valueLength) {
          addIssue({ message: `Ensure each value has no more than ${valueLength} characters.` });
        }
      }
    }),
  ),
  null,
);

/**
 * An amount as merchants and networks send it: a number or a decimal string, positive, at most 4 decimals and
 * MAX_AMOUNT.
 */
export const amountField = v.pipe(
  v.union([v.string(), v.number()], 'A valid number is required.'),
  v.description(
    `A positive amount with at most 4 decimals, at most ${groupedAmount(MAX_AMOUNT)}, without thousands separators.`,
  ),
  v.transform((value) => String(value).trim()),
  // The message names what is wrong (src/domain/money.ts); parsePositiveAmount is the same rule.
  v.rawCheck(({ dataset, addIssue }) => {
    const problem = dataset.typed ? amountProblem(dataset.value) : null;
    if (problem !== null) addIssue({ message: problem });
  }),
);

/** An amount filter: any well-formed decimal (an amount no object can have simply matches nothing). */
export const filterAmount = v.optional(
  v.pipe(
    v.string(),
    v.description('An amount (exact match).'),
    v.check((value) => /^\d{1,16}(\.\d{1,4})?$/.test(value.trim()), 'A valid number is required.'),
    v.transform((value) => value.trim()),
  ),
);

/** The key of errors that belong to no one field (Django REST framework's name for them). */
export const NON_FIELD_ERRORS = 'non_field_errors';

type FieldCheck<TOutput> = { success: true; output: TOutput } | { success: false; errors: FieldErrors };

/**
 * Checks input against a schema the way every route does, by its own call or through its
 * declaration (src/http/route-docs.ts): one message per field, the first rule it breaks, keyed by
 * the top-level field (`metadata.sync` is `metadata`); errors of the whole input under
 * `non_field_errors`.
 */
export function checkFields<const TSchema extends v.GenericSchema>(
  schema: TSchema,
  input: unknown,
): FieldCheck<v.InferOutput<TSchema>> {
  const result = v.safeParse(schema, input, { abortPipeEarly: true });
  if (result.success) return { success: true, output: result.output };
  const flat = v.flatten<TSchema>(result.issues);
  const errors: FieldErrors = {};
  for (const [path, messages] of Object.entries(flat.nested ?? {})) {
    const field = path.split('.')[0] ?? path;
    errors[field] = [...new Set([...(errors[field] ?? []), ...((messages as string[] | undefined) ?? [])])];
  }
  if (flat.root) errors[NON_FIELD_ERRORS] = flat.root;
  return {
    success: false,
    errors: Object.keys(errors).length > 0 ? errors : { [NON_FIELD_ERRORS]: ['Invalid input.'] },
  };
}

/** Validates a request body or query against a schema; failures become a 400 `{field: [messages]}`. */
export function validate<const TSchema extends v.GenericSchema>(
  schema: TSchema,
  input: unknown,
): v.InferOutput<TSchema> {
  const checked = checkFields(schema, input);
  if (checked.success) return checked.output;
  throw fieldErrors(checked.errors);
}

const TRUE_VALUES = new Set(['true', 'True', 'TRUE', '1', 'yes', 'on']);
const FALSE_VALUES = new Set(['false', 'False', 'FALSE', '0', 'no', 'off', '']);

/** Booleans as clients send them: JSON booleans, `true`/`True`/`1`, and their opposites. */
export const booleanField = (fallback: boolean) =>
  v.optional(
    v.pipe(
      v.union([v.boolean(), v.string(), v.number()], 'Must be a valid boolean.'),
      v.description('A boolean: `true`, `True`, `1`, `yes` or `on`, and their opposites.'),
      v.transform((value): boolean | null => {
        if (typeof value === 'boolean') return value;
        const text = String(value).trim();
        if (TRUE_VALUES.has(text)) return true;
        if (FALSE_VALUES.has(text)) return false;
        return null;
      }),
      v.boolean('Must be a valid boolean.'),
    ),
    fallback,
  );

/** An integer given as a JSON number or a string of digits. */
export const integerField = (min: number, max = 999_999_999) =>
  v.pipe(
    v.union([v.string(), v.number()], 'A valid integer is required.'),
    v.description(`An integer from ${min} to ${max}.`),
    v.transform((value: string | number) => String(value).trim()),
    v.regex(/^-?\d{1,9}$/, 'A valid integer is required.'),
    v.transform(Number),
    v.minValue(min, `Ensure this value is greater than or equal to ${min}.`),
    v.maxValue(max, `Ensure this value is less than or equal to ${max}.`),
  );

/**
 * A JSON object given as a hash, a JSON string (or a flat Python dict literal), or `key.sub` form fields; "" and null
 * are null.
 */
function jsonObjectOrNull() {
  return v.pipe(
    v.union([v.record(v.string(), v.unknown()), v.string(), v.null()], 'Value must be a JSON object.'),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      let value: unknown = dataset.value;
      if (typeof value === 'string') {
        if (value.trim() === '') return null;
        if (jsonDepthExceeds(value, MAX_JSON_DEPTH)) {
          addIssue({ message: `Value must not nest deeper than ${MAX_JSON_DEPTH} levels.` });
          return NEVER;
        }
        const text = value;
        try {
          value = JSON.parse(text);
        } catch {
          // A flat hash as a Python dict literal, as some of the provider's clients send `metadata`.
          const hash = parsePythonDict(text);
          if (hash === null) {
            addIssue({ message: "Value must be valid JSON (or a flat hash such as {'id': '1234'})." });
            return NEVER;
          }
          value = hash;
        }
      }
      if (value === null) return null;
      if (typeof value !== 'object' || Array.isArray(value)) {
        addIssue({ message: 'Value must be a JSON object.' });
        return NEVER;
      }
      return value as Record<string, unknown>;
    }),
  );
}

export const optionalJsonObject = v.optional(jsonObjectOrNull(), null);

/**
 * The one message of a choice field given a value outside its choices (Django REST framework's
 * words, as the provider's clients expect them). The value is shown as text, cut short, never walked.
 */
export const choiceMessage = (issue: { input: unknown }): string => {
  const shown =
    typeof issue.input === 'string' || typeof issue.input === 'number' || typeof issue.input === 'boolean'
      ? String(issue.input)
      : Array.isArray(issue.input)
        ? 'a list'
        : issue.input === null
          ? 'null'
          : typeof issue.input;
  return `Select a valid choice. ${shown.slice(0, 100)} is not one of the available choices.`;
};

/**
 * A date parameter as merchants send it (docs/api.md#collection-requests); "" and null mean "not given". Checked by
 * `requestDate`.
 */
export const dateField = v.optional(
  v.pipe(
    v.union([v.literal(''), v.null(), text(64)], 'Enter a valid date.'),
    v.description(
      [
        '`tomorrow`, `N minutes|hours|days|weeks`, `DD/MM/YYYY`, `DD/MM/YYYY HH:MM[:SS]` or ISO 8601, UTC;',
        'before 01/01/2100.',
      ].join(' '),
    ),
  ),
  null,
);

const datePrompt = (example: string) =>
  `Enter a valid date such as "tomorrow", "${example}", "31/12/2025" or "31/12/2025 13:00:00".`;

/**
 * A date field's instant counted from `base`, or null with the field error that says why it has none (far dates
 * included).
 */
export function requestDate(
  errors: FieldErrors,
  field: string,
  input: string,
  base: Date,
  example: string,
): Date | null {
  const date = parseRequestDate(input, base);
  if (date === null)
    errors[field] = [isBeyondHorizon(input, base) ? `Enter a date before ${DATE_HORIZON_TEXT}.` : datePrompt(example)];
  return date;
}

/**
 * An instant as a filter or a period's bound takes it (`YYYY-MM-DD HH:MM`, also `YYYY-MM-DD`, seconds, an offset; UTC
 * without one).
 */
export const instantField = (description: string) =>
  v.pipe(
    v.string('Enter a valid date/time, such as 2024-05-01 13:45.'),
    v.description(description),
    v.transform(parseFilterDate),
    v.custom<Date>((value) => value instanceof Date, 'Enter a valid date/time, such as 2024-05-01 13:45.'),
  );

/** A date filter value (`YYYY-MM-DD HH:MM`, UTC). */
export const filterDate = v.optional(
  instantField(
    'A date and time, `YYYY-MM-DD HH:MM` (also `YYYY-MM-DD`, seconds, an offset; UTC without one); inclusive.',
  ),
);

export const filterText = v.optional(v.pipe(v.string(), v.description('Exact match.')));

/** A phone number filter: `+` is added when missing (docs/api.md#api-behaviour-worth-knowing). */
export const filterPhoneNumber = v.optional(
  v.pipe(v.string(), v.description('A phone number in full (`+` added when missing).'), v.transform(withLeadingPlus)),
);

/** An id filter: a whole number (`A valid integer is required.` otherwise). */
export const filterId = (description: string) =>
  v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d{1,15}$/, 'A valid integer is required.'),
      v.transform(Number),
      v.description(description),
    ),
  );
