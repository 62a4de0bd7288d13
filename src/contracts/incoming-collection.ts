/**
 * The incoming collection workflow's contract (`collection-<network>-<remote id>`): its id, input, query and result.
 * Safe to import from workflow code and from clients alike: no I/O, no Node built-ins.
 */
import { defineQuery } from '@temporalio/workflow';
import type { CollectionId, CollectionRequestId, OrganizationId } from '../domain/ids';

/** `collection-<network>-<remote transaction id>`, one per payment a network reports. */
export const incomingCollectionWorkflowId = (network: string, remoteTransactionId: string): string =>
  `collection-${network
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')}-${remoteTransactionId}`;

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
  reportedFor?: OrganizationId | null;
  /**
   * Reported by an operator's connector (a paybill payment, an STK payment its push's request no longer waits for):
   * it goes only to the request its prompt reference names, else stays unassigned; never matched by number and
   * amount, which would give it to an organization the operator's identifiers do not name (absent: the documented
   * number-and-amount matching of `POST /network/payments`, the sandbox and networks without a connector).
   */
  namedOnly?: boolean;
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

type IncomingCollectionOutcome = 'accepted' | 'rejected' | 'unmatched' | 'already-processed' | 'failed' | 'unconfirmed';

export type IncomingCollectionResult = {
  collectionId: CollectionId | null;
  outcome: IncomingCollectionOutcome;
  requestId: CollectionRequestId | null;
  decidedBy: string | null;
};

export type VerificationDecision = {
  decision: 'accept' | 'reject';
  reason: string | null;
  decidedBy: 'merchant' | 'default' | 'not-asked';
};
