import { Elysia } from 'elysia';
import * as v from 'valibot';
import { EVENT_TYPES, type EventType } from '../domain/events';
import { checkCallbackUrl } from '../domain/urls';
import { listForVersion, listSchemaForVersion } from '../domain/versions';
import { DeliverySchema, WebhookSchema, serializeDelivery, serializeWebhook, type DeliveryRow, type WebhookRow } from '../domain/webhooks';
import {
  createWebhook, deleteWebhook, findDelivery, findWebhook, findWebhookEvenIfDeleted, listDeliveries,
  updateWebhook, WEBHOOK_COLUMNS,
} from '../services/webhooks';
import { recordRedelivery } from '../services/events';
import { writeOnce, type DuplicateCheck } from '../services/duplicate-checks';
import { authPlugin } from '../http/auth';
import { MANAGE_ORGANIZATION } from '../domain/permissions';
import { ownedBy, parseId, type AppDeps } from '../http/context';
import { ApiError, notFound } from '../http/errors';
import { fieldErrors } from '../domain/errors';
import { REQUIRED, text } from '../domain/input';
import { listQuery, pagedList, parsePage } from '../http/pagination';
import { PathIdParams, requestSchema, routeDocs, type RouteOperation } from '../http/route-docs';

const CHOICE = (issue: { input: unknown }) => `Select a valid choice. ${String(issue.input)} is not one of the available choices.`;
const eventChoice = v.picklist(EVENT_TYPES, CHOICE);
const INTEGER = 'A valid integer is required.';
const integerId = v.pipe(
  v.union([v.string(), v.number()], INTEGER),
  v.transform(String),
  v.regex(/^\d{1,15}$/, INTEGER),
  v.transform(Number),
);

/**
 * A webhook target: an HTTPS URL (always, sandbox included), stored normalised. Outside sandbox
 * mode a target naming a loopback or private address is refused here; names are checked again on
 * every delivery, after DNS.
 */
const target = (sandbox: boolean) =>
  v.pipe(
    text(2000),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const checked = checkCallbackUrl(dataset.value, { sandbox, allowHttp: false, subject: 'Webhook targets' });
      if (checked.problem === undefined) return checked.url;
      addIssue({ message: checked.problem });
      return NEVER;
    }),
  );

/** What creating (and replacing) or changing a webhook takes; the console validates with the same schemas. */
export const webhookSchemas = (sandbox: boolean) => ({
  create: v.object({ event: eventChoice, target: target(sandbox) }, REQUIRED),
  update: v.object({ event: v.optional(eventChoice), target: v.optional(target(sandbox)) }),
});

const WebhookFilters = v.object({
  user: v.optional(integerId),
  event: v.optional(eventChoice),
});
const DeliveryFilters = v.object({ event: v.optional(v.pipe(integerId, v.description('An event id.'))) });
const Redelivery = v.object({ event: v.pipe(integerId, v.description('The event to deliver again: an event of the webhook\'s type.')) }, REQUIRED);

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

/**
 * A fresh delivery of one of the organization's events to one of its webhooks, as the REST route
 * and the console both start it (api.md 6.2, manual redelivery): 400 when the event does not exist
 * in the organization or is of another type. The delivery row (claiming the Duplicate-Check-Key)
 * is the outbox: its workflow starts after the commit, or from the outbox sweep if this process
 * dies first.
 */
export async function redeliverEvent(
  { sql, launcher }: Pick<AppDeps, 'sql' | 'launcher'>,
  webhook: WebhookRow,
  eventId: number,
  duplicateCheck: DuplicateCheck | null,
): Promise<DeliveryRow> {
  const organizationId = webhook.organizationId;
  const [event] = await sql<{ type: EventType }[]>`
    select type from events where id = ${eventId} and organization_id = ${organizationId}`;
  if (!event) throw fieldErrors({ event: [`Invalid pk "${eventId}" - object does not exist.`] });
  if (event.type !== webhook.event) {
    throw fieldErrors({ event: [`Event ${eventId} is a ${event.type} event; this webhook receives ${webhook.event} events.`] });
  }
  const pending = await writeOnce(
    sql, duplicateCheck,
    (tx) => recordRedelivery(tx, { organizationId, webhookId: webhook.id, eventId, eventType: event.type }),
    (row) => ({ type: 'webhook_delivery', id: row.id }),
  );
  await launcher.afterCommit({ deliveries: [pending] });
  const deliveryId = pending.id;
  const delivery = await findDelivery(sql, deliveryId);
  if (!delivery) throw new Error(`delivery ${deliveryId} vanished after it was opened`);
  return delivery;
}

