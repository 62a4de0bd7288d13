import { ActivityFailure, ApplicationFailure, getExternalWorkflowHandle, log, proxyActivities, setHandler } from '@temporalio/workflow';
import type { LegacyActivities } from '../../activities/legacy';
import type { CollectionId, OrganizationId } from '../../domain/ids';
import { incomingCollectionStatusQuery, type IncomingCollectionInput, type IncomingCollectionResult, type VerificationDecision } from '../contracts/incoming-collection';
import { collectionMatchedSignal, collectionRequestWorkflowId } from '../contracts/collection-request';
import { PERMANENT_DATABASE_ERROR } from '../contracts/common';
import { RETRY_POLICIES } from '../contracts/retry-policies';

const { storeCollection, matchCollection, acceptCollection, rejectCollection, failCollection } = proxyActivities<LegacyActivities>({
  startToCloseTimeout: '10 seconds',
  // Money must not be dropped: database steps are idempotent and retried until they succeed.
  retry: RETRY_POLICIES.untilDone,
});

/**
 * Asks the organization's verification URL about a collection, as both shapes of this type did:
 * one regular activity given the merchant's whole answer time.
 */
export async function askVerification(collection: { collectionId: CollectionId; organizationId: OrganizationId }, timeoutSeconds: number): Promise<VerificationDecision> {
  const { verifyCollection } = proxyActivities<LegacyActivities>({
    // The merchant has the configured time to answer (60 s by default); a crash mid-call asks again.
    // The merchant's failures are answers (the default applies), so only our own (database, worker)
    // are retried, for as long as they last: the payment must reach a decision.
    startToCloseTimeout: `${timeoutSeconds + 10} seconds`,
    retry: RETRY_POLICIES.untilDone,
  });
  return await verifyCollection({ collectionId: collection.collectionId, organizationId: collection.organizationId, timeoutSeconds });
}

/** True for an activity that failed non-retryably because of a permanent database error. */
function isPermanentFailure(error: unknown): boolean {
  return error instanceof ActivityFailure && error.cause instanceof ApplicationFailure && error.cause.type === PERMANENT_DATABASE_ERROR;
}

const failureMessage = (error: unknown): string =>
  error instanceof ActivityFailure && error.cause ? error.cause.message : String(error);

/**
 * The incoming-collection workflow's first shape (store, match, verify, accept as regular
 * activities; the request signalled from the workflow), for executions started before the lean
 * core; replayed from test/histories. New executions take the shape in ../incoming-collection.ts.
 */
export async function incomingCollectionV1(input: IncomingCollectionInput): Promise<IncomingCollectionResult> {
  let status = 'storing';
  setHandler(incomingCollectionStatusQuery, () => status);
  const collection = await storeCollection(input.payment);
  if (collection.status !== 'pending' || collection.organizationId !== null) {
    status = 'already-processed';
    return { collectionId: collection.id, outcome: 'already-processed', requestId: null, decidedBy: null };
  }
  status = 'matching';
  const match = await matchCollection(collection.id);
  if (match === null) {
    status = 'unmatched';
    return { collectionId: collection.id, outcome: 'unmatched', requestId: null, decidedBy: null };
  }
  status = 'verifying';
  const decision = await askVerification({ collectionId: collection.id, organizationId: match.organizationId }, input.verificationTimeoutSeconds);
  if (decision.decision === 'reject') {
    status = 'rejected';
    await rejectCollection({ collectionId: collection.id, organizationId: match.organizationId, reason: decision.reason });
    return { collectionId: collection.id, outcome: 'rejected', requestId: match.requestId, decidedBy: decision.decidedBy };
  }
  status = 'crediting';
  try {
    await acceptCollection({ collectionId: collection.id, organizationId: match.organizationId });
  } catch (error) {
    // A database error no retry can fix (the activity failed non-retryably): a clear final state.
    if (!isPermanentFailure(error)) throw error;
    status = 'failed';
    await failCollection({ collectionId: collection.id, organizationId: match.organizationId, reason: `Could not be credited: ${failureMessage(error)}` });
    return { collectionId: collection.id, outcome: 'failed', requestId: match.requestId, decidedBy: decision.decidedBy };
  }
  try {
    await getExternalWorkflowHandle(collectionRequestWorkflowId(match.requestId)).signal(collectionMatchedSignal, {
      collectionId: collection.id,
      remoteTransactionId: input.payment.remoteTransactionId,
    });
  } catch (error) {
    // The request's workflow already ended (it expired meanwhile); the money is credited all the same.
    log.warn('request workflow did not take the match', { requestId: match.requestId, error: String(error) });
  }
  status = 'accepted';
  return { collectionId: collection.id, outcome: 'accepted', requestId: match.requestId, decidedBy: decision.decidedBy };
}
