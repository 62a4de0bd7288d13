import { serializeContact, type ContactRow } from './contacts';
import { formatSpecDate } from './dates';
import { formatTimestamp } from './time';

export const REQUEST_STATUSES = [
  'new', 'pending', 'successful', 'instructions_sent', 'processing_started', 'failed', 'expired', 'reversed',
] as const;
export type RequestStatus = (typeof REQUEST_STATUSES)[number];
export const FINAL_STATUSES: readonly RequestStatus[] = ['successful', 'failed', 'expired', 'reversed'];
/** Statuses in which an incoming collection can still be matched to the request. */
export const OPEN_STATUSES: readonly RequestStatus[] = ['new', 'pending', 'instructions_sent', 'processing_started'];

export const MESSAGE_MAX_LENGTH = 140;
export const MIN_RETRY_INTERVAL_MINUTES = 10;
export const MAX_ATTEMPTS_LIMIT = 3;
export const DEFAULT_MAX_ATTEMPTS = 3;
export const SKIP_INSTRUCTIONS = 'skip';
/** Appended to every success message (api.md 4.3: "a provider attribution suffix is appended"). */
export const ATTRIBUTION_SUFFIX = ' - via Collections';

export type CollectionRequestRow = {
  id: number;
  organizationId: number;
  accountId: number | null;
  contactId: number;
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
  collectionId: number | null;
  remoteTransactionId: string | null;
  author: number | null;
  updatedBy: number | null;
  created: Date;
  modified: Date;
};

/** `<organization>-<request>`: the request code a subscriber can pay with (api.md 2.3 `svccode`). */
export const requestCode = (request: Pick<CollectionRequestRow, 'organizationId' | 'id'>): string => `${request.organizationId}-${request.id}`;

/** The collection request object of api.md 2.3, with its contact expanded. */
export function serializeCollectionRequest(request: CollectionRequestRow, contact: ContactRow) {
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
export type CollectionRequestResource = ReturnType<typeof serializeCollectionRequest>;

/** Trailing zeros off a 4-decimal amount for messages to people: "1500.0000" → "1500". */
export function displayAmount(amount: string): string {
  return amount.includes('.') ? amount.replace(/\.?0+$/, '') : amount;
}

export type MessageContext = { amount: string; currency: string; customer: string; organization: string; code: string };

export function instructionsMessage(custom: string | null, context: MessageContext): string {
  if (custom) return custom;
  return `${context.organization} requests ${displayAmount(context.amount)} ${context.currency}. Approve the prompt on your phone or pay with code ${context.code}.`;
}

/** The success message with `{amount}` and `{customer}` filled in, and the attribution suffix. */
export function successMessage(custom: string | null, context: MessageContext): string {
  const template = custom ?? `Thank you {customer}. Your payment of {amount} ${context.currency} to ${context.organization} was received.`;
  return template.replaceAll('{amount}', displayAmount(context.amount)).replaceAll('{customer}', context.customer) + ATTRIBUTION_SUFFIX;
}
