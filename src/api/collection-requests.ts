import { Elysia } from 'elysia';
import * as v from 'valibot';
import {
  DEFAULT_MAX_ATTEMPTS, MAX_ATTEMPTS_LIMIT, MESSAGE_MAX_LENGTH, MIN_RETRY_INTERVAL_MINUTES, REQUEST_STATUSES,
  serializeCollectionRequest, type CollectionRequestRow,
} from '../domain/collection-requests';
import { DATE_HORIZON_TEXT, isBeyondHorizon, parseRequestDate } from '../domain/dates';
import { SUPPORTED_CURRENCIES } from '../domain/money';
import { networkForMoney, operatorAmountProblem } from '../domain/networks';
import { connectedNetworks } from '../network/connections';
import { FREQUENCIES } from '../domain/subscriptions';
import { collectionRequestForVersion, collectionRequestSchemaForVersion, listForVersion, listSchemaForVersion } from '../domain/versions';
import { writeOnce, type DuplicateCheck } from '../services/duplicate-checks';
import type { Sql } from '../db';
import {
  findRequest, insertCollectionRequestIn, requestColumns, withContacts, type CreatedRequest, type NewCollectionRequest, type RequestWithContact,
} from '../services/collection-requests';
import { authPlugin } from '../http/auth';
import { ownedBy, parseId, type AppDeps } from '../http/context';
import { notFound } from '../http/errors';
import { fieldErrors, type FieldErrors } from '../domain/errors';
import {
  REQUIRED, amountField, booleanField, choiceMessage, dateField, filterAmount, integerField, metadata, optionalJsonObject, optionalText, phoneNumber,
  requestDate, text, validate,
} from '../domain/input';
import { queryObject } from '../http/filters';
import { timeRange } from '../services/queries';
import { filterDate, filterPhoneNumber, filterText } from '../domain/input';
import { listQuery, pagedList, parsePage } from '../http/pagination';
import { PathIdParams, requestSchema, routeDocs } from '../http/route-docs';


const optionalInteger = (min: number, max?: number) =>
  v.optional(
    v.pipe(
      v.union([v.literal(''), v.null(), integerField(min, max)], 'A valid integer is required.'),
      v.transform((value) => (value === '' ? null : value)),
    ),
    null,
  );

const WEEKDAY_NAMES = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
const MONTH_NAMES = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

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
    frequency: v.pipe(text(16), v.transform((value) => value.toLowerCase()), v.picklist(FREQUENCIES, choiceMessage)),
    weekdays: namedNumbers(WEEKDAY_NAMES, 'weekdays'),
    months: namedNumbers(MONTH_NAMES, 'months'),
  },
  REQUIRED,
);

export const CollectionRequestCreate = v.object(
  {
    phonenumber: phoneNumber,
    amount: amountField,
    currency: v.pipe(text(3), v.transform((value) => value.toUpperCase()), v.picklist(SUPPORTED_CURRENCIES, choiceMessage)),
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
          'Recurring requests: a hash (or JSON string, or `subscription_settings.key` form fields) of `start_date`, `end_date` ' +
            '(`DD/MM/YYYY HH:MM:SS`), `frequency` (yearly, monthly, weekly, daily, hourly, minutely), optional `weekdays` and `months`.',
        ),
      ),
      null,
    ),
  },
  REQUIRED,
);
export type CollectionRequestInput = v.InferOutput<typeof CollectionRequestCreate>;

const DEFAULT_EXPIRY = '24 hours';
const STORED_DATE = (date: Date) => {
  const iso = date.toISOString();
  return `${iso.slice(8, 10)}/${iso.slice(5, 7)}/${iso.slice(0, 4)} ${iso.slice(11, 19)}`;
};

const RequestFilters = v.object({
  amount: filterAmount,
  currency: v.optional(v.pipe(v.string(), v.transform((value) => value.toUpperCase()))),
  collection: v.optional(v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'A valid integer is required.'), v.transform(Number))),
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

/** What creating a request needs from the process: the database, configuration and the launch settings. */
export type CreateRequestDeps = Pick<AppDeps, 'sql' | 'config' | 'launcher'>;
export type Creator = { organizationId: number; userId: number; organizationName: string };


/**
 * Creates a collection request from a merchant's parameters (api.md 4.3), as the REST route and
 * the web console both do: takes them validated by `CollectionRequestCreate` (the route declares
 * it), checks what depends on several fields and the clock (dates, subscription, network; 400 with
 * field errors), checks the wallet, saves the request with its contact and events, claiming the
 * Duplicate-Check-Key in the same transaction, and launches its workflow.
 */
