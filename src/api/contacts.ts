import { Elysia } from 'elysia';
import * as v from 'valibot';
import { DEFAULT_CONTACT_TYPE, serializeContact, type ContactRow } from '../domain/contacts';
import { contactForVersion, listForVersion } from '../domain/versions';
import { createSandboxNetwork } from '../network/sandbox';
import { CONTACT_COLUMNS, createContactIn, verifyContact } from '../services/contacts';
import { writeOnce } from '../services/duplicate-checks';
import { authPlugin } from './auth';
import { ownedBy, parseId, type AppDeps } from './context';
import { fieldErrors, notFound } from './errors';
import { REQUIRED, metadata, optionalEmail, phoneNumber, text, validate } from './fields';
import { filterDate, filterPhoneNumber, filterText, queryObject, timeRange } from './filters';
import { parseRequestBody } from './http';
import { pagedList, parsePage } from './pagination';

const ContactCreate = v.object(
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

/** `sync` = 1 (number or text) asks for instant verification (api.md 4.4). */
const wantsVerification = (value: unknown): boolean => value === 1 || value === '1';

export const contactRoutes = ({ sql, config, launcher }: AppDeps) => {
  // Name look-ups come from the network adapter; the sandbox network is the one this service has.
  const network = config.sandbox
    ? createSandboxNetwork({ sql, launcher, paymentDelaySeconds: config.collectionRequests.sandboxPaymentDelaySeconds })
    : null;
  return new Elysia({ name: 'contacts', prefix: '/api/contacts' })
    .use(authPlugin(sql))
    .post(
      '',
      async ({ request, principal, apiVersion, duplicateCheck, set }) => {
        const input = validate(ContactCreate, await parseRequestBody(request));
        const created = await writeOnce(sql, duplicateCheck, async (tx) => {
          const creation = await createContactIn(tx, {
            organizationId: principal.organizationId,
            author: principal.userId,
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
        set.status = 201;
        const contact = wantsVerification(input.metadata?.sync) ? await verifyContact(sql, created.contact, network) : created.contact;
        return contactForVersion(serializeContact(contact), apiVersion);
      },
      { auth: true, parse: 'none' },
    )
    .get(
      '',
      async ({ request, principal, apiVersion }) => {
        const { searchParams } = new URL(request.url);
        const page = parsePage(searchParams, config.pageSizeMax);
        const filters = validate(ContactFilters, queryObject(searchParams));
        const where = sql`
          where organization_id = ${principal.organizationId}
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
        const contacts = rows.map((row) => contactForVersion(serializeContact(row), apiVersion));
        return listForVersion(pagedList(request, config.publicBaseUrl, page, total?.count ?? 0, contacts), apiVersion);
      },
      { auth: true },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion, request }) => {
        const id = parseId(params.id);
        if (id === null) throw notFound();
        const [row] = await sql<ContactRow[]>`select ${sql.unsafe(CONTACT_COLUMNS)} from contacts where id = ${id}`;
        const contact = ownedBy(row, principal.organizationId);
        const query = new URL(request.url).searchParams;
        const sync = query.get('metadata.sync') ?? query.get('metadata[sync]') ?? query.get('sync');
        const shown = wantsVerification(sync) ? await verifyContact(sql, contact, network) : contact;
        return contactForVersion(serializeContact(shown), apiVersion);
      },
      { auth: true },
    );
};
