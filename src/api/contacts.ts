import { Elysia } from 'elysia';
import * as v from 'valibot';
import { DEFAULT_CONTACT_TYPE, serializeContact, type ContactRow } from '../domain/contacts';
import { contactForVersion, contactSchemaForVersion, listForVersion, listSchemaForVersion } from '../domain/versions';
import { createNetworks } from '../network/connections';
import { CONTACT_COLUMNS, createContactIn, verifyContact } from '../services/contacts';
import { writeOnce, type DuplicateCheck } from '../services/duplicate-checks';
import type { NetworkAdapter } from '../network/adapter';
import type { Sql } from '../db';
import { authPlugin } from '../http/auth';
import { ownedBy, parseId, type AppDeps } from '../http/context';
import { notFound } from '../http/errors';
import { fieldErrors } from '../domain/errors';
import { REQUIRED, metadata, optionalEmail, phoneNumber, text, validate } from '../domain/input';
import { filterDate, filterPhoneNumber, filterText, queryObject, timeRange } from '../http/filters';
import { listQuery, pagedList, parsePage } from '../http/pagination';
import { PathIdParams, requestSchema, routeDocs } from '../http/route-docs';

export const ContactCreate = v.object(
  {
    phone_number: phoneNumber,
    first_name: text(100),
    last_name: text(100),
    email: optionalEmail,
    type: v.optional(text(50), DEFAULT_CONTACT_TYPE),
    metadata,
  },
  REQUIRED,
);

const ContactFilters = v.object({
  first_name: filterText,
  last_name: filterText,
  email: filterText,
  phone_number: filterPhoneNumber,
  created_after: filterDate,
  created_before: filterDate,
});

const syncParameter = v.optional(v.pipe(v.string(), v.description('`1` verifies the number against its network now (instant verification).')));
const ContactRead = v.object({ 'metadata.sync': syncParameter, 'metadata[sync]': syncParameter, sync: syncParameter });

/** `sync` = 1 (number or text) asks for instant verification (api.md 4.4). */
export const wantsVerification = (value: unknown): boolean => value === 1 || value === '1';
const TAGS = ['Contacts'];

export type ContactInput = v.InferOutput<typeof ContactCreate>;
export type ContactFilterValues = v.InferOutput<typeof ContactFilters>;
export const parseContactFilters = (searchParams: URLSearchParams): ContactFilterValues => validate(ContactFilters, queryObject(searchParams));

/** The network adapter that answers name look-ups: the connected operators', and the sandbox's in sandbox mode. */
export const contactNetwork = ({ sql, config, launcher, networks }: Pick<AppDeps, 'sql' | 'config' | 'launcher' | 'networks'>): NetworkAdapter =>
  networks ?? createNetworks(config, sql, launcher);

/**
 * Creates a contact from a merchant's parameters (api.md 4.4), as the REST route and the web
 * console both do (validated with `ContactCreate`): saves it with its `contact.created` event (claiming the
 * Duplicate-Check-Key in the same transaction), dispatches the event, and verifies the number at
 * once when `metadata.sync` is 1.
 */
export async function createContact(
  { sql, launcher }: Pick<AppDeps, 'sql' | 'launcher'>,
  network: NetworkAdapter | null,
  creator: { organizationId: number; userId: number },
  input: ContactInput,
  duplicateCheck: DuplicateCheck | null,
): Promise<ContactRow> {
  const created = await writeOnce(sql, duplicateCheck, async (tx) => {
    const creation = await createContactIn(tx, {
      organizationId: creator.organizationId,
      author: creator.userId,
      firstName: input.first_name,
      lastName: input.last_name,
      email: input.email,
      phoneNumber: input.phone_number,
      type: input.type,
      metadata: input.metadata,
    });
    if (creation.contact === null) throw fieldErrors({ phone_number: ['A contact with this phone number already exists.'] });
    return creation;
  }, (creation) => ({ type: 'contact', id: creation.contact.id }));
  await launcher.afterCommit({ events: [created.event] });
  return wantsVerification(input.metadata?.sync) ? await verifyContact(sql, created.contact, network) : created.contact;
}

