/**
 * The collection request actor (`collection-request-<id>`, type `collectionRequest`): one
 * workflow from the request's creation to its final status, which also receives the payment its
 * prompt brings. It waits for `start_date`, prompts the subscriber through the network (retrying
 * every `retry_interval_minutes` up to `max_attempts`), learns of the payment from the network's
 * answer or the operator's status query (a callback only wakes it), then stores, matches and
 * credits that payment itself in one local activity, asking the merchant's verification URL first
 * when the organization has one. `successful` is recorded by the credit's transaction; `failed`
 * when prompts fail with no retry left; `expired` at the expiry date. A prompt the operator took and had not answered
 * when the request ended is still followed to its answer, and its payment left unassigned for the merchant to claim
 * (never lost). A payment the network reports
 * on its own (and a claim) reaches it as the `collectionMatched` signal from the workflow that
 * received it. Search attributes are set at the start; the request's status is written to them
 * once, when it is final (docs/architecture.md#what-gets-a-workflow: visibility only where operators look).
 */
import {
  condition,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { createCollectionActivities, ReceiptOutcome } from '../activities/collections';
import type { createCollectionRequestActivities, PromptCheck } from '../activities/collection-requests';
import type { RequestStatus } from '../domain/collection-requests';
import {
  collectionMatchedSignal,
  collectionRequestStateQuery,
  type CollectionMatch,
  type CollectionRequestInput,
  type CollectionRequestState,
} from '../contracts/collection-request';
import { networkHintSignal } from '../contracts/common';
import type { IncomingPaymentInput } from '../contracts/incoming-collection';
import { RETRY_POLICIES } from '../contracts/retry-policies';
import { searchAttributes } from '../contracts/search-attributes';
import { askVerification } from './verification';

type Activities = ReturnType<typeof createCollectionRequestActivities> & ReturnType<typeof createCollectionActivities>;

const { recordRequestStatus, receiveCollection, acceptVerifiedCollection } = proxyLocalActivities<Activities>({
  // One PostgreSQL transaction each (a status change; a payment stored, matched and credited), well
  // under a second; idempotent, and retried through an outage of ours for as long as it lasts.
  startToCloseTimeout: '10 seconds',
  retry: RETRY_POLICIES.untilDone,
});

const { promptSubscriber } = proxyActivities<Activities>({
  // The prompt may take a few operator timeouts (its status asked, then sent again under the same reference); it
  // heartbeats while it waits, so an activity lost with a dead worker is retried elsewhere within seconds.
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: RETRY_POLICIES.promptCall,
});

const { sendSuccessMessage, rejectCollection } = proxyActivities<Activities>({
  // Calls that leave the process (the network). Short: an activity lost with a dead worker is
  // retried elsewhere after this long.
  startToCloseTimeout: '15 seconds',
  retry: RETRY_POLICIES.promptCall,
});

const { checkPrompt } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: RETRY_POLICIES.statusQuery,
});

/** How often a prompt the operator took is asked about when no callback comes and the input names no interval. */
const DEFAULT_NETWORK_POLL_SECONDS = 20;
/**
 * A prompt still unanswered when its request ended is followed this long at most, its status asked at growing
 * intervals up to FOLLOW_AFTER_END_MAX_POLL_MS (and at each callback); what is left after it is reconciliation's.
 */
const FOLLOW_AFTER_END_MS = 24 * 3600 * 1000;
const FOLLOW_AFTER_END_MAX_POLL_MS = 10 * 60 * 1000;
const FOLLOW_AFTER_END_ROUNDS = 200;
/** docs/api.md#collections: the merchant's verification URL has 60 seconds, unless the input says otherwise. */
const DEFAULT_VERIFICATION_TIMEOUT_SECONDS = 60;

