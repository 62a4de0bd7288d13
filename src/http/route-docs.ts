/**
 * What a route declares so that Elysia validates its input and the OpenAPI document describes it,
 * from one source:
 *
 *   .post('', handler, { can: 'collect', body: requestSchema(ContactCreate), ...routeDocs({ operationId, ... }) })
 *
 * `requestSchema` hands a valibot schema to Elysia as a Standard Schema: Elysia validates the body,
 * query, path parameters or headers with it (one message per field, as `checkFields` does), and
 * the document converts the same schema (src/api/openapi.ts). `routeDocs` names the operation and
 * its success responses, whose schemas are the serialisers' own valibot schemas (src/domain), and
 * which of the shared error responses below it answers. A route added later is documented by
 * declaring these; a route without them fails the OpenAPI tests.
 */
import * as v from 'valibot';
import type { DocumentDecoration } from 'elysia';
import type { ApiVersion } from '../domain/versions';
import { NON_FIELD_ERRORS, checkFields } from '../domain/input';
import {
  invalidToken,
  methodNotAllowed,
  notAcceptable,
  notFound,
  permissionDenied,
  unsupportedMediaType,
} from './errors';
import { fieldErrors } from '../domain/errors';

// ---------------------------------------------------------------------------------------------
// Input schemas

/**
 * A valibot schema as a route declares it (`body`, `query`, `params`, `headers`): a Standard Schema
 * Elysia validates with. `TOutput` is what the route receives (the schema's output, unless the
 * route answers a refusal itself: `checkedRequestSchema`).
 */
type RequestSchema<TSchema extends v.GenericSchema = v.GenericSchema, TOutput = v.InferOutput<TSchema>> = {
  readonly valibot: TSchema;
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: 'valibot';
    readonly validate: (value: unknown) => { value: TOutput; issues?: undefined } | { issues: RequestIssue[] };
    readonly types?: { readonly input: v.InferInput<TSchema>; readonly output: TOutput } | undefined;
  };
};
/** One message of one field (`path: [field]`), or of the whole input (no path). */
type RequestIssue = { message: string; path?: [string] };

/** A declared schema: `valibot` describes it (the OpenAPI document), `validate` is what Elysia runs. */
function standardSchema<TSchema extends v.GenericSchema, TOutput>(
  valibot: TSchema,
  validate: RequestSchema<TSchema, TOutput>['~standard']['validate'],
): RequestSchema<TSchema, TOutput> {
  return { valibot, '~standard': { version: 1, vendor: 'valibot', validate } };
}

export function requestSchema<const TSchema extends v.GenericSchema>(valibot: TSchema): RequestSchema<TSchema> {
  return standardSchema(valibot, (value) => {
    const checked = checkFields(valibot, value);
    if (checked.success) return { value: checked.output };
    return {
      issues: Object.entries(checked.errors).flatMap(([field, messages]) =>
        messages.map(
          (message): RequestIssue => (field === NON_FIELD_ERRORS ? { message } : { message, path: [field] }),
        ),
      ),
    };
  });
}

/** A body as `checkedRequestSchema` hands it to the route: valid, or the field errors a 400 would have carried. */
type CheckedBody<TOutput> = { valid: true; body: TOutput } | { valid: false; errors: Record<string, string[]> };

/**
 * What a route that answers unreadable bodies itself (src/http/request.ts, `answersUnreadable`)
 * receives in place of a body that could not be read (not JSON, not UTF-8, text PostgreSQL cannot
 * store, too large, another media type): the errors the refusal would have carried.
 */
export class UnreadableBody {
  constructor(readonly errors: Record<string, string[]>) {}
}

/**
 * A body the route answers itself when it breaks the schema, instead of the 400 every other route
 * gives (an operator's request that wants a decision, whatever arrived): validation never fails, and
 * the route receives `{valid, body}` or `{valid: false, errors}`, an `UnreadableBody` included. The
 * document describes the body by `valibot` all the same.
 */
export function checkedRequestSchema<const TSchema extends v.GenericSchema>(
  valibot: TSchema,
): RequestSchema<TSchema, CheckedBody<v.InferOutput<TSchema>>> {
  return standardSchema(valibot, (value) => {
    if (value instanceof UnreadableBody) return { value: { valid: false, errors: value.errors } };
    const checked = checkFields(valibot, value);
    return {
      value: checked.success ? { valid: true, body: checked.output } : { valid: false, errors: checked.errors },
    };
  });
}

