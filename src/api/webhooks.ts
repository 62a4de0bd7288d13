/**
 * Webhooks (docs/api.md#webhooks) over HTTP: the routes translate to the use cases of services/webhooks/webhooks.ts
 * and services/webhooks/webhook-deliveries.ts.
 */
import { Elysia } from 'elysia';
import { listSchemaForVersion } from '../domain/versions';
import * as v from 'valibot';
import {
  DeliverySchema,
  RecoverySchema,
  WebhookSchema,
  serializeDelivery,
  serializeRecovery,
  serializeWebhook,
} from '../domain/webhooks';
import { DeliveryFilters, Redelivery, listDeliveries, redeliverEvent } from '../services/webhooks/webhook-deliveries';
import {
  WebhookFilters,
  changeOwnWebhook,
  createOwnWebhook,
  deleteOwnWebhook,
  findOwnWebhook,
  listWebhooks,
  webhookSchemas,
} from '../services/webhooks/webhooks';
import {
  RECOVERY_MAX_EVENTS,
  RecoveryInput,
  disableOwnWebhook,
  enableOwnWebhook,
  findRecovery,
  listRecoveries,
  recoverWebhook,
} from '../services/webhooks/webhook-recovery';
import { authPlugin } from '../http/auth';
import { pathId, type AppDeps } from '../http/context';
import { listAnswer, listQuery, parsePage } from '../http/pagination';
import { PathIdParams, requestSchema, routeDocs, type RouteOperation } from '../http/route-docs';

const digits = (description: string) =>
  v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'Not found.'), v.description(description), v.examples(['42']));
/** A recovery's path: the webhook's id and the recovery's (either not a number: 404). */
/**
 * Disabling and enabling take no fields: an empty body, any fields ignored (a body of another media type is still 415).
 */
const NoFields = requestSchema(v.object({}));
const RecoveryParams = requestSchema(
  v.object({ id: digits("The webhook's id."), recovery: digits("The recovery's id.") }),
);

/** The documentation every webhook route shares: its tag and its caller (the `integrate` roles, README.md#roles). */
const webhookDocs = (operation: Omit<RouteOperation, 'tags' | 'caller'>) =>
  routeDocs({ ...operation, tags: ['Webhooks'], caller: 'merchant' });
