/**
 * Reversals: a successful collection's amount sent back to the subscriber through the network, out
 * of the wallet it credited. At most one per collection (a unique key, and the collection's row
 * lock serialises two at once); the amount is debited when the reversal is created (refused when
 * the wallet no longer holds it) and given back if the network fails it. When it completes, the
 * request the collection paid ends `reversed`, with its event.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import { InputError } from '../../domain/errors';
import type { CollectionId, CollectionRequestId, OrganizationId, ReversalId, UserId } from '../../domain/ids';
import { REQUIRED, choiceMessage, filterId, integerField, optionalText } from '../../domain/input';
import {
  REVERSAL_STATES,
  serializeReversal,
  type ReversalResource,
  type ReversalRow,
  type ReversalState,
} from '../../domain/money-out';
import { recordWalletMovement } from '../../telemetry/metrics';
import type { OrganizationActor, ServiceDeps } from '../platform/deps';
import { changeRequestStatusIn } from '../collections/request-status';
import { writeOnce, type DuplicateCheck } from '../collections/duplicate-checks';
import type { RecordedEvent } from '../webhooks/events';
import { debit, moveMoney } from '../wallets/ledger';
import type { PayoutOutcome } from './payment-state';
import { tenantScope, type ListPage, type PageWindow } from '../platform/queries';

/** Who asks for a reversal: an API key's or console's user, or the admin CLI (no user). */
type Requester = OrganizationActor & { userId: UserId | null };

const REVERSAL_COLUMNS = `id, organization_id as "organizationId", collection_id as "collectionId",
  account_id as "accountId", amount::text as amount, currency, phone_number as "phoneNumber", network, reason, state,
  last_error as "lastError", remote_transaction_id as "remoteTransactionId", author, created, modified`;

/** Why a collection cannot be reversed (a 400 for the merchant). */
class ReversalRefused extends Error {}

export async function findReversal(sql: Queryable, id: ReversalId): Promise<ReversalRow | undefined> {
  const [row] = await sql<ReversalRow[]>`select ${sql.unsafe(REVERSAL_COLUMNS)} from reversals where id = ${id}`;
  return row;
}

/**
 * A reversal of `collectionId` for its organization, in one transaction: the collection must be the
 * organization's and `successful` and not reversed before; its amount is debited from the wallet it
 * credited (ReversalRefused when that wallet no longer holds it).
 */
async function createReversal(
  sql: Sql,
  requester: Requester,
  input: { collectionId: CollectionId; reason: string | null },
  duplicateCheck: DuplicateCheck | null = null,
): Promise<ReversalRow> {
  return (await writeOnce(
    sql,
    requester,
    duplicateCheck,
    async (tx) => {
      const [collection] = await tx<
        {
          id: CollectionId;
          status: string;
          amount: string;
          currency: string;
          phoneNumber: string;
          network: string;
          remoteTransactionId: string;
        }[]
      >`
      select id, status, amount::text as amount, currency, phone_number as "phoneNumber", network,
             remote_transaction_id as "remoteTransactionId"
      from collections where id = ${input.collectionId} and ${tenantScope(tx, requester.organizationId).owned()}
      for update`;
      if (!collection) throw new ReversalRefused('No collection of your organization has this id.');
      if (collection.status !== 'successful')
        throw new ReversalRefused(`A ${collection.status} collection cannot be reversed: only successful ones can.`);
      const [earlier] = await tx<{ id: number }[]>`select id from reversals where collection_id = ${collection.id}`;
      if (earlier) throw new ReversalRefused(`This collection was reversed already (reversal ${earlier.id}).`);
      const [credit] = await tx<{ accountId: number }[]>`
      select account_id as "accountId" from transactions
      where collection_id = ${collection.id} and type = 'mobile_collection'`;
      if (!credit) throw new ReversalRefused('This collection credited no wallet, so there is nothing to send back.');
      const [reversal] = await tx<ReversalRow[]>`
      insert into reversals (organization_id, collection_id, account_id, amount, currency, phone_number, network,
                             reason, author)
      values (${requester.organizationId}, ${collection.id}, ${credit.accountId}, ${collection.amount},
              ${collection.currency}, ${collection.phoneNumber}, ${collection.network}, ${input.reason},
              ${requester.userId})
      returning ${tx.unsafe(REVERSAL_COLUMNS)}`;
      const debited = await moveMoney(tx, {
        accountId: credit.accountId,
        amount: debit(collection.amount),
        currency: collection.currency,
        type: 'reversal',
        description: `Collection ${collection.remoteTransactionId} sent back to ${collection.phoneNumber}`,
        collectionId: collection.id,
        reversalId: reversal!.id,
      });
      if (!debited)
        throw new ReversalRefused(
          `The wallet no longer holds the ${collection.amount} ${collection.currency} this collection credited.`,
        );
      return reversal!;
    },
    (reversal) => ({ type: 'reversal', id: reversal.id }),
  )) as ReversalRow;
}

