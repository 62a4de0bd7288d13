/**
 * The OpenAPI document tells the truth: an independent validator accepts it, its examples match
 * its schemas, the rules it states are the ones the API enforces, and the typed client of the
 * end-to-end tests is generated from it. (Every response of the API tests is checked against it
 * too: test/openapi-contract.ts, through `testApp` and `requester`.)
 */
import { beforeAll, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { OPENAPI_DOCUMENT_PATH, type OpenApiDocument } from '../../src/api/openapi';
import { ERROR_DOCS } from '../../src/http/route-docs';
import { CONNECTOR_OPERATORS } from '../../src/network/registry';
import { API_VERSIONS, formatApiVersion } from '../../src/domain/versions';
import { CLIENT_TYPES_FILE, clientTypesSource } from '../client/generate';
import { createMerchant, testApp, type TestApp, type TestMerchant } from '../helpers';

type Schema = Record<string, unknown>;
let ctx: TestApp;
let merchant: TestMerchant;
const documents = new Map<number, OpenApiDocument>();

beforeAll(async () => {
  ctx = await testApp();
  merchant = await createMerchant(ctx.app);
  for (const version of API_VERSIONS) {
    const response = await merchant.request(`${OPENAPI_DOCUMENT_PATH}?version=${formatApiVersion(version)}`);
    expect(response.status).toBe(200);
    documents.set(version, response.body as OpenApiDocument);
  }
});

const current = () => documents.get(4)!;
const operations = (document: OpenApiDocument) =>
  Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation })),
  );

describe('the document', () => {
  test.each(API_VERSIONS)('of version %d is valid OpenAPI 3.1 for @apidevtools/swagger-parser', async (version) => {
    const document = documents.get(version)!;
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe(formatApiVersion(version));
    await SwaggerParser.validate(structuredClone(document) as never);
  });

  test('without a version is the current one, and an unknown version is 400', async () => {
    expect((await merchant.request(OPENAPI_DOCUMENT_PATH)).body).toEqual(current());
    expect((await merchant.request(`${OPENAPI_DOCUMENT_PATH}?version=v9`)).status).toBe(400);
  });

  test('every operation has a summary, a tag, a success response and described responses with an example of each body', () => {
    const ops = operations(current());
    expect(ops.length).toBeGreaterThanOrEqual(16);
    for (const { path, method, operation } of ops) {
      const where = `${method.toUpperCase()} ${path}`;
      expect({ where, summary: typeof operation.summary }).toEqual({ where, summary: 'string' });
      expect({ where, tags: (operation.tags as string[]).length > 0 }).toEqual({ where, tags: true });
      const responses = operation.responses as Record<string, Schema>;
      expect({ where, success: Object.keys(responses).some((status) => status.startsWith('2')) }).toEqual({
        where,
        success: true,
      });
      for (const [status, reference] of Object.entries(responses)) {
        const response = resolveResponse(reference);
        expect({ where, status, described: typeof response.description === 'string' }).toEqual({
          where,
          status,
          described: true,
        });
        for (const media of Object.values((response.content ?? {}) as Record<string, Schema>)) {
          expect({ where, status, example: media.example !== undefined }).toEqual({ where, status, example: true });
        }
      }
    }
  });

  test("the operator callbacks' tag and the network report route name every connector of the registry (src/network/registry.ts)", () => {
    const operators = CONNECTOR_OPERATORS.map((connector) => connector.operator);
    expect(operators).toHaveLength(5);
    const tag = (current().tags as Schema[]).find((known) => known.name === 'Operator callbacks')!
      .description as string;
    // The paths are those of the operators that call back; the others are named as answering every call themselves.
    const callingBack = /call back \(([^)]*)\)/.exec(tag)![1]!;
    for (const { operator, callsBack } of CONNECTOR_OPERATORS) {
      expect({ operator, named: tag.includes(operator), callingBack: callingBack.includes(operator) }).toEqual({
        operator,
        named: true,
        callingBack: callsBack,
      });
    }
    const report = current().paths['/network/payments']!.post!.description as string;
    for (const operator of operators)
      expect({ operator, named: report.includes(operator) }).toEqual({ operator, named: true });
  });

  test('documents each error status of the spec with a schema, a description and an example', () => {
    const responses = current().components.responses;
    for (const status of [400, 401, 403, 404, 405, 406, 409, 413, 415, 429, 503] as const) {
      const response = responses[ERROR_DOCS[status].name] as Schema;
      const media = (response.content as Record<string, Schema>)['application/json']!;
      expect({
        status,
        schema: media.schema !== undefined,
        example: media.example !== undefined,
        description: typeof response.description,
      }).toEqual({ status, schema: true, example: true, description: 'string' });
    }
    const createContact = current().paths['/api/contacts']!.post!;
    expect(Object.keys(createContact.responses as Schema)).toEqual([
      '201',
      '400',
      '401',
      '403',
      '406',
      '409',
      '413',
      '415',
      '429',
      '503',
    ]);
    expect(createContact['x-roles']).toEqual(['owner', 'admin', 'developer', 'finance']);
    // Every role lists collections; claiming one (a write asked by the query) needs `collect`.
    const listCollections = current().paths['/api/collections']!.get!;
    expect(listCollections['x-roles']).toEqual(['owner', 'admin', 'developer', 'finance', 'viewer']);
    expect(listCollections['x-parameter-roles']).toEqual({ claim: ['owner', 'admin', 'developer', 'finance'] });
    expect(Object.keys(listCollections.responses as Schema)).toContain('403');
    expect(Object.keys((createContact.requestBody as { content: Schema }).content)).toEqual([
      'application/json',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
    ]);
  });

  test.each(API_VERSIONS)('of version %d: every example matches its schema', (version) => {
    const document = documents.get(version)!;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(document as unknown as Schema, 'openapi');
    const checked: string[] = [];
    const check = (where: string, schemaLocation: string, example: unknown) => {
      const validate = ajv.compile({ $ref: `openapi#/${schemaLocation}` });
      const valid = validate(example);
      expect({ where, valid, errors: valid ? null : ajv.errorsText(validate.errors) }).toEqual({
        where,
        valid: true,
        errors: null,
      });
      checked.push(where);
    };
    const escapePointer = (part: string) => part.replaceAll('~', '~0').replaceAll('/', '~1');
    const media = (base: string, content: Record<string, Schema> | undefined) => {
      for (const [type, item] of Object.entries(content ?? {})) {
        if (item.example !== undefined)
          check(`${base} ${type}`, `${base}/content/${escapePointer(type)}/schema`, item.example);
      }
    };
    for (const { path, method, operation } of operations(document)) {
      const base = `paths/${escapePointer(path)}/${method}`;
      media(
        `${base}/requestBody`,
        (operation.requestBody as { content?: Record<string, Schema> } | undefined)?.content,
      );
      for (const [status, response] of Object.entries(operation.responses as Record<string, Schema>)) {
        media(`${base}/responses/${status}`, response.content as Record<string, Schema> | undefined);
      }
    }
    for (const [name, response] of Object.entries(document.components.responses))
      media(`components/responses/${name}`, response.content as Record<string, Schema>);
    for (const [name, schema] of Object.entries(document.components.schemas)) {
      for (const [index, example] of ((schema.examples ?? []) as unknown[]).entries())
        check(`components/schemas/${name} #${index}`, `components/schemas/${name}`, example);
    }
    expect(checked.length).toBeGreaterThan(50);
  });
});

