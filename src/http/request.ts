/**
 * HTTP conventions shared by every route: content negotiation (406), request bodies as JSON, form-encoded or multipart
 * with `a.b` / `a[b]` nesting (400, 413, 415), and the mapping of every failure to the API's JSON error bodies
 * (docs/api.md#api-behaviour-worth-knowing). Nothing internal (stack, SQL) ever reaches a response.
 */
import { ValidationError } from 'elysia';
import { ApiError, findApiError, methodNotAllowed, notAcceptable, notFound, unsupportedMediaType } from './errors';
import { fieldErrors, type FieldErrors } from '../domain/errors';
import { UnreadableBody, fieldErrorsOfIssues } from './route-docs';
import { NON_FIELD_ERRORS } from '../domain/input';
import { isDatabaseUnavailable } from '../db';
import { DuplicateRequestError } from '../services/collections/duplicate-checks';
import { countDuplicateRequest } from '../telemetry/metrics';
import { logger } from '../log';
import { MAX_JSON_DEPTH, jsonDepthExceeds } from '../formats/json';

export const MAX_BODY_BYTES = 1_048_576;

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', ...headers },
  });
}

/** A CSV download (a batch's results, a statement): text a spreadsheet opens, saved under `filename`. */
export function csvResponse(body: string, filename: string): Response {
  return new Response(body, {
    headers: { 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': `attachment; filename="${filename}"` },
  });
}

/** True when the Accept header (absent = anything) admits a JSON response. */
export function acceptsJson(accept: string | null): boolean {
  if (accept === null || accept.trim() === '') return true;
  return accept.split(',').some((range) => {
    const [mediaRange = '', ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    const quality = params.find((param) => param.startsWith('q='));
    if (quality !== undefined && !(Number(quality.slice(2)) > 0)) return false;
    return ['*/*', '*', 'application/*', 'application/json'].includes(mediaRange);
  });
}

export function assertAcceptsJson(request: Request): void {
  if (!acceptsJson(request.headers.get('accept'))) throw notAcceptable();
}

const NOT_UTF8_QUERY = 'The query string holds bytes that are not valid UTF-8.';

/**
 * A query string whose bytes are not UTF-8 is a 400, whether they came percent-encoded (`%FF`,
 * which URLSearchParams would store as U+FFFD) or raw: the HTTP server replaces a raw byte it
 * cannot decode with U+FFFD before the app sees the URL, so a U+FFFD in the query is that byte.
 */
export function assertQueryIsUtf8(request: Request): void {
  const query = request.url.indexOf('?');
  if (query === -1 || !request.url.includes('%', query)) return;
  const pairs = parseUrlEncodedPairs(request.url.slice(query + 1).replace(/#.*$/, ''), NOT_UTF8_QUERY);
  if (pairs.some(([key, value]) => key.includes('\uFFFD') || value.includes('\uFFFD')))
    throw new ApiError(400, { detail: NOT_UTF8_QUERY });
}

type FormValue = string | FormValue[] | { [key: string]: FormValue };
type FormBody = Record<string, FormValue>;

const NESTED_KEY = /^([^.[\]]+)(?:\.([^.[\]]+)|\[([^[\]]*)\])$/;

/** Builds a body from form pairs: `metadata.k=v` and `metadata[k]=v` nest, `a[]=` and repeats make lists. */
export function nestFormFields(pairs: Iterable<[string, string]>): FormBody {
  const body: FormBody = {};
  const append = (target: Record<string, FormValue>, key: string, value: string, forceList: boolean) => {
    const existing = target[key];
    if (existing === undefined) target[key] = forceList ? [value] : value;
    else if (Array.isArray(existing)) existing.push(value);
    else if (typeof existing === 'string') target[key] = [existing, value];
  };
  for (const [key, value] of pairs) {
    const match = NESTED_KEY.exec(key);
    if (!match) {
      append(body, key, value, false);
      continue;
    }
    const [, parent = '', dotted, bracketed] = match;
    const child = dotted ?? bracketed ?? '';
    if (child === '') {
      append(body, parent, value, true);
      continue;
    }
    const existing = body[parent];
    const container =
      existing !== undefined && typeof existing === 'object' && !Array.isArray(existing) ? existing : {};
    body[parent] = container;
    append(container, child, value, false);
  }
  return body;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Why PostgreSQL could not store `text` (text and jsonb refuse NUL; jsonb refuses an unpaired UTF-16
 * surrogate, which text would silently turn into U+FFFD), in Django REST framework's words; null
 * when it can.
 */
function unstorableTextProblem(text: string): string | null {
  if (text.includes('\u0000')) return 'Null characters are not allowed.';
  for (let index = 0; index < text.length; index += 1) {
    const unit = text.charCodeAt(index);
    if (unit < 0xd800 || unit > 0xdfff) continue;
    const next = text.charCodeAt(index + 1);
    if (unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      index += 1;
      continue;
    }
    return `Surrogate characters are not allowed: U+${unit.toString(16).toUpperCase()}.`;
  }
  return null;
}

/** The first problem of any key or string anywhere inside `value` (iterative: input may nest thousands deep). */
function firstUnstorableText(value: unknown): string | null {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string') {
      const problem = unstorableTextProblem(item);
      if (problem !== null) return problem;
    } else if (Array.isArray(item)) {
      pending.push(...item);
    } else if (typeof item === 'object' && item !== null) {
      for (const [key, nested] of Object.entries(item)) pending.push(key, nested);
    }
  }
  return null;
}

/**
 * Refuses (400, per field) input that holds text PostgreSQL cannot store, before any route reads
 * it: every body and query string goes through here, so no such value reaches a query as a 500.
 */
export function assertStorableText(fields: Record<string, unknown>): void {
  const errors: FieldErrors = {};
  for (const [name, value] of Object.entries(fields)) {
    const problem = firstUnstorableText(name) ?? firstUnstorableText(value);
    if (problem !== null) errors[name] = [problem];
  }
  if (Object.keys(errors).length > 0) throw fieldErrors(errors);
}

/**
 * How a route reads its body: the byte limit and, for an upload of rows, how a CSV (`text/csv`, or
 * a file of a multipart form) becomes a list under `csv.field` (its other fields stay as they are).
 */
type BodyOptions = {
  limit: number;
  csv?: { field: string; read: (text: string) => Record<string, string>[] };
  /** Fields of a multipart form whose file is kept as its text (UTF-8), for a page that reads it itself. */
  files?: readonly string[];
  /**
   * The route answers a body it cannot read itself (an operator's request that wants a decision
   * in the operator's shape, never a 4xx): it gets an `UnreadableBody` instead of the 400, 413 or 415.
   */
  answersUnreadable?: boolean;
  /** The body's bytes are kept for the route (`rawBodyOf`): a signature covers them as they came. */
  keepsRawBody?: boolean;
};
const DEFAULT_BODY: BodyOptions = { limit: MAX_BODY_BYTES };
const BODY_OPTIONS = new Map<string, BodyOptions>();

/** The bytes of each request whose route keeps them (`keepsRawBody`), as they arrived. */
const RAW_BODIES = new WeakMap<Request, Uint8Array>();
export const rawBodyOf = (request: Request): Uint8Array => RAW_BODIES.get(request) ?? new Uint8Array(0);

/** Gives one route (its method and route path) its own body reading; every other route reads by the default. */
export function declareBodyOptions(method: string, path: string, options: BodyOptions): void {
  BODY_OPTIONS.set(`${method.toUpperCase()} ${path}`, options);
}

export const bodyOptionsFor = (method: string, path: string | undefined): BodyOptions =>
  BODY_OPTIONS.get(`${method.toUpperCase()} ${path}`) ?? DEFAULT_BODY;

/** Parses a request body by its media type; the result is always a plain object of storable text. */
export async function parseRequestBody(
  request: Request,
  options: BodyOptions = DEFAULT_BODY,
): Promise<Record<string, unknown>> {
  const body = await parseBodyByMediaType(request, options);
  assertStorableText(body);
  return body;
}

/**
 * The body a route receives (the app's parse hook): `parseRequestBody`'s, or, for a route that
 * `answersUnreadable`, an `UnreadableBody` carrying what the refusal would have said.
 */
export async function routeBody(
  request: Request,
  options: BodyOptions,
): Promise<Record<string, unknown> | UnreadableBody> {
  try {
    return await parseRequestBody(request, options);
  } catch (error) {
    const refusal = findApiError(error);
    if (!options.answersUnreadable || refusal === undefined) throw error;
    return new UnreadableBody(
      Object.fromEntries(
        Object.entries(refusal.body).map(([field, messages]) => [
          field === 'detail' ? NON_FIELD_ERRORS : field,
          Array.isArray(messages) ? messages.map(String) : [String(messages)],
        ]),
      ),
    );
  }
}

/** A CSV's rows by the route's reader; what it cannot read is a 400 on the rows' field. */
function csvRows(text: string, csv: NonNullable<BodyOptions['csv']>): Record<string, unknown> {
  try {
    return { [csv.field]: csv.read(text) };
  } catch (cause) {
    throw new ApiError(400, { [csv.field]: [(cause as Error).message] }, {}, { cause });
  }
}

const bodyTooLarge = (limit: number): ApiError =>
  new ApiError(413, { detail: `Request body is too large; the limit is ${limit} bytes.` });

/**
 * The body's bytes, counted while they stream in: whatever the encoding (a declared length,
 * chunked, multipart), reading stops with a 413 as soon as the limit passes, so an oversized body
 * is never held in memory.
 */
async function readBodyBytes(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) throw bodyTooLarge(limit);
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw bodyTooLarge(limit);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as text; bytes that are not UTF-8 are a 400, never silently replaced with U+FFFD. */
function decodeUtf8(bytes: Uint8Array): string {
  try {
    return strictUtf8.decode(bytes);
  } catch (cause) {
    throw new ApiError(400, { detail: 'The request body is not valid UTF-8.' }, {}, { cause });
  }
}

/**
 * `a=1&b=%C3%A9` pairs, percent-decoded strictly: a sequence that is not UTF-8 (`%FF`) is a 400,
 * where URLSearchParams would turn it into U+FFFD.
 */
function parseUrlEncodedPairs(
  text: string,
  detail = 'The request body holds a percent-encoded sequence that is not valid UTF-8.',
): [string, string][] {
  const pairs: [string, string][] = [];
  for (const part of text.split('&')) {
    if (part === '') continue;
    const separator = part.indexOf('=');
    const [rawKey, rawValue] = separator === -1 ? [part, ''] : [part.slice(0, separator), part.slice(separator + 1)];
    try {
      pairs.push([decodeURIComponent(rawKey.replaceAll('+', ' ')), decodeURIComponent(rawValue.replaceAll('+', ' '))]);
    } catch (cause) {
      throw new ApiError(400, { detail }, {}, { cause });
    }
  }
  return pairs;
}

type NumberSource = { holder: unknown; key: string; source: string };
type SourceReviver = (this: unknown, key: string, value: unknown, context?: { source?: string }) => unknown;

/**
 * JSON text parsed after its nesting depth is checked without recursion (see `jsonDepthExceeds`).
 * A number among the body's own fields whose text is not what JavaScript would write for it
 * (`0.99999999999999999999`, which parses to 1; `1e2`; `100.50`) is kept as that text, so each
 * field judges it by its text as sent, by the same rules as a string: nothing is rounded silently.
 * (The reviver's source text is JSON.parse's source-text access, in Bun and V8.)
 */
function parseJsonText(text: string): unknown {
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
    throw new ApiError(400, { detail: `JSON parse error - nesting deeper than ${MAX_JSON_DEPTH} levels.` });
  }
  const rewritten: NumberSource[] = [];
  const reviver: SourceReviver = function (key, value, context) {
    const source = context?.source;
    if (typeof value === 'number' && source !== undefined && source !== String(value))
      rewritten.push({ holder: this, key, source });
    return value;
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text, reviver as Parameters<typeof JSON.parse>[1]);
  } catch (cause) {
    throw new ApiError(400, { detail: `JSON parse error - ${(cause as Error).message}` }, {}, { cause });
  }
  for (const { holder, key, source } of rewritten) {
    if (holder === parsed && isPlainObject(parsed)) parsed[key] = source;
  }
  return parsed;
}

async function parseBodyByMediaType(request: Request, options: BodyOptions): Promise<Record<string, unknown>> {
  const contentType = request.headers.get('content-type') ?? '';
  const mediaType = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  const isJson = mediaType === 'application/json' || mediaType.endsWith('+json');
  const isForm = mediaType === 'application/x-www-form-urlencoded';
  const isMultipart = mediaType === 'multipart/form-data';
  const isCsv = mediaType === 'text/csv' && options.csv !== undefined;
  const bytes = await readBodyBytes(request, options.limit);
  if (options.keepsRawBody) RAW_BODIES.set(request, bytes);
  if (bytes.byteLength === 0) return {};
  if (!isJson && !isForm && !isMultipart && !isCsv) throw unsupportedMediaType(mediaType || 'none');
  // The API takes text fields only (a route's CSV file aside), so every body, multipart included, must be UTF-8.
  const text = decodeUtf8(bytes);
  if (text.trim() === '') return {};
  if (isCsv) return csvRows(text, options.csv!);

  if (isMultipart) {
    const form = await new Response(bytes, { headers: { 'content-type': contentType } })
      .formData()
      .catch((cause: unknown) => {
        throw new ApiError(400, { detail: 'Multipart form parse error.' }, {}, { cause });
      });
    const pairs: [string, string][] = [];
    let csvFile: Blob | undefined;
    for (const [key, value] of form.entries()) {
      if (typeof value === 'string') pairs.push([key, value]);
      else if (options.files?.includes(key)) pairs.push([key, decodeUtf8(new Uint8Array(await value.arrayBuffer()))]);
      else if (options.csv !== undefined && key === options.csv.field) csvFile = value;
    }
    const body = nestFormFields(pairs);
    return csvFile === undefined
      ? body
      : { ...body, ...csvRows(decodeUtf8(new Uint8Array(await csvFile.arrayBuffer())), options.csv!) };
  }
  if (isJson) {
    const parsed = parseJsonText(text);
    if (!isPlainObject(parsed)) {
      const got = Array.isArray(parsed) ? 'list' : parsed === null ? 'null' : typeof parsed;
      throw new ApiError(400, { non_field_errors: [`Invalid data. Expected a dictionary, but got ${got}.`] });
    }
    return parsed;
  }
  return nestFormFields(parseUrlEncodedPairs(text));
}

type Route = { method: string; path: string; hooks?: { body?: unknown; query?: unknown } };

/**
 * What each route declares, by method and route path: whether it takes a body (declares `body`) and
 * reads the query string (declares `query`), for the app's global parse and transform hooks.
 */
export function createRouteIndex(routes: () => readonly Route[]) {
  let byRoute: Map<string, Route> | undefined;
  const find = (method: string, path: string | undefined): Route | undefined => {
    byRoute ??= new Map(routes().map((route) => [`${route.method.toUpperCase()} ${route.path}`, route]));
    return byRoute.get(`${method === 'HEAD' ? 'GET' : method} ${path}`);
  };
  return {
    takesBody: (method: string, path: string | undefined): boolean => find(method, path)?.hooks?.body !== undefined,
    readsQuery: (method: string, path: string | undefined): boolean => find(method, path)?.hooks?.query !== undefined,
  };
}

/** Methods the app serves at a path, for 405 responses with an `Allow` header. */
export function createMethodIndex(routes: () => readonly Route[]) {
  let compiled: { pattern: RegExp; method: string }[] | undefined;
  return (path: string): string[] => {
    compiled ??= routes().map((route) => ({
      method: route.method.toUpperCase(),
      pattern: new RegExp(`^${route.path.replace(/\/+$/, '').replace(/:[^/]+/g, '[^/]+')}/?$`),
    }));
    return [...new Set(compiled.filter((route) => route.pattern.test(path)).map((route) => route.method))];
  };
}

/** Turns anything thrown while handling a request into the API's error response. */
export function errorResponse(
  code: unknown,
  error: unknown,
  request: Request,
  allowedMethods: (path: string) => string[],
): Response {
  const apiError = findApiError(error);
  if (apiError) return jsonResponse(apiError.status, apiError.body, apiError.headers);
  if (error instanceof DuplicateRequestError) {
    countDuplicateRequest();
    return jsonResponse(409, { detail: error.message });
  }
  if (code === 'NOT_FOUND') {
    const allowed = allowedMethods(new URL(request.url).pathname);
    const failure = allowed.length > 0 ? methodNotAllowed(request.method, allowed) : notFound();
    return jsonResponse(failure.status, failure.body, failure.headers);
  }
  if (code === 'PARSE') return jsonResponse(400, { detail: 'Malformed request body.' });
  if (code === 'VALIDATION' && error instanceof ValidationError) {
    // A declared schema refused the input (src/http/route-docs.ts): the API's field errors, with the
    // messages `validate` gives. A path id that is no id names nothing (404); a header's rule is its detail.
    if (error.type === 'params') return jsonResponse(404, notFound().body);
    const errors = fieldErrorsOfIssues(error.all as { path?: string; message?: string }[]);
    if (error.type === 'headers')
      return jsonResponse(400, { detail: Object.values(errors).flat()[0] ?? 'Invalid header.' });
    return jsonResponse(400, errors);
  }
  if (isDatabaseUnavailable(error)) {
    // PostgreSQL is down or refusing connections: a transient condition, not a bug, so 503 with
    // Retry-After; the client looks up what it wrote before retrying a write (a Duplicate-Check-Key
    // the request claimed stays claimed, as for any 5xx).
    logger.warn('database unavailable', { error, method: request.method, path: new URL(request.url).pathname });
    return jsonResponse(
      503,
      { detail: 'The service is temporarily unavailable. Try again shortly.' },
      { 'Retry-After': '5' },
    );
  }
  logger.error('unhandled error', { error, method: request.method, path: new URL(request.url).pathname });
  return jsonResponse(500, { detail: 'A server error occurred.' });
}
