/**
 * Collections (docs/api.md#collections): a reported payment stored once, matched tenant-safely, verified,
 * credited; the list and a collection by id within the organization; claims.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import { RefusedError, fieldErrors } from '../../domain/errors';
import type { CollectionId, CollectionRequestId, OrganizationId } from '../../domain/ids';
import { choiceMessage, filterDate, filterPhoneNumber, filterText } from '../../domain/input';
import { parsePositiveAmount } from '../../domain/money';
import { withLeadingPlus } from '../../domain/phone';
import { recordCollectionMatch, recordWalletMovement } from '../../telemetry/metrics';
import { writeAs } from '../merchants/audit';
import { acrossOrganizations } from '../../db/tenancy';
import type { Actor, ServiceDeps } from '../platform/deps';
import { tenantScope, timeRange, type ListPage, type PageWindow } from '../platform/queries';
import { serializeCollectionRequest, OPEN_STATUSES, type RequestStatus } from '../../domain/collection-requests';
import {
  COLLECTION_STATUSES,
  asksClaim,
  requestOfPromptReference,
  serializeCollection,
  serializeTransaction,
  type AccountRow,
  type CollectionResource,
  type CollectionRow,
  type TransactionRow,
} from '../../domain/collections';
import { serializeContact, type ContactRow } from '../../domain/contacts';
import { findRequests } from './collection-requests';
import { CONTACT_COLUMNS } from './contacts';
import { recordEvent, type RecordedEvent } from '../webhooks/events';
import { moveMoney } from '../wallets/ledger';
import { receiptOfPromptIn } from '../networks/receipts';
import { changeRequestStatusIn } from './collection-requests';
import { isPermanentDatabaseError } from '../../db';
import type postgres from 'postgres';
import type { IncomingPaymentInput } from '../../contracts/incoming-collection';

export const collectionColumns = (t = ''): string => `${t}id, ${t}organization_id as "organizationId", ${t}network,
  ${t}remote_transaction_id as "remoteTransactionId", ${t}amount::text as amount, ${t}currency, ${t}phone_number as
    "phoneNumber",
  ${t}payment_date as "paymentDate", ${t}reference, ${t}prompt_reference as
    "promptReference", ${t}status, ${t}rejection_reason as "rejectionReason",
  ${t}collection_request_id as "collectionRequestId", ${t}contact_id as "contactId", ${t}author, ${t}updated_by as
    "updatedBy",
  ${t}created, ${t}modified`;
const COLLECTION_COLUMNS = collectionColumns();

const ACCOUNT_COLUMNS = `a.id, a.organization_id as "organizationId", a.currency, cur.id as "currencyId", a.label,
  a.description, a.status,
  a.low_balance_threshold::text as "lowBalanceThreshold", a.low_balance_notification_last_send_time as
    "lowBalanceNotificationLastSendTime",
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

/** A payment as a network reports it (the incoming-collection workflow's input). */
type IncomingPayment = IncomingPaymentInput;

/**
 * Stores a reported payment once: a repeat of the same network transaction returns the first row
 * (locked). A prompt's payment credited under the prompt's operator reference is stored under the
 * operator's receipt instead once the prompt settled one (docs/architecture.md#one-receipt-one-credit).
 */
async function storeIncomingPaymentIn(tx: Queryable, payment: IncomingPayment): Promise<CollectionRow> {
  const remoteTransactionId = (await receiptOfPromptIn(tx, payment)) ?? payment.remoteTransactionId;
  const [inserted] = await tx<CollectionRow[]>`
    insert into collections (network, remote_transaction_id, phone_number, amount, currency, reference,
      prompt_reference, payment_date)
    values (${payment.network}, ${remoteTransactionId}, ${payment.phoneNumber}, ${payment.amount}, ${payment.currency},
            ${payment.reference}, ${payment.promptReference ?? null}, ${payment.paymentDate})
    on conflict (network, remote_transaction_id) do nothing
    returning ${tx.unsafe(COLLECTION_COLUMNS)}`;
  if (inserted) return inserted;
  const [existing] = await tx<CollectionRow[]>`
    select ${tx.unsafe(COLLECTION_COLUMNS)} from collections
    where network = ${payment.network} and remote_transaction_id = ${remoteTransactionId} for update`;
  if (!existing) throw new Error('collection vanished after a conflicting insert');
  return existing;
}

