import { Elysia } from 'elysia';
import * as v from 'valibot';
import { COLLECTION_STATUSES, type CollectionRow } from '../domain/collections';
import { withLeadingPlus } from '../domain/phone';
import { parsePositiveAmount } from '../domain/money';
import { collectionForVersion, collectionSchemaForVersion, listForVersion, listSchemaForVersion } from '../domain/versions';
import { recordCollectionMatch, recordWalletMovement } from '../telemetry/metrics';
import { ClaimError, claimCollection, claimCredit, collectionColumns, collectionResources, findCollection } from '../services/collections';
import { authPlugin } from '../http/auth';
import { ownedBy, parseId, type AppDeps } from '../http/context';
import { ApiError, notFound } from '../http/errors';
import { fieldErrors } from '../domain/errors';
import { validate } from '../domain/input';
import type { Sql } from '../db';
import { queryObject } from '../http/filters';
import { timeRange } from '../services/queries';
import { filterDate, filterPhoneNumber, filterText } from '../domain/input';
import { listQuery, pagedList, parsePage } from '../http/pagination';
import { PathIdParams, routeDocs } from '../http/route-docs';

const choice = (issue: { input: unknown }) => `Select a valid choice. ${String(issue.input)} is not one of the available choices.`;
const TRUE_VALUES = new Set(['true', 'True', 'TRUE', '1', 'yes']);

const CollectionFilters = v.object({
  amount: v.optional(v.pipe(v.string(), v.check((value) => parsePositiveAmount(value) !== null, 'A valid number is required.'))),
  currency: v.optional(v.pipe(v.string(), v.transform((value) => value.toUpperCase()))),
  phonenumber: filterPhoneNumber,
  reference: filterText,
  remote_transaction_id: filterText,
  created_after: filterDate,
  created_before: filterDate,
  modified_after: filterDate,
  modified_before: filterDate,
  status: v.optional(v.picklist(COLLECTION_STATUSES, choice)),
  network: filterText,
  contact_first_name: filterText,
  contact_last_name: filterText,
  claim: v.optional(v.pipe(v.string(), v.description(
    '`True` (also `true`, `1`, `yes`) searches unmatched collections too and assigns the one that matches `amount`, ' +
      '`remote_transaction_id` and `phonenumber` (all three required; the number in full) to the caller; the answer is then a list.',
  ))),
});

export type CollectionFilterValues = v.InferOutput<typeof CollectionFilters>;

/** The list filters of api.md 4.1 (and `claim`) from a query string (400 with field errors). */
export const parseCollectionFilters = (searchParams: URLSearchParams): CollectionFilterValues =>
  validate(CollectionFilters, queryObject(searchParams));

export const wantsClaim = (f: CollectionFilterValues): boolean => f.claim !== undefined && TRUE_VALUES.has(f.claim.trim());

/**
 * api.md 4.1 claim, as the REST route and the console make it: amount, remote transaction id and
 * number are required (400 naming the missing ones; one sent empty is sent, and matches nothing), the number must match in full (`+` added,
 * nothing else), more than one match is a 400. Returns the claimed collection (null for none) and
 * dispatches the events the claim wrote.
 */
export async function claimCollectionFor(
  { sql, launcher }: Pick<AppDeps, 'sql' | 'launcher'>,
  claimant: { organizationId: number; userId: number },
  f: Pick<CollectionFilterValues, 'amount' | 'remote_transaction_id'> & { phonenumber?: string | undefined },
  rawPhoneNumber: string,
): Promise<CollectionRow | null> {
  // A parameter sent empty counts as sent (as the provider's service answers it): the search runs and finds nothing.
  const missing = (['amount', 'remote_transaction_id', 'phonenumber'] as const).filter((field) => f[field] === undefined);
  if (missing.length > 0) {
    throw fieldErrors(Object.fromEntries(missing.map((field) => [field, ['This field is required when claiming a collection.']])));
  }
  let claimed;
  try {
    claimed = await claimCollection(sql, claimant.organizationId, claimant.userId, {
      amount: f.amount!,
      remoteTransactionId: f.remote_transaction_id!,
      // The number must match in full: `+` is added, nothing else is completed (rule 2).
      phoneNumber: withLeadingPlus(rawPhoneNumber),
    });
  } catch (error) {
    if (error instanceof ClaimError) throw new ApiError(400, { detail: error.message }, {}, { cause: error });
    throw error;
  }
  if (claimed === null) return null;
  await launcher.afterCommit({ events: claimed.events });
  const credit = claimCredit(claimed);
  if (credit !== null) {
    recordCollectionMatch('claimed');
    recordWalletMovement({ type: 'mobile_collection', direction: 'credit', ...credit });
  }
  return claimed.collection;
}