export const isRequestSchema = (value: unknown): value is RequestSchema =>
  typeof value === 'object' && value !== null && 'valibot' in value && '~standard' in value;

/** `{field: [messages]}` from the issues a declared schema reported (Elysia's `ValidationError.all`). */
export function fieldErrorsOfIssues(issues: readonly { path?: string; message?: string }[]) {
  const errors: Record<string, string[]> = {};
  for (const issue of issues) {
    const field =
      issue.path === undefined || issue.path === '' || issue.path === 'root' ? NON_FIELD_ERRORS : issue.path;
    (errors[field] ??= []).push(issue.message ?? 'Invalid input.');
  }
  return Object.keys(errors).length > 0 ? errors : { [NON_FIELD_ERRORS]: ['Invalid input.'] };
}

/** A path id: digits (an id that names nothing, or is no id at all, is 404, never 400). */
export const PathIdParams = requestSchema(
  v.object({
    id: v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'Not found.'), v.description("The object's id."), v.examples(['42'])),
  }),
);

// ---------------------------------------------------------------------------------------------
// Operations

/** A response schema: one for every version, or one per version (src/domain/versions.ts). */
type ResponseSchema = v.GenericSchema | ((version: ApiVersion) => v.GenericSchema);
/** A success response: JSON of `schema`, or text of another `mediaType` (a CSV download) with its example. */
type SuccessResponse = { description: string; schema?: ResponseSchema; example?: unknown; mediaType?: 'text/csv' };

const ERROR_STATUSES = [400, 401, 403, 404, 406, 409, 413, 415, 429, 503] as const;
export type ErrorStatus = (typeof ERROR_STATUSES)[number];

/** Who may call a route: a merchant's API key, a mobile network's secret, or anyone. */
type Caller = 'merchant' | 'network' | 'anyone';

export type RouteOperation = {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  caller: Caller;
  /** Success responses by status. */
  responses: Record<number, SuccessResponse>;
  /** The error responses the route answers besides those every route of its caller answers. */
  errors?: readonly ErrorStatus[];
  /** Errors in the bill-payment envelope (docs/api.md#bill-payments) instead of `{"detail": ...}`. */
  billsEnvelope?: boolean;
  /** An example request body (JSON; the form example is the same fields as text). */
  requestExample?: Record<string, unknown>;
  /** The route also takes its body as CSV (`text/csv`): what the CSV holds, and an example. */
  requestCsv?: { description: string; example: string };
};

const operations = new Map<string, RouteOperation>();

/** Every operation declared so far, by operationId (the document reads them back through each route's `detail`). */
export const routeOperation = (operationId: string | undefined): RouteOperation | undefined =>
  operationId === undefined ? undefined : operations.get(operationId);

/**
 * The OpenAPI part of a route's options: Elysia keeps `detail` on the route, the document finds the
 * operation by its id. `servers` is for operations served from another base URL (`{bills_url}`).
 */
export function routeDocs(
  operation: RouteOperation,
  extra: Pick<DocumentDecoration, 'servers'> = {},
): { detail: DocumentDecoration } {
  operations.set(operation.operationId, operation);
  return { detail: { operationId: operation.operationId, summary: operation.summary, tags: operation.tags, ...extra } };
}

// ---------------------------------------------------------------------------------------------
// Shared error responses: schemas, descriptions and examples, the examples made by the same
// builders that make the errors (src/http/errors.ts, src/domain/errors.ts).

export const ErrorDetailSchema = v.pipe(
  v.object({ detail: v.string() }),
  v.description('An error: `detail` says what went wrong.'),
  v.examples([notFound().body as { detail: string }]),
);
export const FieldErrorsSchema = v.pipe(
  v.record(v.string(), v.array(v.string())),
  v.description(
    'Field errors: each field that was refused, with its messages (`non_field_errors` for the whole input).',
  ),
  v.examples([
    fieldErrors({ phonenumber: ['This field is required.'], amount: ['A valid number is required.'] }).fields,
  ]),
);
export const BillsErrorSchema = v.pipe(
  v.object({
    status: v.literal('error'),
    message: v.string(),
    code: v.pipe(v.number(), v.description('The HTTP status.')),
    data: v.pipe(v.nullable(v.record(v.string(), v.array(v.string()))), v.description('Field errors, or null.')),
  }),
  v.description('A bill-payment error: the bill-payment envelope with `status` `error`.'),
);

