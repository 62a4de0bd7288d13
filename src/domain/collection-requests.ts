import * as v from 'valibot';
import { CONTACT_EXAMPLE, ContactSchema, serializeContact, type ContactRow } from './contacts';
import { formatSpecDate } from '../formats/dates';
import {
  Amount,
  Author,
  CurrencyCode,
  Id,
  Metadata,
  OwningOrganization,
  PhoneNumber,
  Timestamp,
  UpdatedBy,
  described,
} from './shapes';
import { formatTimestamp } from '../formats/time';
import type { CollectionId, CollectionRequestId, ContactId, OrganizationId, WalletId } from './ids';

export const REQUEST_STATUSES = [
  'new',
  'pending',
  'successful',
  'instructions_sent',
  'processing_started',
  'failed',
  'expired',
  'reversed',
] as const;
export type RequestStatus = (typeof REQUEST_STATUSES)[number];
export const FINAL_STATUSES: readonly RequestStatus[] = ['successful', 'failed', 'expired', 'reversed'];
/** Statuses in which an incoming collection can still be matched to the request. */
export const OPEN_STATUSES: readonly RequestStatus[] = ['new', 'pending', 'instructions_sent', 'processing_started'];

export const MESSAGE_MAX_LENGTH = 140;
export const MIN_RETRY_INTERVAL_MINUTES = 10;
export const MAX_ATTEMPTS_LIMIT = 3;
export const DEFAULT_MAX_ATTEMPTS = 3;
/** Appended to every success message (docs/api.md#collection-requests). */
const ATTRIBUTION_SUFFIX = ' - via Collections';

export type CollectionRequestRow = {
  id: CollectionRequestId;
  organizationId: OrganizationId;
  accountId: WalletId | null;
  contactId: ContactId;
  amount: string;
  currency: string;
  phoneNumber: string;
  network: string;
  reason: string | null;
  metadata: Record<string, unknown> | null;
  successMessage: string | null;
  sendInstructions: boolean;
  instructions: string | null;
  status: RequestStatus;
  errorMessage: string | null;
  expiryDate: Date;
  expiryMicros: number;
  startDate: Date | null;
  startMicros: number | null;
  retryIntervalSeconds: number | null;
  maxAttempts: number;
  attempts: number;
  subscriptionSettings: Record<string, unknown> | null;
  subscriptionId: number | null;
  collectionId: CollectionId | null;
  remoteTransactionId: string | null;
  author: number | null;
  updatedBy: number | null;
  created: Date;
  modified: Date;
};

/**
 * `<organization>-<request>`: the request code a subscriber can pay with (`svccode`, docs/api.md#collection-requests).
 */
export const requestCode = (request: Pick<CollectionRequestRow, 'organizationId' | 'id'>): string =>
  `${request.organizationId}-${request.id}`;

const SpecDate = v.pipe(
  v.string(),
  v.description('`YYYY-MM-DD HH:MM:SS.ffffff+00:00` (UTC).'),
  v.examples(['2025-05-02 13:45:00.000000+00:00']),
);

export const COLLECTION_REQUEST_EXAMPLE = {
  id: 901,
  organization: 3,
  amount: '1500.0000',
  currency: 'UGX',
  account: 12,
  phonenumber: '+256772123456',
  svccode: '3-901',
  contact: CONTACT_EXAMPLE,
  reason: 'Invoice 1042',
  metadata: { invoice: '1042' },
  created: '2025-05-01T13:45:00Z',
  modified: '2025-05-01T13:46:10Z',
  author: 5,
  updated_by: null,
  collection: null,
  success_message: null,
  send_instructions: true,
  instructions: null,
  status: 'processing_started' as const,
  error_message: null,
  expiry_date: '2025-05-02 13:45:00.000000+00:00',
  start_date: null,
  retry_interval_minutes: null,
  max_attempts: 3,
  subscription_settings: null,
};

/**
 * The collection request object (docs/api.md#collection-requests), with its contact expanded: types the serialiser and
 * documents it.
 */
