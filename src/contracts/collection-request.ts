/**
 * The collection request workflow's contract (`collection-request-<id>`): its id, input, signal and query.
 * Safe to import from workflow code and from clients alike: no I/O, no Node built-ins.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { CollectionId, CollectionRequestId, OrganizationId } from '../domain/ids';

export const collectionRequestWorkflowId = (requestId: CollectionRequestId): string =>
  `collection-request-${requestId}`;

/** Everything the request's workflow needs; durations are data so tests can use seconds. */
export type CollectionRequestInput = {
  requestId: CollectionRequestId;
  organizationId: OrganizationId;
  /** ISO instants. */
  startAt: string | null;
  expiresAt: string;
  retryIntervalSeconds: number | null;
  /** Wait before re-prompting after a failed prompt when no retry interval was set. */
  failedPromptRetrySeconds: number;
  /** Retries after the first prompt (`max_attempts`, docs/api.md#collection-requests; 0 = none). */
  maxAttempts: number;
  sendInstructions: boolean;
  sendSms: boolean;
  networkPullsFunds: boolean;
  /** How often a prompt a real operator took is asked about when no callback comes (absent in older inputs). */
  networkPollSeconds?: number;
  /**
   * How long the merchant's verification URL has to answer about the payment this workflow receives
   * (collectionRequest).
   */
  verificationTimeoutSeconds?: number;
};

export type CollectionMatch = { collectionId: CollectionId; remoteTransactionId: string | null };

export type CollectionRequestState = {
  status: string;
  attempts: number;
  collectionId: CollectionId | null;
  errorMessage: string | null;
  /**
   * The payment the workflow received itself (collectionRequest), as it was decided: accepted
   * (credited), rejected (by the merchant's verification URL or its default), failed, or not this
   * request's; who decided; absent until one arrived.
   */
  payment?: {
    collectionId: CollectionId;
    requestId: CollectionRequestId | null;
    outcome: 'accepted' | 'rejected' | 'unmatched' | 'already-processed' | 'failed';
    decidedBy: string | null;
  };
};

/** Sent by the incoming-collection workflow when a collection matches the request. */
export const collectionMatchedSignal = defineSignal<[CollectionMatch]>('collectionMatched');

export const collectionRequestStateQuery = defineQuery<CollectionRequestState>('status');
