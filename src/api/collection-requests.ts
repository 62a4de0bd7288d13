/**
 * Collection requests (docs/api.md#collection-requests) over HTTP: the routes translate to the use cases of
 * services/collections/request-creation.ts, services/collections/request-reads.ts and
 * services/collections/subscriptions.ts.
 */
import { Elysia } from 'elysia';
import * as v from 'valibot';
import { serializeCollectionRequest } from '../domain/collection-requests';
import {
  collectionRequestForVersion,
  collectionRequestSchemaForVersion,
  listSchemaForVersion,
} from '../domain/versions';
import { CollectionRequestCreate, createCollectionRequest } from '../services/collections/request-creation';
import { RequestFilters, findOwnRequest, listCollectionRequests } from '../services/collections/request-reads';
import { cancelOwnSubscription } from '../services/collections/subscriptions';
import { authPlugin } from '../http/auth';
import { pathId, type AppDeps } from '../http/context';
import { listAnswer, listQuery, parsePage } from '../http/pagination';
import { PathIdParams, requestSchema, routeDocs } from '../http/route-docs';

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  createCollectionRequest: routeDocs({
    operationId: 'createCollectionRequest',
    summary: 'Create a collection request',
    description: [
      'Asks a subscriber to pay:',
      'with `send_instructions` the subscriber is prompted (USSD/PIN) and sent instructions by SMS.',
      'The organization needs a funded wallet in the currency.',
      'The request runs until it is paid, fails or expires (`expiry_date`, 24 hours by default);',
      'every status change is a `collectionrequest.status.changed` event.',
    ].join(' '),
    tags: ['Collection requests'],
    caller: 'merchant',
    responses: { 201: { description: 'The collection request.', schema: collectionRequestSchemaForVersion } },
    requestExample: {
      phonenumber: '+256772123456',
      amount: '1500',
      currency: 'UGX',
      reason: 'Invoice 1042',
      send_instructions: true,
      metadata: { invoice: '1042' },
    },
  }),
  listCollectionRequests: routeDocs({
    operationId: 'listCollectionRequests',
    summary: 'List collection requests',
    description: 'Newest first. Filters are exact matches and combine; date filters are inclusive.',
    tags: ['Collection requests'],
    caller: 'merchant',
    responses: {
      200: {
        description: 'A page of collection requests.',
        schema: (version) => listSchemaForVersion(collectionRequestSchemaForVersion(version), version),
      },
    },
  }),
  getCollectionRequest: routeDocs({
    operationId: 'getCollectionRequest',
    summary: 'Get a collection request',
    tags: ['Collection requests'],
    caller: 'merchant',
    errors: [403, 404],
    responses: {
      200: { description: 'The collection request with its contact.', schema: collectionRequestSchemaForVersion },
    },
  }),
  cancelSubscription: routeDocs({
    operationId: 'cancelSubscription',
    summary: "Cancel a collection request's subscription",
    description: `Stops the subscription the request carries (the request POSTed with \`subscription_settings\`): \
no later occurrence is created, and its \`subscription_settings\` gain \`cancelled_at\` (\`DD/MM/YYYY HH:MM:SS\`, \
UTC). Requests already created, and a prompt already sent, go on as any request does. Unchanged when already \
cancelled; a request that carries no subscription, or is one of its occurrences, is a 400.`,
    tags: ['Collection requests'],
    caller: 'merchant',
    errors: [403, 404],
    responses: {
      200: {
        description: 'The collection request, its subscription cancelled.',
        schema: collectionRequestSchemaForVersion,
      },
    },
  }),
};

/** The body of an action that takes no fields. */
const NoFields = requestSchema(v.object({}));

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
        can: 'collect',
        body: requestSchema(CollectionRequestCreate),
        ...DOCS.createCollectionRequest,
      },
    )
    .get(
      '',
      async ({ request, query: f, principal, apiVersion }) => {
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const { count, rows } = await listCollectionRequests(sql, principal.organizationId, f, page);
        const results = rows.map(({ request: row, contact }) =>
          collectionRequestForVersion(serializeCollectionRequest(row, contact), apiVersion),
        );
        return listAnswer(request, config.publicBaseUrl, page, { count, results }, apiVersion);
      },
      {
        can: 'view',
        query: listQuery(RequestFilters),
        ...DOCS.listCollectionRequests,
      },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion }) => {
        const owned = await findOwnRequest(sql, principal.organizationId, pathId(params.id, 'CollectionRequest'));
        return collectionRequestForVersion(serializeCollectionRequest(owned.request, owned.contact), apiVersion);
      },
      {
        can: 'view',
        params: PathIdParams,
        ...DOCS.getCollectionRequest,
      },
    )
    .post(
      '/:id/subscription/cancel',
      async ({ params, principal, apiVersion, duplicateCheck }) => {
        const requestId = pathId(params.id, 'CollectionRequest');
        const owned = await cancelOwnSubscription(deps, principal, requestId, duplicateCheck);
        return collectionRequestForVersion(serializeCollectionRequest(owned.request, owned.contact), apiVersion);
      },
      {
        can: 'collect',
        params: PathIdParams,
        body: NoFields,
        ...DOCS.cancelSubscription,
      },
    );
};
