/**
 * Asking the organization's verification URL about a collection (docs/api.md#collections), as every workflow
 * that decides a payment does: one regular activity given the merchant's whole answer time.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { createCollectionActivities } from '../activities/collections';
import type { VerificationDecision } from '../contracts/incoming-collection';
import { RETRY_POLICIES } from '../contracts/retry-policies';
import type { CollectionId, OrganizationId } from '../domain/ids';

export async function askVerification(
  collection: { collectionId: CollectionId; organizationId: OrganizationId },
  timeoutSeconds: number,
): Promise<VerificationDecision> {
  const { verifyCollection } = proxyActivities<ReturnType<typeof createCollectionActivities>>({
    // The merchant has the configured time to answer (60 s by default); a crash mid-call asks again.
    // The merchant's failures are answers (the default applies), so only our own (database, worker)
    // are retried, for as long as they last: the payment must reach a decision.
    startToCloseTimeout: `${timeoutSeconds + 10} seconds`,
    retry: RETRY_POLICIES.untilDone,
  });
  return await verifyCollection({
    collectionId: collection.collectionId,
    organizationId: collection.organizationId,
    timeoutSeconds,
  });
}