export async function collectionRequest(input: CollectionRequestInput): Promise<CollectionRequestState> {
  const state: CollectionRequestState = { status: 'new', attempts: 0, collectionId: null, errorMessage: null };
  let match: CollectionMatch | null = null;
  let hinted = false;
  /** The attempt whose prompt the operator took and had not answered for good when the request stopped following it. */
  let unsettledAttempt: number | null = null;
  setHandler(collectionRequestStateQuery, () => ({ ...state }));
  setHandler(collectionMatchedSignal, (collection) => {
    match ??= collection;
  });
  setHandler(networkHintSignal, () => {
    hinted = true;
  });

  const pollMs = (input.networkPollSeconds ?? DEFAULT_NETWORK_POLL_SECONDS) * 1000;
  const expiresAt = Date.parse(input.expiresAt);
  const untilExpiry = () => Math.max(0, expiresAt - Date.now());
  const matched = () => match !== null;
  /** Waits up to `ms` (never past expiry) for a paying collection; true when one arrived. */
  const waitForMatch = (ms: number) => condition(matched, Math.min(ms, untilExpiry()));
  let retriesLeft = input.maxAttempts;

  async function setStatus(status: RequestStatus, details: { errorMessage?: string | null } = {}): Promise<void> {
    await recordRequestStatus({ requestId: input.requestId, status, attempts: state.attempts, ...details });
    if (details.errorMessage !== undefined) state.errorMessage = details.errorMessage;
    state.status = status;
  }

  /**
   * Receives the payment the prompt brought, in this workflow: stored, matched (to this request,
   * by its prompt reference) and credited in one transaction, after the merchant's verification
   * URL accepted it (or its default did) when the organization has one. A rejected payment goes
   * back to the network and the request waits on, as it does for a payment that never came.
   */
  async function receive(payment: IncomingPaymentInput): Promise<void> {
    let receipt: ReceiptOutcome = await receiveCollection(payment, { receivedBy: input.requestId });
    let decidedBy: string | null = receipt.outcome === 'accepted' ? 'not-asked' : null;
    if (receipt.outcome === 'verify') {
      const verified = receipt;
      const decision = await askVerification(
        verified,
        input.verificationTimeoutSeconds ?? DEFAULT_VERIFICATION_TIMEOUT_SECONDS,
      );
      decidedBy = decision.decidedBy;
      if (decision.decision === 'reject') {
        await rejectCollection({
          collectionId: verified.collectionId,
          organizationId: verified.organizationId,
          reason: decision.reason,
        });
        state.payment = {
          collectionId: verified.collectionId,
          requestId: verified.requestId,
          outcome: 'rejected',
          decidedBy,
        };
        return;
      }
      receipt = await acceptVerifiedCollection({
        collectionId: verified.collectionId,
        organizationId: verified.organizationId,
        receivedBy: input.requestId,
      });
    }
    if (receipt.outcome === 'verify') throw new Error('a verified collection cannot need verification again');
    state.payment = {
      collectionId: receipt.collectionId,
      requestId: receipt.requestId,
      outcome: receipt.outcome,
      decidedBy,
    };
    if (receipt.outcome === 'accepted' && receipt.requestId === input.requestId) {
      match ??= { collectionId: receipt.collectionId, remoteTransactionId: payment.remoteTransactionId };
    } else {
      log.warn('a prompted payment did not complete its request', {
        requestId: input.requestId,
        collectionId: receipt.collectionId,
        outcome: receipt.outcome,
      });
    }
  }

  /**
   * Follows a prompt the operator took: at each callback, at the time the network named, or at
   * each poll asks the operator's status query, until it says paid (the payment is received here)
   * or failed, or the request is paid or expires meanwhile.
   */
  async function followPrompt(attempt: number, checkAfterSeconds: number | undefined): Promise<PromptCheck> {
    let waitMs = checkAfterSeconds === undefined ? pollMs : checkAfterSeconds * 1000;
    for (;;) {
      await condition(() => matched() || hinted, Math.min(waitMs, untilExpiry()));
      hinted = false;
      waitMs = pollMs;
      if (matched() || untilExpiry() <= 0) {
        unsettledAttempt = attempt;
        return { status: 'pending' };
      }
      try {
        const check = await checkPrompt({ requestId: input.requestId, attempt });
        if (check.status !== 'pending') return check;
      } catch (error) {
        log.warn("the operator's status query failed; asking again at the next poll", {
          requestId: input.requestId,
          attempt,
          error: String(error),
        });
      }
    }
  }

  /** A refused or failed prompt: `failed` when no retry is left, else a wait before the next prompt. */
  async function afterRefusal(error: string): Promise<'failed' | 'retry'> {
    log.info('prompt refused', { requestId: input.requestId, attempt: state.attempts, error });
    state.errorMessage = error;
    if (retriesLeft === 0) return 'failed';
    retriesLeft -= 1;
    await waitForMatch((input.retryIntervalSeconds ?? input.failedPromptRetrySeconds) * 1000);
    return 'retry';
  }

  /** One prompt and what became of it: paid (received here), refused, or waited for until the next prompt or expiry. */
  async function promptOnce(): Promise<'failed' | 'next' | 'stop'> {
    state.attempts += 1;
    const prompt = await promptSubscriber({
      requestId: input.requestId,
      attempt: state.attempts,
      sendSms: input.sendSms,
      pullsFunds: input.networkPullsFunds,
    });
    if (prompt.status !== null) state.status = prompt.status;
    if (!prompt.accepted) return (await afterRefusal(prompt.error)) === 'failed' ? 'failed' : 'next';
    if (prompt.paid) {
      await receive(prompt.paid);
    } else if (prompt.confirm) {
      const check = await followPrompt(state.attempts, prompt.checkAfterSeconds);
      if (check.status === 'failed') return (await afterRefusal(check.error)) === 'failed' ? 'failed' : 'next';
      if (check.status === 'paid') await receive(check.payment);
    }
    if (matched()) return 'stop';
    // Prompted: wait for the payment; re-prompt after the retry interval while retries remain.
    if (input.retryIntervalSeconds !== null && retriesLeft > 0) {
      if (await waitForMatch(input.retryIntervalSeconds * 1000)) return 'stop';
      retriesLeft -= 1;
      return 'next';
    }
    await waitForMatch(untilExpiry());
    return 'stop';
  }

  /**
   * A prompt the operator took and had not answered for good when the request ended (it expired meanwhile, or another
   * payment paid it): followed on to the operator's final answer, so that a subscriber who paid it is never left
   * credited nowhere and recorded nowhere. Its payment is received as that prompt's own, which goes to this request
   * only while it is open (it no longer is): it is left unassigned, for the merchant to claim
   * (docs/api.md#collections), and never to anyone its identifiers do not name.
   */
  async function followAfterEnd(attempt: number): Promise<void> {
    let waitMs = pollMs;
    const until = Date.now() + FOLLOW_AFTER_END_MS;
    for (let round = 0; round < FOLLOW_AFTER_END_ROUNDS && Date.now() < until; round += 1) {
      try {
        const check = await checkPrompt({ requestId: input.requestId, attempt });
        // Failed, or its payment already held by the service under its receipt (a report of it stored it).
        if (check.status === 'failed' || (check.status === 'pending' && check.recorded)) return;
        if (check.status === 'paid') return await receive(check.payment);
      } catch (error) {
        log.warn("the operator's status query failed; asking again later", {
          requestId: input.requestId,
          attempt,
          error: String(error),
        });
      }
      await condition(() => hinted, waitMs);
      hinted = false;
      waitMs = Math.min(waitMs * 2, FOLLOW_AFTER_END_MAX_POLL_MS);
    }
    log.warn('a prompt still unanswered by its operator is left to reconciliation', {
      requestId: input.requestId,
      attempt,
    });
  }

  /**
   * The final status (`successful` was recorded by the credit), written to the search attributes once; then the
   * prompt the operator had not answered, if any, followed to its end.
   */
  async function finish(status: RequestStatus): Promise<CollectionRequestState> {
    if (status === 'failed') await setStatus(status, { errorMessage: state.errorMessage });
    if (status === 'expired') await setStatus(status);
    state.status = status;
    upsertSearchAttributes([{ key: searchAttributes.requestStatus, value: status }]);
    if (status === 'successful') await sendSuccessMessage({ requestId: input.requestId });
    const ended = { ...state };
    if (unsettledAttempt !== null && patched('request-follows-its-unanswered-prompt'))
      await followAfterEnd(unsettledAttempt);
    return ended;
  }

  const startAt = input.startAt === null ? null : Date.parse(input.startAt);
  if (startAt !== null && startAt > Date.now()) await waitForMatch(startAt - Date.now());
  if (!matched() && untilExpiry() > 0 && !input.sendInstructions) {
    // Nobody is prompted: the request waits for the subscriber to pay by themselves.
    await setStatus('pending');
    await waitForMatch(untilExpiry());
  }
  while (input.sendInstructions && !matched() && untilExpiry() > 0) {
    const next = await promptOnce();
    if (next === 'failed') return await finish('failed');
    if (next === 'stop') break;
  }
  const collection = match as CollectionMatch | null;
  if (collection === null) return await finish('expired');
  // The credit's transaction already recorded `successful` (row and event).
  state.collectionId = collection.collectionId;
  state.errorMessage = null;
  return await finish('successful');
}
