/**
 * The OpenAPI document (`/openapi/json`) and its reference page (`/openapi`), both built from what
 * the routes declare (src/http/route-docs.ts): the valibot schemas Elysia validates requests with,
 * converted by @valibot/to-json-schema, and the serialisers' valibot schemas for responses. Every
 * route the app serves appears without being listed here. The page's script comes from the
 * @scalar/api-reference package and is served by the API itself: it needs no other host.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Elysia } from 'elysia';
import type * as v from 'valibot';
import { toJsonSchema, type ConversionConfig, type JsonSchema } from '@valibot/to-json-schema';
import type { Config } from '../config';
import { AuditEventSchema } from '../domain/audit';
import { BillServiceSchema, ElectricityBillerSchema, PinBundleSchema } from '../domain/bills';
import { TransactionSchema } from '../domain/collections';
import { DeliverySchema, WebhookSchema } from '../domain/webhooks';
import { listedCodes } from '../domain/money';
import {
  PARAMETER_ROLES_EXTENSION,
  ROLES,
  ROLES_EXTENSION,
  rolesOfDetail,
  rolesWith,
  type Role,
} from '../domain/roles';
import {
  AccountSchema,
  CurrencySchema,
  LedgerTransactionSchema,
  NetworkSchema,
  PaymentSchema,
  ReversalSchema,
} from '../domain/money-out';
import { NetworkStatusSchema } from '../domain/network-status';
import { PaymentBatchLineSchema, PaymentBatchSchema } from '../domain/payment-batches';
import { SettlementSchema } from '../domain/settlements';
import { StatementSchema } from '../domain/statements';
import {
  API_VERSIONS,
  CURRENT_API_VERSION,
  collectionRequestSchemaForVersion,
  collectionSchemaForVersion,
  contactSchemaForVersion,
  eventSchemaForVersion,
  formatApiVersion,
  ownedSchemaForVersion,
  parseApiVersion,
  type ApiVersion,
} from '../domain/versions';
import { ApiError } from '../http/errors';
import { jsonResponse } from '../http/request';
import { DUPLICATE_CHECK_HEADER, DUPLICATE_CHECK_KEY_MAX_LENGTH } from '../http/request-policy';
import {
  BillsErrorSchema,
  ERROR_DOCS,
  ErrorDetailSchema,
  FieldErrorsSchema,
  errorStatusesOf,
  isRequestSchema,
  routeOperation,
  type ErrorStatus,
  type RouteOperation,
} from '../http/route-docs';
import { API_VERSION_HEADER } from '../http/versions';
import { queryWritesOf } from '../http/query-writes';
import { CONNECTOR_OPERATORS } from '../network/registry';
import { METRICS_PATH } from './metrics';

export const DOCS_PATH = '/openapi';
export const OPENAPI_DOCUMENT_PATH = `${DOCS_PATH}/json`;
export const DOCS_SCRIPT_PATH = `${DOCS_PATH}/assets/api-reference.js`;
/** The page's own start-up script: a file, so the page's Content-Security-Policy runs no inline script. */
const DOCS_INIT_PATH = `${DOCS_PATH}/assets/init.js`;
const DOCUMENTATION_PATHS = new Set([DOCS_PATH, OPENAPI_DOCUMENT_PATH, DOCS_SCRIPT_PATH, DOCS_INIT_PATH]);

/**
 * The reference page's headers: no framing, no sniffing, and scripts from the API's own origin only.
 * Styles may be inline: the reference's bundle injects its own style elements as it renders.
 */
const DOCS_PAGE_HEADERS: Record<string, string> = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy': [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "object-src 'none'",
  ].join('; '),
  'X-Frame-Options': 'DENY',
};

/** The docs page is HTML for browsers, so it is the one route the JSON-only Accept rule skips. */
export function isDocumentationPage(request: Request): boolean {
  const { pathname } = new URL(request.url);
  return pathname === DOCS_PATH || pathname === `${DOCS_PATH}/`;
}