const hookExample = { event: 'contact.created', target: 'https://acme.example/hooks' };

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  createWebhook: webhookDocs({
    operationId: 'createWebhook',
    summary: 'Create a webhook',
    description:
      'Every future event of the type is POSTed to the HTTPS target, signed (Standard Webhooks), with retries.',
    responses: { 201: { description: 'The webhook.', schema: WebhookSchema } },
    requestExample: hookExample,
  }),
  listWebhooks: webhookDocs({
    operationId: 'listWebhooks',
    summary: 'List webhooks',
    responses: {
      200: { description: 'A page of webhooks.', schema: (version) => listSchemaForVersion(WebhookSchema, version) },
    },
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
    summary: "List a webhook's deliveries (the attempt log)",
    description: 'Newest delivery first, each with its attempts; also for deleted webhooks.',
    errors: [404],
    responses: {
      200: { description: 'A page of deliveries.', schema: (version) => listSchemaForVersion(DeliverySchema, version) },
    },
  }),
  redeliverWebhookEvent: webhookDocs({
    operationId: 'redeliverWebhookEvent',
    summary: 'Deliver an event again',
    description: [
      "Starts a fresh delivery (its own 10 attempts) of an event of the webhook's type;",
      '503 when it could not be started (ask again).',
    ].join(' '),
    errors: [404],
    responses: { 202: { description: 'The new delivery, `pending`.', schema: DeliverySchema } },
    requestExample: { event: 1234 },
  }),
  recoverWebhook: webhookDocs({
    operationId: 'recoverWebhook',
    summary: 'Deliver every event since a time again',
    description: [
      "Every event of the webhook's type created at or after `since` and before `until` (now when not given)",
      'gets a fresh delivery with its own 10 attempts, in event order.',
      `At most ${RECOVERY_MAX_EVENTS} events per recovery (a longer period: recover it in parts),`,
      'one recovery per webhook delivering at a time (400 while the previous one is),',
      'and not for a disabled webhook (enable it first).',
      'Events older than the retention period are gone and cannot be recovered.',
    ].join(' '),
    errors: [404],
    responses: { 202: { description: 'The recovery, its deliveries `pending`.', schema: RecoverySchema } },
    requestExample: { since: '2025-05-01 00:00' },
  }),
  listWebhookRecoveries: webhookDocs({
    operationId: 'listWebhookRecoveries',
    summary: "List a webhook's recoveries",
    description: 'The latest 20, newest first, each with its deliveries by status.',
    errors: [404],
    responses: { 200: { description: 'The recoveries.', schema: v.array(RecoverySchema) } },
  }),
  getWebhookRecovery: webhookDocs({
    operationId: 'getWebhookRecovery',
    summary: 'Get a recovery and its progress',
    errors: [404],
    responses: { 200: { description: 'The recovery, with its deliveries by status.', schema: RecoverySchema } },
  }),
  disableWebhook: webhookDocs({
    operationId: 'disableWebhook',
    summary: 'Disable a webhook',
    description: [
      'No deliveries are made or recorded for it until it is enabled; what was waiting for a retry is cancelled.',
      'The service does the same, with a `webhook.disabled` event,',
      'to a webhook whose target has failed every attempt for 5 days (`WEBHOOK_DISABLE_AFTER_HOURS`).',
      'Unchanged when already disabled.',
    ].join(' '),
    errors: [404],
    responses: { 200: { description: 'The webhook, `disabled`.', schema: WebhookSchema } },
  }),
  enableWebhook: webhookDocs({
    operationId: 'enableWebhook',
    summary: 'Enable a webhook',
    description:
      'It receives events from now on; recover what it missed with POST .../recover. Unchanged when already enabled.',
    errors: [404],
    responses: { 200: { description: 'The webhook, `enabled`.', schema: WebhookSchema } },
  }),
};