/** One page of an organization's contacts matching the filters, newest first, with the total count (REST list and console). */
export async function listContacts(
  sql: Sql, organizationId: number, filters: ContactFilterValues, page: { limit: number; offset: number },
): Promise<{ count: number; rows: ContactRow[] }> {
  const where = sql`
    where organization_id = ${organizationId}
    ${filters.first_name !== undefined ? sql`and first_name = ${filters.first_name}` : sql``}
    ${filters.last_name !== undefined ? sql`and last_name = ${filters.last_name}` : sql``}
    ${filters.email !== undefined ? sql`and email = ${filters.email}` : sql``}
    ${filters.phone_number !== undefined ? sql`and phone_number = ${filters.phone_number}` : sql``}
    ${timeRange(sql, 'created', filters.created_after, filters.created_before)}`;
  const [[total], rows] = await Promise.all([
    sql<{ count: number }[]>`select count(*)::int as count from contacts ${where}`,
    sql<ContactRow[]>`select ${sql.unsafe(CONTACT_COLUMNS)} from contacts ${where}
      order by created desc, id desc limit ${page.limit} offset ${page.offset}`,
  ]);
  return { count: total?.count ?? 0, rows };
}

export const contactRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const network = contactNetwork(deps);
  return new Elysia({ name: 'contacts', prefix: '/api/contacts' })
    .use(authPlugin(sql))
    .post(
      '',
      async ({ body: input, principal, apiVersion, duplicateCheck, set }) => {
        const contact = await createContact(deps, network, principal, input, duplicateCheck);
        set.status = 201;
        return contactForVersion(serializeContact(contact), apiVersion);
      },
      {
        auth: true,
        body: requestSchema(ContactCreate),
        ...routeDocs({
          operationId: 'createContact',
          summary: 'Create a contact',
          description: 'One contact per phone number in an organization. `metadata` `sync` = `1` verifies the number against its network at once.',
          tags: TAGS,
          caller: 'merchant',
          responses: { 201: { description: 'The contact.', schema: contactSchemaForVersion } },
          requestExample: { phone_number: '+256772123456', first_name: 'Jane', last_name: 'Nakato', email: 'jane@example.com', metadata: { customer: '1042' } },
        }),
      },
    )
    .get(
      '',
      async ({ request, query: filters, principal, apiVersion }) => {
        const { searchParams } = new URL(request.url);
        const page = parsePage(searchParams, config.pageSizeMax);
        const { count, rows } = await listContacts(sql, principal.organizationId, filters, page);
        const contacts = rows.map((row) => contactForVersion(serializeContact(row), apiVersion));
        return listForVersion(pagedList(request, config.publicBaseUrl, page, count, contacts), apiVersion);
      },
      {
        auth: true,
        query: listQuery(ContactFilters),
        ...routeDocs({
          operationId: 'listContacts',
          summary: 'List contacts',
          description: 'Newest first. Filters are exact matches and combine; `created_after` and `created_before` are inclusive.',
          tags: TAGS,
          caller: 'merchant',
          responses: { 200: { description: 'A page of contacts.', schema: (version) => listSchemaForVersion(contactSchemaForVersion(version), version) } },
        }),
      },
    )
    .get(
      '/:id',
      async ({ params, query, principal, apiVersion }) => {
        const id = parseId(params.id);
        if (id === null) throw notFound();
        const [row] = await sql<ContactRow[]>`select ${sql.unsafe(CONTACT_COLUMNS)} from contacts where id = ${id}`;
        const contact = ownedBy(row, principal.organizationId);
        const sync = query['metadata.sync'] ?? query['metadata[sync]'] ?? query.sync;
        const shown = wantsVerification(sync) ? await verifyContact(sql, contact, network) : contact;
        return contactForVersion(serializeContact(shown), apiVersion);
      },
      {
        auth: true,
        params: PathIdParams,
        query: requestSchema(ContactRead),
        ...routeDocs({
          operationId: 'getContact',
          summary: 'Get a contact',
          tags: TAGS,
          caller: 'merchant',
          errors: [403, 404],
          responses: { 200: { description: 'The contact (with its verification fields once verified).', schema: contactSchemaForVersion } },
        }),
      },
    );
};