/** `headers`: name → description; each is sent with every such response unless `optionalHeaders` names it. */
type ErrorDoc = {
  name: string;
  description: string;
  example: Record<string, unknown>;
  headers?: Record<string, string>;
  optionalHeaders?: string[];
};

const throttledExample = { detail: 'Request was throttled. Expected available in 42 seconds.' };

/** Each error status: its component name, what it means, an example body and the headers it carries. */
export const ERROR_DOCS: Record<ErrorStatus | 405, ErrorDoc> = {
  400: {
    name: 'BadRequest',
    description: [
      'The request was refused:',
      'field errors `{"field": ["message"]}` for a body, query or header that breaks a rule',
      '(the first rule each field breaks),',
      'or `{"detail": ...}` for a body that cannot be read (malformed JSON, not UTF-8, nested deeper than 32 levels),',
      'a query string whose percent-encoded bytes are not UTF-8, or an unknown API version.',
    ].join(' '),
    example: fieldErrors({ phonenumber: ['This field is required.'] }).fields,
  },
  401: {
    name: 'Unauthorized',
    description: [
      'The `Authorization` header is missing or does not hold a valid key.',
      'Every `/api/...` path answers this first, known or not.',
    ].join(' '),
    example: invalidToken().body,
    headers: { 'WWW-Authenticate': 'The scheme to use: `Token` (`Bearer` for the network callback).' },
  },
  403: {
    name: 'Forbidden',
    description: [
      'The object belongs to another organization,',
      "or the key's role (or its user's) does not allow the route (README, Roles).",
    ].join(' '),
    example: permissionDenied().body,
  },
  404: { name: 'NotFound', description: 'No such object (or path).', example: notFound().body },
  405: {
    name: 'MethodNotAllowed',
    description: 'The path does not serve the method; `Allow` lists the methods it serves.',
    example: methodNotAllowed('POST', ['GET']).body,
    headers: { Allow: 'The methods the path serves.' },
  },
  406: {
    name: 'NotAcceptable',
    description: 'The `Accept` header admits no JSON; every response is JSON.',
    example: notAcceptable().body,
  },
  409: {
    name: 'Conflict',
    description: 'An earlier write in the last 24 hours carried the same `Duplicate-Check-Key`; nothing was written.',
    example: { detail: 'Duplicate Request Detected!' },
  },
  413: {
    name: 'PayloadTooLarge',
    description: 'The body passed 1 MiB (counted while it streams, whatever its encoding).',
    example: { detail: 'Request body is too large; the limit is 1048576 bytes.' },
  },
  415: {
    name: 'UnsupportedMediaType',
    description: 'The body is not JSON, form-encoded or multipart.',
    example: unsupportedMediaType('application/xml').body,
  },
  429: {
    name: 'TooManyRequests',
    description: [
      'The organization used up its requests of the window (reads and writes counted apart),',
      'or, on an operator callback route, the source address or the operator used up theirs (before the body is read);',
      '`Retry-After` says when to try again.',
    ].join(' '),
    example: throttledExample,
    headers: { 'Retry-After': 'Seconds until the window ends.' },
  },
  503: {
    name: 'ServiceUnavailable',
    description: [
      'The service cannot reach its database for a moment;',
      'try again after `Retry-After` seconds (look up a write before repeating it).',
    ].join(' '),
    example: { detail: 'The service is temporarily unavailable. Try again shortly.' },
    headers: { 'Retry-After': 'Seconds to wait (when the database is out of reach).' },
    optionalHeaders: ['Retry-After'],
  },
};

/**
 * The errors every route of a caller kind answers (body routes add 413 and 415, writes 409, routes some roles may not
 * call 403).
 */
export function errorStatusesOf(
  operation: RouteOperation,
  method: string,
  takesBody: boolean,
  restricted = false,
): (ErrorStatus | 405)[] {
  // Every route: a query string that is not UTF-8 (400), an Accept without JSON (406), the database out of reach (503).
  const statuses = new Set<ErrorStatus>([400, 406, 503, ...(operation.errors ?? [])]);
  if (operation.caller !== 'anyone') statuses.add(401);
  if (restricted) statuses.add(403);
  if (operation.caller === 'merchant') {
    statuses.add(429);
    if (!['GET', 'HEAD'].includes(method)) statuses.add(409);
  }
  if (takesBody) {
    statuses.add(400);
    statuses.add(413);
    statuses.add(415);
  }
  return [...statuses].sort((a, b) => a - b);
}
