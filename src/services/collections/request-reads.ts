/**
 * Collection requests as they are read (docs/api.md#collection-requests): their columns, a request or several with
 * their contacts, and within the organization the filtered list and a request by id.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import { REQUEST_STATUSES, type CollectionRequestRow } from '../../domain/collection-requests';
import type { ContactRow } from '../../domain/contacts';
import type { CollectionRequestId, OrganizationId } from '../../domain/ids';
import { choiceMessage, filterAmount, filterDate, filterId, filterPhoneNumber, filterText } from '../../domain/input';
import { tenantScope, timeRange, type ListPage, type PageWindow } from '../platform/queries';
import { CONTACT_COLUMNS } from './contacts';

/** The request columns, optionally qualified by a table alias (`r.`). */
const requestColumns = (t = ''): string => `
  ${t}id, ${t}organization_id as "organizationId", ${t}account_id as "accountId", ${t}contact_id as "contactId",
  ${t}amount::text as amount, ${t}currency, ${t}phone_number as "phoneNumber", ${t}network, ${t}reason, ${t}metadata,
  ${t}success_message as "successMessage", ${t}send_instructions as "sendInstructions", ${t}instructions, ${t}status,
  ${t}error_message as "errorMessage", ${t}expiry_date as "expiryDate",
  (extract(microseconds from ${t}expiry_date)::bigint % 1000000)::int as "expiryMicros",
  ${t}start_date as "startDate", (extract(microseconds from ${t}start_date)::bigint % 1000000)::int as "startMicros",
  ${t}retry_interval_seconds as "retryIntervalSeconds", ${t}max_attempts as "maxAttempts", ${t}attempts,
  ${t}subscription_settings as "subscriptionSettings", ${t}subscription_id as "subscriptionId",
  ${t}collection_id as "collectionId", ${t}remote_transaction_id as "remoteTransactionId",
  ${t}author, ${t}updated_by as "updatedBy", ${t}created, ${t}modified`;
export const REQUEST_COLUMNS = requestColumns();

export type RequestWithContact = { request: CollectionRequestRow; contact: ContactRow };

/** Requests with their contacts, in the order given. */
export async function withContacts(sql: Queryable, requests: CollectionRequestRow[]): Promise<RequestWithContact[]> {
  if (requests.length === 0) return [];
  const ids = [...new Set(requests.map((request) => request.contactId))];
  const contacts = await sql<ContactRow[]>`select ${sql.unsafe(CONTACT_COLUMNS)} from contacts where id in ${sql(ids)}`;
  const byId = new Map(contacts.map((contact) => [contact.id, contact]));
  return requests.map((request) => ({ request, contact: byId.get(request.contactId)! }));
}

/** A request with its contact and its organization's name (a prompt's texts name the organization), in two queries. */
export async function findRequestToPrompt(
  sql: Queryable,
  id: CollectionRequestId,
): Promise<(RequestWithContact & { organizationName: string }) | undefined> {
  const rows = await sql<(CollectionRequestRow & { organizationName: string })[]>`
    select ${sql.unsafe(requestColumns('r.'))}, o.name as "organizationName"
    from collection_requests r join organizations o on o.id = r.organization_id where r.id = ${id}`;
  const [found] = await withContacts(sql, rows);
  return found ? { ...found, organizationName: rows[0]!.organizationName } : undefined;
}

export async function findRequest(sql: Queryable, id: CollectionRequestId): Promise<RequestWithContact | undefined> {
  return (await findRequests(sql, [id]))[0];
}

/**
 * The requests of these ids with their contacts, in two statements whatever their number (a page of collections names
 * up to a page of requests).
 */
export async function findRequests(sql: Queryable, ids: readonly number[]): Promise<RequestWithContact[]> {
  if (ids.length === 0) return [];
  const rows = await sql<CollectionRequestRow[]>`
    select ${sql.unsafe(REQUEST_COLUMNS)} from collection_requests where id in ${sql([...new Set(ids)])}`;
  return await withContacts(sql, rows);
}

export const RequestFilters = v.object({
  amount: filterAmount,
  currency: v.optional(
    v.pipe(
      v.string(),
      v.transform((value) => value.toUpperCase()),
    ),
  ),
  collection: filterId('The id of the collection that paid the request.'),
  phonenumber: filterPhoneNumber,
  remote_transaction_id: filterText,
  created_after: filterDate,
  created_before: filterDate,
  modified_after: filterDate,
  modified_before: filterDate,
  status: v.optional(v.picklist(REQUEST_STATUSES, choiceMessage)),
  reason: filterText,
  contact_first_name: filterText,
  contact_last_name: filterText,
});

type RequestFilterValues = v.InferOutput<typeof RequestFilters>;

/**
 * One page of an organization's requests matching the filters, newest first, with their contacts and the total count.
 */
export async function listCollectionRequests(
  sql: Sql,
  organizationId: OrganizationId,
  f: RequestFilterValues,
  page: PageWindow,
): Promise<ListPage<RequestWithContact>> {
  const contactFilter = f.contact_first_name !== undefined || f.contact_last_name !== undefined;
  const { count, rows } = await tenantScope(sql, organizationId).listPage<CollectionRequestRow>(
    {
      columns: sql.unsafe(requestColumns('r.')),
      from: contactFilter
        ? sql`collection_requests r join contacts c on c.id = r.contact_id`
        : sql`collection_requests r`,
      alias: 'r',
      filters: sql`
      ${f.amount !== undefined ? sql`and r.amount = ${f.amount}::numeric` : sql``}
      ${f.currency !== undefined ? sql`and r.currency = ${f.currency}` : sql``}
      ${f.collection !== undefined ? sql`and r.collection_id = ${f.collection}` : sql``}
      ${f.phonenumber !== undefined ? sql`and r.phone_number = ${f.phonenumber}` : sql``}
      ${f.remote_transaction_id !== undefined ? sql`and r.remote_transaction_id = ${f.remote_transaction_id}` : sql``}
      ${timeRange(sql, 'r.created', f.created_after, f.created_before)}
      ${timeRange(sql, 'r.modified', f.modified_after, f.modified_before)}
      ${f.status !== undefined ? sql`and r.status = ${f.status}` : sql``}
      ${f.reason !== undefined ? sql`and r.reason = ${f.reason}` : sql``}
      ${f.contact_first_name !== undefined ? sql`and c.first_name = ${f.contact_first_name}` : sql``}
      ${f.contact_last_name !== undefined ? sql`and c.last_name = ${f.contact_last_name}` : sql``}`,
      orderBy: sql`order by r.created desc, r.id desc`,
    },
    page,
  );
  return { count, rows: await withContacts(sql, rows) };
}

/** The organization's request `id` with its contact (403 when another organization's, 404 when none). */
export async function findOwnRequest(
  sql: Queryable,
  organizationId: OrganizationId,
  id: CollectionRequestId,
): Promise<RequestWithContact> {
  const request = await tenantScope(sql, organizationId).ownRow<CollectionRequestRow>({
    table: 'collection_requests',
    id,
    columns: sql.unsafe(REQUEST_COLUMNS),
  });
  return (await withContacts(sql, [request]))[0]!;
}
