/**
 * Every response the tests see is checked against the OpenAPI document the app serves: the
 * operation of its path and method (or, for a path or method the app does not serve, the shared
 * error response of its status), the status must be documented, the body must match the schema of
 * that status (ajv, compiled from the document lazily, once per process and version) and the
 * headers the document says are sent must be there. The document of the response's version is
 * used (its `Api-Version` header, or the `/api/vN/` prefix). `testApp` wraps `app.handle` with
 * this, so every test that calls the app is checked without asking; the typed client of the
 * end-to-end tests checks what it receives the same way.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { API_VERSIONS, CURRENT_API_VERSION, parseApiVersion, type ApiVersion } from '../src/domain/versions';
import { ERROR_DOCS } from '../src/http/route-docs';
import { OPENAPI_DOCUMENT_PATH, isUndocumentedPath, type OpenApiDocument } from '../src/api/openapi';
import { isConsolePath } from '../src/console';

type Schema = Record<string, unknown>;
type Contract = {
  document: OpenApiDocument;
  ajv: Ajv2020;
  validators: Map<string, ValidateFunction>;
  paths: { pattern: RegExp; path: string }[];
};

const contracts = new Map<ApiVersion, Promise<Contract>>();
/** A version prefix as the app takes it off (src/api/versions.ts): `/api/v<digit>...`. */
const VERSION_PREFIX = /^\/api\/(v\d[^/]*)(?=\/|$)/i;

/** The document of `version`, as the app serves it, with its validators (made once per process). */
export function contractOf(
  version: ApiVersion,
  fetchDocument: (path: string) => Promise<OpenApiDocument>,
): Promise<Contract> {
  let contract = contracts.get(version);
  if (contract === undefined) {
    contract = fetchDocument(`${OPENAPI_DOCUMENT_PATH}?version=v${version}`).then((document) => {
      const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
      addFormats(ajv);
      ajv.addSchema(document as unknown as Schema, 'openapi');
      const paths = Object.keys(document.paths).map((path) => ({
        path,
        pattern: new RegExp(`^${path.replace(/\{[^/]+\}/g, '[^/]+')}/?$`),
      }));
      const contract: Contract = { document, ajv, validators: new Map(), paths };
      // Every response schema compiled now, so no check later pays for a compilation.
      for (const location of responseSchemaLocations(document)) validatorOf(contract, location);
      return contract;
    });
    contracts.set(version, contract);
  }
  return contract;
}

function responseSchemaLocations(document: OpenApiDocument): string[] {
  const locations = [pointer('components', 'schemas', 'BillsError')];
  const ofResponses = (base: string[], responses: Record<string, Schema>) => {
    for (const [status, response] of Object.entries(responses)) {
      for (const mediaType of Object.keys((response.content ?? {}) as Schema))
        locations.push(pointer(...base, status, 'content', mediaType, 'schema'));
    }
  };
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item))
      ofResponses(['paths', path, method, 'responses'], operation.responses as Record<string, Schema>);
  }
  ofResponses(['components', 'responses'], document.components.responses);
  return locations;
}

/** Loads the documents of every version and compiles their validators (before a test that times its requests). */
export async function prepareContracts(app: { handle: Handle }): Promise<void> {
  const fetchDocument = async (path: string) =>
    (await (await app.handle(new Request(`http://localhost${path}`))).json()) as OpenApiDocument;
  for (const version of API_VERSIONS) await contractOf(version, fetchDocument);
}

const pointer = (...parts: string[]) => parts.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

function validatorOf(contract: Contract, location: string): ValidateFunction {
  let validate = contract.validators.get(location);
  if (validate === undefined) {
    validate = contract.ajv.compile({ $ref: `openapi#/${location}` });
    contract.validators.set(location, validate);
  }
  return validate;
}

export type SeenResponse = { method: string; url: string; status: number; headers: Headers; text: string };

