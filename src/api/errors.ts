/** An error that is the answer: its status, JSON body and headers go to the client as they are. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
    options?: ErrorOptions,
  ) {
    super(typeof body.detail === 'string' ? body.detail : `HTTP ${status}`, options);
    this.name = 'ApiError';
  }
}

export type FieldErrors = Record<string, string[]>;

export const fieldErrors = (errors: FieldErrors): ApiError => new ApiError(400, errors);
export const notFound = (): ApiError => new ApiError(404, { detail: 'Not found.' });
export const invalidToken = (): ApiError => new ApiError(401, { detail: 'Invalid token.' }, { 'WWW-Authenticate': 'Token' });
export const permissionDenied = (): ApiError =>
  new ApiError(403, { detail: 'You do not have permission to perform this action.' });
export const methodNotAllowed = (method: string, allowed: string[]): ApiError =>
  new ApiError(405, { detail: `Method "${method}" not allowed.` }, { Allow: allowed.join(', ') });
export const notAcceptable = (): ApiError => new ApiError(406, { detail: 'Could not satisfy the request Accept header.' });
export const unsupportedMediaType = (mediaType: string): ApiError =>
  new ApiError(415, { detail: `Unsupported media type "${mediaType}" in request.` });