export async function storeIncomingPayment(sql: Sql, payment: IncomingPayment): Promise<CollectionRow> {
  return (await sql.begin((tx) => storeIncomingPaymentIn(tx, payment))) as CollectionRow;
}

/** How a collection found its request: through the prompt it answered, or as the one organization's look-alike. */
type MatchRule = 'prompt_reference' | 'single_organization';
export type Match = { requestId: CollectionRequestId; organizationId: OrganizationId; rule: MatchRule };

/**
 * Reserves the request a collection pays, tenant-safely (docs/architecture.md#tenant-safe-matching): a payment that
 * answers a prompt carries that prompt's reference and can go to that request only (same number,
 * amount and currency, still open); a payment without one matches by number, amount and currency
 * only when exactly one organization has such an open, unexpired request (then its oldest), unless an
 * operator's connector reported it (`namedOnly`): the operator's identifiers alone say whose it is.
 * Anything else stays unassigned for the right merchant to claim, so no merchant can catch
 * another's payment by opening a look-alike request. Idempotent: a collection already matched
 * returns its request.
 */
async function matchCollectionIn(
  tx: Queryable,
  collectionId: CollectionId,
  { onlyOrganizationId = null, namedOnly = false }: { onlyOrganizationId?: OrganizationId | null; namedOnly?: boolean },
): Promise<Match | null> {
  const [collection] = await tx<
    CollectionRow[]
  >`select ${tx.unsafe(COLLECTION_COLUMNS)} from collections where id = ${collectionId} for update`;
  if (!collection) throw new Error(`collection ${collectionId} does not exist`);
  const rule: MatchRule = collection.promptReference !== null ? 'prompt_reference' : 'single_organization';
  if (collection.collectionRequestId !== null) {
    const [request] = await tx<
      { organizationId: OrganizationId }[]
    >`select organization_id as "organizationId" from collection_requests where id = ${collection.collectionRequestId}`;
    return { requestId: collection.collectionRequestId, organizationId: request!.organizationId, rule };
  }
  if (collection.status !== 'pending' || collection.organizationId !== null) return null;
  const lookAlike = lookAlikeOf(tx, collection);
  let candidates;
  if (collection.promptReference !== null) {
    const requestId = requestOfPromptReference(collection.promptReference);
    if (requestId === null) return null;
    candidates = tx<{ id: CollectionRequestId; organizationId: OrganizationId }[]>`
      select id, organization_id as "organizationId" from collection_requests where id
        = ${requestId} and ${lookAlike} for update`;
  } else {
    // A payment a connector reported that names no request of ours: whose it is, the operator did not say.
    if (namedOnly) return null;
    // Which organizations have a look-alike, read without locks: a request another match holds is still counted.
    // The lock below waits (no SKIP LOCKED): a request whose status is being recorded is still this payment's;
    // one another payment reserved meanwhile fails the re-check and the next oldest is taken.
    // A payment made for one organization (the console's sandbox page) looks at that organization's requests only.
    const organizations =
      onlyOrganizationId !== null
        ? [{ organizationId: onlyOrganizationId }]
        : await tx<{ organizationId: OrganizationId }[]>`
          select distinct organization_id as "organizationId" from collection_requests where ${lookAlike} limit 2`;
    if (organizations.length !== 1) return null;
    candidates = tx<{ id: CollectionRequestId; organizationId: OrganizationId }[]>`
      select id, organization_id as "organizationId" from collection_requests
      where ${tenantScope(tx, organizations[0]!.organizationId).owned()} and ${lookAlike}
      order by created, id limit 1 for update`;
  }
  const [request] = await candidates;
  if (!request) return null;
  await tx`update collection_requests set collection_id = ${collectionId} where id = ${request.id}`;
  await tx`update collections set collection_request_id = ${request.id}, modified = now() where id = ${collectionId}`;
  return { requestId: request.id, organizationId: request.organizationId, rule };
}