export const webhookRoutes = ({ sql, config, launcher }: AppDeps) => {
  const schemas = webhookSchemas(config.sandbox);
  const manage = { permission: MANAGE_ORGANIZATION } as const;

  async function ownedWebhook(rawId: string, organizationId: number): Promise<WebhookRow> {
    const id = parseId(rawId);
    if (id === null) throw notFound();
    return ownedBy(await findWebhook(sql, id), organizationId);
  }

  return new Elysia({ name: 'webhooks', prefix: '/api/webhooks' })
    .use(authPlugin(sql))
    .post(
      '',
      async ({ body: input, principal, duplicateCheck, set }) => {
        const webhook = await writeOnce(
          sql, duplicateCheck,
          (tx) => createWebhook(tx, { organizationId: principal.organizationId, userId: principal.userId, ...input }),
          (created) => ({ type: 'webhook', id: created.id }),
        );
        set.status = 201;
        return serializeWebhook(webhook);
      },
      {
        ...manage,
        body: requestSchema(schemas.create),
        ...webhookDocs({
          operationId: 'createWebhook',
          summary: 'Create a webhook',
          description: 'Every future event of the type is POSTed to the HTTPS target, signed (Standard Webhooks), with retries.',
          responses: { 201: { description: 'The webhook.', schema: WebhookSchema } },
          requestExample: hookExample,
        }),
      },
    )
    .get(
      '',
      async ({ request, query: filters, principal, apiVersion }) => {
        const { searchParams } = new URL(request.url);
        const page = parsePage(searchParams, config.pageSizeMax);
        const where = sql`where organization_id = ${principal.organizationId} and deleted_at is null and payment_id is null
          ${filters.user !== undefined ? sql`and user_id = ${filters.user}` : sql``}
          ${filters.event !== undefined ? sql`and event = ${filters.event}` : sql``}`;
        const [[total], rows] = await Promise.all([
          sql<{ count: number }[]>`select count(*)::int as count from webhooks ${where}`,
          sql<WebhookRow[]>`select ${sql.unsafe(WEBHOOK_COLUMNS)} from webhooks ${where}
            order by id desc limit ${page.limit} offset ${page.offset}`,
        ]);
        return listForVersion(pagedList(request, config.publicBaseUrl, page, total?.count ?? 0, rows.map(serializeWebhook)), apiVersion);
      },
      {
        ...manage,
        query: listQuery(WebhookFilters),
        ...webhookDocs({
          operationId: 'listWebhooks',
          summary: 'List webhooks',
          responses: { 200: { description: 'A page of webhooks.', schema: (version) => listSchemaForVersion(WebhookSchema, version) } },
        }),
      },
    )
    .get('/:id', async ({ params, principal }) => serializeWebhook(await ownedWebhook(params.id, principal.organizationId)), {
      ...manage,
      params: PathIdParams,
      ...webhookDocs({
        operationId: 'getWebhook',
        summary: 'Get a webhook',
        errors: [404],
        responses: { 200: { description: 'The webhook.', schema: WebhookSchema } },
      }),
    })
    .patch(
      '/:id',
      async ({ params, principal, body: changes, duplicateCheck }) => {
        // The body was read (415, 413) and validated (400) before the webhook is looked up.
        const webhook = await ownedWebhook(params.id, principal.organizationId);
        const updated = await writeOnce(sql, duplicateCheck, async (tx) =>
          changes.event === undefined && changes.target === undefined ? webhook : await updateWebhook(tx, webhook.id, changes));
        return serializeWebhook(updated ?? notFoundAfterAll());
      },
      {
        ...manage,
        params: PathIdParams,
        body: requestSchema(schemas.update),
        ...webhookDocs({
          operationId: 'updateWebhook',
          summary: 'Change a webhook',
          description: 'Changes `event` and/or `target`; read-only fields are ignored.',
          errors: [404],
          responses: { 200: { description: 'The webhook.', schema: WebhookSchema } },
          requestExample: { target: 'https://acme.example/hooks/v2' },
        }),
      },
    )
    .put(
      '/:id',
      async ({ params, principal, body: replacement, duplicateCheck }) => {
        const webhook = await ownedWebhook(params.id, principal.organizationId);
        const updated = await writeOnce(sql, duplicateCheck, (tx) => updateWebhook(tx, webhook.id, replacement));
        return serializeWebhook(updated ?? notFoundAfterAll());
      },
      {
        ...manage,
        params: PathIdParams,
        body: requestSchema(schemas.create),
        ...webhookDocs({
          operationId: 'replaceWebhook',
          summary: 'Replace a webhook',
          description: 'Sets `event` and `target` (both required); read-only fields are ignored.',
          errors: [404],
          responses: { 200: { description: 'The webhook.', schema: WebhookSchema } },
          requestExample: hookExample,
        }),
      },
    )
    .delete(
      '/:id',
      async ({ params, principal, duplicateCheck }) => {
        const webhook = await ownedWebhook(params.id, principal.organizationId);
        await writeOnce(sql, duplicateCheck, (tx) => deleteWebhook(tx, webhook.id, 'deleted'));
        return new Response(null, { status: 204 });
      },
      {
        ...manage,
        params: PathIdParams,
        ...webhookDocs({
          operationId: 'deleteWebhook',
          summary: 'Delete a webhook',
          description: 'No further deliveries; its delivery log stays readable.',
          errors: [404],
          responses: { 204: { description: 'Deleted.' } },
        }),
      },
    )
    .get(
      '/:id/deliveries',
      async ({ params, principal, request, query: filters, apiVersion }) => {
        const id = parseId(params.id);
        if (id === null) throw notFound();
        // The log outlives the hook: a webhook deleted by a 410 still shows why.
        const webhook = ownedBy(await findWebhookEvenIfDeleted(sql, id), principal.organizationId);
        const { searchParams } = new URL(request.url);
        const page = parsePage(searchParams, config.pageSizeMax);
        const { count, deliveries } = await listDeliveries(sql, webhook.id, { eventId: filters.event }, page);
        return listForVersion(pagedList(request, config.publicBaseUrl, page, count, deliveries.map(serializeDelivery)), apiVersion);
      },
      {
        ...manage,
        params: PathIdParams,
        query: listQuery(DeliveryFilters),
        ...webhookDocs({
          operationId: 'listWebhookDeliveries',
          summary: 'List a webhook\'s deliveries (the attempt log)',
          description: 'Newest delivery first, each with its attempts; also for deleted webhooks.',
          errors: [404],
          responses: { 200: { description: 'A page of deliveries.', schema: (version) => listSchemaForVersion(DeliverySchema, version) } },
        }),
      },
    )
    .post(
      '/:id/deliveries',
      async ({ params, principal, body: redelivery, duplicateCheck, set }) => {
        const webhook = await ownedWebhook(params.id, principal.organizationId);
        const delivery = await redeliverEvent({ sql, launcher }, webhook, redelivery.event, duplicateCheck);
        set.status = 202;
        return serializeDelivery(delivery);
      },
      {
        ...manage,
        params: PathIdParams,
        body: requestSchema(Redelivery),
        ...webhookDocs({
          operationId: 'redeliverWebhookEvent',
          summary: 'Deliver an event again',
          description: 'Starts a fresh delivery (its own 10 attempts) of an event of the webhook\'s type; 503 when it could not be started (ask again).',
          errors: [404],
          responses: { 202: { description: 'The new delivery, `pending`.', schema: DeliverySchema } },
          requestExample: { event: 1234 },
        }),
      },
    );
};

/** The webhook was deleted between the ownership check and the write. */
function notFoundAfterAll(): never {
  throw notFound();
}