type ReversalChange = { reversal: ReversalRow; events: RecordedEvent[] };

/**
 * What the network made of a reversal: `completed`, with the paid request now `reversed` (row and
 * event); or `failed`, with the amount given back to the wallet. Null when it was finished before.
 */
export async function finishReversal(
  sql: Sql,
  reversalId: ReversalId,
  outcome: PayoutOutcome,
): Promise<ReversalChange | null> {
  return (await sql.begin(async (tx): Promise<ReversalChange | null> => {
    const state: ReversalState = outcome.status === 'completed' ? 'completed' : 'failed';
    const [reversal] = await tx<ReversalRow[]>`
      update reversals
      set state = ${state}, last_error = ${outcome.status === 'completed' ? null : outcome.error},
          remote_transaction_id = ${outcome.remoteTransactionId},
          workflow_started_at = coalesce(workflow_started_at, now()), modified = now()
      where id = ${reversalId} and state = 'processing'
      returning ${tx.unsafe(REVERSAL_COLUMNS)}`;
    if (!reversal) return null;
    const events: RecordedEvent[] = [];
    if (state === 'failed') {
      const released = await moveMoney(tx, {
        accountId: reversal.accountId,
        amount: reversal.amount,
        currency: reversal.currency,
        type: 'reversal_release',
        description: `Reversal ${reversal.id} failed: amount given back`,
        collectionId: reversal.collectionId,
        reversalId: reversal.id,
      });
      if (!released) throw new Error(`reversal ${reversal.id}: the release could not be credited`);
    } else {
      const [request] = await tx<{ id: CollectionRequestId }[]>`
        select collection_request_id as id from collections where id = ${reversal.collectionId}`;
      if (request?.id) {
        const reversed = await changeRequestStatusIn(tx, { requestId: request.id, status: 'reversed' });
        if (reversed) events.push(reversed);
      }
    }
    return { reversal, events };
  })) as ReversalChange | null;
}

// ---------------------------------------------------------------------------------------------
// Reversals as the API, the console and the admin CLI make and read them

export const ReversalCreate = v.object(
  {
    collection: v.pipe(
      integerField(1),
      v.transform((id) => id as CollectionId),
    ),
    reason: optionalText(255),
  },
  REQUIRED,
);
type ReversalParams = v.InferOutput<typeof ReversalCreate>;

export const ReversalFilters = v.object({
  state: v.optional(v.picklist(REVERSAL_STATES, choiceMessage)),
  collection: filterId('The id of the reversed collection.'),
});
type ReversalFilterValues = { state?: ReversalState | undefined; collection?: number | undefined };

/**
 * Reverses a collection of the organization: 400 naming the collection when it cannot be (not
 * successful, reversed before, the wallet no longer holds the amount); the amount is debited at
 * once and the reversal's workflow started after the commit.
 */
export async function reverseCollection(
  { sql, launcher }: Pick<ServiceDeps, 'sql' | 'launcher'>,
  requester: Requester,
  input: ReversalParams,
  duplicateCheck: DuplicateCheck | null,
): Promise<ReversalResource> {
  let reversal;
  try {
    reversal = await createReversal(
      sql,
      requester,
      { collectionId: input.collection, reason: input.reason },
      duplicateCheck,
    );
  } catch (error) {
    if (error instanceof ReversalRefused) throw new InputError({ collection: [error.message] }, { cause: error });
    throw error;
  }
  await launcher.afterCommit({ reversals: [{ id: reversal.id, organizationId: reversal.organizationId }] });
  recordWalletMovement({ type: 'reversal', direction: 'debit', currency: reversal.currency, amount: reversal.amount });
  return serializeReversal(reversal);
}

/** One page of an organization's reversals, newest first, with the total count. */
export async function listReversals(
  sql: Sql,
  organizationId: OrganizationId,
  filters: ReversalFilterValues,
  page: PageWindow,
): Promise<ListPage<ReversalRow>> {
  return await tenantScope(sql, organizationId).listPage<ReversalRow>(
    {
      columns: sql.unsafe(REVERSAL_COLUMNS),
      from: sql`reversals`,
      filters: sql`
      ${filters.state !== undefined ? sql`and state = ${filters.state}` : sql``}
      ${filters.collection !== undefined ? sql`and collection_id = ${filters.collection}` : sql``}`,
      orderBy: sql`order by created desc, id desc`,
    },
    page,
  );
}

/** The organization's reversal `id` (403 when another organization's, 404 when none). */
export async function findOwnReversal(
  sql: Queryable,
  organizationId: OrganizationId,
  id: ReversalId,
): Promise<ReversalRow> {
  return await tenantScope(sql, organizationId).ownRow<ReversalRow>({
    table: 'reversals',
    id,
    columns: sql.unsafe(REVERSAL_COLUMNS),
  });
}
