/**
 * Matching a reported payment to the request it pays, tenant-safely (docs/architecture.md#tenant-safe-matching), and
 * the open request a paybill payment's account number names.
 */
import type { Queryable } from '../../db';
import type { CollectionId, CollectionRequestId, OrganizationId } from '../../domain/ids';
import { tenantScope } from '../platform/queries';
import { OPEN_STATUSES, type RequestStatus } from '../../domain/collection-requests';
import { requestOfPromptReference, type CollectionRow } from '../../domain/collections';
import { COLLECTION_COLUMNS } from './collection-reads';

/** How a collection found its request: through the prompt it answered, or as the one organization's look-alike. */
export type MatchRule = 'prompt_reference' | 'single_organization';
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
export async function matchCollectionIn(
  tx: Queryable,
  collectionId: CollectionId,
  { onlyOrganizationId = null, namedOnly = false }: { onlyOrganizationId?: OrganizationId | null; namedOnly?: boolean },
): Promise<Match | null> {
  const [collection] = await tx<CollectionRow[]>`
    select ${tx.unsafe(COLLECTION_COLUMNS)} from collections where id = ${collectionId} for update`;
  if (!collection) throw new Error(`collection ${collectionId} does not exist`);
  const rule: MatchRule = collection.promptReference !== null ? 'prompt_reference' : 'single_organization';
  if (collection.collectionRequestId !== null) {
    const [request] = await tx<{ organizationId: OrganizationId }[]>`
      select organization_id as "organizationId" from collection_requests where id = ${collection.collectionRequestId}`;
    return { requestId: collection.collectionRequestId, organizationId: request!.organizationId, rule };
  }
  if (collection.status !== 'pending' || collection.organizationId !== null) return null;
  const lookAlike = lookAlikeOf(tx, collection);
  let candidates;
  if (collection.promptReference !== null) {
    const requestId = requestOfPromptReference(collection.promptReference);
    if (requestId === null) return null;
    candidates = tx<{ id: CollectionRequestId; organizationId: OrganizationId }[]>`
      select id, organization_id as "organizationId" from collection_requests
      where id = ${requestId} and ${lookAlike} for update`;
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
    select id, organization_id as "organizationId", phone_number as "phoneNumber", amount::text as amount
    from collection_requests
    where id = ${Number(code[2])} and organization_id = ${Number(code[1])}
      and network = ${network} and currency = ${currency}
      and status in ${sql(OPEN_STATUSES as RequestStatus[])} and collection_id is null and expiry_date > now()`;
  return request;
}
