/**
 * Creating a collection request (docs/api.md#collection-requests), as the API and the console both do: the API's
 * validation rules, the schedule, the wallet, the request with its contact and events in one transaction, its workflow
 * launched after the commit.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import {
  DEFAULT_MAX_ATTEMPTS,
  MAX_ATTEMPTS_LIMIT,
  MESSAGE_MAX_LENGTH,
  MIN_RETRY_INTERVAL_MINUTES,
  type CollectionRequestRow,
} from '../../domain/collection-requests';
import type { ContactRow } from '../../domain/contacts';
import { fieldErrors, type FieldErrors } from '../../domain/errors';
import type { OrganizationId } from '../../domain/ids';
import {
  REQUIRED,
  amountField,
  booleanField,
  choiceMessage,
  dateField,
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
import { MAX_SUBSCRIPTION_OCCURRENCES } from '../../domain/subscriptions';
import type { Actor, ServiceDeps } from '../platform/deps';
import { writeOnce, type DuplicateCheck } from './duplicate-checks';
import { activeWallets } from '../wallets/wallets';
import { CONTACT_COLUMNS, upsertContactIn } from './contacts';
import type { RecordedEvent } from '../webhooks/events';
import { REQUEST_COLUMNS, type RequestWithContact } from './request-reads';
import { subscriptionOf } from './subscriptions';

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
      ${input.phoneNumber}, ${input.network}, ${input.reason}, ${json(input.metadata)}, ${input.successMessage},
      ${input.sendInstructions}, ${input.instructions}, ${input.expiresAt}, ${input.startAt},
      ${input.retryIntervalSeconds}, ${input.maxAttempts}, ${json(input.subscriptionSettings)},
      ${input.subscriptionId ?? null}, ${input.occurrenceAt ?? null}, ${input.author})
    on conflict (subscription_id, occurrence_at) where subscription_id is not null do nothing
    returning ${tx.unsafe(REQUEST_COLUMNS)}`;
  if (row) return { request: row, contact: contactRow, events, created: true };
  const [existing] = await tx<CollectionRequestRow[]>`
    select ${tx.unsafe(REQUEST_COLUMNS)} from collection_requests
    where subscription_id = ${input.subscriptionId ?? null} and occurrence_at = ${input.occurrenceAt ?? null}`;
  if (!existing) throw new Error('collection request insert returned no row');
  const [existingContact] = await tx<ContactRow[]>`
    select ${tx.unsafe(CONTACT_COLUMNS)} from contacts where id = ${existing.contactId}`;
  return { request: existing, contact: existingContact!, events, created: false };
}

const optionalInteger = (min: number, max?: number) =>
  v.optional(
    v.pipe(
      v.union([v.literal(''), v.null(), integerField(min, max)], 'A valid integer is required.'),
      v.transform((value) => (value === '' ? null : value)),
    ),
    null,
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

/** Who creates a request: the organization (its name is the default reason) and the user. */
type Creator = Actor & { organizationName: string };

type Schedule = { startAt: Date | null; expiresAt: Date | null; subscriptionSettings: Record<string, unknown> | null };

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
