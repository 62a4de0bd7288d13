import { condition, log, patched, proxyActivities, proxyLocalActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { LegacyActivities } from '../../activities/legacy';
import type { RequestStatus } from '../../domain/collection-requests';
import { collectionRequestV1 } from './collection-request';
import { collectionMatchedSignal, collectionRequestStateQuery, type CollectionMatch, type CollectionRequestInput, type CollectionRequestState } from '../contracts/collection-request';
import { LEAN_CORE_PATCH, networkHintSignal } from '../contracts/common';
import { searchAttributes } from '../contracts/search-attributes';
import { RETRY_POLICIES } from '../contracts/retry-policies';

type PromptCheck = Awaited<ReturnType<LegacyActivities['checkPrompt']>>;

const { recordRequestStatus } = proxyLocalActivities<LegacyActivities>({
  // One PostgreSQL transaction, well under a second; an outage is waited out, it is idempotent.
  startToCloseTimeout: '10 seconds',
  retry: RETRY_POLICIES.untilDone,
});

const { promptSubscriber, sendSuccessMessage } = proxyActivities<LegacyActivities>({
  // Calls that leave the process (the network). Short: an activity lost with a dead worker is
  // retried elsewhere after this long.
  startToCloseTimeout: '15 seconds',
  // A refused prompt is a result, not an error: the activity turns a network that keeps failing into
  // a refusal after a few tries, so retries here outlast only our own outages (database, worker).
  retry: RETRY_POLICIES.promptCall,
});

const { checkPrompt } = proxyActivities<LegacyActivities>({
  // The operator's status query. A few tries, then the next poll asks again: an operator that keeps
  // failing must not hold the workflow past its request's expiry.
  startToCloseTimeout: '30 seconds',
  retry: RETRY_POLICIES.statusQuery,
});

/** How often a prompt a real operator took is asked about when no callback comes, for inputs that do not say. */
const DEFAULT_NETWORK_POLL_SECONDS = 20;

/**
 * One collection request (`collection-request-<id>`), from creation to a final status: `new`
 * until its start, then prompts and retries, `successful` when a collection pays it, `failed`
 * when prompts fail with no retry left, `expired` at its expiry date.
 *
 * The lean shape (docs/architecture.md#retiring-a-workflow-shape): a prompt is one regular activity (text, push, and their
 * status changes); status changes of its own are local activities; `successful` is recorded by
 * the transaction that credits the collection, and the signal only tells this workflow to send the
 * success text and end. Executions started before it replay the first shape (legacy/).
 */
export async function collectionRequest(input: CollectionRequestInput): Promise<CollectionRequestState> {
  if (!patched(LEAN_CORE_PATCH)) return await collectionRequestV1(input);

  const state: CollectionRequestState = { status: 'new', attempts: 0, collectionId: null, errorMessage: null };
  let match: CollectionMatch | null = null;
  // An operator's callback about a prompt: it only wakes the workflow to ask the operator itself.
  let hinted = false;
  setHandler(collectionRequestStateQuery, () => ({ ...state }));
  setHandler(collectionMatchedSignal, (collection) => {
    match ??= collection;
  });
  setHandler(networkHintSignal, () => {
    hinted = true;
  });

  const expiresAt = Date.parse(input.expiresAt);
  const untilExpiry = () => Math.max(0, expiresAt - Date.now());
  const matched = () => match !== null;
  /** Waits up to `ms` (never past expiry) for a paying collection; true when one arrived. */
  const waitForMatch = (ms: number) => condition(matched, Math.min(ms, untilExpiry()));

  function showStatus(status: RequestStatus | null): void {
    if (status === null || status === state.status) return;
    state.status = status;
    upsertSearchAttributes([{ key: searchAttributes.requestStatus, value: status }]);
  }

  async function setStatus(status: RequestStatus, details: { errorMessage?: string | null } = {}): Promise<void> {
    await recordRequestStatus({ requestId: input.requestId, status, attempts: state.attempts, ...details });
    if (details.errorMessage !== undefined) state.errorMessage = details.errorMessage;
    showStatus(status);
  }

  /**
   * Follows a prompt a real operator took: at each callback (or poll) asks the operator's status
   * query, until it says paid (the payment is then reported and credited, and its signal ends the
   * wait) or failed, or the request is paid or expires meanwhile.
   */
  async function followPrompt(attempt: number): Promise<PromptCheck> {
    const pollMs = (input.networkPollSeconds ?? DEFAULT_NETWORK_POLL_SECONDS) * 1000;
    for (;;) {
      await condition(() => matched() || hinted, Math.min(pollMs, untilExpiry()));
      hinted = false;
      if (matched() || untilExpiry() <= 0) return { status: 'pending' };
      try {
        const check = await checkPrompt({ requestId: input.requestId, attempt });
        if (check.status !== 'pending') return check;
      } catch (error) {
        log.warn('the operator\'s status query failed; asking again at the next poll', { requestId: input.requestId, attempt, error: String(error) });
      }
    }
  }

  /** A refused or failed prompt: `failed` when no retry is left, else a wait before the next prompt. */
  async function afterRefusal(error: string): Promise<'failed' | 'retry'> {
    log.info('prompt refused', { requestId: input.requestId, attempt: state.attempts, error });
    if (retriesLeft === 0) {
      await setStatus('failed', { errorMessage: error });
      return 'failed';
    }
    retriesLeft -= 1;
    state.errorMessage = error;
    await waitForMatch((input.retryIntervalSeconds ?? input.failedPromptRetrySeconds) * 1000);
    return 'retry';
  }

  const startAt = input.startAt === null ? null : Date.parse(input.startAt);
  if (startAt !== null && startAt > Date.now()) await waitForMatch(startAt - Date.now());

  let retriesLeft = input.maxAttempts;
  if (!matched() && untilExpiry() > 0 && !input.sendInstructions) {
    // Nobody is prompted: the request waits for the subscriber to pay by themselves.
    await setStatus('pending');
    await waitForMatch(untilExpiry());
  }

  /** Prompts the subscriber (again after each retry interval) until paid, expired, or failed with no retry left. */
  async function promptUntilPaid(): Promise<'failed' | 'ended'> {
    while (input.sendInstructions && !matched() && untilExpiry() > 0) {
      state.attempts += 1;
      const prompt = await promptSubscriber({
        requestId: input.requestId,
        attempt: state.attempts,
        sendSms: input.sendSms,
        pullsFunds: input.networkPullsFunds,
      });
      if (matched()) break;
      showStatus(prompt.status);
      if (!prompt.accepted) {
        if ((await afterRefusal(prompt.error)) === 'failed') return 'failed';
        continue;
      }
      if (prompt.confirm) {
        // A real operator took it: its outcome comes from its status query, not from waiting alone.
        const check = await followPrompt(state.attempts);
        if (check.status === 'failed') {
          if ((await afterRefusal(check.error)) === 'failed') return 'failed';
          continue;
        }
        await waitForMatch(untilExpiry());
        continue;
      }
      // Prompted: wait for the payment; re-prompt after the retry interval while retries remain.
      if (input.retryIntervalSeconds !== null && retriesLeft > 0) {
        if (await waitForMatch(input.retryIntervalSeconds * 1000)) break;
        retriesLeft -= 1;
        continue;
      }
      await waitForMatch(untilExpiry());
    }
    return 'ended';
  }

  if ((await promptUntilPaid()) === 'failed') return { ...state };

  const collection = match as CollectionMatch | null;
  if (collection !== null) {
    // The credit's transaction already recorded `successful` (row and event).
    state.collectionId = collection.collectionId;
    state.errorMessage = null;
    showStatus('successful');
    await sendSuccessMessage({ requestId: input.requestId });
    return { ...state };
  }
  await setStatus('expired');
  return { ...state };
}
