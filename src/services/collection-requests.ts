import type { Queryable, Sql } from '../db';
import { serializeCollectionRequest, type CollectionRequestRow, type RequestStatus, FINAL_STATUSES } from '../domain/collection-requests';
import type { ContactRow } from '../domain/contacts';
import { parseRequestDate } from '../domain/dates';
import type { SubscriptionInput } from '../workflows/contracts/subscription';
import type { CollectionRequestInput } from '../workflows/contracts/collection-request';
import { CONTACT_COLUMNS, upsertContactIn } from './contacts';
import { recordEvent, type RecordedEvent } from './events';

/** The request columns, optionally qualified by a table alias (`r.`). */
export const requestColumns = (t = ''): string => `${t}id, ${t}organization_id as "organizationId", ${t}account_id as "accountId", ${t}contact_id as "contactId",
  ${t}amount::text as amount, ${t}currency, ${t}phone_number as "phoneNumber", ${t}network, ${t}reason, ${t}metadata,
  ${t}success_message as "successMessage", ${t}send_instructions as "sendInstructions", ${t}instructions, ${t}status,
  ${t}error_message as "errorMessage", ${t}expiry_date as "expiryDate",
  (extract(microseconds from ${t}expiry_date)::bigint % 1000000)::int as "expiryMicros",
  ${t}start_date as "startDate", (extract(microseconds from ${t}start_date)::bigint % 1000000)::int as "startMicros",
  ${t}retry_interval_seconds as "retryIntervalSeconds", ${t}max_attempts as "maxAttempts", ${t}attempts,
  ${t}subscription_settings as "subscriptionSettings", ${t}subscription_id as "subscriptionId",
  ${t}collection_id as "collectionId", ${t}remote_transaction_id as "remoteTransactionId",
  ${t}author, ${t}updated_by as "updatedBy", ${t}created, ${t}modified`;
export const REQUEST_COLUMNS = requestColumns();

export type RequestWithContact = { request: CollectionRequestRow; contact: ContactRow };

/** Requests with their contacts, in the order given. */
export async function withContacts(sql: Queryable, requests: CollectionRequestRow[]): Promise<RequestWithContact[]> {
  if (requests.length === 0) return [];
  const ids = [...new Set(requests.map((request) => request.contactId))];
  const contacts = await sql<ContactRow[]>`select ${sql.unsafe(CONTACT_COLUMNS)} from contacts where id in ${sql(ids)}`;
  const byId = new Map(contacts.map((contact) => [contact.id, contact]));
  return requests.map((request) => ({ request, contact: byId.get(request.contactId)! }));
}

export async function findRequest(sql: Queryable, id: number): Promise<RequestWithContact | undefined> {
  const rows = await sql<CollectionRequestRow[]>`select ${sql.unsafe(REQUEST_COLUMNS)} from collection_requests where id = ${id}`;
  return (await withContacts(sql, rows))[0];
}

export type NewCollectionRequest = {
  organizationId: number;
  author: number | null;
  phoneNumber: string;
  network: string;
  amount: string;
  currency: string;
  accountId: number | null;
  /** Null keeps a saved contact's name; a new contact gets Anonymous Contact. */
  firstName: string | null;
  lastName: string | null;
  reason: string | null;
  metadata: Record<string, unknown> | null;
  successMessage: string | null;
  sendInstructions: boolean;
  instructions: string | null;
  expiresAt: Date;
  startAt: Date | null;
  retryIntervalSeconds: number | null;
  maxAttempts: number;
  subscriptionSettings: Record<string, unknown> | null;
  subscriptionId?: number | null;
  occurrenceAt?: Date | null;
};

export type CreatedRequest = RequestWithContact & { events: RecordedEvent[]; created: boolean };

/**
 * Saves a request in one transaction with its contact (created, or renamed when names are given)
 * and the `contact.created` event of a new contact. For a subscription occurrence that already
 * exists, returns that one (`created: false`).
 */
export async function insertCollectionRequest(sql: Sql, input: NewCollectionRequest): Promise<CreatedRequest> {
  return (await sql.begin((tx) => insertCollectionRequestIn(tx, input))) as CreatedRequest;
}

