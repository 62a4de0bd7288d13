/**
 * Collections as they are read (docs/api.md#collections): their columns, collections as the API shows them (with their
 * contact, matched request and crediting transaction), and within the organization the filtered list and a collection
 * by id.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import type { CollectionId, OrganizationId } from '../../domain/ids';
import { choiceMessage, filterDate, filterPhoneNumber, filterText } from '../../domain/input';
import { parsePositiveAmount } from '../../domain/money';
import { tenantScope, timeRange, type ListPage, type PageWindow } from '../platform/queries';
import { serializeCollectionRequest } from '../../domain/collection-requests';
import {
  COLLECTION_STATUSES,
  asksClaim,
  serializeCollection,
  serializeTransaction,
  type AccountRow,
  type CollectionResource,
  type CollectionRow,
  type TransactionRow,
} from '../../domain/collections';
import { serializeContact, type ContactRow } from '../../domain/contacts';
import { findRequests } from './request-reads';
import { CONTACT_COLUMNS } from './contacts';

export const collectionColumns = (t = ''): string => `${t}id, ${t}organization_id as "organizationId", ${t}network,
  ${t}remote_transaction_id as "remoteTransactionId", ${t}amount::text as amount, ${t}currency,
  ${t}phone_number as "phoneNumber", ${t}payment_date as "paymentDate", ${t}reference,
  ${t}prompt_reference as "promptReference", ${t}status, ${t}rejection_reason as "rejectionReason",
  ${t}collection_request_id as "collectionRequestId", ${t}contact_id as "contactId", ${t}author,
  ${t}updated_by as "updatedBy", ${t}created, ${t}modified`;
export const COLLECTION_COLUMNS = collectionColumns();

const ACCOUNT_COLUMNS = `a.id, a.organization_id as "organizationId", a.currency, cur.id as "currencyId", a.label,
  a.description, a.status, a.low_balance_threshold::text as "lowBalanceThreshold",
  a.low_balance_notification_last_send_time as "lowBalanceNotificationLastSendTime",
  a.author, a.updated_by as "updatedBy", a.created, a.modified`;

/**
 * Collections with their contact, matched request and crediting transaction, as the API shows them
 * (docs/api.md#collections).
 */
export async function collectionResources(sql: Queryable, collections: CollectionRow[]): Promise<CollectionResource[]> {
  if (collections.length === 0) return [];
  const ids = collections.map((collection) => collection.id);
  const contactIds = [
    ...new Set(collections.flatMap((collection) => (collection.contactId === null ? [] : [collection.contactId]))),
  ];
  const requestIds = collections.flatMap((collection) =>
    collection.collectionRequestId === null ? [] : [collection.collectionRequestId],
  );
  const [contacts, transactions, requests] = await Promise.all([
    contactIds.length === 0
      ? []
      : sql<ContactRow[]>`select ${sql.unsafe(CONTACT_COLUMNS)} from contacts where id in ${sql(contactIds)}`,
    sql<(TransactionRow & { collectionId: CollectionId; account: AccountRow })[]>`
      select t.id, t.account_id as "accountId", t.amount::text as amount, t.currency, t.type, t.description, t.created,
             t.collection_id as "collectionId", row_to_json(acc) as account
      from transactions t
      join lateral (select ${sql.unsafe(ACCOUNT_COLUMNS)} from accounts a join currencies cur on cur.code = a.currency
                    where a.id = t.account_id) acc on true
      where t.collection_id in ${sql(ids)}`,
    findRequests(sql, requestIds),
  ]);
  const contactById = new Map(contacts.map((contact) => [contact.id, contact]));
  const transactionByCollection = new Map(transactions.map((transaction) => [transaction.collectionId, transaction]));
  const requestById = new Map(requests.map((found) => [found.request.id, found]));
  const results: CollectionResource[] = [];
  for (const collection of collections) {
    const contact = collection.contactId === null ? undefined : contactById.get(collection.contactId);
    const request =
      collection.collectionRequestId === null ? undefined : requestById.get(collection.collectionRequestId);
    const transaction = transactionByCollection.get(collection.id);
    results.push(
      serializeCollection(collection, {
        contact: contact ? serializeContact(contact) : null,
        collectionRequest: request ? serializeCollectionRequest(request.request, request.contact) : null,
        transaction: transaction ? serializeTransaction(transaction, reviveAccount(transaction.account)) : null,
      }),
    );
  }
  return results;
}

