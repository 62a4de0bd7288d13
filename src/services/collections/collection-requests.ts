/**
 * Collection requests (docs/api.md#collection-requests): their creation (the API's validation rules, the schedule, the
 * wallet, the request with its contact and events in one transaction, its workflow launched after the commit), the list
 * and a request by id within the organization, status changes, and the workflow inputs.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import {
  DEFAULT_MAX_ATTEMPTS,
  MAX_ATTEMPTS_LIMIT,
  MESSAGE_MAX_LENGTH,
  MIN_RETRY_INTERVAL_MINUTES,
  REQUEST_STATUSES,
  serializeCollectionRequest,
  type CollectionRequestRow,
  type RequestStatus,
  FINAL_STATUSES,
} from '../../domain/collection-requests';
import type { ContactRow } from '../../domain/contacts';
import { DATE_HORIZON_TEXT, isBeyondHorizon, parseRequestDate } from '../../formats/dates';
import { RefusedError, fieldErrors, type FieldErrors } from '../../domain/errors';
import type { CollectionId, CollectionRequestId, OrganizationId } from '../../domain/ids';
import {
  REQUIRED,
  amountField,
  booleanField,
  choiceMessage,
  dateField,
  filterAmount,
  filterDate,
  filterId,
  filterPhoneNumber,
  filterText,
  integerField,
  metadata,
  optionalJsonObject,
  optionalText,
  phoneNumber,
  requestDate,
  text,
} from '../../domain/input';
import { SUPPORTED_CURRENCIES } from '../../domain/money';
import { moneyNetwork } from '../../domain/networks';
import {
  FREQUENCIES,
  MAX_SUBSCRIPTION_OCCURRENCES,
  MERCHANT_FREQUENCIES,
  exceedsOccurrenceLimit,
} from '../../domain/subscriptions';
import type { Actor, ServiceDeps } from '../platform/deps';
import { writeOnce, type DuplicateCheck } from './duplicate-checks';
import { activeWallets } from '../wallets/wallets';
import { tenantScope, timeRange, type ListPage, type PageWindow } from '../platform/queries';
import type { SubscriptionInput } from '../../contracts/subscription';
import type { CollectionRequestInput } from '../../contracts/collection-request';
import { CONTACT_COLUMNS, upsertContactIn } from './contacts';
import { recordEvent, type RecordedEvent } from '../webhooks/events';

/** The request columns, optionally qualified by a table alias (`r.`). */
const requestColumns = (
  t = '',
): string => `${t}id, ${t}organization_id as "organizationId", ${t}account_id as "accountId", ${t}contact_id as
  "contactId",
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
async function withContacts(sql: Queryable, requests: CollectionRequestRow[]): Promise<RequestWithContact[]> {
  if (requests.length === 0) return [];
  const ids = [...new Set(requests.map((request) => request.contactId))];
  const contacts = await sql<ContactRow[]>`select ${sql.unsafe(CONTACT_COLUMNS)} from contacts where id in ${sql(ids)}`;
  const byId = new Map(contacts.map((contact) => [contact.id, contact]));
  return requests.map((request) => ({ request, contact: byId.get(request.contactId)! }));
}

/** A request with its contact and its organization's name (a prompt's texts name the organization), in two queries. */
export async function findRequestToPrompt(
  sql: Queryable,
  id: CollectionRequestId,
): Promise<(RequestWithContact & { organizationName: string }) | undefined> {
  const rows = await sql<(CollectionRequestRow & { organizationName: string })[]>`
    select ${sql.unsafe(requestColumns('r.'))}, o.name as "organizationName"
    from collection_requests r join organizations o on o.id = r.organization_id where r.id = ${id}`;
  const [found] = await withContacts(sql, rows);
  return found ? { ...found, organizationName: rows[0]!.organizationName } : undefined;
}

export async function findRequest(sql: Queryable, id: CollectionRequestId): Promise<RequestWithContact | undefined> {
  return (await findRequests(sql, [id]))[0];
}

/**
 * The requests of these ids with their contacts, in two statements whatever their number (a page of collections names
 * up to a page of requests).
 */
export async function findRequests(sql: Queryable, ids: readonly number[]): Promise<RequestWithContact[]> {
  if (ids.length === 0) return [];
  const rows = await sql<
    CollectionRequestRow[]
  >`select ${sql.unsafe(REQUEST_COLUMNS)} from collection_requests where id in ${sql([...new Set(ids)])}`;
  return await withContacts(sql, rows);
}

export type NewCollectionRequest = {
  organizationId: OrganizationId;
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

type CreatedRequest = RequestWithContact & { events: RecordedEvent[]; created: boolean };

/**
 * Saves a request in one transaction with its contact (created, or renamed when names are given)
 * and the `contact.created` event of a new contact. For a subscription occurrence that already
 * exists, returns that one (`created: false`).
 */
export async function insertCollectionRequest(sql: Sql, input: NewCollectionRequest): Promise<CreatedRequest> {
  return (await sql.begin((tx) => insertCollectionRequestIn(tx, input))) as CreatedRequest;
}

/** `insertCollectionRequest` in the caller's transaction. */
async function insertCollectionRequestIn(tx: Queryable, input: NewCollectionRequest): Promise<CreatedRequest> {
  const events: RecordedEvent[] = [];
  const { contact: contactRow, event: contactEvent } = await upsertContactIn(tx, input);
  if (contactEvent) events.push(contactEvent);
  const json = (value: Record<string, unknown> | null) =>
    value === null ? null : tx.json(value as Parameters<typeof tx.json>[0]);
  const [row] = await tx<CollectionRequestRow[]>`
    insert into collection_requests (
      organization_id, account_id, contact_id, amount, currency, phone_number, network, reason, metadata,
      success_message, send_instructions, instructions, expiry_date, start_date, retry_interval_seconds,
      max_attempts, subscription_settings, subscription_id, occurrence_at, author)
    values (
      ${input.organizationId}, ${input.accountId}, ${contactRow.id}, ${input.amount}, ${input.currency},
        ${input.phoneNumber},
      ${input.network}, ${input.reason}, ${json(input.metadata)}, ${input.successMessage}, ${input.sendInstructions},
      ${input.instructions}, ${input.expiresAt}, ${input.startAt}, ${input.retryIntervalSeconds}, ${input.maxAttempts},
      ${json(input.subscriptionSettings)}, ${input.subscriptionId ?? null}, ${input.occurrenceAt ?? null},
        ${input.author})
    on conflict (subscription_id, occurrence_at) where subscription_id is not null do nothing
    returning ${tx.unsafe(REQUEST_COLUMNS)}`;
  if (row) return { request: row, contact: contactRow, events, created: true };
  const [existing] = await tx<CollectionRequestRow[]>`
    select ${tx.unsafe(REQUEST_COLUMNS)} from collection_requests
    where subscription_id = ${input.subscriptionId ?? null} and occurrence_at = ${input.occurrenceAt ?? null}`;
  if (!existing) throw new Error('collection request insert returned no row');
  const [existingContact] = await tx<
    ContactRow[]
  >`select ${tx.unsafe(CONTACT_COLUMNS)} from contacts where id = ${existing.contactId}`;
  return { request: existing, contact: existingContact!, events, created: false };
}

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
  // A status change means the request's workflow runs: the outbox sweep need not start it.
  const [updated] = await tx<CollectionRequestRow[]>`
    update collection_requests set
      status = ${change.status},
      attempts = ${change.attempts === undefined ? tx`attempts` : tx`greatest(attempts, ${change.attempts})`},
      error_message = ${change.errorMessage === undefined ? tx`error_message` : change.errorMessage},
      collection_id = ${change.collectionId === undefined ? tx`collection_id` : change.collectionId},
      remote_transaction_id
        = ${change.remoteTransactionId === undefined ? tx`remote_transaction_id` : change.remoteTransactionId},
      workflow_started_at = coalesce(workflow_started_at, now()),
      modified = now()
    where id = ${change.requestId} and status <> ${change.status}
      -- A final status is final; the one way on is a successful request whose collection was reversed.
      and (status not in ${tx(FINAL_STATUSES as RequestStatus[])} or (status = 'successful' and ${change.status} =
        'reversed'))
      ${
        change.promptAttempt === undefined
          ? tx``
          : tx`and (attempts < ${change.promptAttempt}
        or (attempts
          = ${change.promptAttempt} and ${tx.unsafe(PROMPT_STEP_OF_ROW)} < ${PROMPT_STEPS[change.status] ?? 0}))`
      }
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