export async function createCollectionRequest(
  deps: CreateRequestDeps,
  creator: Creator,
  input: CollectionRequestInput,
  duplicateCheck: DuplicateCheck | null,
): Promise<CreatedRequest> {
  const { sql, config, launcher } = deps;
  const now = new Date();
  const errors: FieldErrors = {};
  const connected = connectedNetworks(config);
  const choice = networkForMoney(input.phonenumber, input.currency, { sandboxMode: config.sandbox, connected });
  if (choice.problem !== undefined) errors.phonenumber = [choice.problem];
  const amountProblem = choice.network ? operatorAmountProblem(choice.network, input.currency, input.amount, connected) : null;
  if (amountProblem !== null) errors.amount = [amountProblem];
  const startAt = input.start_date === null ? null : requestDate(errors, 'start_date', input.start_date, now, '2 hours');
  if (startAt !== null && startAt.getTime() <= now.getTime()) errors.start_date = ['The start date must be later than now.'];
  let subscriptionSettings: Record<string, unknown> | null = null;
  let subscriptionStart: Date | null = null;
  if (input.subscription_settings !== null) {
    const settings = v.safeParse(SubscriptionSettings, input.subscription_settings);
    if (!settings.success) {
      errors.subscription_settings = settings.issues.map((issue) => `${v.getDotPath(issue) ?? 'value'}: ${issue.message}`);
    } else {
      const start = parseRequestDate(settings.output.start_date, now);
      const end = parseRequestDate(settings.output.end_date, now);
      if (start === null || end === null) {
        const far = isBeyondHorizon(settings.output.start_date, now) || isBeyondHorizon(settings.output.end_date, now);
        errors.subscription_settings = [far ? `start_date and end_date must be before ${DATE_HORIZON_TEXT}.` : 'start_date and end_date must be dates such as "31/12/2025 13:00:00".'];
      } else if (start.getTime() <= now.getTime() - 60_000) errors.subscription_settings = ['start_date must not be in the past.'];
      else if (end.getTime() <= start.getTime()) errors.subscription_settings = ['end_date must be later than start_date.'];
      else if (startAt !== null && startAt.getTime() !== start.getTime()) {
        errors.start_date = ['A subscription starts its first request at subscription_settings.start_date; leave start_date out.'];
      } else {
        subscriptionStart = start;
        subscriptionSettings = {
          start_date: STORED_DATE(start),
          end_date: STORED_DATE(end),
          frequency: settings.output.frequency,
          ...(settings.output.weekdays ? { weekdays: settings.output.weekdays } : {}),
          ...(settings.output.months ? { months: settings.output.months } : {}),
        };
      }
    }
  }
  const effectiveStart = subscriptionStart !== null && subscriptionStart.getTime() > now.getTime() ? subscriptionStart : startAt;
  const expiryBase = effectiveStart ?? now;
  const expiresAt = requestDate(errors, 'expiry_date', input.expiry_date ?? DEFAULT_EXPIRY, expiryBase, '24 hours');
  if (expiresAt !== null && expiresAt.getTime() <= expiryBase.getTime()) {
    errors.expiry_date = [effectiveStart ? 'The expiry date must be later than the start date.' : 'The expiry date must be later than now.'];
  }
  // One read for the wallet checks: the organization's active wallets in the currency, oldest first.
  const wallets = await sql<{ id: number; funded: boolean }[]>`
    select id, balance > 0 as funded from accounts
    where organization_id = ${creator.organizationId} and currency = ${input.currency} and status = 'active'
    order by created, id`;
  if (!wallets.some((wallet) => wallet.funded)) errors.currency = [`Your organization has no funded ${input.currency} wallet.`];
  const wallet = input.account === null ? wallets[0] : wallets.find((candidate) => candidate.id === input.account);
  if (!errors.currency && wallet === undefined) {
    errors.account = [`No active ${input.currency} wallet with id ${input.account} belongs to your organization.`];
  }
  if (Object.keys(errors).length > 0) throw fieldErrors(errors);

  const newRequest: NewCollectionRequest = {
    organizationId: creator.organizationId,
    author: creator.userId,
    phoneNumber: input.phonenumber,
    network: choice.network!.name,
    amount: input.amount,
    currency: input.currency,
    accountId: wallet!.id,
    firstName: input.first_name,
    lastName: input.last_name,
    reason: input.reason ?? creator.organizationName,
    metadata: input.metadata,
    successMessage: input.success_message,
    sendInstructions: input.send_instructions,
    instructions: input.instructions,
    expiresAt: expiresAt!,
    startAt: effectiveStart,
    retryIntervalSeconds: input.retry_interval_minutes === null ? null : input.retry_interval_minutes * 60,
    maxAttempts: input.max_attempts,
    subscriptionSettings,
  };
  const created = await writeOnce(sql, duplicateCheck, (tx) => insertCollectionRequestIn(tx, newRequest), (result) => ({
    type: 'collection_request',
    id: result.request.id,
  }));
  await launcher.afterCommit({ events: created.events, requests: [created.request] });
  return created;
}