/** The page, the document and the page's script: served to anyone, and not part of the document. */
const isDocumentationPath = (pathname: string): boolean => DOCUMENTATION_PATHS.has(pathname.replace(/(.)\/$/, '$1'));

/**
 * The API's paths the document does not describe: the documentation itself and the Prometheus
 * endpoint (text for operators). Their routes are `hide`, as the web console's pages are.
 */
export const isUndocumentedPath = (pathname: string): boolean =>
  isDocumentationPath(pathname) || pathname === METRICS_PATH || pathname === `${METRICS_PATH}/`;

// ---------------------------------------------------------------------------------------------
// Conversion

type Schema = Record<string, unknown>;
export type OpenApiDocument = {
  openapi: string;
  info: Schema;
  paths: Record<string, Record<string, Schema>>;
  components: {
    schemas: Record<string, Schema>;
    responses: Record<string, Schema>;
    securitySchemes: Record<string, Schema>;
  };
  [key: string]: unknown;
};

/** The named schemas of a version's document: responses use them by `$ref`. */
function componentSchemas(version: ApiVersion): Record<string, v.GenericSchema> {
  return {
    Contact: contactSchemaForVersion(version),
    CollectionRequest: collectionRequestSchemaForVersion(version),
    Collection: collectionSchemaForVersion(version),
    Transaction: TransactionSchema,
    Account: ownedSchemaForVersion(AccountSchema)(version),
    Payment: ownedSchemaForVersion(PaymentSchema)(version),
    Reversal: ownedSchemaForVersion(ReversalSchema)(version),
    PaymentBatch: ownedSchemaForVersion(PaymentBatchSchema)(version),
    PaymentBatchRow: PaymentBatchLineSchema,
    WalletTransaction: LedgerTransactionSchema,
    Statement: StatementSchema,
    Settlement: SettlementSchema,
    Currency: CurrencySchema,
    Network: NetworkSchema,
    NetworkStatus: NetworkStatusSchema,
    Event: eventSchemaForVersion(version),
    Webhook: WebhookSchema,
    WebhookDelivery: DeliverySchema,
    AuditEvent: AuditEventSchema,
    BillService: BillServiceSchema,
    ElectricityBiller: ElectricityBillerSchema,
    PinBundle: PinBundleSchema,
    ErrorDetail: ErrorDetailSchema,
    FieldErrors: FieldErrorsSchema,
    BillsError: BillsErrorSchema,
  };
}

const componentRef = (name: string) => `#/components/schemas/${name}`;

/** Drops what a schema inside an OpenAPI document does not carry, and `required: []`. */
function tidy(schema: JsonSchema): Schema {
  const { $schema: _schema, $defs: _defs, ...rest } = schema as Schema;
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (typeof value !== 'object' || value === null) return value;
    const entries = Object.entries(value as Schema).filter(
      ([key, item]) => !(key === 'required' && Array.isArray(item) && item.length === 0),
    );
    return Object.fromEntries(
      entries.map(([key, item]) => [
        key,
        key === 'examples' || key === 'default' || key === 'const' ? item : walk(item),
      ]),
    );
  };
  return walk(rest) as Schema;
}

function converter(version: ApiVersion) {
  const definitions = componentSchemas(version);
  const base: ConversionConfig = {
    target: 'draft-2020-12',
    // Rules JSON Schema cannot state (checks, transforms) are left out; their descriptions say them.
    errorMode: 'ignore',
    definitions,
    overrideRef: ({ referenceId }) => componentRef(referenceId),
  };
  return {
    /** A request schema as the client sends it: conversion stops at the first transformation. */
    input: (schema: v.GenericSchema) => tidy(toJsonSchema(schema, { ...base, typeMode: 'input' })),
    output: (schema: v.GenericSchema) => tidy(toJsonSchema(schema, { ...base, typeMode: 'output' })),
    components: () =>
      Object.fromEntries(
        Object.entries(definitions).map(([name, schema]) => {
          // The definition itself, not a reference to it.
          const { [name]: _self, ...others } = definitions;
          return [name, tidy(toJsonSchema(schema, { ...base, definitions: others, typeMode: 'output' }))];
        }),
      ),
  };
}