/** Subscription settings are stored as the merchant sees them (`DD/MM/YYYY HH:MM:SS`, UTC). */
type StoredSubscriptionSettings = {
  start_date: string;
  end_date: string;
  frequency: string;
  weekdays?: number[];
  months?: number[];
  /** Set once the merchant cancelled it (`cancelOwnSubscription`): no later occurrence is created. */
  cancelled_at?: string;
};

/** Whether the request carries a subscription its merchant cancelled. */
export const subscriptionCancelled = (request: CollectionRequestRow): boolean =>
  typeof (request.subscriptionSettings as StoredSubscriptionSettings | null)?.cancelled_at === 'string';

/** The subscription workflow's input for a request that carries a live subscription (null otherwise). */
export function subscriptionInputFor(request: CollectionRequestRow): SubscriptionInput | null {
  const settings = request.subscriptionSettings as StoredSubscriptionSettings | null;
  if (settings === null || request.subscriptionId !== null || subscriptionCancelled(request)) return null;
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

// ---------------------------------------------------------------------------------------------
// Creating a request, as the API and the console both do

const optionalInteger = (min: number, max?: number) =>
  v.optional(
    v.pipe(
      v.union([v.literal(''), v.null(), integerField(min, max)], 'A valid integer is required.'),
      v.transform((value) => (value === '' ? null : value)),
    ),
    null,
  );

const WEEKDAY_NAMES = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
const MONTH_NAMES = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];

