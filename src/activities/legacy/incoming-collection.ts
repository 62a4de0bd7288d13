/**
 * The activities of the incoming-collection workflow's first shape (`incomingCollectionV1` of the
 * type `incomingCollection`, src/workflows/legacy/incoming-collection.ts): store, match, credit and
 * fail as steps of their own, where the current shape receives a payment in one local activity.
 */
import { log } from '@temporalio/activity';
import type { Sql } from '../../db';
import type { CollectionRow } from '../../domain/collections';
import type { CollectionId, OrganizationId } from '../../domain/ids';
import { acceptCollection, failCollection, matchCollection, storeIncomingPayment, type Match } from '../../services/collections';
import type { Launcher } from '../../services/ports';
import type { IncomingPaymentInput } from '../../workflows/contracts/incoming-collection';

export function createIncomingCollectionV1Activities({ sql, launcher }: { sql: Sql; launcher: Launcher }) {
  return {
    async storeCollection(payment: IncomingPaymentInput): Promise<Pick<CollectionRow, 'id' | 'status' | 'organizationId'>> {
      const collection = await storeIncomingPayment(sql, payment);
      return { id: collection.id, status: collection.status, organizationId: collection.organizationId };
    },

    async matchCollection(collectionId: CollectionId): Promise<Match | null> {
      return await matchCollection(sql, collectionId);
    },

    async acceptCollection({ collectionId, organizationId }: { collectionId: CollectionId; organizationId: OrganizationId }): Promise<void> {
      const { events } = await acceptCollection(sql, collectionId, organizationId);
      await launcher.afterCommit({ events });
    },

    /** The credit failed for good (a permanent database error): the collection ends `failed` with why. */
    async failCollection({ collectionId, organizationId, reason }: { collectionId: CollectionId; organizationId: OrganizationId; reason: string }): Promise<void> {
      log.error('collection could not be credited', { collectionId, organizationId, reason });
      await failCollection(sql, collectionId, organizationId, reason);
    },
  };
}