function resolveResponse(response: Schema): Schema {
  if (typeof response.$ref !== 'string') return response;
  return current().components.responses[response.$ref.split('/').pop()!] as Schema;
}

describe('the rules it states are the ones the API enforces', () => {
  test('each required body field, left out, is a 400 naming it, on every body operation for merchants', async () => {
    const checked: string[] = [];
    for (const { path, method, operation } of operations(current())) {
      const body = operation.requestBody as { content: Record<string, { schema: Schema }> } | undefined;
      if (!body || !(operation.security as Schema[]).some((requirement) => 'token' in requirement)) continue;
      const required = (body.content['application/json']!.schema.required ?? []) as string[];
      if (required.length === 0) continue;
      const headers: Record<string, string> = {};
      for (const parameter of (operation.parameters ?? []) as Schema[]) {
        // A required header (the pin bundles' Bills-date) is sent valid, so only the body is judged.
        if (parameter.in === 'header' && parameter.required) headers[String(parameter.name)] = new Date().toUTCString();
      }
      const response = await merchant.request(path.replace(/\{[^/]+\}/g, '1'), {
        method: method.toUpperCase(),
        body: {},
        headers,
      });
      const where = `${method.toUpperCase()} ${path}`;
      expect({ where, status: response.status }).toEqual({ where, status: 400 });
      const errors = (path.startsWith('/api/bills/') ? response.body.data : response.body) as Record<string, string[]>;
      expect({ where, refused: Object.keys(errors).sort() }).toEqual({ where, refused: [...required].sort() });
      checked.push(where);
    }
    expect(checked).toEqual(
      expect.arrayContaining(['POST /api/contacts', 'POST /api/collectionrequests', 'POST /api/webhooks']),
    );
  });

  test("a rule changed in a route's schema changes the document: the create-contact body and the contact list query come from them", () => {
    const createContact = current().paths['/api/contacts']!.post!;
    const schema = (createContact.requestBody as { content: Record<string, { schema: Schema }> }).content[
      'application/json'
    ]!.schema;
    expect(schema.required).toEqual(['phone_number', 'first_name', 'last_name']);
    expect(Object.keys(schema.properties as Schema)).toEqual([
      'phone_number',
      'first_name',
      'last_name',
      'email',
      'type',
      'metadata',
    ]);
    const listContacts = current().paths['/api/contacts']!.get!;
    expect(
      (listContacts.parameters as Schema[])
        .filter((parameter) => parameter.in === 'query')
        .map((parameter) => parameter.name),
    ).toEqual([
      'first_name',
      'last_name',
      'email',
      'phone_number',
      'created_after',
      'created_before',
      'limit',
      'offset',
    ]);
  });
});

describe('the typed client', () => {
  test('its types (test/client/api.ts) are what the current document generates (`npm run openapi:types`)', async () => {
    expect(readFileSync(CLIENT_TYPES_FILE, 'utf8')).toBe(await clientTypesSource(current()));
  });
});