/** Weekdays or months as numbers (1-based) or names (full or three letters), one value or a list. */
const namedNumbers = (names: string[], label: string) =>
  v.optional(
    v.pipe(
      v.union([v.array(v.union([v.string(), v.number()])), v.string(), v.number()], `Enter a list of ${label}.`),
      v.rawTransform(({ dataset, addIssue, NEVER }) => {
        const items = Array.isArray(dataset.value) ? dataset.value : String(dataset.value).split(',');
        const result: number[] = [];
        for (const item of items) {
          const word = String(item).trim().toLowerCase();
          const byName = names.findIndex((name) => name === word || name.slice(0, 3) === word);
          const number = /^\d+$/.test(word) ? Number(word) : byName + 1;
          if (number < 1 || number > names.length) {
            addIssue({ message: `${String(item)} is not one of the ${label}.` });
            return NEVER;
          }
          result.push(number);
        }
        return [...new Set(result)].sort((a, b) => a - b);
      }),
    ),
  );

const SubscriptionSettings = v.object(
  {
    start_date: text(64),
    end_date: text(64),
    frequency: v.pipe(
      text(16),
      v.transform((value) => value.toLowerCase()),
      v.picklist(FREQUENCIES, choiceMessage),
      // The bound of domain/subscriptions.ts: one subscription prompts a subscriber at most once a day.
      v.check(
        (value) => (MERCHANT_FREQUENCIES as readonly string[]).includes(value),
        (issue) =>
          `${String(issue.input)} would prompt the subscriber more than once a day: the shortest frequency is daily.`,
      ),
    ),
    weekdays: namedNumbers(WEEKDAY_NAMES, 'weekdays'),
    months: namedNumbers(MONTH_NAMES, 'months'),
  },
  REQUIRED,
);

export const CollectionRequestCreate = v.object(
  {
    phonenumber: phoneNumber,
    amount: amountField,
    currency: v.pipe(
      text(3),
      v.transform((value) => value.toUpperCase()),
      v.picklist(SUPPORTED_CURRENCIES, choiceMessage),
    ),
    first_name: optionalText(100),
    last_name: optionalText(100),
    account: optionalInteger(1),
    reason: optionalText(255),
    metadata,
    success_message: optionalText(MESSAGE_MAX_LENGTH),
    send_instructions: booleanField(false),
    instructions: optionalText(MESSAGE_MAX_LENGTH),
    expiry_date: dateField,
    start_date: dateField,
    retry_interval_minutes: optionalInteger(MIN_RETRY_INTERVAL_MINUTES, 100_000),
    max_attempts: v.optional(integerField(0, MAX_ATTEMPTS_LIMIT), DEFAULT_MAX_ATTEMPTS),
    subscription_settings: v.optional(
      v.pipe(
        optionalJsonObject,
        v.description(
          [
            'Recurring requests: a hash (or JSON string, or `subscription_settings.key` form fields) of `start_date`,',
            '`end_date` (`DD/MM/YYYY HH:MM:SS`),',
            '`frequency` (yearly, monthly, weekly or daily: at most one prompt a day),',
            `optional \`weekdays\` and \`months\`; at most ${MAX_SUBSCRIPTION_OCCURRENCES} occurrences.`,
          ].join(' '),
        ),
      ),
      null,
    ),
  },
  REQUIRED,
);
type CollectionRequestParams = v.InferOutput<typeof CollectionRequestCreate>;