export const CollectionRequestSchema = v.pipe(
  v.object({
    id: Id,
    organization: OwningOrganization,
    amount: Amount,
    currency: CurrencyCode,
    account: described(v.nullable(v.number()), 'Wallet that receives the collection.'),
    phonenumber: PhoneNumber,
    svccode: described(v.string(), 'Request code a subscriber can pay with: `<organization>-<request>`.'),
    contact: ContactSchema,
    reason: described(v.nullable(v.string()), 'The reference the subscriber sees.'),
    metadata: Metadata,
    created: Timestamp,
    modified: Timestamp,
    author: Author,
    updated_by: UpdatedBy,
    collection: described(v.nullable(v.number()), 'Id of the collection that fulfilled the request.'),
    success_message: v.nullable(v.string()),
    send_instructions: v.boolean(),
    instructions: v.nullable(v.string()),
    status: v.picklist(REQUEST_STATUSES),
    error_message: v.nullable(v.string()),
    expiry_date: SpecDate,
    start_date: v.nullable(SpecDate),
    retry_interval_minutes: v.nullable(v.number()),
    max_attempts: described(v.number(), 'Re-prompts after the first (0 to 3).'),
    subscription_settings: described(
      v.nullable(v.string()),
      'Recurring settings as a JSON string: `start_date`, `end_date`, `frequency`, optional `weekdays`, `months`.',
    ),
  }),
  v.description('A request for a subscriber to pay, with its contact.'),
  v.examples([COLLECTION_REQUEST_EXAMPLE]),
);
export type CollectionRequestResource = v.InferOutput<typeof CollectionRequestSchema>;

export function serializeCollectionRequest(
  request: CollectionRequestRow,
  contact: ContactRow,
): CollectionRequestResource {
  return {
    id: request.id,
    organization: request.organizationId,
    amount: request.amount,
    currency: request.currency,
    account: request.accountId,
    phonenumber: request.phoneNumber,
    svccode: requestCode(request),
    contact: serializeContact(contact),
    reason: request.reason,
    metadata: request.metadata,
    created: formatTimestamp(request.created),
    modified: formatTimestamp(request.modified),
    author: request.author,
    updated_by: request.updatedBy === null ? null : String(request.updatedBy),
    collection: request.collectionId,
    success_message: request.successMessage,
    send_instructions: request.sendInstructions,
    instructions: request.instructions,
    status: request.status,
    error_message: request.errorMessage,
    expiry_date: formatSpecDate(request.expiryDate, request.expiryMicros),
    start_date: request.startDate === null ? null : formatSpecDate(request.startDate, request.startMicros ?? undefined),
    retry_interval_minutes: request.retryIntervalSeconds === null ? null : request.retryIntervalSeconds / 60,
    max_attempts: request.maxAttempts,
    subscription_settings: request.subscriptionSettings === null ? null : JSON.stringify(request.subscriptionSettings),
  };
}

/** Trailing zeros off a 4-decimal amount for messages to people: "1500.0000" → "1500". */
export function displayAmount(amount: string): string {
  return amount.includes('.') ? amount.replace(/\.?0+$/, '') : amount;
}

export type MessageContext = { amount: string; currency: string; customer: string; organization: string; code: string };

export function instructionsMessage(custom: string | null, context: MessageContext): string {
  if (custom) return custom;
  return [
    `${context.organization} requests ${displayAmount(context.amount)} ${context.currency}.`,
    `Approve the prompt on your phone or pay with code ${context.code}.`,
  ].join(' ');
}

/** The success message with `{amount}` and `{customer}` filled in, and the attribution suffix. */
export function successMessage(custom: string | null, context: MessageContext): string {
  const template =
    custom ??
    `Thank you {customer}. Your payment of {amount} ${context.currency} to ${context.organization} was received.`;
  return (
    template.replaceAll('{amount}', displayAmount(context.amount)).replaceAll('{customer}', context.customer) +
    ATTRIBUTION_SUFFIX
  );
}