/** A usable example of a schema: its own example, else one made of its parts' examples. */
function exampleOf(schema: Schema | undefined, components: Record<string, Schema>, depth = 0): unknown {
  if (schema === undefined || depth > 12) return undefined;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (Array.isArray(schema.type) && schema.type.includes('null')) return null;
  if (typeof schema.$ref === 'string')
    return exampleOf(components[schema.$ref.split('/').pop() ?? ''], components, depth + 1);
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const options = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (options) {
    if (options.some((option) => option.type === 'null')) return null;
    return exampleOf(options[0], components, depth + 1);
  }
  const type = Array.isArray(schema.type) ? schema.type.find((item) => item !== 'null') : schema.type;
  switch (type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const required = new Set((schema.required ?? []) as string[]);
      return Object.fromEntries(
        Object.entries(properties)
          .filter(([name]) => required.has(name))
          .map(([name, property]) => [name, exampleOf(property, components, depth + 1)]),
      );
    }
    case 'array':
      return [exampleOf(schema.items as Schema | undefined, components, depth + 1)].filter(
        (item) => item !== undefined,
      );
    case 'string':
      return 'text';
    case 'number':
    case 'integer':
      return typeof schema.minimum === 'number' ? schema.minimum : 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// The document

export type DocumentedRoute = {
  method: string;
  path: string;
  hooks?: { body?: unknown; query?: unknown; params?: unknown; headers?: unknown; detail?: unknown };
};

const INFO_DESCRIPTION = (version: ApiVersion) =>
  `
Collections, collection requests, contacts, webhooks, events and bill-payment listings of a mobile-money
collections service. This document describes API version ${formatApiVersion(version)}${
    version === CURRENT_API_VERSION ? ' (the current one)' : ''
  };
\`${OPENAPI_DOCUMENT_PATH}?version=v1\` … \`v4\` gives each version's document.

**Authentication.** Every \`/api/...\` path needs \`Authorization: Token <API key>\` (\`Bearer <API key>\` works too):
a missing or wrong key is 401 \`{"detail": "Invalid token."}\` on every such path, known or not.

**Versions.** An organization's version is saved on its first request. \`${API_VERSION_HEADER}: v3\` selects another for
one request, and so does a \`/api/v3/...\` prefix (every path answers under \`/api/v1/\` … \
\`/api/v4/\`; the prefix wins).
Responses carry the \`${API_VERSION_HEADER}\` used. Version 1 lists are bare arrays and \`organization\` is a name;
a collection's \`currency\` is a numeric id in version 1, its \`collection_request\` an id before version 3, and its
\`transaction\` appears in version 4.

**Bodies** are JSON, form-encoded or multipart (text fields only); nested hashes as \`metadata.key=value\` or
\`metadata[key]=value\`; booleans as \`true\`, \`True\` or \`1\`. A body past 1 MiB is 413, another media type 415,
bytes that are not UTF-8 or JSON nested deeper than 32 levels 400. Responses are JSON: an \`Accept\` header without
JSON is 406. Field errors are 400 \`{"field": ["message"]}\`, other errors \`{"detail": "..."}\`; a method a path
does not serve is 405 with \`Allow\`. Paths work with and without a trailing slash.

**Lists** take \`limit\` (default 10) and \`offset\`; \`next\` and \`previous\` are absolute URLs.

**Writes** may carry \`${DUPLICATE_CHECK_HEADER}\`: a repeat within 24 hours is 409 \`Duplicate Request Detected!\`.
**Throttling**: per organization, reads and writes are counted per window; the operator callbacks per source \
address and per
operator; past the limit 429 with \`Retry-After\`.
`.trim();

/**
 * The operator callbacks' tag: which connectors call back and which answer every call themselves, from the connector
 * registry.
 */
function operatorCallbacksDescription(): string {
  const named = (callsBack: boolean) =>
    CONNECTOR_OPERATORS.filter((connector) => connector.callsBack === callsBack).map((connector) => connector.operator);
  const silent = named(false);
  const answers = silent.length === 1 ? 'answers every call itself and calls' : 'answer every call themselves and call';
  const answering = silent.length === 0 ? '' : `; ${listedCodes(silent)} ${answers} nothing back`;
  return [
    `Fixed paths the real operators call back (${listedCodes(named(true))}),`,
    `registered or sent under PUBLIC_BASE_URL${answering}.`,
    'They carry no credentials:',
    "a callback only wakes the workflow it names, which then asks the operator's own status query;",
    'money moves on that answer alone.',
  ].join(' ');
}

const TAGS = [
  { name: 'Collections', description: 'Payments received from subscribers; read only, and claimed.' },
  { name: 'Collection requests', description: 'Requests for a subscriber to pay.' },
  { name: 'Contacts', description: 'People who pay or are paid, with instant name verification.' },
  { name: 'Events', description: 'What happened in the organization.' },
  { name: 'Webhooks', description: 'HTTPS notifications of events, with their attempt logs and redelivery.' },
  {
    name: 'Payments',
    description: 'Money out to subscribers: debited at once, sent through the network, given back when it fails.',
  },
  {
    name: 'Payment batches',
    description: [
      'Bulk payouts: up to 10,000 payments uploaded at once (JSON or CSV), each checked before anything is sent,',
      'then sent a bounded number at a time, with progress and a result CSV.',
    ].join(' '),
  },
  {
    name: 'Reversals',
    description: 'Successful collections sent back to the subscriber, out of the wallet they credited.',
  },
  { name: 'Accounts', description: "The organization's wallets and the transactions behind their balances." },
  {
    name: 'Settlements',
    description: [
      'The daily settlement report: every movement of money with a mobile network on one UTC day,',
      "with the operator's transaction ids and the totals per network and currency.",
    ].join(' '),
  },
  {
    name: 'Audit trail',
    description: [
      'Every change a write through the API or the web console made:',
      'who, with which key, from where, through which route, to which object, before and after.',
    ].join(' '),
  },
  {
    name: 'Reference',
    description: "The currencies and mobile networks the service handles, and each network's availability now.",
  },
  { name: 'Bill payments', description: 'Billers, electricity billers and pin bundles, served from `{bills_url}`.' },
  { name: 'Mobile networks', description: 'Entry points the mobile networks call, with their own credentials.' },
  { name: 'Operator callbacks', description: operatorCallbacksDescription() },
  { name: 'Service', description: 'The service itself.' },
];

const headerParameter = (name: string, description: string, schema: Schema) => ({
  name,
  in: 'header',
  required: false,
  description,
  schema,
});

function errorResponse(status: ErrorStatus | 405, operation: RouteOperation): Schema {
  const doc = ERROR_DOCS[status];
  if (!operation.billsEnvelope) return { $ref: `#/components/responses/${doc.name}` };
  const data = status === 400 && !('detail' in doc.example) ? doc.example : null;
  const message = typeof doc.example.detail === 'string' ? doc.example.detail : 'service_type: This field is required.';
  return {
    description: `${doc.description} In the bill-payment envelope.`,
    ...(doc.headers ? { headers: responseHeaders(doc.headers, doc.optionalHeaders) } : {}),
    content: {
      'application/json': {
        schema: { $ref: componentRef('BillsError') },
        example: {
          status: 'error',
          message,
          code: status,
          data: status === 400 ? (data ?? { service_type: ['This field is required.'] }) : null,
        },
      },
    },
  };
}

function responseHeaders(headers: Record<string, string>, optional: readonly string[] = []): Schema {
  return Object.fromEntries(
    Object.entries(headers).map(([name, description]) => [
      name,
      { description, required: !optional.includes(name), schema: { type: 'string' } },
    ]),
  );
}

function componentResponses(): Record<string, Schema> {
  return Object.fromEntries(
    Object.entries(ERROR_DOCS).map(([status, doc]) => [
      doc.name,
      {
        description: doc.description,
        ...(doc.headers ? { headers: responseHeaders(doc.headers, doc.optionalHeaders) } : {}),
        content: {
          'application/json': {
            schema:
              Number(status) === 400
                ? { anyOf: [{ $ref: componentRef('FieldErrors') }, { $ref: componentRef('ErrorDetail') }] }
                : { $ref: componentRef('ErrorDetail') },
            example: doc.example,
          },
        },
      },
    ]),
  );
}

/** Object-valued properties of a form body are sent as `name[key]=value` (also `name.key=value`). */
function formEncoding(body: Schema): Schema | undefined {
  const properties = (body.properties ?? {}) as Record<string, Schema>;
  const objectValued = Object.entries(properties).filter(([, property]) =>
    [property, ...((property.anyOf ?? []) as Schema[])].some((option) => option.type === 'object'),
  );
  if (objectValued.length === 0) return undefined;
  return Object.fromEntries(objectValued.map(([name]) => [name, { style: 'deepObject', explode: true }]));
}

type Converter = ReturnType<typeof converter>;

/** Path, query and header parameters, with the version and duplicate-check headers of merchants' operations. */
function parametersOf(route: DocumentedRoute, operation: RouteOperation, convert: Converter): Schema[] {
  const hooks = route.hooks ?? {};
  const parameters: Schema[] = [];
  const params = isRequestSchema(hooks.params) ? convert.input(hooks.params.valibot) : undefined;
  for (const [, name] of route.path.matchAll(/:([^/]+)/g)) {
    const schema = ((params?.properties ?? {}) as Record<string, Schema>)[name!] ?? { type: 'string' };
    parameters.push({ name, in: 'path', required: true, description: schema.description, schema });
  }
  for (const [source, location] of [
    [hooks.query, 'query'],
    [hooks.headers, 'header'],
  ] as const) {
    if (!isRequestSchema(source)) continue;
    const schema = convert.input(source.valibot);
    const required = new Set((schema.required ?? []) as string[]);
    for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
      parameters.push({
        name,
        in: location,
        required: required.has(name),
        ...(property.description ? { description: property.description } : {}),
        schema: property,
      });
    }
  }
  if (operation.caller === 'merchant') {
    parameters.push(
      headerParameter(API_VERSION_HEADER, "The API version for this request (else the organization's saved one).", {
        type: 'string',
        enum: API_VERSIONS.map(formatApiVersion),
      }),
    );
    if (!['GET', 'HEAD'].includes(route.method.toUpperCase())) {
      parameters.push(
        headerParameter(
          DUPLICATE_CHECK_HEADER,
          'Any string: a repeat of the same key within 24 hours is 409 and writes nothing.',
          {
            type: 'string',
            maxLength: DUPLICATE_CHECK_KEY_MAX_LENGTH,
          },
        ),
      );
    }
  }
  return parameters;
}