const DEFAULT_EXPIRY = '24 hours';
const STORED_DATE = (date: Date) => {
  const iso = date.toISOString();
  return `${iso.slice(8, 10)}/${iso.slice(5, 7)}/${iso.slice(0, 4)} ${iso.slice(11, 19)}`;
};

export const RequestFilters = v.object({
  amount: filterAmount,
  currency: v.optional(
    v.pipe(
      v.string(),
      v.transform((value) => value.toUpperCase()),
    ),
  ),
  collection: filterId('The id of the collection that paid the request.'),
  phonenumber: filterPhoneNumber,
  remote_transaction_id: filterText,
  created_after: filterDate,
  created_before: filterDate,
  modified_after: filterDate,
  modified_before: filterDate,
  status: v.optional(v.picklist(REQUEST_STATUSES, choiceMessage)),
  reason: filterText,
  contact_first_name: filterText,
  contact_last_name: filterText,
});

/** Who creates a request: the organization (its name is the default reason) and the user. */
type Creator = Actor & { organizationName: string };

type Schedule = { startAt: Date | null; expiresAt: Date | null; subscriptionSettings: Record<string, unknown> | null };

const OCCURRENCE_LIMIT_MESSAGE = `A subscription holds at most ${MAX_SUBSCRIPTION_OCCURRENCES.toLocaleString('en')} \
occurrences, its first request included; this schedule holds more: bring end_date closer.`;

/** The subscription settings as stored (`DD/MM/YYYY HH:MM:SS`), and its first start; problems into `errors`. */
function subscriptionOf(
  settings: Record<string, unknown>,
  startAt: Date | null,
  now: Date,
  errors: FieldErrors,
): { start: Date; stored: Record<string, unknown> } | null {
  const parsed = v.safeParse(SubscriptionSettings, settings);
  if (!parsed.success) {
    errors.subscription_settings = parsed.issues.map((issue) => `${v.getDotPath(issue) ?? 'value'}: ${issue.message}`);
    return null;
  }
  const start = parseRequestDate(parsed.output.start_date, now);
  const end = parseRequestDate(parsed.output.end_date, now);
  if (start === null || end === null) {
    const far = isBeyondHorizon(parsed.output.start_date, now) || isBeyondHorizon(parsed.output.end_date, now);
    errors.subscription_settings = [
      far
        ? `start_date and end_date must be before ${DATE_HORIZON_TEXT}.`
        : 'start_date and end_date must be dates such as "31/12/2025 13:00:00".',
    ];
  } else if (start.getTime() <= now.getTime() - 60_000)
    errors.subscription_settings = ['start_date must not be in the past.'];
  else if (end.getTime() <= start.getTime()) errors.subscription_settings = ['end_date must be later than start_date.'];
  else if (startAt !== null && startAt.getTime() !== start.getTime()) {
    errors.start_date = [
      'A subscription starts its first request at subscription_settings.start_date; leave start_date out.',
    ];
  } else if (exceedsOccurrenceLimit({ ...parsed.output, startDate: start, endDate: end })) {
    errors.subscription_settings = [OCCURRENCE_LIMIT_MESSAGE];
  } else {
    const { weekdays, months } = parsed.output;
    return {
      start,
      stored: {
        start_date: STORED_DATE(start),
        end_date: STORED_DATE(end),
        frequency: parsed.output.frequency,
        ...(weekdays ? { weekdays } : {}),
        ...(months ? { months } : {}),
      },
    };
  }
  return null;
}

/**
 * When a request starts and expires (a subscription's first request starts at its start), checked against the clock;
 * problems into `errors`.
 */
