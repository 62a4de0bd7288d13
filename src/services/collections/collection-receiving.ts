/**
 * Receiving a reported payment (docs/api.md#collections): stored once, matched, verified by the merchant's URL when the
 * organization asks it, then credited with its request marked successful, or rejected, or failed.
 */
import { isPermanentDatabaseError, type Queryable, type Sql } from '../../db';
import type { CollectionId, CollectionRequestId, OrganizationId } from '../../domain/ids';
import { tenantScope } from '../platform/queries';
import type { CollectionRow } from '../../domain/collections';
import { serializeContact, type ContactRow } from '../../domain/contacts';
import { CONTACT_COLUMNS } from './contacts';
import { recordEvent, type RecordedEvent } from '../webhooks/events';
import { moveMoney } from '../wallets/ledger';
import { receiptOfPromptIn } from '../networks/receipts';
import { changeRequestStatusIn } from './request-status';
import type postgres from 'postgres';
import type { IncomingPaymentInput } from '../../contracts/incoming-collection';
import { COLLECTION_COLUMNS, collectionResources } from './collection-reads';
import { matchCollectionIn, type Match, type MatchRule } from './collection-matching';

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

/** An organization's verification URL and accept-by-default setting (docs/api.md#collections). */
export async function verificationSettingsOf(
  sql: Queryable,
  organizationId: OrganizationId,
): Promise<{ url: string | null; acceptByDefault: boolean } | undefined> {
  const [settings] = await sql<{ url: string | null; acceptByDefault: boolean }[]>`
    select verification_url as url, accept_by_default as "acceptByDefault" from organizations
    where id = ${organizationId}`;
  return settings;
}

export type Acceptance = { collection: CollectionRow; events: RecordedEvent[] };

/**
 * Assigns a collection to an organization and credits its wallet, in the caller's transaction:
 * the contact for a new number (with `contact.created`), a `mobile_collection` transaction (one per
 * collection, by a unique index), the balance, the request it pays marked `successful` (with its
 * event: money credited and request successful are one fact), and `collection.received`. A
 * collection already accepted is returned unchanged with no events.
 */
export async function acceptCollectionIn(
  tx: Queryable,
  collectionId: CollectionId,
  organizationId: OrganizationId,
  author: number | null,
): Promise<Acceptance> {
  const { owned } = tenantScope(tx, organizationId);
  const [collection] = await tx<CollectionRow[]>`
    select ${tx.unsafe(COLLECTION_COLUMNS)} from collections where id = ${collectionId} for update`;
  if (!collection) throw new Error(`collection ${collectionId} does not exist`);
  if (collection.status === 'successful') return { collection, events: [] };
  const events: RecordedEvent[] = [];
  const [requestAccount] =
    collection.collectionRequestId === null
      ? []
      : await tx<{ accountId: number | null }[]>`
        select account_id as "accountId" from collection_requests where id = ${collection.collectionRequestId}`;
  let accountId = requestAccount?.accountId ?? null;
  if (accountId === null) {
    const [oldest] = await tx<{ id: number }[]>`
      select id from accounts where ${owned()} and currency = ${collection.currency} and status = 'active'
      order by created, id limit 1`;
    const [account] = oldest
      ? [oldest]
      : await tx<{ id: number }[]>`
          insert into accounts (organization_id, currency, label)
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
    : await tx<ContactRow[]>`
        select ${tx.unsafe(CONTACT_COLUMNS)} from contacts
        where ${owned()} and phone_number = ${collection.phoneNumber}`;
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
    update collections
    set status = 'failed', rejection_reason = ${reason.slice(0, 500)},
        organization_id = coalesce(organization_id, ${organizationId}), collection_request_id = null, modified = now()
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

export const creditOf = (acceptance: Acceptance): Credit =>
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