/** row_to_json gives timestamps as text. */
function reviveAccount(account: AccountRow): AccountRow {
  const date = (value: Date | string | null) => (value === null ? null : new Date(value));
  return {
    ...account,
    created: date(account.created)!,
    modified: date(account.modified)!,
    lowBalanceNotificationLastSendTime: date(account.lowBalanceNotificationLastSendTime),
  };
}

export async function findCollection(sql: Queryable, id: CollectionId): Promise<CollectionRow | undefined> {
  const [row] = await sql<CollectionRow[]>`select ${sql.unsafe(COLLECTION_COLUMNS)} from collections where id = ${id}`;
  return row;
}

export const CollectionFilters = v.object({
  amount: v.optional(
    v.pipe(
      v.string(),
      v.check((value) => parsePositiveAmount(value) !== null, 'A valid number is required.'),
    ),
  ),
  currency: v.optional(
    v.pipe(
      v.string(),
      v.transform((value) => value.toUpperCase()),
    ),
  ),
  phonenumber: filterPhoneNumber,
  reference: filterText,
  remote_transaction_id: filterText,
  created_after: filterDate,
  created_before: filterDate,
  modified_after: filterDate,
  modified_before: filterDate,
  status: v.optional(v.picklist(COLLECTION_STATUSES, choiceMessage)),
  network: filterText,
  contact_first_name: filterText,
  contact_last_name: filterText,
  claim: v.optional(
    v.pipe(
      v.string(),
      v.description(
        [
          '`True` (also `true`, `1`, `yes`) searches unmatched collections too',
          'and assigns the one that matches `amount`, `remote_transaction_id` and `phonenumber`',
          '(all three required; the number in full) to the caller; the answer is then a list.',
          'A claim needs the `collect` capability (403 otherwise) and counts as a write for throttling.',
        ].join(' '),
      ),
    ),
  ),
});

export type CollectionFilterValues = v.InferOutput<typeof CollectionFilters>;

export const wantsClaim = (f: CollectionFilterValues): boolean => asksClaim(f.claim);

/** One page of an organization's collections matching the filters, newest first, with the total count. */
export async function listCollections(
  sql: Sql,
  organizationId: OrganizationId,
  f: CollectionFilterValues,
  page: PageWindow,
): Promise<ListPage<CollectionRow>> {
  return await tenantScope(sql, organizationId).listPage<CollectionRow>(
    {
      columns: sql.unsafe(collectionColumns('c.')),
      from: sql`collections c left join contacts ct on ct.id = c.contact_id`,
      alias: 'c',
      filters: sql`
      ${f.amount !== undefined ? sql`and c.amount = ${f.amount}::numeric` : sql``}
      ${f.currency !== undefined ? sql`and c.currency = ${f.currency}` : sql``}
      ${f.phonenumber !== undefined ? sql`and c.phone_number = ${f.phonenumber}` : sql``}
      ${f.reference !== undefined ? sql`and c.reference = ${f.reference}` : sql``}
      ${f.remote_transaction_id !== undefined ? sql`and c.remote_transaction_id = ${f.remote_transaction_id}` : sql``}
      ${timeRange(sql, 'c.created', f.created_after, f.created_before)}
      ${timeRange(sql, 'c.modified', f.modified_after, f.modified_before)}
      ${f.status !== undefined ? sql`and c.status = ${f.status}` : sql``}
      ${f.network !== undefined ? sql`and lower(c.network) = lower(${f.network})` : sql``}
      ${f.contact_first_name !== undefined ? sql`and ct.first_name = ${f.contact_first_name}` : sql``}
      ${f.contact_last_name !== undefined ? sql`and ct.last_name = ${f.contact_last_name}` : sql``}`,
      orderBy: sql`order by c.created desc, c.id desc`,
    },
    page,
  );
}

/**
 * The organization's collection `id` (403 when another organization's, 404 when none). An
 * unassigned collection belongs to nobody yet: it is found by claiming, not by id (404).
 */
export async function findOwnCollection(
  sql: Queryable,
  organizationId: OrganizationId,
  id: CollectionId,
): Promise<CollectionRow> {
  return await tenantScope(sql, organizationId).ownRow<CollectionRow>({
    table: 'collections',
    id,
    columns: sql.unsafe(COLLECTION_COLUMNS),
    visible: sql`and organization_id is not null`,
  });
}