function scheduleOf(input: CollectionRequestParams, now: Date, errors: FieldErrors): Schedule {
  const startAt =
    input.start_date === null ? null : requestDate(errors, 'start_date', input.start_date, now, '2 hours');
  if (startAt !== null && startAt.getTime() <= now.getTime())
    errors.start_date = ['The start date must be later than now.'];
  const subscription =
    input.subscription_settings === null ? null : subscriptionOf(input.subscription_settings, startAt, now, errors);
  const effectiveStart =
    subscription !== null && subscription.start.getTime() > now.getTime() ? subscription.start : startAt;
  const expiryBase = effectiveStart ?? now;
  const expiresAt = requestDate(errors, 'expiry_date', input.expiry_date ?? DEFAULT_EXPIRY, expiryBase, '24 hours');
  if (expiresAt !== null && expiresAt.getTime() <= expiryBase.getTime()) {
    errors.expiry_date = [
      effectiveStart ? 'The expiry date must be later than the start date.' : 'The expiry date must be later than now.',
    ];
  }
  return { startAt: effectiveStart, expiresAt, subscriptionSettings: subscription?.stored ?? null };
}

/**
 * The wallet a request credits: the given one, or the oldest active one in the currency; one of them must be funded.
 */
async function requestWallet(
  sql: Sql,
  organizationId: OrganizationId,
  input: CollectionRequestParams,
  errors: FieldErrors,
): Promise<number | null> {
  const wallets = await activeWallets(sql, organizationId, input.currency);
  if (!wallets.some((wallet) => wallet.funded))
    errors.currency = [`Your organization has no funded ${input.currency} wallet.`];
  const wallet = input.account === null ? wallets[0] : wallets.find((candidate) => candidate.id === input.account);
  if (!errors.currency && wallet === undefined)
    errors.account = [`No active ${input.currency} wallet with id ${input.account} belongs to your organization.`];
  return wallet?.id ?? null;
}

/**
 * Creates a collection request from a merchant's parameters (validated by `CollectionRequestCreate`),
 * as the REST route and the web console both do: checks what depends on several fields and the
 * clock (network, dates, subscription; 400 with field errors) and the wallet, saves the request with
 * its contact and events, claiming the Duplicate-Check-Key in the same transaction, and launches
 * its workflow.
 */
export async function createCollectionRequest(
  { sql, launcher, networks }: Pick<ServiceDeps, 'sql' | 'launcher' | 'networks'>,
  creator: Creator,
  input: CollectionRequestParams,
  duplicateCheck: DuplicateCheck | null,
): Promise<CreatedRequest> {
  const { network, errors } = moneyNetwork(
    input.phonenumber,
    input.currency,
    input.amount,
    networks.connections,
    'collection',
  );
  const schedule = scheduleOf(input, new Date(), errors);
  const accountId = await requestWallet(sql, creator.organizationId, input, errors);
  if (Object.keys(errors).length > 0) throw fieldErrors(errors);
  const newRequest: NewCollectionRequest = {
    organizationId: creator.organizationId,
    author: creator.userId,
    phoneNumber: input.phonenumber,
    network: network!.name,
    amount: input.amount,
    currency: input.currency,
    accountId: accountId!,
    firstName: input.first_name,
    lastName: input.last_name,
    reason: input.reason ?? creator.organizationName,
    metadata: input.metadata,
    successMessage: input.success_message,
    sendInstructions: input.send_instructions,
    instructions: input.instructions,
    expiresAt: schedule.expiresAt!,
    startAt: schedule.startAt,
    retryIntervalSeconds: input.retry_interval_minutes === null ? null : input.retry_interval_minutes * 60,
    maxAttempts: input.max_attempts,
    subscriptionSettings: schedule.subscriptionSettings,
  };
  const created = await writeOnce(
    sql,
    creator,
    duplicateCheck,
    (tx) => insertCollectionRequestIn(tx, newRequest),
    (result) => ({ type: 'collection_request', id: result.request.id }),
  );
  await launcher.afterCommit({ requests: [created.request] });
  return created;
}

type RequestFilterValues = v.InferOutput<typeof RequestFilters>;

/**
 * One page of an organization's requests matching the filters, newest first, with their contacts and the total count.
 */
