/**
 * What a use case refuses, in the domain's terms: the API answers each with its status and the
 * spec's error body (src/http/errors.ts), the console shows it on the page. Nothing here is HTTP.
 */

/** Messages by field (the spec's `{"field": ["message"]}`); `non_field_errors` for the whole input. */
export type FieldErrors = Record<string, string[]>;

/** Input refused field by field: a 400 with `{"field": ["message"]}`. */
export class InputError extends Error {
  constructor(readonly fields: FieldErrors, options?: ErrorOptions) {
    super(Object.entries(fields).map(([field, messages]) => `${field}: ${messages.join(' ')}`).join('; '), options);
    this.name = 'InputError';
  }
}

export const fieldErrors = (errors: FieldErrors): InputError => new InputError(errors);

/** An action the service's rules refuse (insufficient funds, a claim that matches twice): a 400 with `{"detail": ...}`. */
export class RefusedError extends Error {
  constructor(readonly detail: string, options?: ErrorOptions) {
    super(detail, options);
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

/** Another organization's object (api.md 5: 403). */
export class ForbiddenError extends Error {
  constructor() {
    super('You do not have permission to perform this action.');
    this.name = 'ForbiddenError';
  }
}
