/**
 * A collection request's workflow: its input for a saved request, and the status changes it records, each with its
 * event in one transaction.
 */
import type { Queryable, Sql } from '../../db';
import {
  serializeCollectionRequest,
  type CollectionRequestRow,
  type RequestStatus,
  FINAL_STATUSES,
} from '../../domain/collection-requests';
import type { CollectionId, CollectionRequestId } from '../../domain/ids';
import type { CollectionRequestInput } from '../../contracts/collection-request';
import { recordEvent, type RecordedEvent } from '../webhooks/events';
import { REQUEST_COLUMNS, withContacts } from './request-reads';

/** Where a status stands within one prompt: texted, then pushed (`pending`: nobody to push); 0 for any other. */
const PROMPT_STEPS: Partial<Record<RequestStatus, number>> = {
  instructions_sent: 1,
  pending: 1,
  processing_started: 2,
};
const PROMPT_STEP_OF_ROW = `(case status ${Object.entries(PROMPT_STEPS)
  .map(([status, step]) => `when '${status}' then ${step}`)
  .join(' ')} else 0 end)`;

export type StatusChange = {
  requestId: CollectionRequestId;
  status: RequestStatus;
  attempts?: number;
  /**
   * A step of prompt number `promptAttempt` (`instructions_sent`, then `processing_started`, or
   * `pending`): recorded only when the request has not reached that step of that prompt, or a later
   * one, already. A prompt retried after a lost worker so repeats none of its status changes.
   */
  promptAttempt?: number;
  errorMessage?: string | null;
  collectionId?: CollectionId | null;
  remoteTransactionId?: string | null;
};

/**
 * Moves a request to a status and writes its `collectionrequest.status.changed` event in one
 * transaction. Idempotent: a request already in that status, or already final, is left as it is
 * and no event is written (returns null), so a retried activity never doubles an event.
 */
export async function changeRequestStatus(sql: Sql, change: StatusChange): Promise<RecordedEvent | null> {
  return (await sql.begin((tx) => changeRequestStatusIn(tx, change))) as RecordedEvent | null;
}

/** `changeRequestStatus` in the caller's transaction (the credit of a collection records `successful` with it). */
export async function changeRequestStatusIn(tx: Queryable, change: StatusChange): Promise<RecordedEvent | null> {
  const remoteTransactionId =
    change.remoteTransactionId === undefined ? tx`remote_transaction_id` : change.remoteTransactionId;
  // A step of a prompt is recorded only while the request has reached neither it nor a later one.
  const stepNotReached =
    change.promptAttempt === undefined
      ? tx``
      : tx`
        and (attempts < ${change.promptAttempt}
          or (attempts = ${change.promptAttempt}
            and ${tx.unsafe(PROMPT_STEP_OF_ROW)} < ${PROMPT_STEPS[change.status] ?? 0}))`;
  // A status change means the request's workflow runs: the outbox sweep need not start it.
  const [updated] = await tx<CollectionRequestRow[]>`
    update collection_requests set
      status = ${change.status},
      attempts = ${change.attempts === undefined ? tx`attempts` : tx`greatest(attempts, ${change.attempts})`},
      error_message = ${change.errorMessage === undefined ? tx`error_message` : change.errorMessage},
      collection_id = ${change.collectionId === undefined ? tx`collection_id` : change.collectionId},
      remote_transaction_id = ${remoteTransactionId},
      workflow_started_at = coalesce(workflow_started_at, now()),
      modified = now()
    where id = ${change.requestId} and status <> ${change.status}
      -- A final status is final; the one way on is a successful request whose collection was reversed.
      and (status not in ${tx(FINAL_STATUSES as RequestStatus[])}
        or (status = 'successful' and ${change.status} = 'reversed'))
      ${stepNotReached}
    returning ${tx.unsafe(REQUEST_COLUMNS)}`;
  if (!updated) {
    // Nothing changed; the attempts still count (a refused prompt records no status).
    if (change.attempts !== undefined) await countPromptAttempt(tx, change.requestId, change.attempts);
    return null;
  }
  const [withContact] = await withContacts(tx, [updated]);
  return await recordEvent(tx, {
    organizationId: updated.organizationId,
    type: 'collectionrequest.status.changed',
    data: serializeCollectionRequest(withContact!.request, withContact!.contact),
    author: null,
  });
}

/** Counts a prompt attempt that changed no status (a refused or failed prompt): attempts only grow. */
export async function countPromptAttempt(
  sql: Queryable,
  requestId: CollectionRequestId,
  attempt: number,
): Promise<void> {
  await sql`update collection_requests set attempts = greatest(attempts, ${attempt}) where id = ${requestId}`;
}

type WorkflowSettings = {
  failedPromptRetrySeconds: number;
  networkPullsFunds: boolean;
  networkPollSeconds?: number;
  verificationTimeoutSeconds?: number;
};

/** The workflow input for a saved request: everything comes from the row and configuration. */
export function workflowInputFor(request: CollectionRequestRow, settings: WorkflowSettings): CollectionRequestInput {
  return {
    requestId: request.id,
    organizationId: request.organizationId,
    startAt: request.startDate?.toISOString() ?? null,
    expiresAt: request.expiryDate.toISOString(),
    retryIntervalSeconds: request.retryIntervalSeconds,
    failedPromptRetrySeconds: settings.failedPromptRetrySeconds,
    maxAttempts: request.maxAttempts,
    sendInstructions: request.sendInstructions,
    sendSms: request.instructions?.trim().toLowerCase() !== 'skip',
    networkPullsFunds: settings.networkPullsFunds,
    ...(settings.networkPollSeconds !== undefined ? { networkPollSeconds: settings.networkPollSeconds } : {}),
    ...(settings.verificationTimeoutSeconds !== undefined
      ? { verificationTimeoutSeconds: settings.verificationTimeoutSeconds }
      : {}),
  };
}