export async function listCollectionRequests(
  sql: Sql,
  organizationId: OrganizationId,
  f: RequestFilterValues,
  page: PageWindow,
): Promise<ListPage<RequestWithContact>> {
  const contactFilter = f.contact_first_name !== undefined || f.contact_last_name !== undefined;
  const { count, rows } = await tenantScope(sql, organizationId).listPage<CollectionRequestRow>(
    {
      columns: sql.unsafe(requestColumns('r.')),
      from: contactFilter
        ? sql`collection_requests r join contacts c on c.id = r.contact_id`
        : sql`collection_requests r`,
      alias: 'r',
      filters: sql`
      ${f.amount !== undefined ? sql`and r.amount = ${f.amount}::numeric` : sql``}
      ${f.currency !== undefined ? sql`and r.currency = ${f.currency}` : sql``}
      ${f.collection !== undefined ? sql`and r.collection_id = ${f.collection}` : sql``}
      ${f.phonenumber !== undefined ? sql`and r.phone_number = ${f.phonenumber}` : sql``}
      ${f.remote_transaction_id !== undefined ? sql`and r.remote_transaction_id = ${f.remote_transaction_id}` : sql``}
      ${timeRange(sql, 'r.created', f.created_after, f.created_before)}
      ${timeRange(sql, 'r.modified', f.modified_after, f.modified_before)}
      ${f.status !== undefined ? sql`and r.status = ${f.status}` : sql``}
      ${f.reason !== undefined ? sql`and r.reason = ${f.reason}` : sql``}
      ${f.contact_first_name !== undefined ? sql`and c.first_name = ${f.contact_first_name}` : sql``}
      ${f.contact_last_name !== undefined ? sql`and c.last_name = ${f.contact_last_name}` : sql``}`,
      orderBy: sql`order by r.created desc, r.id desc`,
    },
    page,
  );
  return { count, rows: await withContacts(sql, rows) };
}

/** The organization's request `id` with its contact (403 when another organization's, 404 when none). */
export async function findOwnRequest(
  sql: Queryable,
  organizationId: OrganizationId,
  id: CollectionRequestId,
): Promise<RequestWithContact> {
  const request = await tenantScope(sql, organizationId).ownRow<CollectionRequestRow>({
    table: 'collection_requests',
    id,
    columns: sql.unsafe(REQUEST_COLUMNS),
  });
  return (await withContacts(sql, [request]))[0]!;
}

/**
 * Stops the subscription the organization's request `id` carries (docs/api.md#collection-requests):
 * `subscription_settings` gets `cancelled_at`, in an audited write, and from then on no occurrence is
 * created (the activity that creates one reads it) and the subscription workflow is cancelled, so it
 * no longer waits for the next occurrence. Requests already created, and a prompt in flight, go on
 * as any request does. Cancelling a cancelled subscription changes nothing. A request that carries no
 * subscription (or is one of a subscription's occurrences) is a 400.
 */
export async function cancelOwnSubscription(
  { sql, launcher }: Pick<ServiceDeps, 'sql' | 'launcher'>,
  canceller: Actor,
  requestId: CollectionRequestId,
  duplicateCheck: DuplicateCheck | null,
): Promise<RequestWithContact> {
  const owned = await findOwnRequest(sql, canceller.organizationId, requestId);
  const { request } = owned;
  if (request.subscriptionId !== null) {
    throw new RefusedError(
      `Collection request ${request.id} is an occurrence of the subscription of request ${request.subscriptionId}: \
cancel that one.`,
    );
  }
  if (request.subscriptionSettings === null)
    throw new RefusedError(`Collection request ${request.id} carries no subscription.`);
  await writeOnce(
    sql,
    canceller,
    duplicateCheck,
    (tx) => tx`
      update collection_requests
      set subscription_settings = (subscription_settings::jsonb || jsonb_build_object('cancelled_at',
        to_char(now() at time zone 'UTC', 'DD/MM/YYYY HH24:MI:SS')))::json, modified = now()
      where id = ${request.id} and organization_id = ${canceller.organizationId}
        and subscription_settings->>'cancelled_at' is null`,
  );
  await launcher.cancelSubscription(request.id);
  return await findOwnRequest(sql, canceller.organizationId, requestId);
}
