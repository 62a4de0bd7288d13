import { ForbiddenError, InputError, NotFoundError, RefusedError, boundedErrorBody, quoted } from '../domain/errors';

/** An error that is the answer: its status, JSON body and headers go to the client as they are. */
export class ApiError extends Error {
  readonly body: Record<string, unknown>;
  constructor(
    readonly status: number,
    body: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
    options?: ErrorOptions,
  ) {
    // No answer repeats a large input back: every message is bounded here, whatever raised it.
    const bounded = boundedErrorBody(body);
    super(typeof bounded.detail === 'string' ? bounded.detail : `HTTP ${status}`, options);
    this.body = bounded;
    this.name = 'ApiError';
  }
}

export const notFound = (): ApiError => new ApiError(404, { detail: 'Not found.' });
export const invalidToken = (): ApiError =>
  new ApiError(401, { detail: 'Invalid token.' }, { 'WWW-Authenticate': 'Token' });
export const permissionDenied = (): ApiError =>
  new ApiError(403, { detail: 'You do not have permission to perform this action.' });
export const methodNotAllowed = (method: string, allowed: string[]): ApiError =>
  new ApiError(405, { detail: `Method "${method}" not allowed.` }, { Allow: allowed.join(', ') });
export const notAcceptable = (): ApiError =>
  new ApiError(406, { detail: 'Could not satisfy the request Accept header.' });
export const unsupportedMediaType = (mediaType: string): ApiError =>
  new ApiError(415, { detail: `Unsupported media type ${quoted(mediaType)} in request.` });

/**
 * The answer an error stands for: an ApiError in its cause chain, or a use case's refusal
 * (domain/errors.ts) as the API answers it; undefined for anything else (a bug: 500).
 */
export function findApiError(error: unknown): ApiError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth += 1) {
    if (current instanceof ApiError) return current;
    if (current instanceof InputError) return new ApiError(400, current.fields, {}, { cause: current });
    if (current instanceof RefusedError) return new ApiError(400, { detail: current.detail }, {}, { cause: current });
    if (current instanceof NotFoundError) return notFound();
    if (current instanceof ForbiddenError) return permissionDenied();
    current = current.cause;
  }
  return undefined;
}