/** The request body in each encoding the API reads, when the route declares one. */
function requestBodyOf(
  route: DocumentedRoute,
  operation: RouteOperation,
  convert: Converter,
  components: Record<string, Schema>,
): Schema | undefined {
  const body = route.hooks?.body;
  if (!isRequestSchema(body)) return undefined;
  const schema = convert.input(body.valibot);
  const example = operation.requestExample ?? exampleOf(schema, components);
  const encoding = formEncoding(schema);
  return {
    description: [
      'JSON, form-encoded or multipart (`multipart/form-data`, text fields only).',
      'In form bodies nested hashes are `metadata[key]=value` or `metadata.key=value`,',
      'numbers and booleans are text (`true`, `True`, `1`).',
    ].join(' '),
    required: ((schema.required ?? []) as string[]).length > 0,
    content: {
      'application/json': { schema, example },
      'application/x-www-form-urlencoded': { schema, example, ...(encoding ? { encoding } : {}) },
      'multipart/form-data': { schema, ...(encoding ? { encoding } : {}) },
      ...(operation.requestCsv
        ? {
            'text/csv': {
              schema: { type: 'string', description: operation.requestCsv.description },
              example: operation.requestCsv.example,
            },
          }
        : {}),
    },
  };
}

/** The operation's answers and the shared errors it can give, by status. */
function responsesOf(
  route: DocumentedRoute,
  operation: RouteOperation,
  convert: Converter,
  version: ApiVersion,
  components: Record<string, Schema>,
): Record<string, Schema> {
  const responses: Record<string, Schema> = {};
  const restricted = [routeRoles(route), ...Object.values(parameterRoles(route))].some(
    (roles) => roles.length < ROLES.length,
  );
  for (const status of errorStatusesOf(
    operation,
    route.method.toUpperCase(),
    isRequestSchema(route.hooks?.body),
    restricted,
  )) {
    responses[String(status)] = errorResponse(status, operation);
  }
  for (const [status, response] of Object.entries(operation.responses)) {
    const schema =
      response.schema === undefined
        ? undefined
        : convert.output(typeof response.schema === 'function' ? response.schema(version) : response.schema);
    responses[status] = {
      description: response.description,
      ...(operation.caller === 'merchant' && Number(status) < 300
        ? {
            headers: {
              [API_VERSION_HEADER]: {
                description: 'The API version of the response.',
                required: true,
                schema: { type: 'string' },
              },
            },
          }
        : {}),
      ...(response.mediaType
        ? { content: { [response.mediaType]: { schema: { type: 'string' }, example: response.example } } }
        : {}),
      ...(schema
        ? { content: { 'application/json': { schema, example: response.example ?? exampleOf(schema, components) } } }
        : {}),
    };
  }
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b)));
}

