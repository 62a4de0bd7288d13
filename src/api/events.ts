/** Events (docs/api.md#events) over HTTP: the routes translate to the use cases of services/webhooks/events.ts. */
import { Elysia } from 'elysia';
import { serializeEvent } from '../domain/events';
import { eventForVersion, eventSchemaForVersion, listSchemaForVersion } from '../domain/versions';
import { EventFilters, findOwnEvent, listEvents } from '../services/webhooks/events';
import { authPlugin } from '../http/auth';
import { pathId, type AppDeps } from '../http/context';
import { listAnswer, listQuery, parsePage } from '../http/pagination';
import { PathIdParams, routeDocs } from '../http/route-docs';

const TAGS = ['Events'];

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  listEvents: routeDocs({
    operationId: 'listEvents',
    summary: 'List events',
    description: 'Newest first; events are kept at least 30 days.',
    tags: TAGS,
    caller: 'merchant',
    responses: {
      200: {
        description: 'A page of events.',
        schema: (version) => listSchemaForVersion(eventSchemaForVersion(version), version),
      },
    },
  }),
  getEvent: routeDocs({
    operationId: 'getEvent',
    summary: 'Get an event',
    tags: TAGS,
    caller: 'merchant',
    errors: [403, 404],
    responses: { 200: { description: 'The event.', schema: eventSchemaForVersion } },
  }),
};

export const eventRoutes = ({ sql, config }: AppDeps) =>
  new Elysia({ name: 'events', prefix: '/api/events' })
    .use(authPlugin(sql))
    .get(
      '',
      async ({ request, query: filters, principal, apiVersion }) => {
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const { count, rows } = await listEvents(sql, principal.organizationId, filters, page);
        const results = rows.map((row) => eventForVersion(serializeEvent(row), apiVersion));
        return listAnswer(request, config.publicBaseUrl, page, { count, results }, apiVersion);
      },
      { can: 'view', query: listQuery(EventFilters), ...DOCS.listEvents },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion }) =>
        eventForVersion(
          serializeEvent(await findOwnEvent(sql, principal.organizationId, pathId(params.id, 'Event'))),
          apiVersion,
        ),
      {
        can: 'view',
        params: PathIdParams,
        ...DOCS.getEvent,
      },
    );
