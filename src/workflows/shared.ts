/**
 * Names shared by workflows and the code that starts them. Safe to import from workflow code and
 * from clients alike: no I/O, no Node built-ins.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { RetrySchedule } from '../domain/webhook-schedule';

/** Custom search attributes, registered with the server at start (scripts/infra.mjs, compose). */
export const searchAttributes = {
  organizationId: defineSearchAttributeKey('OrganizationId', SearchAttributeType.KEYWORD),
  eventType: defineSearchAttributeKey('EventType', SearchAttributeType.KEYWORD),
  requestStatus: defineSearchAttributeKey('RequestStatus', SearchAttributeType.KEYWORD),
  phoneNumber: defineSearchAttributeKey('PhoneNumber', SearchAttributeType.KEYWORD),
  currency: defineSearchAttributeKey('Currency', SearchAttributeType.KEYWORD),
  eventId: defineSearchAttributeKey('EventId', SearchAttributeType.KEYWORD),
  webhookId: defineSearchAttributeKey('WebhookId', SearchAttributeType.KEYWORD),
} as const;

/**
 * The lean durable core (DESIGN.md, Workflows): local activities for PostgreSQL steps, no
 * workflow per event. Executions started before it have no marker for this patch and replay their
 * first shape (workflows/legacy, test/histories).
 */
export const LEAN_CORE_PATCH = 'lean-core';

/** The failure type a workflow sees when an activity hit a database error that no retry can fix (activities/failures.ts). */
export const PERMANENT_DATABASE_ERROR = 'PermanentDatabaseError';

export const eventDispatchWorkflowId = (eventId: number): string => `event-${eventId}`;
export const outboxSweepScheduleId = (taskQueue: string): string => `outbox-sweep-${taskQueue}`;

export type EventDispatchInput = { eventId: number; organizationId: number; type: string };
export type EventDispatchStatus = 'dispatching' | 'dispatched';
export type OutboxSweepInput = { graceSeconds: number; batchSize: number };

export const collectionRequestWorkflowId = (requestId: number): string => `collection-request-${requestId}`;
export const subscriptionWorkflowId = (requestId: number): string => `subscription-${requestId}`;
export const sandboxPaymentWorkflowId = (requestId: number): string => `sandbox-payment-${requestId}`;

/** Everything the request's workflow needs; durations are data so tests can use seconds. */
export type CollectionRequestInput = {
  requestId: number;
  organizationId: number;
  /** ISO instants. */
  startAt: string | null;
  expiresAt: string;
  retryIntervalSeconds: number | null;
  /** Wait before re-prompting after a failed prompt when no retry interval was set. */
  failedPromptRetrySeconds: number;
  /** Retries after the first prompt (api.md `max_attempts`; 0 = none). */
  maxAttempts: number;
  sendInstructions: boolean;
  sendSms: boolean;
  networkPullsFunds: boolean;
  /** How often a prompt a real operator took is asked about when no callback comes (absent in older inputs). */
  networkPollSeconds?: number;
};

/**
 * An operator's callback about an operation of this workflow (a prompt, a payout, a reported
 * payment): a hint that wakes it to ask the operator's status query, never believed alone.
 * `reference` is our reference of the operation (a prompt's reference, a payout's).
 */
export type NetworkHint = { reference: string };
export const networkHintSignal = defineSignal<[NetworkHint]>('networkHint');

export type CollectionMatch = { collectionId: number; remoteTransactionId: string | null };
export type CollectionRequestState = {
  status: string;
  attempts: number;
  collectionId: number | null;
  errorMessage: string | null;
};

/** Sent by the incoming-collection workflow when a collection matches the request. */
export const collectionMatchedSignal = defineSignal<[CollectionMatch]>('collectionMatched');
export const collectionRequestStateQuery = defineQuery<CollectionRequestState>('status');

export type SubscriptionInput = {
  requestId: number;
  organizationId: number;
  /** ISO instants and the rule of domain/subscriptions.ts. */
  startDate: string;
  endDate: string;
  frequency: string;
  weekdays?: number[];
  months?: number[];
};
export type SubscriptionState = { created: number; lastOccurrence: string | null; nextOccurrence: string | null };
export const subscriptionStateQuery = defineQuery<SubscriptionState>('status');