/** One page of an organization's collections matching the filters, newest first, with the total count (REST list and console). */
export async function listCollections(
  sql: Sql, organizationId: number, f: CollectionFilterValues, page: { limit: number; offset: number },
): Promise<{ count: number; rows: CollectionRow[] }> {
  const where = sql`
    where c.organization_id = ${organizationId}
    ${f.amount !== undefined ? sql`and c.amount = ${f.amount}::numeric` : sql``}
    ${f.currency !== undefined ? sql`and c.currency = ${f.currency}` : sql``}
    ${f.phonenumber !== undefined ? sql`and c.phone_number = ${f.phonenumber}` : sql``}
    ${f.reference !== undefined ? sql`and c.reference = ${f.reference}` : sql``}
    ${f.remote_transaction_id !== undefined ? sql`and c.remote_transaction_id = ${f.remote_transaction_id}` : sql``}
    ${timeRange(sql, 'c.created', f.created_after, f.created_before)}
    ${timeRange(sql, 'c.modified', f.modified_after, f.modified_before)}
    ${f.status !== undefined ? sql`and c.status = ${f.status}` : sql``}
    ${f.network !== undefined ? sql`and lower(c.network) = lower(${f.network})` : sql``}
    ${f.contact_first_name !== undefined ? sql`and ct.first_name = ${f.contact_first_name}` : sql``}
    ${f.contact_last_name !== undefined ? sql`and ct.last_name = ${f.contact_last_name}` : sql``}`;
  const from = sql`collections c left join contacts ct on ct.id = c.contact_id`;
  const [[total], rows] = await Promise.all([
    sql<{ count: number }[]>`select count(*)::int as count from ${from} ${where}`,
    sql<CollectionRow[]>`select ${sql.unsafe(collectionColumns('c.'))} from ${from} ${where}
      order by c.created desc, c.id desc limit ${page.limit} offset ${page.offset}`,
  ]);
  return { count: total?.count ?? 0, rows };
}

/** Collections (api.md 2.2, 4.1): read only; `claim` assigns an unmatched one to the caller. */
export const collectionRoutes = ({ sql, config, launcher }: AppDeps) =>
  new Elysia({ name: 'collections', prefix: '/api/collections' })
    .use(authPlugin(sql))
    .get(
      '',
      async ({ request, query: f, principal, apiVersion }) => {
        const { searchParams } = new URL(request.url);
        if (wantsClaim(f)) {
          const claimed = await claimCollectionFor({ sql, launcher }, principal, f, searchParams.get('phonenumber') ?? '');
          if (claimed === null) return [];
          // Rule 4: the answer to a claim is a list, not a single object.
          return (await collectionResources(sql, [claimed])).map((collection) => collectionForVersion(collection, apiVersion));
        }
        const page = parsePage(searchParams, config.pageSizeMax);
        const { count, rows } = await listCollections(sql, principal.organizationId, f, page);
        const results = (await collectionResources(sql, rows)).map((collection) => collectionForVersion(collection, apiVersion));
        return listForVersion(pagedList(request, config.publicBaseUrl, page, count, results), apiVersion);
      },
      {
        auth: true,
        query: listQuery(CollectionFilters),
        ...routeDocs({
          operationId: 'listCollections',
          summary: 'List or claim collections',
          description:
            'Newest first, the organization\'s collections only. With `claim`, an unmatched collection matching `amount`, ' +
            '`remote_transaction_id` and `phonenumber` is assigned to the caller and the answer is a list: the claimed collection, ' +
            'or none (400 when more than one matches or a parameter is missing).',
          tags: ['Collections'],
          caller: 'merchant',
          responses: {
            200: {
              description: 'A page of collections; a claim answers a list (the claimed collection, or none).',
              schema: (version) => v.union([listSchemaForVersion(collectionSchemaForVersion(version), version), v.array(collectionSchemaForVersion(version))]),
            },
          },
        }),
      },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion }) => {
        const id = parseId(params.id);
        if (id === null) throw notFound();
        const collection = await findCollection(sql, id);
        // An unassigned collection belongs to nobody yet: it is found by claiming, not by id.
        if (collection !== undefined && collection.organizationId === null) throw notFound();
        const owned = ownedBy(collection as (CollectionRow & { organizationId: number }) | undefined, principal.organizationId);
        const [resource] = await collectionResources(sql, [owned]);
        return collectionForVersion(resource!, apiVersion);
      },
      {
        auth: true,
        params: PathIdParams,
        ...routeDocs({
          operationId: 'getCollection',
          summary: 'Get a collection',
          tags: ['Collections'],
          caller: 'merchant',
          errors: [403, 404],
          responses: { 200: { description: 'The collection with its contact, request and transaction.', schema: collectionSchemaForVersion } },
        }),
      },
    );
