import * as v from 'valibot';
import {
  COLLECTION_REQUEST_EXAMPLE,
  CollectionRequestSchema,
  type CollectionRequestResource,
} from './collection-requests';
import { CONTACT_EXAMPLE, ContactSchema, type ContactResource } from './contacts';
import {
  Amount,
  Author,
  CurrencyCode,
  Id,
  OwningOrganization,
  PhoneNumber,
  Timestamp,
  UpdatedBy,
  described,
} from './shapes';
import type { LedgerRow, WalletRow } from './money-out';
import { formatTimestamp } from '../formats/time';
import type { CollectionId, CollectionRequestId, ContactId, OrganizationId } from './ids';

export const COLLECTION_STATUSES = ['successful', 'failed', 'pending', 'cashed_out'] as const;
type CollectionStatus = (typeof COLLECTION_STATUSES)[number];

/**
 * Whether a value of the `claim` parameter asks for a claim (docs/api.md#collections): `True`, `true`,
 * `TRUE`, `1` or `yes`; any other value lists. The route, its capability check and its throttling
 * all decide with this one test, so none of them can take a request for a claim the others do not.
 */
const CLAIM_VALUES = new Set(['true', 'True', 'TRUE', '1', 'yes']);
export const asksClaim = (value: string | undefined): boolean => value !== undefined && CLAIM_VALUES.has(value.trim());

/**
 * The reference a prompt carries through the network and a payment made through it carries back
 * (as a push-payment callback does): `req-<request id>-<attempt>`.
 */
export const promptReference = (requestId: CollectionRequestId, attempt: number): string =>
  `req-${requestId}-${attempt}`;

/** The request a prompt reference names, or null for anything else. */
export function requestOfPromptReference(reference: string | null | undefined): number | null {
  const match = /^req-(\d{1,15})-\d{1,6}$/.exec(reference ?? '');
  return match ? Number(match[1]) : null;
}

export type CollectionRow = {
  id: CollectionId;
  organizationId: OrganizationId | null;
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
  collectionRequestId: CollectionRequestId | null;
  contactId: ContactId | null;
  author: number | null;
  updatedBy: number | null;
  created: Date;
  modified: Date;
};

/**
 * The wallet a collection's transaction credited, as the API shows it (docs/api.md#collections): a wallet without its
 * balance, with its currency's numeric id.
 */
export type AccountRow = Omit<WalletRow, 'balance'> & { currencyId: number };

/** A wallet transaction as a collection shows it (docs/api.md#collections). */
export type TransactionRow = Pick<
  LedgerRow,
  'id' | 'accountId' | 'amount' | 'currency' | 'type' | 'description' | 'created'
>;

/** `created` of a transaction carries fractional seconds (docs/api.md#api-behaviour-worth-knowing). */
const withFraction = (date: Date): string => date.toISOString();

const TRANSACTION_EXAMPLE = {
  id: 311,
  amount: '1500.0000',
  currency: 'UGX',
  type: 'mobile_collection',
  description: 'Collection MTN-8812 from +256772123456',
  created: '2025-05-01T13:47:02.512Z',
  fee_transaction: null,
  account: {
    id: 12,
    author: 5,
    updated_by: null,
    organization: 3,
    status: 'active',
    label: 'UGX wallet',
    description: '',
    currency: 2,
    low_balance_threshold: null,
    low_balance_notification_last_send_time: null,
    created: '2025-04-01T09:00:00Z',
    modified: '2025-05-01T13:47:02Z',
  },
};

/** The transaction object (docs/api.md#collections) with its account: types the serialiser and documents it. */
export const TransactionSchema = v.pipe(
  v.object({
    id: Id,
    amount: Amount,
    currency: CurrencyCode,
    type: described(v.string(), 'What moved the money, such as `mobile_collection`.'),
    description: v.string(),
    created: described(v.string(), 'UTC with fractional seconds, `YYYY-MM-DDTHH:MM:SS.sssZ`.'),
    fee_transaction: v.null(),
    account: described(
      v.object({
        id: Id,
        author: Author,
        updated_by: UpdatedBy,
        organization: OwningOrganization,
        status: described(v.string(), '`active` or `inactive`.'),
        label: v.string(),
        description: v.string(),
        currency: described(v.number(), 'Numeric currency id.'),
        low_balance_threshold: v.nullable(v.string()),
        low_balance_notification_last_send_time: v.nullable(Timestamp),
        created: Timestamp,
        modified: Timestamp,
      }),
      'The wallet the transaction moved money in or out of.',
    ),
  }),
  v.description('The transaction that added the collection to a wallet (from version 4).'),
  v.examples([TRANSACTION_EXAMPLE]),
);
type TransactionResource = v.InferOutput<typeof TransactionSchema>;

export function serializeTransaction(transaction: TransactionRow, account: AccountRow): TransactionResource {
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

/**
 * The collection object (docs/api.md#collections) in the current version (v4), typing the serialiser and documenting
 * it; versions.ts shapes older ones.
 */
export const CollectionSchema = v.pipe(
  v.object({
    id: Id,
    remote_transaction_id: described(v.string(), 'Transaction id from the mobile network operator.'),
    organization: OwningOrganization,
    amount: Amount,
    currency: CurrencyCode,
    phonenumber: described(PhoneNumber, 'Sender number.'),
    payment_date: described(Timestamp, 'When the subscriber paid.'),
    reference: described(v.string(), 'Description or reference sent with the payment.'),
    status: v.picklist(COLLECTION_STATUSES),
    created: Timestamp,
    author: Author,
    modified: Timestamp,
    updated_by: UpdatedBy,
    collection_request: described(
      v.nullable(CollectionRequestSchema),
      'The request the collection fulfilled, expanded (an id before version 3).',
    ),
    transaction: described(v.nullable(TransactionSchema), 'The transaction that credited the wallet (from version 4).'),
    contact: v.nullable(ContactSchema),
  }),
  v.description('A payment received from a subscriber.'),
  v.examples([
    {
      id: 77,
      remote_transaction_id: 'MTN-8812',
      organization: 3,
      amount: '1500.0000',
      currency: 'UGX',
      phonenumber: '+256772123456',
      payment_date: '2025-05-01T13:47:00Z',
      reference: 'Invoice 1042',
      status: 'successful' as const,
      created: '2025-05-01T13:47:01Z',
      author: null,
      modified: '2025-05-01T13:47:02Z',
      updated_by: null,
      collection_request: { ...COLLECTION_REQUEST_EXAMPLE, collection: 77, status: 'successful' as const },
      transaction: TRANSACTION_EXAMPLE,
      contact: CONTACT_EXAMPLE,
    },
  ]),
);
export type CollectionResource = v.InferOutput<typeof CollectionSchema>;

export function serializeCollection(
  collection: CollectionRow,
  related: {
    contact: ContactResource | null;
    collectionRequest: CollectionRequestResource | null;
    transaction: TransactionResource | null;
  },
): CollectionResource {
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

type VerificationAnswer =
  | { decision: 'accept' }
  | { decision: 'reject'; reason: string | null }
  | { decision: 'none'; detail: string };

/**
 * Reads the merchant's answer (docs/api.md#collections): `ACCEPT <id>` or `REJECT <id> <optional reason>`, for
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
