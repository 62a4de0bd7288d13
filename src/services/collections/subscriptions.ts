/**
 * Subscriptions, the collection requests that recur (docs/api.md#collection-requests): their settings as the merchant
 * gives them and as they are stored, the subscription workflow's input, and the merchant's cancellation.
 */
import * as v from 'valibot';
import type { CollectionRequestRow } from '../../domain/collection-requests';
import { DATE_HORIZON_TEXT, isBeyondHorizon, parseRequestDate } from '../../formats/dates';
import { RefusedError, type FieldErrors } from '../../domain/errors';
import type { CollectionRequestId } from '../../domain/ids';
import { REQUIRED, choiceMessage, text } from '../../domain/input';
import {
  FREQUENCIES,
  MAX_SUBSCRIPTION_OCCURRENCES,
  MERCHANT_FREQUENCIES,
  exceedsOccurrenceLimit,
} from '../../domain/subscriptions';
import type { Actor, ServiceDeps } from '../platform/deps';
import { writeOnce, type DuplicateCheck } from './duplicate-checks';
import type { SubscriptionInput } from '../../contracts/subscription';
import { findOwnRequest, type RequestWithContact } from './request-reads';

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

const STORED_DATE = (date: Date) => {
  const iso = date.toISOString();
  return `${iso.slice(8, 10)}/${iso.slice(5, 7)}/${iso.slice(0, 4)} ${iso.slice(11, 19)}`;
};

const OCCURRENCE_LIMIT_MESSAGE = `A subscription holds at most ${MAX_SUBSCRIPTION_OCCURRENCES.toLocaleString('en')} \
occurrences, its first request included; this schedule holds more: bring end_date closer.`;

/** The subscription settings as stored (`DD/MM/YYYY HH:MM:SS`), and its first start; problems into `errors`. */
export function subscriptionOf(
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
      set subscription_settings = (subscription_settings::jsonb || jsonb_build_object(
            'cancelled_at', to_char(now() at time zone 'UTC', 'DD/MM/YYYY HH24:MI:SS')))::json,
          modified = now()
      where id = ${request.id} and organization_id = ${canceller.organizationId}
        and subscription_settings->>'cancelled_at' is null`,
  );
  await launcher.cancelSubscription(request.id);
  return await findOwnRequest(sql, canceller.organizationId, requestId);
}
