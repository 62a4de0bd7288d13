/**
 * Reversals (docs/api.md#payments-wallets-and-reversals-money-out; the request then ends `reversed`): a merchant sends
 * a successful collection's amount back to the subscriber, out of the wallet it credited; at most once per collection.
 */
import { Elysia } from 'elysia';
import { ReversalSchema, serializeReversal } from '../domain/money-out';
import { listSchemaForVersion, ownedForVersion, ownedSchemaForVersion } from '../domain/versions';
import {
  ReversalCreate,
  ReversalFilters,
  findOwnReversal,
  listReversals,
  reverseCollection,
} from '../services/payments/reversals';
import { authPlugin } from '../http/auth';
import { pathId, type AppDeps } from '../http/context';
import { listAnswer, listQuery, parsePage } from '../http/pagination';
import { PathIdParams, requestSchema, routeDocs } from '../http/route-docs';

const TAGS = ['Reversals'];
const reversalSchemaForVersion = ownedSchemaForVersion(ReversalSchema);

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  reverseCollection: routeDocs({
    operationId: 'reverseCollection',
    summary: 'Send a collection back to the subscriber',
    description: [
      "A successful collection's amount goes back to the subscriber through the network, out of the wallet it credited",
      '(400 when that wallet no longer holds it, or the collection is not successful,',
      'or it was reversed before: at most once).',
      'When the network completes it, the request the collection paid ends `reversed`',
      '(a `collectionrequest.status.changed` event);',
      'when the network fails it, the amount goes back to the wallet.',
    ].join(' '),
    tags: TAGS,
    caller: 'merchant',
    responses: { 201: { description: 'The reversal, `processing`.', schema: reversalSchemaForVersion } },
    requestExample: { collection: 812, reason: 'Order cancelled' },
  }),
  listReversals: routeDocs({
    operationId: 'listReversals',
    summary: 'List reversals',
    description: 'Newest first; filter by `state` or by `collection`.',
    tags: TAGS,
    caller: 'merchant',
    responses: {
      200: {
        description: 'A page of reversals.',
        schema: (version) => listSchemaForVersion(reversalSchemaForVersion(version), version),
      },
    },
  }),
  getReversal: routeDocs({
    operationId: 'getReversal',
    summary: 'Get a reversal',
    tags: TAGS,
    caller: 'merchant',
    errors: [403, 404],
    responses: { 200: { description: 'The reversal.', schema: reversalSchemaForVersion } },
  }),
};

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
        can: 'pay',
        body: requestSchema(ReversalCreate),
        ...DOCS.reverseCollection,
      },
    )
    .get(
      '',
      async ({ request, query: filters, principal, apiVersion }) => {
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const { count, rows } = await listReversals(sql, principal.organizationId, filters, page);
        const results = rows.map((row) => ownedForVersion(serializeReversal(row), apiVersion));
        return listAnswer(request, config.publicBaseUrl, page, { count, results }, apiVersion);
      },
      {
        can: 'view',
        query: listQuery(ReversalFilters),
        ...DOCS.listReversals,
      },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion }) => {
        return ownedForVersion(
          serializeReversal(await findOwnReversal(sql, principal.organizationId, pathId(params.id, 'Reversal'))),
          apiVersion,
        );
      },
      {
        can: 'view',
        params: PathIdParams,
        ...DOCS.getReversal,
      },
    );
};
