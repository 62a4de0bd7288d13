import type { CollectionRequestResource } from './collection-requests';
import type { ContactResource } from './contacts';
import { formatTimestamp } from './time';

export const COLLECTION_STATUSES = ['successful', 'failed', 'pending', 'cashed_out'] as const;
export type CollectionStatus = (typeof COLLECTION_STATUSES)[number];

/**
 * The reference a prompt carries through the network and a payment made through it carries back
 * (as a push-payment callback does): `req-<request id>-<attempt>`.
 */
export const promptReference = (requestId: number, attempt: number): string => `req-${requestId}-${attempt}`;

/** The request a prompt reference names, or null for anything else. */
export function requestOfPromptReference(reference: string | null | undefined): number | null {
  const match = /^req-(\d{1,15})-\d{1,6}$/.exec(reference ?? '');
  return match ? Number(match[1]) : null;
}

export type CollectionRow = {
  id: number;
  organizationId: number | null;
  network: string;
  remoteTransactionId: string;
  amount: string;
  currency: string;
  phoneNumber: string;
  paymentDate: Date;
  reference: string;
  promptReference: string | null;
  status: CollectionStatus;
  rejectionReason: string | null;
  collectionRequestId: number | null;
  contactId: number | null;
  author: number | null;
  updatedBy: number | null;
  created: Date;
  modified: Date;
};

export type AccountRow = {
  id: number;
  organizationId: number;
  currency: string;
  currencyId: number;
  label: string;
  description: string;
  status: string;
  lowBalanceThreshold: string | null;
  lowBalanceNotificationLastSendTime: Date | null;
  author: number | null;
  updatedBy: number | null;
  created: Date;
  modified: Date;
};

export type TransactionRow = {
  id: number;
  accountId: number;
  amount: string;
  currency: string;
  type: string;
  description: string;
  created: Date;
};

/** `created` of a transaction carries fractional seconds (api.md 2.2). */
const withFraction = (date: Date): string => date.toISOString();

/** The transaction object of api.md 2.2 with its account. */
export function serializeTransaction(transaction: TransactionRow, account: AccountRow) {
  return {
    id: transaction.id,
    amount: transaction.amount,
    currency: transaction.currency,
    type: transaction.type,
    description: transaction.description,
    created: withFraction(transaction.created),
    fee_transaction: null,
    account: {
      id: account.id,
      author: account.author,
      updated_by: account.updatedBy === null ? null : String(account.updatedBy),
      organization: account.organizationId,
      status: account.status,
      label: account.label,
      description: account.description,
      currency: account.currencyId,
      low_balance_threshold: account.lowBalanceThreshold,
      low_balance_notification_last_send_time: account.lowBalanceNotificationLastSendTime
        ? formatTimestamp(account.lowBalanceNotificationLastSendTime)
        : null,
      created: formatTimestamp(account.created),
      modified: formatTimestamp(account.modified),
    },
  };
}
export type TransactionResource = ReturnType<typeof serializeTransaction>;

/** The collection object of api.md 2.2 in the current version (v4); versions.ts shapes older ones. */
export function serializeCollection(
  collection: CollectionRow,
  related: { contact: ContactResource | null; collectionRequest: CollectionRequestResource | null; transaction: TransactionResource | null },
) {
  return {
    id: collection.id,
    remote_transaction_id: collection.remoteTransactionId,
    organization: collection.organizationId as number,
    amount: collection.amount,
    currency: collection.currency,
    phonenumber: collection.phoneNumber,
    payment_date: formatTimestamp(collection.paymentDate),
    reference: collection.reference,
    status: collection.status,
    created: formatTimestamp(collection.created),
    author: collection.author,
    modified: formatTimestamp(collection.modified),
    updated_by: collection.updatedBy === null ? null : String(collection.updatedBy),
    collection_request: related.collectionRequest,
    transaction: related.transaction,
    contact: related.contact,
  };
}
export type CollectionResource = ReturnType<typeof serializeCollection>;

/** `collection-<network>-<remote transaction id>`: one workflow per payment the network reports. */
export function networkSlug(network: string): string {
  return network.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
}

export type VerificationAnswer = { decision: 'accept' } | { decision: 'reject'; reason: string | null } | { decision: 'none'; detail: string };

/**
 * Reads the merchant's answer (api.md 4.2): `ACCEPT <id>` or `REJECT <id> <optional reason>`, for
 * this collection's remote transaction id; anything else is no answer.
 */
export function parseVerificationAnswer(body: string, remoteTransactionId: string): VerificationAnswer {
  const match = /^\s*(ACCEPT|REJECT)\s+(\S+)(?:\s+([\s\S]*?))?\s*$/i.exec(body);
  if (!match) return { decision: 'none', detail: 'unreadable answer' };
  if (match[2] !== remoteTransactionId) return { decision: 'none', detail: 'answer names another transaction' };
  if (match[1]!.toUpperCase() === 'ACCEPT') return { decision: 'accept' };
  const reason = match[3]?.trim();
  return { decision: 'reject', reason: reason ? reason.slice(0, 500) : null };
}
