import { Elysia } from 'elysia';
import * as v from 'valibot';
import { EVENT_TYPES, serializeEvent, type EventRow } from '../domain/events';
import { eventForVersion, eventSchemaForVersion, listForVersion, listSchemaForVersion } from '../domain/versions';
import { EVENT_COLUMNS } from '../services/events';
import { authPlugin } from '../http/auth';
import { ownedBy, parseId, type AppDeps } from '../http/context';
import { notFound } from '../http/errors';
import { validate } from '../domain/input';
import { queryObject } from '../http/filters';
import { listQuery, pagedList, parsePage } from '../http/pagination';
import { PathIdParams, routeDocs } from '../http/route-docs';
import type { Sql } from '../db';

const EventFilters = v.object({
  type: v.optional(
    v.picklist(EVENT_TYPES, (issue) => `Select a valid choice. ${String(issue.input)} is not one of the available choices.`),
  ),
});

export type EventFilterValues = v.InferOutput<typeof EventFilters>;
export const parseEventFilters = (searchParams: URLSearchParams): EventFilterValues => validate(EventFilters, queryObject(searchParams));

/** One page of an organization's events (newest first) of a type or all, with the total count (REST list and console). */
export async function listEvents(
  sql: Sql, organizationId: number, filters: EventFilterValues, page: { limit: number; offset: number },
): Promise<{ count: number; rows: EventRow[] }> {
  const where = sql`where organization_id = ${organizationId}
    ${filters.type !== undefined ? sql`and type = ${filters.type}` : sql``}`;
  const [[total], rows] = await Promise.all([
    sql<{ count: number }[]>`select count(*)::int as count from events ${where}`,
    sql<EventRow[]>`select ${sql.unsafe(EVENT_COLUMNS)} from events ${where}
      order by id desc limit ${page.limit} offset ${page.offset}`,
  ]);
  return { count: total?.count ?? 0, rows };
}

export const eventRoutes = ({ sql, config }: AppDeps) =>
  new Elysia({ name: 'events', prefix: '/api/events' })
    .use(authPlugin(sql))
    .get(
      '',
      async ({ request, query: filters, principal, apiVersion }) => {
        const { searchParams } = new URL(request.url);
        const page = parsePage(searchParams, config.pageSizeMax);
        const { count, rows } = await listEvents(sql, principal.organizationId, filters, page);
        const events = rows.map((row) => eventForVersion(serializeEvent(row), apiVersion));
        return listForVersion(pagedList(request, config.publicBaseUrl, page, count, events), apiVersion);
      },
      {
        auth: true,
        query: listQuery(EventFilters),
        ...routeDocs({
          operationId: 'listEvents',
          summary: 'List events',
          description: 'Newest first; events are kept at least 30 days.',
          tags: ['Events'],
          caller: 'merchant',
          responses: { 200: { description: 'A page of events.', schema: (version) => listSchemaForVersion(eventSchemaForVersion(version), version) } },
        }),
      },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion }) => {
        const id = parseId(params.id);
        if (id === null) throw notFound();
        const [row] = await sql<EventRow[]>`select ${sql.unsafe(EVENT_COLUMNS)} from events where id = ${id}`;
        return eventForVersion(serializeEvent(ownedBy(row, principal.organizationId)), apiVersion);
      },
      {
        auth: true,
        params: PathIdParams,
        ...routeDocs({
          operationId: 'getEvent',
          summary: 'Get an event',
          tags: ['Events'],
          caller: 'merchant',
          errors: [403, 404],
          responses: { 200: { description: 'The event.', schema: eventSchemaForVersion } },
        }),
      },
    );