/** The open, unexpired requests a payment of this number, amount and currency could pay. */
const lookAlikeOf = (tx: Queryable, payment: { phoneNumber: string; currency: string; amount: string }) => tx`
  phone_number = ${payment.phoneNumber} and currency = ${payment.currency} and amount = ${payment.amount}::numeric
  and status in ${tx(OPEN_STATUSES as RequestStatus[])} and collection_id is null and expiry_date > now()`;

type BilledRequest = { id: CollectionRequestId; organizationId: OrganizationId; phoneNumber: string; amount: string };

/**
 * The open request a paybill payment's account number names: its request code `<organization>-<request>` (`svccode`,
 * docs/api.md#collection-requests), on `network` in `currency`; undefined for any other account number. Not a tenant
 * query: the organization is the one the payer's reference names (matching an incoming payment), so the predicate is
 * written here.
 */
export async function requestOfBillReference(
  sql: Queryable,
  billReference: string,
  network: string,
  currency: string,
): Promise<BilledRequest | undefined> {
  const code = /^\s*(\d{1,15})-(\d{1,15})\s*$/.exec(billReference);
  if (!code) return undefined;
  const [request] = await sql<BilledRequest[]>`
    select id, organization_id as "organizationId", phone_number as "phoneNumber", amount::text as amount from
      collection_requests
    where id = ${Number(code[2])} and organization_id = ${Number(code[1])} and network = ${network} and currency
      = ${currency}
      and status in ${sql(OPEN_STATUSES as RequestStatus[])} and collection_id is null and expiry_date > now()`;
  return request;
}

/** An organization's verification URL and accept-by-default setting (docs/api.md#collections). */
export async function verificationSettingsOf(
  sql: Queryable,
  organizationId: OrganizationId,
): Promise<{ url: string | null; acceptByDefault: boolean } | undefined> {
  const [settings] = await sql<{ url: string | null; acceptByDefault: boolean }[]>`
    select verification_url as url, accept_by_default as "acceptByDefault" from organizations where id
      = ${organizationId}`;
  return settings;
}

type Acceptance = { collection: CollectionRow; events: RecordedEvent[] };

/**
 * Assigns a collection to an organization and credits its wallet, in the caller's transaction:
 * the contact for a new number (with `contact.created`), a `mobile_collection` transaction (one per
 * collection, by a unique index), the balance, the request it pays marked `successful` (with its
 * event: money credited and request successful are one fact), and `collection.received`. A
 * collection already accepted is returned unchanged with no events.
 */