export type RequestFilterValues = v.InferOutput<typeof RequestFilters>;

/** The list filters of api.md 4.3 from a query string (400 with field errors). */
export const parseRequestFilters = (searchParams: URLSearchParams): RequestFilterValues => validate(RequestFilters, queryObject(searchParams));

/** One page of an organization's requests matching the filters, newest first, with the total count (REST list and console). */
export async function listCollectionRequests(
  sql: Sql, organizationId: number, f: RequestFilterValues, page: { limit: number; offset: number },
): Promise<{ count: number; results: RequestWithContact[] }> {
  const contactFilter = f.contact_first_name !== undefined || f.contact_last_name !== undefined;
  const where = sql`
    where r.organization_id = ${organizationId}
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
    ${f.contact_last_name !== undefined ? sql`and c.last_name = ${f.contact_last_name}` : sql``}`;
  const from = contactFilter ? sql`collection_requests r join contacts c on c.id = r.contact_id` : sql`collection_requests r`;
  const columns = sql.unsafe(requestColumns('r.'));
  const [[total], rows] = await Promise.all([
    sql<{ count: number }[]>`select count(*)::int as count from ${from} ${where}`,
    sql<CollectionRequestRow[]>`select ${columns} from ${from} ${where} order by r.created desc, r.id desc limit ${page.limit} offset ${page.offset}`,
  ]);
  return { count: total?.count ?? 0, results: await withContacts(sql, rows) };
}

export const collectionRequestRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  return new Elysia({ name: 'collection-requests', prefix: '/api/collectionrequests' })
    .use(authPlugin(sql))
    .post(
      '',
      async ({ body, principal, apiVersion, duplicateCheck, set }) => {
        const created = await createCollectionRequest(deps, principal, body, duplicateCheck);
        set.status = 201;
        return collectionRequestForVersion(serializeCollectionRequest(created.request, created.contact), apiVersion);
      },
      {
        auth: true,
        body: requestSchema(CollectionRequestCreate),
        ...routeDocs({
          operationId: 'createCollectionRequest',
          summary: 'Create a collection request',
          description:
            'Asks a subscriber to pay: with `send_instructions` the subscriber is prompted (USSD/PIN) and sent instructions by SMS. ' +
            'The organization needs a funded wallet in the currency. The request runs until it is paid, fails or expires ' +
            '(`expiry_date`, 24 hours by default); every status change is a `collectionrequest.status.changed` event.',
          tags: ['Collection requests'],
          caller: 'merchant',
          responses: { 201: { description: 'The collection request.', schema: collectionRequestSchemaForVersion } },
          requestExample: { phonenumber: '+256772123456', amount: '1500', currency: 'UGX', reason: 'Invoice 1042', send_instructions: true, metadata: { invoice: '1042' } },
        }),
      },
    )
    .get(
      '',
      async ({ request, query: f, principal, apiVersion }) => {
        const { searchParams } = new URL(request.url);
        const page = parsePage(searchParams, config.pageSizeMax);
        const { count, results } = await listCollectionRequests(sql, principal.organizationId, f, page);
        const resources = results.map(({ request: row, contact }) =>
          collectionRequestForVersion(serializeCollectionRequest(row, contact), apiVersion));
        return listForVersion(pagedList(request, config.publicBaseUrl, page, count, resources), apiVersion);
      },
      {
        auth: true,
        query: listQuery(RequestFilters),
        ...routeDocs({
          operationId: 'listCollectionRequests',
          summary: 'List collection requests',
          description: 'Newest first. Filters are exact matches and combine; date filters are inclusive.',
          tags: ['Collection requests'],
          caller: 'merchant',
          responses: {
            200: { description: 'A page of collection requests.', schema: (version) => listSchemaForVersion(collectionRequestSchemaForVersion(version), version) },
          },
        }),
      },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion }) => {
        const id = parseId(params.id);
        if (id === null) throw notFound();
        const found = await findRequest(sql, id);
        const owned = ownedBy(found ? { ...found, organizationId: found.request.organizationId } : undefined, principal.organizationId);
        return collectionRequestForVersion(serializeCollectionRequest(owned.request, owned.contact), apiVersion);
      },
      {
        auth: true,
        params: PathIdParams,
        ...routeDocs({
          operationId: 'getCollectionRequest',
          summary: 'Get a collection request',
          tags: ['Collection requests'],
          caller: 'merchant',
          errors: [403, 404],
          responses: { 200: { description: 'The collection request with its contact.', schema: collectionRequestSchemaForVersion } },
        }),
      },
    );
};

