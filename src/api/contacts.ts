/**
 * Contacts (docs/api.md#contacts) over HTTP: the routes translate to the use cases of services/collections/contacts.ts.
 */
import { Elysia } from 'elysia';
import * as v from 'valibot';
import { serializeContact } from '../domain/contacts';
import { contactForVersion, contactSchemaForVersion, listSchemaForVersion } from '../domain/versions';
import {
  ContactCreate,
  ContactFilters,
  createContact,
  listContacts,
  readContact,
} from '../services/collections/contacts';
import { authPlugin } from '../http/auth';
import { pathId, type AppDeps } from '../http/context';
import { listAnswer, listQuery, parsePage } from '../http/pagination';
import { PathIdParams, requestSchema, routeDocs } from '../http/route-docs';

const TAGS = ['Contacts'];
const syncParameter = v.optional(
  v.pipe(v.string(), v.description('`1` verifies the number against its network now (instant verification).')),
);
const ContactRead = v.object({ 'metadata.sync': syncParameter, 'metadata[sync]': syncParameter, sync: syncParameter });

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  createContact: routeDocs({
    operationId: 'createContact',
    summary: 'Create a contact',
    description: [
      'One contact per phone number in an organization.',
      '`metadata` `sync` = `1` verifies the number against its network at once.',
    ].join(' '),
    tags: TAGS,
    caller: 'merchant',
    responses: { 201: { description: 'The contact.', schema: contactSchemaForVersion } },
    requestExample: {
      phone_number: '+256772123456',
      first_name: 'Jane',
      last_name: 'Nakato',
      email: 'jane@example.com',
      metadata: { customer: '1042' },
    },
  }),
  listContacts: routeDocs({
    operationId: 'listContacts',
    summary: 'List contacts',
    description:
      'Newest first. Filters are exact matches and combine; `created_after` and `created_before` are inclusive.',
    tags: TAGS,
    caller: 'merchant',
    responses: {
      200: {
        description: 'A page of contacts.',
        schema: (version) => listSchemaForVersion(contactSchemaForVersion(version), version),
      },
    },
  }),
  getContact: routeDocs({
    operationId: 'getContact',
    summary: 'Get a contact',
    tags: TAGS,
    caller: 'merchant',
    errors: [403, 404],
    responses: {
      200: {
        description: 'The contact (with its verification fields once verified).',
        schema: contactSchemaForVersion,
      },
    },
  }),
};

export const contactRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  return new Elysia({ name: 'contacts', prefix: '/api/contacts' })
    .use(authPlugin(sql))
    .post(
      '',
      async ({ body: input, principal, apiVersion, duplicateCheck, set }) => {
        const contact = await createContact(deps, principal, input, duplicateCheck);
        set.status = 201;
        return contactForVersion(serializeContact(contact), apiVersion);
      },
      { can: 'collect', body: requestSchema(ContactCreate), ...DOCS.createContact },
    )
    .get(
      '',
      async ({ request, query: filters, principal, apiVersion }) => {
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const { count, rows } = await listContacts(sql, principal.organizationId, filters, page);
        const results = rows.map((row) => contactForVersion(serializeContact(row), apiVersion));
        return listAnswer(request, config.publicBaseUrl, page, { count, results }, apiVersion);
      },
      { can: 'view', query: listQuery(ContactFilters), ...DOCS.listContacts },
    )
    .get(
      '/:id',
      async ({ params, query, principal, apiVersion }) => {
        const sync = query['metadata.sync'] ?? query['metadata[sync]'] ?? query.sync;
        const contact = await readContact(deps, principal.organizationId, pathId(params.id, 'Contact'), sync);
        return contactForVersion(serializeContact(contact), apiVersion);
      },
      { can: 'view', params: PathIdParams, query: requestSchema(ContactRead), ...DOCS.getContact },
    );
};