/** What in the response disagrees with the document; empty when nothing does. */
export async function responseProblems(
  seen: SeenResponse,
  fetchDocument: (path: string) => Promise<OpenApiDocument>,
): Promise<string[]> {
  const url = new URL(seen.url);
  if (isUndocumentedPath(url.pathname) || isConsolePath(url.pathname)) return [];
  const prefix = VERSION_PREFIX.exec(url.pathname);
  const version = parseApiVersion(seen.headers.get('api-version') ?? prefix?.[1] ?? '') ?? CURRENT_API_VERSION;
  const contract = await contractOf(version, fetchDocument);
  const path = prefix ? url.pathname.replace(VERSION_PREFIX, '/api') : url.pathname;
  const method = seen.method.toUpperCase() === 'HEAD' ? 'get' : seen.method.toLowerCase();
  const documented = contract.paths.find((candidate) => candidate.pattern.test(path));
  const operation = documented ? (contract.document.paths[documented.path]?.[method] as Schema | undefined) : undefined;

  let location: string | undefined;
  if (operation) {
    if ((operation.responses as Schema)[String(seen.status)] === undefined) {
      return [
        `status ${seen.status} is not documented for ${method.toUpperCase()} ${documented!.path} (documented: ${Object.keys(operation.responses as Schema).join(', ')})`,
      ];
    }
    location = pointer('paths', documented!.path, method, 'responses', String(seen.status));
  } else {
    // No operation: a path or method the app does not serve. Its answer is one of the shared errors.
    const shared = ERROR_DOCS[seen.status as keyof typeof ERROR_DOCS];
    if (shared === undefined)
      return [`${seen.method} ${path} is not in the document, and ${seen.status} is not a shared error response`];
    if (path === '/api/bills' || path.startsWith('/api/bills/')) {
      if (seen.method.toUpperCase() === 'HEAD') return [];
      const body = safeJson(seen.text);
      const ok = validatorOf(contract, pointer('components', 'schemas', 'BillsError'))(body);
      return ok ? [] : [`bill-payment error does not match BillsError: ${seen.text.slice(0, 200)}`];
    }
    location = pointer('components', 'responses', shared.name);
  }

  let response = resolve(contract.document, location);
  if (typeof response.$ref === 'string') {
    location = response.$ref.slice(2);
    response = resolve(contract.document, location);
  }
  const problems: string[] = [];
  for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, Schema>)) {
    if (header.required === true && !seen.headers.has(name))
      problems.push(`header ${name} is documented as sent but is missing`);
  }
  if (seen.method.toUpperCase() === 'HEAD') return problems;
  const content = response.content as Record<string, Schema> | undefined;
  if (content === undefined) {
    if (seen.text !== '') problems.push(`the document says no body, but one came: ${seen.text.slice(0, 200)}`);
    return problems;
  }
  const mediaType = (seen.headers.get('content-type') ?? '').split(';')[0]!.trim();
  if (content[mediaType] === undefined)
    return [
      ...problems,
      `media type ${JSON.stringify(mediaType)} is not documented (documented: ${Object.keys(content).join(', ')})`,
    ];
  const validate = validatorOf(
    contract,
    pointer(...location.split('/').map(unescapePointer), 'content', mediaType, 'schema'),
  );
  // A CSV download is text: its schema is a string.
  const body = mediaType === 'application/json' ? safeJson(seen.text) : seen.text;
  if (!validate(body)) {
    problems.push(
      `body does not match the schema: ${contract.ajv.errorsText(validate.errors, { separator: '; ' })}; body: ${seen.text.slice(0, 300)}`,
    );
  }
  return problems;
}

const unescapePointer = (part: string) => part.replaceAll('~1', '/').replaceAll('~0', '~');

function resolve(document: OpenApiDocument, location: string): Schema {
  let node: unknown = document;
  for (const part of location.split('/').map(unescapePointer)) node = (node as Schema)[part];
  return node as Schema;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Throws when the response disagrees with the document, naming the request. */
export async function assertDocumented(
  seen: SeenResponse,
  fetchDocument: (path: string) => Promise<OpenApiDocument>,
): Promise<void> {
  const problems = await responseProblems(seen, fetchDocument);
  if (problems.length > 0) {
    throw new Error(
      `${seen.method} ${new URL(seen.url).pathname} → ${seen.status} disagrees with the OpenAPI document:\n  ${problems.join('\n  ')}`,
    );
  }
}

type Handle = (request: Request) => Promise<Response>;

/** `handle` that checks every response against the document the same app serves (fetched with the unchecked `handle`). */
export function documentChecked(handle: Handle): Handle {
  const fetchDocument = async (path: string) =>
    (await (await handle(new Request(`http://localhost${path}`))).json()) as OpenApiDocument;
  return async (request) => {
    const { method, url } = request;
    const response = await handle(request);
    const text = await response.text();
    await assertDocumented({ method, url, status: response.status, headers: response.headers, text }, fetchDocument);
    return new Response(response.status === 204 || response.status === 304 || method === 'HEAD' ? null : text, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

const checkedApps = new WeakSet<object>();

/**
 * Makes every response of `app.handle` checked against the document (once per app: `testApp` and
 * `requester` both call it, so an app made directly with `createApp` is checked too).
 */
export function checkResponsesOf<T extends { handle: Handle }>(app: T): T {
  if (!checkedApps.has(app)) {
    checkedApps.add(app);
    (app as { handle: Handle }).handle = documentChecked(app.handle.bind(app));
  }
  return app;
}
