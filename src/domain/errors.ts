/**
 * What a use case refuses, in the domain's terms: the API answers each with its status and the
 * error body (src/http/errors.ts), the console shows it on the page. Nothing here is HTTP.
 */

/** Messages by field (the API's `{"field": ["message"]}`); `non_field_errors` for the whole input. */
export type FieldErrors = Record<string, string[]>;

/**
 * The longest message an error carries. A message that shows input quotes a few dozen characters of
 * it (`quoted`); this bound holds for every other, so no answer repeats a large input back.
 */
const MAX_MESSAGE_LENGTH = 300;

/** A message cut to `MAX_MESSAGE_LENGTH`, marked with an ellipsis where it was cut. */
const boundedMessage = (message: string): string =>
  message.length > MAX_MESSAGE_LENGTH ? `${message.slice(0, MAX_MESSAGE_LENGTH - 1)}…` : message;

/** Input quoted in a message: its first `max` characters in double quotes (escaped as JSON), marked where cut. */
export const quoted = (input: string, max = 40): string =>
  JSON.stringify(input.length > max ? `${input.slice(0, max)}…` : input);

/** Every message of an error body bounded (`boundedMessage`), its field names too, whatever its shape. */
export function boundedErrorBody<T>(body: T): T {
  if (typeof body === 'string') return boundedMessage(body) as T;
  if (Array.isArray(body)) return body.map(boundedErrorBody) as T;
  if (typeof body !== 'object' || body === null) return body;
  return Object.fromEntries(
    Object.entries(body).map(([key, value]) => [boundedMessage(key), boundedErrorBody(value)]),
  ) as T;
}

/** Input refused field by field: a 400 with `{"field": ["message"]}`. */
export class InputError extends Error {
  readonly fields: FieldErrors;
  constructor(fields: FieldErrors, options?: ErrorOptions) {
    const bounded = boundedErrorBody(fields);
    super(
      Object.entries(bounded)
        .map(([field, messages]) => `${field}: ${messages.join(' ')}`)
        .join('; '),
      options,
    );
    this.fields = bounded;
    this.name = 'InputError';
  }
}

export const fieldErrors = (errors: FieldErrors): InputError => new InputError(errors);

/**
 * An action the service's rules refuse (insufficient funds, a claim that matches twice): a 400 with `{"detail": ...}`.
 */
export class RefusedError extends Error {
  readonly detail: string;
  constructor(detail: string, options?: ErrorOptions) {
    super(boundedMessage(detail), options);
    this.detail = boundedMessage(detail);
    this.name = 'RefusedError';
  }
}

/** Nothing has this id (404). */
export class NotFoundError extends Error {
  constructor() {
    super('Not found.');
    this.name = 'NotFoundError';
  }
}

/** Another organization's object (403: docs/api.md#api-behaviour-worth-knowing). */
export class ForbiddenError extends Error {
  constructor() {
    super('You do not have permission to perform this action.');
    this.name = 'ForbiddenError';
  }
}