/**
 * The roles allowed to call a route (the `can` macro writes them into its `detail`); none for unauthenticated routes.
 */
export const routeRoles = (route: DocumentedRoute): Role[] => rolesOfDetail(route.hooks?.detail);

/**
 * By query flag, the roles allowed to ask a read to write (`claim`: src/http/query-writes.ts),
 * among those allowed to call it; empty for the other routes.
 */
export const parameterRoles = (route: DocumentedRoute): Record<string, Role[]> => {
  const callers = routeRoles(route);
  return Object.fromEntries(
    queryWritesOf(route.method, route.path).map((write) => [
      write.flag,
      rolesWith(write.capability).filter((role) => callers.includes(role)),
    ]),
  );
};

/** The operation's description, ending with who may call it and who may ask it to write. */
function describedWithRoles(route: DocumentedRoute, operation: RouteOperation): string {
  const roles = routeRoles(route);
  const writers = Object.entries(parameterRoles(route)).map(
    ([flag, allowed]) => `Roles with \`${flag}\`: ${allowed.join(', ')}.`,
  );
  return [operation.description, roles.length > 0 ? `Roles: ${roles.join(', ')}.` : undefined, ...writers]
    .filter(Boolean)
    .join(' ');
}

function operationObject(
  route: DocumentedRoute,
  operation: RouteOperation,
  convert: Converter,
  version: ApiVersion,
  components: Record<string, Schema>,
): Schema {
  const parameters = parametersOf(route, operation, convert);
  const requestBody = requestBodyOf(route, operation, convert, components);
  const roles = routeRoles(route);
  const writers = parameterRoles(route);
  const description = describedWithRoles(route, operation);
  return {
    operationId: operation.operationId,
    summary: operation.summary,
    ...(description ? { description } : {}),
    ...(roles.length > 0 ? { [ROLES_EXTENSION]: roles } : {}),
    ...(Object.keys(writers).length > 0 ? { [PARAMETER_ROLES_EXTENSION]: writers } : {}),
    tags: operation.tags,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses: responsesOf(route, operation, convert, version, components),
    security:
      operation.caller === 'merchant' ? [{ token: [] }] : operation.caller === 'network' ? [{ network: [] }] : [],
  };
}