/** `insertCollectionRequest` in the caller's transaction. */
export async function insertCollectionRequestIn(tx: Queryable, input: NewCollectionRequest): Promise<CreatedRequest> {
  const events: RecordedEvent[] = [];
  const { contact: contactRow, event: contactEvent } = await upsertContactIn(tx, input);
  if (contactEvent) events.push(contactEvent);
  const json = (value: Record<string, unknown> | null) => (value === null ? null : tx.json(value as Parameters<typeof tx.json>[0]));
  const [row] = await tx<CollectionRequestRow[]>`
    insert into collection_requests (
      organization_id, account_id, contact_id, amount, currency, phone_number, network, reason, metadata,
      success_message, send_instructions, instructions, expiry_date, start_date, retry_interval_seconds,
      max_attempts, subscription_settings, subscription_id, occurrence_at, author)
    values (
      ${input.organizationId}, ${input.accountId}, ${contactRow.id}, ${input.amount}, ${input.currency}, ${input.phoneNumber},
      ${input.network}, ${input.reason}, ${json(input.metadata)}, ${input.successMessage}, ${input.sendInstructions},
      ${input.instructions}, ${input.expiresAt}, ${input.startAt}, ${input.retryIntervalSeconds}, ${input.maxAttempts},
      ${json(input.subscriptionSettings)}, ${input.subscriptionId ?? null}, ${input.occurrenceAt ?? null}, ${input.author})
    on conflict (subscription_id, occurrence_at) where subscription_id is not null do nothing
    returning ${tx.unsafe(REQUEST_COLUMNS)}`;
  if (row) return { request: row, contact: contactRow, events, created: true };
  const [existing] = await tx<CollectionRequestRow[]>`
    select ${tx.unsafe(REQUEST_COLUMNS)} from collection_requests
    where subscription_id = ${input.subscriptionId ?? null} and occurrence_at = ${input.occurrenceAt ?? null}`;
  if (!existing) throw new Error('collection request insert returned no row');
  const [existingContact] = await tx<ContactRow[]>`select ${tx.unsafe(CONTACT_COLUMNS)} from contacts where id = ${existing.contactId}`;
  return { request: existing, contact: existingContact!, events, created: false };
}

/** Where a status stands within one prompt: texted, then pushed (`pending`: nobody to push); 0 for any other. */
const PROMPT_STEPS: Partial<Record<RequestStatus, number>> = { instructions_sent: 1, pending: 1, processing_started: 2 };
const PROMPT_STEP_OF_ROW = `(case status ${Object.entries(PROMPT_STEPS).map(([status, step]) => `when '${status}' then ${step}`).join(' ')} else 0 end)`;

export type StatusChange = {
  requestId: number;
  status: RequestStatus;
  attempts?: number;
  /**
   * A step of prompt number `promptAttempt` (`instructions_sent`, then `processing_started`, or
   * `pending`): recorded only when the request has not reached that step of that prompt, or a later
   * one, already. A prompt retried after a lost worker so repeats none of its status changes.
   */
  promptAttempt?: number;
  errorMessage?: string | null;
  collectionId?: number | null;
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
  // A status change means the request's workflow runs: the outbox sweep need not start it.
  const [updated] = await tx<CollectionRequestRow[]>`
    update collection_requests set
      status = ${change.status},
      attempts = ${change.attempts === undefined ? tx`attempts` : tx`greatest(attempts, ${change.attempts})`},
      error_message = ${change.errorMessage === undefined ? tx`error_message` : change.errorMessage},
      collection_id = ${change.collectionId === undefined ? tx`collection_id` : change.collectionId},
      remote_transaction_id = ${change.remoteTransactionId === undefined ? tx`remote_transaction_id` : change.remoteTransactionId},
      workflow_started_at = coalesce(workflow_started_at, now()),
      modified = now()
    where id = ${change.requestId} and status <> ${change.status}
      -- A final status is final; the one way on is a successful request whose collection was reversed.
      and (status not in ${tx(FINAL_STATUSES as RequestStatus[])} or (status = 'successful' and ${change.status} = 'reversed'))
      ${change.promptAttempt === undefined ? tx`` : tx`and (attempts < ${change.promptAttempt}
        or (attempts = ${change.promptAttempt} and ${tx.unsafe(PROMPT_STEP_OF_ROW)} < ${PROMPT_STEPS[change.status] ?? 0}))`}
    returning ${tx.unsafe(REQUEST_COLUMNS)}`;
  if (!updated) {
    // Nothing changed; the attempts still count (a refused prompt records no status).
    if (change.attempts !== undefined) {
      await tx`update collection_requests set attempts = greatest(attempts, ${change.attempts}) where id = ${change.requestId}`;
    }
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

export type WorkflowSettings = { failedPromptRetrySeconds: number; networkPullsFunds: boolean; networkPollSeconds?: number };

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
  };
}

/** Subscription settings are stored as the merchant sees them (`DD/MM/YYYY HH:MM:SS`, UTC). */
export type StoredSubscriptionSettings = { start_date: string; end_date: string; frequency: string; weekdays?: number[]; months?: number[] };

export function subscriptionInputFor(request: CollectionRequestRow): SubscriptionInput | null {
  const settings = request.subscriptionSettings as StoredSubscriptionSettings | null;
  if (settings === null || request.subscriptionId !== null) return null;
  const epoch = new Date(0);
  const startDate = parseRequestDate(settings.start_date, epoch);
  const endDate = parseRequestDate(settings.end_date, epoch);
  if (!startDate || !endDate) throw new Error(`request ${request.id} has unreadable subscription dates`);
  return {
    requestId: request.id,
    organizationId: request.organizationId,
    startDate: startDate.toISOString(),
    endDate: endDate.toISOString(),
    frequency: settings.frequency,
    ...(settings.weekdays ? { weekdays: settings.weekdays } : {}),
    ...(settings.months ? { months: settings.months } : {}),
  };
}