export type SandboxPaymentInput = {
  requestId: number;
  phoneNumber: string;
  amount: string;
  currency: string;
  reference: string;
  /** The prompt this payment answers (absent in payments started before prompts carried one). */
  promptReference?: string;
  network: string;
  delaySeconds: number;
};

export const webhookDeliveryWorkflowId = (eventId: number, webhookId: number): string => `webhook-delivery-${eventId}-${webhookId}`;
/** A redelivery the merchant asked for: a fresh workflow, named after its delivery row. */
export const webhookRedeliveryWorkflowId = (eventId: number, webhookId: number, deliveryId: number): string =>
  `${webhookDeliveryWorkflowId(eventId, webhookId)}-redelivery-${deliveryId}`;
export const eventRetentionScheduleId = (taskQueue: string): string => `event-retention-${taskQueue}`;

export type WebhookDeliveryInput = {
  eventId: number;
  webhookId: number;
  organizationId: number;
  eventType: string;
  /** Set for a redelivery (its row exists before the workflow); null for the first delivery. */
  deliveryId: number | null;
  schedule: RetrySchedule;
};
export type WebhookDeliveryOutcome = 'delivered' | 'failed' | 'gone' | 'cancelled';
export type WebhookDeliveryStatus = {
  state: 'sending' | 'waiting' | WebhookDeliveryOutcome;
  deliveryId: number | null;
  attempts: number;
  lastStatusCode: number | null;
  nextAttemptAt: string | null;
};
export type WebhookDeliveryResult = { deliveryId: number | null; outcome: WebhookDeliveryOutcome; attempts: number };
export type EventRetentionInput = { retentionDays: number; batchSize: number };

/** `collection-<network>-<remote transaction id>`, one per payment a network reports. */
export const incomingCollectionWorkflowId = (network: string, remoteTransactionId: string): string =>
  `collection-${network.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')}-${remoteTransactionId}`;

export type IncomingPaymentInput = {
  network: string;
  remoteTransactionId: string;
  phoneNumber: string;
  amount: string;
  currency: string;
  reference: string;
  paymentDate: string;
  /** The reference of the prompt the payment answered, when the network reports one (absent in older inputs). */
  promptReference?: string | null;
  /**
   * A payment simulated from an organization's console sandbox page: it may complete that
   * organization's requests only, and otherwise waits unassigned (absent for every network report).
   */
  reportedFor?: number | null;
};
export const incomingCollectionStatusQuery = defineQuery<string>('status');
/**
 * `confirm`: the payment was reported by a callback no prompt of ours names (a paybill payment): the
 * operator's status query must confirm it before it is stored, asked every `pollSeconds` (or when a
 * callback wakes the workflow), for at most `timeoutSeconds`.
 */
export type IncomingCollectionInput = {
  payment: IncomingPaymentInput;
  verificationTimeoutSeconds: number;
  confirm?: { pollSeconds: number; timeoutSeconds: number };
};
export type IncomingCollectionOutcome = 'accepted' | 'rejected' | 'unmatched' | 'already-processed' | 'failed' | 'unconfirmed';
export type IncomingCollectionResult = { collectionId: number | null; outcome: IncomingCollectionOutcome; requestId: number | null; decidedBy: string | null };
export type VerificationDecision = { decision: 'accept' | 'reject'; reason: string | null; decidedBy: 'merchant' | 'default' | 'not-asked' };

export const paymentWorkflowId = (paymentId: number): string => `payment-${paymentId}`;
export const reversalWorkflowId = (reversalId: number): string => `reversal-${reversalId}`;

/** Everything a payment's workflow needs; durations are data so tests can use seconds. */
export type PaymentInput = {
  paymentId: number;
  organizationId: number;
  /** ISO instant of `start_date`, or null to send at once. */
  startAt: string | null;
  statusPollSeconds: number;
  statusTimeoutSeconds: number;
};
export type ReversalInput = { reversalId: number; organizationId: number; statusPollSeconds: number; statusTimeoutSeconds: number };
export type MoneyOutState = { state: string; attempts: number; lastError: string | null };

/** Sent when a payment was cancelled, so a workflow waiting for its start date ends at once. */
export const paymentCancelledSignal = defineSignal('paymentCancelled');
export const moneyOutStateQuery = defineQuery<MoneyOutState>('status');