/** The document of `version` for these routes (the app's `routes`), built from their declarations. */
function buildOpenApiDocument(
  routes: readonly DocumentedRoute[],
  config: Pick<Config, 'publicBaseUrl' | 'billsBaseUrl'>,
  version: ApiVersion = CURRENT_API_VERSION,
): OpenApiDocument {
  const convert = converter(version);
  const schemas = convert.components();
  const paths: OpenApiDocument['paths'] = {};
  for (const route of routes) {
    if (isDocumentationPath(route.path)) continue;
    const detail = (route.hooks?.detail ?? {}) as { operationId?: string; servers?: unknown; hide?: boolean };
    // Not API operations: the web console's pages and the Prometheus endpoint.
    if (detail.hide === true) continue;
    const operation = routeOperation(detail.operationId);
    if (operation === undefined)
      throw new Error(`${route.method} ${route.path} declares no route docs (src/http/route-docs.ts routeDocs)`);
    const path = route.path.replace(/:([^/]+)/g, '{$1}');
    (paths[path] ??= {})[route.method.toLowerCase()] = {
      ...operationObject(route, operation, convert, version, schemas),
      ...(detail.servers ? { servers: detail.servers } : {}),
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Mobile-money collections API',
      version: formatApiVersion(version),
      description: INFO_DESCRIPTION(version),
    },
    ...(config.publicBaseUrl ? { servers: [{ url: config.publicBaseUrl }] } : {}),
    tags: TAGS,
    paths,
    components: {
      schemas,
      responses: componentResponses(),
      securitySchemes: {
        token: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: '`Token <API key>` (`Bearer <API key>` is accepted too).',
        },
        network: {
          type: 'http',
          scheme: 'bearer',
          description: "A mobile network's secret (issued with `network secret create`).",
        },
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Serving

/** The reference page's script: the standalone browser bundle of @scalar/api-reference (its `browser` file). */
function scalarBundlePath(): string {
  const main = createRequire(import.meta.url).resolve('@scalar/api-reference');
  return join(dirname(main), 'browser', 'standalone.js');
}

const page = (title: string) => `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${title}</title>
    <style>body { margin: 0; }</style>
  </head>
  <body>
    <div id="reference"></div>
    <script src="${DOCS_SCRIPT_PATH}"></script>
    <script src="${DOCS_INIT_PATH}"></script>
  </body>
</html>`;

// (An element with the id `api-reference` would make the bundle mount itself a second time, with no configuration.)
const INIT_SCRIPT = `Scalar.createApiReference('#reference', ${JSON.stringify({
  url: OPENAPI_DOCUMENT_PATH,
  withDefaultFonts: false,
  telemetry: false,
  mcp: { disabled: true },
  agent: { disabled: true },
  hideClientButton: true,
})});
`;

export const documentationRoutes = (config: Config, routes: () => readonly DocumentedRoute[]) => {
  const documents = new Map<ApiVersion, { routeCount: number; document: OpenApiDocument }>();
  const documentOf = (version: ApiVersion): OpenApiDocument => {
    const current = routes().filter((route) => !isDocumentationPath(route.path));
    const cached = documents.get(version);
    if (cached?.routeCount === current.length) return cached.document;
    const document = buildOpenApiDocument(current, config, version);
    documents.set(version, { routeCount: current.length, document });
    return document;
  };
  let script: Uint8Array | undefined;
  return new Elysia({ name: 'openapi' })
    .get(
      OPENAPI_DOCUMENT_PATH,
      ({ request }) => {
        const asked = new URL(request.url).searchParams.get('version');
        const version = asked === null ? CURRENT_API_VERSION : parseApiVersion(asked);
        if (version === null) throw new ApiError(400, { detail: 'Invalid version in "version" parameter.' });
        return jsonResponse(200, documentOf(version));
      },
      { detail: { hide: true } },
    )
    .get(DOCS_PATH, () => new Response(page('Mobile-money collections API'), { headers: DOCS_PAGE_HEADERS }), {
      detail: { hide: true },
    })
    .get(
      DOCS_INIT_PATH,
      () =>
        new Response(INIT_SCRIPT, {
          headers: { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': 'public, max-age=3600' },
        }),
      {
        detail: { hide: true },
      },
    )
    .get(
      DOCS_SCRIPT_PATH,
      () => {
        script ??= readFileSync(scalarBundlePath());
        return new Response(script, {
          headers: { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': 'public, max-age=3600' },
        });
      },
      { detail: { hide: true } },
    );
};
