/**
 * Claims (docs/api.md#collections): an organization takes an unmatched collection by its amount, remote transaction id
 * and number, and its wallet is credited.
 */
import type { Sql } from '../../db';
import { RefusedError, fieldErrors } from '../../domain/errors';
import { withLeadingPlus } from '../../domain/phone';
import { recordCollectionMatch, recordWalletMovement } from '../../telemetry/metrics';
import { writeAs } from '../merchants/audit';
import { acrossOrganizations } from '../../db/tenancy';
import type { Actor, ServiceDeps } from '../platform/deps';
import { tenantScope } from '../platform/queries';
import type { CollectionRow } from '../../domain/collections';
import { COLLECTION_COLUMNS, type CollectionFilterValues } from './collection-reads';
import { acceptCollectionIn, creditOf, type Acceptance, type Credit } from './collection-receiving';

class ClaimError extends Error {}

type ClaimQuery = { amount: string; remoteTransactionId: string; phoneNumber: string };

/** The credit a claim made (null when the collection was already the claimant's). */
const claimCredit = (acceptance: Acceptance): Credit => creditOf(acceptance);

/**
 * The claim (docs/api.md#collections): the one collection with exactly this amount, remote transaction id and number,
 * unassigned or already the caller's, is assigned and credited. More than one match fails. Two
 * claims racing for one collection serialise on its row lock; the second finds it taken.
 */
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
