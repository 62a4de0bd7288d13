import { condition, log, proxyActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { LegacyActivities } from '../../activities/legacy';
import type { RequestStatus } from '../../domain/collection-requests';
import { collectionMatchedSignal, collectionRequestStateQuery, type CollectionMatch, type CollectionRequestInput, type CollectionRequestState } from '../contracts/collection-request';
import { searchAttributes } from '../contracts/search-attributes';
import { RETRY_POLICIES } from '../contracts/retry-policies';

const { recordRequestStatus, sendInstructions, sendSuccessMessage } = proxyActivities<LegacyActivities>({
  // Short: an activity lost with a dead worker is retried elsewhere after this long.
  startToCloseTimeout: '10 seconds',
  // Database writes and text messages: keep trying through outages, they are idempotent.
  retry: RETRY_POLICIES.untilDone,
});

const { promptForPayment } = proxyActivities<LegacyActivities>({
  startToCloseTimeout: '15 seconds',
  // A refusal is a result, not an error. The activity turns a network that keeps failing into a
  // refusal after a few tries, so retries here outlast only our own outages (database, worker).
  retry: RETRY_POLICIES.promptCall,
});

/**
 * The request workflow's first shape (every step a regular activity; `successful` recorded on the
 * signal), for executions started before the lean core; replayed from test/histories. New
 * executions take the shape in ../collection-request.ts.
 */
export async function collectionRequestV1(input: CollectionRequestInput): Promise<CollectionRequestState> {
  const state: CollectionRequestState = { status: 'new', attempts: 0, collectionId: null, errorMessage: null };
  let match: CollectionMatch | null = null;
  setHandler(collectionRequestStateQuery, () => ({ ...state }));
  setHandler(collectionMatchedSignal, (collection) => {
    match ??= collection;
  });

  const expiresAt = Date.parse(input.expiresAt);
  const untilExpiry = () => Math.max(0, expiresAt - Date.now());
  const matched = () => match !== null;

  async function setStatus(status: RequestStatus, details: { errorMessage?: string | null } = {}): Promise<void> {
    await recordRequestStatus({ requestId: input.requestId, status, attempts: state.attempts, ...details });
    state.status = status;
    if (details.errorMessage !== undefined) state.errorMessage = details.errorMessage;
    upsertSearchAttributes([{ key: searchAttributes.requestStatus, value: status }]);
  }

  /** Waits up to `ms` (never past expiry) for a matching collection; true when one arrived. */
  const waitForMatch = (ms: number) => condition(matched, Math.min(ms, untilExpiry()));

  const startAt = input.startAt === null ? null : Date.parse(input.startAt);
  if (startAt !== null && startAt > Date.now()) await waitForMatch(startAt - Date.now());

  let retriesLeft = input.maxAttempts;
  if (!matched() && untilExpiry() > 0 && !input.sendInstructions) {
    // Nobody is prompted: the request waits for the subscriber to pay by themselves.
    await setStatus('pending');
    await waitForMatch(untilExpiry());
  }
  while (input.sendInstructions && !matched() && untilExpiry() > 0) {
    state.attempts += 1;
    const attempt = state.attempts;
    if (input.sendSms) {
      await sendInstructions({ requestId: input.requestId, attempt });
      await setStatus('instructions_sent');
    }
    if (input.networkPullsFunds) {
      const prompt = await promptForPayment({ requestId: input.requestId, attempt });
      if (!prompt.accepted) {
        log.info('prompt refused', { requestId: input.requestId, attempt, error: prompt.error });
        if (retriesLeft === 0) {
          await setStatus('failed', { errorMessage: prompt.error });
          return { ...state };
        }
        retriesLeft -= 1;
        state.errorMessage = prompt.error;
        await waitForMatch((input.retryIntervalSeconds ?? input.failedPromptRetrySeconds) * 1000);
        continue;
      }
      await setStatus('processing_started');
    } else if (!input.sendSms) {
      await setStatus('pending');
    }
    // Prompted: wait for the payment; re-prompt after the retry interval while retries remain.
    if (input.retryIntervalSeconds !== null && retriesLeft > 0) {
      if (await waitForMatch(input.retryIntervalSeconds * 1000)) break;
      retriesLeft -= 1;
      continue;
    }
    await waitForMatch(untilExpiry());
  }

  /** Paid: `successful` with its collection, then the success text. */
  async function succeed(collection: CollectionMatch): Promise<CollectionRequestState> {
    state.collectionId = collection.collectionId;
    await recordRequestStatus({
      requestId: input.requestId,
      status: 'successful',
      attempts: state.attempts,
      collectionId: collection.collectionId,
      remoteTransactionId: collection.remoteTransactionId,
      errorMessage: null,
    });
    state.status = 'successful';
    state.errorMessage = null;
    upsertSearchAttributes([{ key: searchAttributes.requestStatus, value: 'successful' }]);
    await sendSuccessMessage({ requestId: input.requestId });
    return { ...state };
  }

  const collection = match as CollectionMatch | null;
  if (collection !== null) return await succeed(collection);
  await setStatus('expired');
  return { ...state };
}