async function acceptCollectionIn(
  tx: Queryable,
  collectionId: CollectionId,
  organizationId: OrganizationId,
  author: number | null,
): Promise<Acceptance> {
  const { owned } = tenantScope(tx, organizationId);
  const [collection] = await tx<
    CollectionRow[]
  >`select ${tx.unsafe(COLLECTION_COLUMNS)} from collections where id = ${collectionId} for update`;
  if (!collection) throw new Error(`collection ${collectionId} does not exist`);
  if (collection.status === 'successful') return { collection, events: [] };
  const events: RecordedEvent[] = [];
  const [requestAccount] =
    collection.collectionRequestId === null
      ? []
      : await tx<
          { accountId: number | null }[]
        >`select account_id as "accountId" from collection_requests where id = ${collection.collectionRequestId}`;
  let accountId = requestAccount?.accountId ?? null;
  if (accountId === null) {
    const [oldest] = await tx<{ id: number }[]>`
      select id from accounts where ${owned()} and currency = ${collection.currency} and status = 'active'
      order by created, id limit 1`;
    const [account] = oldest
      ? [oldest]
      : await tx<{ id: number }[]>`insert into accounts (organization_id, currency, label)
          values (${organizationId}, ${collection.currency}, ${`${collection.currency} wallet`}) returning id`;
    accountId = account!.id;
  }
  const [newContact] = await tx<ContactRow[]>`
    insert into contacts (organization_id, first_name, last_name, phone_number, author)
    values (${organizationId}, 'Anonymous', 'Contact', ${collection.phoneNumber}, ${author})
    on conflict (organization_id, phone_number) do nothing
    returning ${tx.unsafe(CONTACT_COLUMNS)}`;
  if (newContact) {
    events.push(
      await recordEvent(tx, { organizationId, type: 'contact.created', data: serializeContact(newContact), author }),
    );
  }
  const [contact] = newContact
    ? [newContact]
    : await tx<ContactRow[]>`select ${tx.unsafe(CONTACT_COLUMNS)} from contacts where ${owned()} and phone_number
        = ${collection.phoneNumber}`;
  const credited = await moveMoney(tx, {
    accountId: accountId!,
    amount: collection.amount,
    currency: collection.currency,
    type: 'mobile_collection',
    description: `Collection ${collection.remoteTransactionId} from ${collection.phoneNumber}`,
    collectionId: collection.id,
  });
  if (!credited) throw new Error(`wallet ${accountId} in ${collection.currency} could not be credited`);
  if (collection.collectionRequestId !== null) {
    const successful = await changeRequestStatusIn(tx, {
      requestId: collection.collectionRequestId,
      status: 'successful',
      collectionId: collection.id,
      remoteTransactionId: collection.remoteTransactionId,
      errorMessage: null,
    });
    if (successful) events.push(successful);
  }
  const [accepted] = await tx<CollectionRow[]>`
    update collections set organization_id = ${organizationId}, status = 'successful', contact_id = ${contact!.id},
      updated_by = ${author}, modified = now()
    where id = ${collectionId} returning ${tx.unsafe(COLLECTION_COLUMNS)}`;
  const [resource] = await collectionResources(tx, [accepted!]);
  events.push(
    await recordEvent(tx, {
      organizationId,
      type: 'collection.received',
      data: resource as unknown as Record<string, unknown>,
      author,
    }),
  );
  return { collection: accepted!, events };
}

/**
 * A rejected collection (the merchant's verification URL said REJECT, or no answer with
 * accept-by-default off): `failed`, visible to the organization, and its request free again.
 */
export async function rejectCollection(
  sql: Sql,
  collectionId: CollectionId,
  organizationId: OrganizationId,
  reason: string | null,
): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`update collection_requests set collection_id = null where collection_id = ${collectionId}`;
    await tx`
      update collections set status = 'failed', rejection_reason = ${reason}, organization_id = ${organizationId},
        collection_request_id = null, modified = now()
      where id = ${collectionId} and status = 'pending'`;
  });
}

/**
 * A collection that could not be credited (a database error no retry fixes, such as a wallet sum
 * that would leave its column): `failed` with the reason, shown to the organization it matched, and
 * its request free again. Operators find it by its status and reason; nothing was credited.
 */
async function failCollectionIn(
  tx: Queryable,
  collectionId: CollectionId,
  organizationId: OrganizationId | null,
  reason: string,
): Promise<void> {
  await tx`update collection_requests set collection_id = null where collection_id = ${collectionId}`;
  await tx`
    update collections set status = 'failed', rejection_reason = ${reason.slice(0, 500)}, organization_id =
      coalesce(organization_id, ${organizationId}),
      collection_request_id = null, modified = now()
    where id = ${collectionId} and status = 'pending'`;
}

/**
 * Accepts and credits in a savepoint: a database error no retry can fix (a wallet sum that would
 * leave its column) rolls back the credit only, and the collection ends `failed` with the reason in
 * the same transaction, instead of an activity retrying forever.
 */
async function acceptOrFailIn(
  tx: Queryable,
  collectionId: CollectionId,
  organizationId: OrganizationId,
): Promise<Acceptance | { failed: string }> {
  try {
    return (await (tx as postgres.TransactionSql).savepoint((savepoint) =>
      acceptCollectionIn(savepoint, collectionId, organizationId, null),
    )) as Acceptance;
  } catch (error) {
    if (!isPermanentDatabaseError(error)) throw error;
    const reason = `Could not be credited: ${(error as Error).message}`;
    await failCollectionIn(tx, collectionId, organizationId, reason);
    return { failed: reason };
  }
}

