/**
 * Reversals (api.md 3 `reversed`, facts.md): a merchant sends a successful collection's amount
 * back to the subscriber, out of the wallet it credited; at most once per collection.
 */
import { Elysia } from 'elysia';
import * as v from 'valibot';
import { REVERSAL_STATES, ReversalSchema, serializeReversal } from '../domain/money-out';
import { listForVersion, listSchemaForVersion, ownedForVersion, ownedSchemaForVersion } from '../domain/versions';
import { createReversal, findReversal, listReversals, ReversalRefused } from '../services/reversals';
import { recordWalletMovement } from '../telemetry/metrics';
import type { DuplicateCheck } from '../services/duplicate-checks';
import { authPlugin } from '../http/auth';
import { ownedBy, parseId, type AppDeps } from '../http/context';
import { ApiError, notFound } from '../http/errors';
import { REQUIRED, choiceMessage, integerField, optionalText, validate } from '../domain/input';
import { queryObject } from '../http/filters';
import { listQuery, pagedList, parsePage } from '../http/pagination';
import { PathIdParams, requestSchema, routeDocs } from '../http/route-docs';

const TAGS = ['Reversals'];
const reversalSchemaForVersion = ownedSchemaForVersion(ReversalSchema);

export const ReversalCreate = v.object({ collection: integerField(1), reason: optionalText(255) }, REQUIRED);
const ReversalFilters = v.object({
  state: v.optional(v.picklist(REVERSAL_STATES, choiceMessage)),
  collection: v.optional(v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'A valid integer is required.'), v.transform(Number))),
});

/** The list's filters from a query string, as the REST list reads them (the console's list uses it too). */
export const parseReversalFilters = (searchParams: URLSearchParams): v.InferOutput<typeof ReversalFilters> =>
  validate(ReversalFilters, queryObject(searchParams));

/**
 * Reverses a collection of the organization, as the REST route, the console and the admin CLI do:
 * 400 with the reason when it cannot be (not successful, reversed before, the wallet no longer
 * holds the amount); the amount is debited at once and the reversal's workflow started.
 */
export async function reverseCollection(
  { sql, launcher }: Pick<AppDeps, 'sql' | 'launcher'>,
  requester: { organizationId: number; userId: number | null },
  input: { collection: number; reason: string | null },
  duplicateCheck: DuplicateCheck | null,
) {
  let reversal;
  try {
    reversal = await createReversal(sql, { organizationId: requester.organizationId, collectionId: input.collection, author: requester.userId, reason: input.reason }, duplicateCheck);
  } catch (error) {
    if (error instanceof ReversalRefused) throw new ApiError(400, { collection: [error.message] }, {}, { cause: error });
    throw error;
  }
  await launcher.afterCommit({ reversals: [{ id: reversal.id, organizationId: reversal.organizationId }] });
  recordWalletMovement({ type: 'reversal', direction: 'debit', currency: reversal.currency, amount: reversal.amount });
  return serializeReversal(reversal);
}

export const reversalRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  return new Elysia({ name: 'reversals', prefix: '/api/reversals' })
    .use(authPlugin(sql))
    .post(
      '',
      async ({ body: input, principal, apiVersion, duplicateCheck, set }) => {
        const reversal = await reverseCollection(deps, principal, input, duplicateCheck);
        set.status = 201;
        return ownedForVersion(reversal, apiVersion);
      },
      {
        auth: true,
        body: requestSchema(ReversalCreate),
        ...routeDocs({
          operationId: 'reverseCollection',
          summary: 'Send a collection back to the subscriber',
          description:
            'A successful collection\'s amount goes back to the subscriber through the network, out of the wallet it credited ' +
            '(400 when that wallet no longer holds it, or the collection is not successful, or it was reversed before: at most once). ' +
            'When the network completes it, the request the collection paid ends `reversed` (a `collectionrequest.status.changed` event); ' +
            'when the network fails it, the amount goes back to the wallet.',
          tags: TAGS,
          caller: 'merchant',
          responses: { 201: { description: 'The reversal, `processing`.', schema: reversalSchemaForVersion } },
          requestExample: { collection: 812, reason: 'Order cancelled' },
        }),
      },
    )
    .get(
      '',
      async ({ request, query: filters, principal, apiVersion }) => {
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const { count, rows } = await listReversals(sql, principal.organizationId, filters, page);
        const results = rows.map((row) => ownedForVersion(serializeReversal(row), apiVersion));
        return listForVersion(pagedList(request, config.publicBaseUrl, page, count, results), apiVersion);
      },
      {
        auth: true,
        query: listQuery(ReversalFilters),
        ...routeDocs({
          operationId: 'listReversals',
          summary: 'List reversals',
          description: 'Newest first; filter by `state` or by `collection`.',
          tags: TAGS,
          caller: 'merchant',
          responses: { 200: { description: 'A page of reversals.', schema: (version) => listSchemaForVersion(reversalSchemaForVersion(version), version) } },
        }),
      },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion }) => {
        const id = parseId(params.id);
        if (id === null) throw notFound();
        return ownedForVersion(serializeReversal(ownedBy(await findReversal(sql, id), principal.organizationId)), apiVersion);
      },
      {
        auth: true,
        params: PathIdParams,
        ...routeDocs({
          operationId: 'getReversal',
          summary: 'Get a reversal',
          tags: TAGS,
          caller: 'merchant',
          errors: [403, 404],
          responses: { 200: { description: 'The reversal.', schema: reversalSchemaForVersion } },
        }),
      },
    );
};
