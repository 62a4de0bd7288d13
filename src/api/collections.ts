/**
 * Collections (docs/api.md#collections) over HTTP: the routes translate to the use cases of
 * services/collections/collection-reads.ts and services/collections/collection-claims.ts.
 */
import { Elysia } from 'elysia';
import * as v from 'valibot';
import { collectionForVersion, collectionSchemaForVersion, listSchemaForVersion } from '../domain/versions';
import {
  CollectionFilters,
  collectionResources,
  findOwnCollection,
  listCollections,
  wantsClaim,
} from '../services/collections/collection-reads';
import { claimCollectionFor } from '../services/collections/collection-claims';
import { authPlugin } from '../http/auth';
import { pathId, type AppDeps } from '../http/context';
import { listAnswer, listQuery, parsePage } from '../http/pagination';
import { PathIdParams, routeDocs } from '../http/route-docs';

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  listCollections: routeDocs({
    operationId: 'listCollections',
    summary: 'List or claim collections',
    description: [
      "Newest first, the organization's collections only.",
      'With `claim`, an unmatched collection matching `amount`, `remote_transaction_id` and `phonenumber`',
      'is assigned to the caller and the answer is a list: the claimed collection,',
      'or none (400 when more than one matches or a parameter is missing).',
      'A claim moves money in: it needs the `collect` capability',
      '(403, and nothing claimed, for a key without it: `x-parameter-roles`) and counts as a write for throttling.',
    ].join(' '),
    tags: ['Collections'],
    caller: 'merchant',
    responses: {
      200: {
        description: 'A page of collections; a claim answers a list (the claimed collection, or none).',
        schema: (version) =>
          v.union([
            listSchemaForVersion(collectionSchemaForVersion(version), version),
            v.array(collectionSchemaForVersion(version)),
          ]),
      },
    },
  }),
  getCollection: routeDocs({
    operationId: 'getCollection',
    summary: 'Get a collection',
    tags: ['Collections'],
    caller: 'merchant',
    errors: [403, 404],
    responses: {
      200: {
        description: 'The collection with its contact, request and transaction.',
        schema: collectionSchemaForVersion,
      },
    },
  }),
};

/**
 * Collections: read only; `claim` assigns an unmatched one to the caller, a write the `can` macro
 * and the request policy weigh as one (src/http/query-writes.ts).
 */
export const collectionRoutes = ({ sql, config }: AppDeps) =>
  new Elysia({ name: 'collections', prefix: '/api/collections' })
    .use(authPlugin(sql))
    .get(
      '',
      async ({ request, query: f, principal, apiVersion }) => {
        const { searchParams } = new URL(request.url);
        if (wantsClaim(f)) {
          const claimed = await claimCollectionFor({ sql }, principal, f, searchParams.get('phonenumber') ?? '');
          if (claimed === null) return [];
          // Rule 4: the answer to a claim is a list, not a single object.
          return (await collectionResources(sql, [claimed])).map((collection) =>
            collectionForVersion(collection, apiVersion),
          );
        }
        const page = parsePage(searchParams, config.pageSizeMax);
        const { count, rows } = await listCollections(sql, principal.organizationId, f, page);
        const results = (await collectionResources(sql, rows)).map((collection) =>
          collectionForVersion(collection, apiVersion),
        );
        return listAnswer(request, config.publicBaseUrl, page, { count, results }, apiVersion);
      },
      {
        can: 'view',
        query: listQuery(CollectionFilters),
        ...DOCS.listCollections,
      },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion }) => {
        const owned = await findOwnCollection(sql, principal.organizationId, pathId(params.id, 'Collection'));
        const [resource] = await collectionResources(sql, [owned]);
        return collectionForVersion(resource!, apiVersion);
      },
      {
        can: 'view',
        params: PathIdParams,
        ...DOCS.getCollection,
      },
    );