/** A wallet credit a transaction made (null when the collection was credited before). */
export type Credit = { amount: string; currency: string } | null;

const creditOf = (acceptance: Acceptance): Credit =>
  acceptance.events.length > 0
    ? { amount: acceptance.collection.amount, currency: acceptance.collection.currency }
    : null;

/** What receiving a reported payment came to, and what the caller does next. */
export type Receipt =
  | {
      outcome: 'accepted';
      collectionId: CollectionId;
      requestId: CollectionRequestId | null;
      remoteTransactionId: string;
      events: RecordedEvent[];
      rule: MatchRule | null;
      credit: Credit;
    }
  | { outcome: 'verify'; collectionId: CollectionId; match: Match }
  | { outcome: 'unmatched' | 'already-processed'; collectionId: CollectionId; events: RecordedEvent[] }
  | { outcome: 'failed'; collectionId: CollectionId; requestId: CollectionRequestId | null; reason: string };

/**
 * A reported payment, in one transaction: stored once, matched tenant-safely, and, unless the
 * organization's verification URL must be asked first (`verify`: the request stays reserved),
 * assigned, credited and its request marked successful. Idempotent: a payment already accepted
 * answers `accepted` again (so the caller tells the request's workflow again, harmlessly).
 */
export async function receivePayment(
  sql: Sql,
  payment: IncomingPayment,
  asksVerification: (network: string, currency: string) => boolean,
): Promise<Receipt> {
  return (await sql.begin(async (tx): Promise<Receipt> => {
    const collection = await storeIncomingPaymentIn(tx, payment);
    if (collection.status === 'successful') {
      return {
        outcome: 'accepted',
        collectionId: collection.id,
        requestId: collection.collectionRequestId,
        remoteTransactionId: collection.remoteTransactionId,
        events: [],
        rule: null,
        credit: null,
      };
    }
    if (collection.status !== 'pending' || collection.organizationId !== null)
      return { outcome: 'already-processed', collectionId: collection.id, events: [] };
    const match = await matchCollectionIn(tx, collection.id, {
      onlyOrganizationId: payment.reportedFor ?? null,
      namedOnly: payment.namedOnly === true,
    });
    if (match === null) return { outcome: 'unmatched', collectionId: collection.id, events: [] };
    const [organization] = await tx<{ verificationUrl: string | null }[]>`
      select verification_url as "verificationUrl" from organizations where id = ${match.organizationId}`;
    if (organization?.verificationUrl && asksVerification(collection.network, collection.currency))
      return { outcome: 'verify', collectionId: collection.id, match };
    const accepted = await acceptOrFailIn(tx, collection.id, match.organizationId);
    if ('failed' in accepted)
      return { outcome: 'failed', collectionId: collection.id, requestId: match.requestId, reason: accepted.failed };
    return {
      outcome: 'accepted',
      collectionId: collection.id,
      requestId: match.requestId,
      remoteTransactionId: collection.remoteTransactionId,
      events: accepted.events,
      rule: match.rule,
      credit: creditOf(accepted),
    };
  })) as Receipt;
}

/** After the merchant's verification URL accepted it (or the default did): assign and credit, or fail for good. */
export async function acceptVerified(
  sql: Sql,
  collectionId: CollectionId,
  organizationId: OrganizationId,
): Promise<Receipt> {
  return (await sql.begin(async (tx): Promise<Receipt> => {
    const accepted = await acceptOrFailIn(tx, collectionId, organizationId);
    if ('failed' in accepted) return { outcome: 'failed', collectionId, requestId: null, reason: accepted.failed };
    const { collection } = accepted;
    return {
      outcome: 'accepted',
      collectionId,
      requestId: collection.collectionRequestId,
      remoteTransactionId: collection.remoteTransactionId,
      events: accepted.events,
      rule: null,
      credit: creditOf(accepted),
    };
  })) as Receipt;
}

class ClaimError extends Error {}

