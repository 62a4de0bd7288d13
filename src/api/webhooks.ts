/** Webhooks (api.md 4.5, 6.2) over HTTP: the routes translate to the use cases of services/webhooks.ts. */
import { Elysia } from 'elysia';
import { listSchemaForVersion } from '../domain/versions';
import { DeliverySchema, WebhookSchema, serializeDelivery, serializeWebhook } from '../domain/webhooks';
import { MANAGE_ORGANIZATION } from '../domain/permissions';
import {
  DeliveryFilters, Redelivery, WebhookFilters, changeOwnWebhook, createOwnWebhook, deleteOwnWebhook, findOwnWebhook, listDeliveries,
  listWebhooks, redeliverEvent, webhookSchemas,
} from '../services/webhooks';
import { authPlugin } from '../http/auth';
import { pathId, type AppDeps } from '../http/context';
import { listAnswer, listQuery, parsePage } from '../http/pagination';
import { PathIdParams, requestSchema, routeDocs, type RouteOperation } from '../http/route-docs';

/** The documentation every webhook route shares: its tag, its caller and the permission's 403. */
const webhookDocs = (operation: Omit<RouteOperation, 'tags' | 'caller'>) =>
  routeDocs({
    ...operation,
    description: `${operation.description ?? ''} Needs the "${MANAGE_ORGANIZATION}" permission.`.trim(),
    tags: ['Webhooks'],
    caller: 'merchant',
    errors: [403, ...(operation.errors ?? [])],
  });
const hookExample = { event: 'contact.created', target: 'https://acme.example/hooks' };

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  createWebhook: webhookDocs({
    operationId: 'createWebhook',
    summary: 'Create a webhook',
    description: 'Every future event of the type is POSTed to the HTTPS target, signed (Standard Webhooks), with retries.',
    responses: { 201: { description: 'The webhook.', schema: WebhookSchema } },
    requestExample: hookExample,
  }),
  listWebhooks: webhookDocs({
    operationId: 'listWebhooks',
    summary: 'List webhooks',
    responses: { 200: { description: 'A page of webhooks.', schema: (version) => listSchemaForVersion(WebhookSchema, version) } },
  }),
  getWebhook: webhookDocs({
    operationId: 'getWebhook',
    summary: 'Get a webhook',
    errors: [404],
    responses: { 200: { description: 'The webhook.', schema: WebhookSchema } },
  }),
  updateWebhook: webhookDocs({
    operationId: 'updateWebhook',
    summary: 'Change a webhook',
    description: 'Changes `event` and/or `target`; read-only fields are ignored.',
    errors: [404],
    responses: { 200: { description: 'The webhook.', schema: WebhookSchema } },
    requestExample: { target: 'https://acme.example/hooks/v2' },
  }),
  replaceWebhook: webhookDocs({
    operationId: 'replaceWebhook',
    summary: 'Replace a webhook',
    description: 'Sets `event` and `target` (both required); read-only fields are ignored.',
    errors: [404],
    responses: { 200: { description: 'The webhook.', schema: WebhookSchema } },
    requestExample: hookExample,
  }),
  deleteWebhook: webhookDocs({
    operationId: 'deleteWebhook',
    summary: 'Delete a webhook',
    description: 'No further deliveries; its delivery log stays readable.',
    errors: [404],
    responses: { 204: { description: 'Deleted.' } },
  }),
  listWebhookDeliveries: webhookDocs({
    operationId: 'listWebhookDeliveries',
    summary: 'List a webhook\'s deliveries (the attempt log)',
    description: 'Newest delivery first, each with its attempts; also for deleted webhooks.',
    errors: [404],
    responses: { 200: { description: 'A page of deliveries.', schema: (version) => listSchemaForVersion(DeliverySchema, version) } },
  }),
  redeliverWebhookEvent: webhookDocs({
    operationId: 'redeliverWebhookEvent',
    summary: 'Deliver an event again',
    description: 'Starts a fresh delivery (its own 10 attempts) of an event of the webhook\'s type; 503 when it could not be started (ask again).',
    errors: [404],
    responses: { 202: { description: 'The new delivery, `pending`.', schema: DeliverySchema } },
    requestExample: { event: 1234 },
  }),
};

export const webhookRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const schemas = webhookSchemas(config.sandbox);
  const manage = { permission: MANAGE_ORGANIZATION } as const;
  const page = (request: Request) => parsePage(new URL(request.url).searchParams, config.pageSizeMax);

  return new Elysia({ name: 'webhooks', prefix: '/api/webhooks' })
    .use(authPlugin(sql))
    .post('', async function create({ body, principal, duplicateCheck, set }) {
      const webhook = await createOwnWebhook(sql, principal, body, duplicateCheck);
      set.status = 201;
      return serializeWebhook(webhook);
    }, { ...manage, body: requestSchema(schemas.create), ...DOCS.createWebhook })
    .get('', async function list({ request, query, principal, apiVersion }) {
      const window = page(request);
      const { count, rows } = await listWebhooks(sql, principal.organizationId, query, window);
      return listAnswer(request, config.publicBaseUrl, window, { count, results: rows.map(serializeWebhook) }, apiVersion);
    }, { ...manage, query: listQuery(WebhookFilters), ...DOCS.listWebhooks })
    .get('/:id', async function read({ params, principal }) {
      return serializeWebhook(await findOwnWebhook(sql, principal.organizationId, pathId(params.id)));
    }, { ...manage, params: PathIdParams, ...DOCS.getWebhook })
    // The body is read (415, 413) and validated (400) before the webhook is looked up.
    .patch('/:id', async function change({ params, principal, body, duplicateCheck }) {
      return serializeWebhook(await changeOwnWebhook(sql, principal.organizationId, pathId(params.id), body, duplicateCheck));
    }, { ...manage, params: PathIdParams, body: requestSchema(schemas.update), ...DOCS.updateWebhook })
    .put('/:id', async function replace({ params, principal, body, duplicateCheck }) {
      return serializeWebhook(await changeOwnWebhook(sql, principal.organizationId, pathId(params.id), body, duplicateCheck));
    }, { ...manage, params: PathIdParams, body: requestSchema(schemas.create), ...DOCS.replaceWebhook })
    .delete('/:id', async function remove({ params, principal, duplicateCheck }) {
      await deleteOwnWebhook(deps, principal.organizationId, pathId(params.id), duplicateCheck);
      return new Response(null, { status: 204 });
    }, { ...manage, params: PathIdParams, ...DOCS.deleteWebhook })
    .get('/:id/deliveries', async function deliveryLog({ params, principal, request, query, apiVersion }) {
      // The log outlives the hook: a webhook deleted by a 410 still shows why.
      const webhook = await findOwnWebhook(sql, principal.organizationId, pathId(params.id), true);
      const window = page(request);
      const { count, rows } = await listDeliveries(sql, webhook.id, { eventId: query.event }, window);
      return listAnswer(request, config.publicBaseUrl, window, { count, results: rows.map(serializeDelivery) }, apiVersion);
    }, { ...manage, params: PathIdParams, query: listQuery(DeliveryFilters), ...DOCS.listWebhookDeliveries })
    .post('/:id/deliveries', async function redeliver({ params, principal, body, duplicateCheck, set }) {
      const webhook = await findOwnWebhook(sql, principal.organizationId, pathId(params.id));
      const delivery = await redeliverEvent(deps, webhook, body.event, duplicateCheck);
      set.status = 202;
      return serializeDelivery(delivery);
    }, { ...manage, params: PathIdParams, body: requestSchema(Redelivery), ...DOCS.redeliverWebhookEvent });
};