export const webhookRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const schemas = webhookSchemas(config.sandbox);
  const manage = { can: 'integrate' } as const;
  const page = (request: Request) => parsePage(new URL(request.url).searchParams, config.pageSizeMax);

  return (
    new Elysia({ name: 'webhooks', prefix: '/api/webhooks' })
      .use(authPlugin(sql))
      .post(
        '',
        async function create({ body, principal, duplicateCheck, set }) {
          const webhook = await createOwnWebhook(sql, principal, body, duplicateCheck);
          set.status = 201;
          return serializeWebhook(webhook);
        },
        { ...manage, body: requestSchema(schemas.create), ...DOCS.createWebhook },
      )
      .get(
        '',
        async function list({ request, query, principal, apiVersion }) {
          const window = page(request);
          const { count, rows } = await listWebhooks(sql, principal.organizationId, query, window);
          return listAnswer(
            request,
            config.publicBaseUrl,
            window,
            { count, results: rows.map(serializeWebhook) },
            apiVersion,
          );
        },
        { ...manage, query: listQuery(WebhookFilters), ...DOCS.listWebhooks },
      )
      .get(
        '/:id',
        async function read({ params, principal }) {
          return serializeWebhook(await findOwnWebhook(sql, principal.organizationId, pathId(params.id, 'Webhook')));
        },
        { ...manage, params: PathIdParams, ...DOCS.getWebhook },
      )
      // The body is read (415, 413) and validated (400) before the webhook is looked up.
      .patch(
        '/:id',
        async function change({ params, principal, body, duplicateCheck }) {
          return serializeWebhook(
            await changeOwnWebhook(sql, principal, pathId(params.id, 'Webhook'), body, duplicateCheck),
          );
        },
        { ...manage, params: PathIdParams, body: requestSchema(schemas.update), ...DOCS.updateWebhook },
      )
      .put(
        '/:id',
        async function replace({ params, principal, body, duplicateCheck }) {
          return serializeWebhook(
            await changeOwnWebhook(sql, principal, pathId(params.id, 'Webhook'), body, duplicateCheck),
          );
        },
        { ...manage, params: PathIdParams, body: requestSchema(schemas.create), ...DOCS.replaceWebhook },
      )
      .delete(
        '/:id',
        async function remove({ params, principal, duplicateCheck }) {
          await deleteOwnWebhook(deps, principal, pathId(params.id, 'Webhook'), duplicateCheck);
          return new Response(null, { status: 204 });
        },
        { ...manage, params: PathIdParams, ...DOCS.deleteWebhook },
      )
      .get(
        '/:id/deliveries',
        async function deliveryLog({ params, principal, request, query, apiVersion }) {
          // The log outlives the hook: a webhook deleted by a 410 still shows why.
          const webhook = await findOwnWebhook(sql, principal.organizationId, pathId(params.id, 'Webhook'), true);
          const window = page(request);
          const { count, rows } = await listDeliveries(sql, webhook, { eventId: query.event }, window);
          return listAnswer(
            request,
            config.publicBaseUrl,
            window,
            { count, results: rows.map(serializeDelivery) },
            apiVersion,
          );
        },
        { ...manage, params: PathIdParams, query: listQuery(DeliveryFilters), ...DOCS.listWebhookDeliveries },
      )
      .post(
        '/:id/deliveries',
        async function redeliver({ params, principal, body, duplicateCheck, set }) {
          const webhook = await findOwnWebhook(sql, principal.organizationId, pathId(params.id, 'Webhook'));
          const delivery = await redeliverEvent(deps, principal, webhook, body.event, duplicateCheck);
          set.status = 202;
          return serializeDelivery(delivery);
        },
        { ...manage, params: PathIdParams, body: requestSchema(Redelivery), ...DOCS.redeliverWebhookEvent },
      )
      .post(
        '/:id/recover',
        async function recover({ params, principal, body, duplicateCheck, set }) {
          const webhook = await findOwnWebhook(sql, principal.organizationId, pathId(params.id, 'Webhook'));
          const recovery = await recoverWebhook(deps, principal, webhook, body, duplicateCheck);
          set.status = 202;
          return serializeRecovery(recovery);
        },
        { ...manage, params: PathIdParams, body: requestSchema(RecoveryInput), ...DOCS.recoverWebhook },
      )
      .get(
        '/:id/recoveries',
        async function recoveries({ params, principal }) {
          const webhook = await findOwnWebhook(sql, principal.organizationId, pathId(params.id, 'Webhook'), true);
          return (await listRecoveries(sql, webhook.id)).map(serializeRecovery);
        },
        { ...manage, params: PathIdParams, ...DOCS.listWebhookRecoveries },
      )
      .get(
        '/:id/recoveries/:recovery',
        async function recovery({ params, principal }) {
          const webhook = await findOwnWebhook(sql, principal.organizationId, pathId(params.id, 'Webhook'), true);
          return serializeRecovery(await findRecovery(sql, webhook, pathId(params.recovery, 'Recovery')));
        },
        { ...manage, params: RecoveryParams, ...DOCS.getWebhookRecovery },
      )
      .post(
        '/:id/disable',
        async function disable({ params, principal, duplicateCheck }) {
          return serializeWebhook(
            await disableOwnWebhook(deps, principal, pathId(params.id, 'Webhook'), duplicateCheck),
          );
        },
        { ...manage, params: PathIdParams, body: NoFields, ...DOCS.disableWebhook },
      )
      .post(
        '/:id/enable',
        async function enable({ params, principal, duplicateCheck }) {
          return serializeWebhook(await enableOwnWebhook(sql, principal, pathId(params.id, 'Webhook'), duplicateCheck));
        },
        { ...manage, params: PathIdParams, body: NoFields, ...DOCS.enableWebhook },
      )
  );
};