type ClaimQuery = { amount: string; remoteTransactionId: string; phoneNumber: string };

/**
 * The claim (docs/api.md#collections): the one collection with exactly this amount, remote transaction id and number,
 * unassigned or already the caller's, is assigned and credited. More than one match fails. Two
 * claims racing for one collection serialise on its row lock; the second finds it taken.
 */
/** The credit a claim made (null when the collection was already the claimant's). */
const claimCredit = (acceptance: Acceptance): Credit => creditOf(acceptance);

async function claimCollection(sql: Sql, claimant: Actor, query: ClaimQuery): Promise<Acceptance | null> {
  const { organizationId, userId } = claimant;
  // A collection no organization holds yet is outside every tenant's boundary: the claim looks across organizations.
  return await acrossOrganizations(sql, (outside) =>
    writeAs(outside, claimant, async (tx) => {
      const candidates = await tx<CollectionRow[]>`
      select ${tx.unsafe(COLLECTION_COLUMNS)} from collections
      where amount = ${query.amount}::numeric and remote_transaction_id = ${query.remoteTransactionId}
        and phone_number = ${query.phoneNumber}
        and ((organization_id is null and status = 'pending' and collection_request_id is null)
          or ${tenantScope(tx, organizationId).owned()})
      order by id for update`;
      if (candidates.length > 1)
        throw new ClaimError('More than one collection matches these parameters; the claim was not made.');
      const [candidate] = candidates;
      if (!candidate) return null;
      if (candidate.organizationId === organizationId) return { collection: candidate, events: [] };
      return await acceptCollectionIn(tx, candidate.id, organizationId, userId);
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// The organization's collections, as the API and the console read and claim them

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
        '`True` (also `true`, `1`, `yes`) searches unmatched collections too and assigns the one that matches ' +
          '`amount`, ' +
          '`remote_transaction_id` and `phonenumber` (all three required; the number in full) to the caller; the ' +
          'answer is then a list. ' +
          'A claim needs the `collect` capability (403 otherwise) and counts as a write for throttling.',
      ),
    ),
  ),
});

type CollectionFilterValues = v.InferOutput<typeof CollectionFilters>;

export const wantsClaim = (f: CollectionFilterValues): boolean => asksClaim(f.claim);

/**
 * The claim (docs/api.md#collections), as the REST route and the console make it: amount, remote transaction id and
 * number are required (400 naming the missing ones; one sent empty is sent, and matches nothing), the number must match
 * in full (`+` added, nothing else), more than one match is a 400. Returns the claimed collection (null for none) and
 * dispatches the events the claim wrote.
 */
export async function claimCollectionFor(
  { sql }: Pick<ServiceDeps, 'sql'>,
  claimant: Actor,
  f: Pick<CollectionFilterValues, 'amount' | 'remote_transaction_id'> & { phonenumber?: string | undefined },
  rawPhoneNumber: string,
): Promise<CollectionRow | null> {
  // A parameter sent empty counts as sent (as the provider's service answers it): the search runs and finds nothing.
  const missing = (['amount', 'remote_transaction_id', 'phonenumber'] as const).filter(
    (field) => f[field] === undefined,
  );
  if (missing.length > 0) {
    throw fieldErrors(
      Object.fromEntries(missing.map((field) => [field, ['This field is required when claiming a collection.']])),
    );
  }
  let claimed;
  try {
    claimed = await claimCollection(sql, claimant, {
      amount: f.amount!,
      remoteTransactionId: f.remote_transaction_id!,
      // The number must match in full: `+` is added, nothing else is completed (rule 2).
      phoneNumber: withLeadingPlus(rawPhoneNumber),
    });
  } catch (error) {
    if (error instanceof ClaimError) throw new RefusedError(error.message, { cause: error });
    throw error;
  }
  if (claimed === null) return null;
  const credit = claimCredit(claimed);
  if (credit !== null) {
    recordCollectionMatch('claimed');
    recordWalletMovement({ type: 'mobile_collection', direction: 'credit', ...credit });
  }
  return claimed.collection;
}

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
