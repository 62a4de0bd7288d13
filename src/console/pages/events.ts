/** Events: the list (filter by type, paged) and an event's page with its data as pretty-printed, escaped JSON. */
import { Elysia } from 'elysia';
import type { AppDeps } from '../../http/context';
import { EventFilters, findOwnEvent, listEvents } from '../../services/webhooks/events';
import { parseFilters } from '../../http/filters';
import { parsePage } from '../../http/pagination';
import { EVENT_TYPES, serializeEvent } from '../../domain/events';
import { eventForVersion } from '../../domain/versions';
import { CURRENT_API_VERSION } from '../../domain/versions';
import type { ConsoleSession } from '../../services/merchants/console-sessions';
import { html } from '../html';
import { htmlResponse } from '../http';
import { anyFilter, details, filterForm, layout, pager, queryValues, select, table, when } from '../layout';
import { consoleSessionPlugin } from '../session';
import { nonEmptyQuery, ownedId, ownedOrMissing } from './common';

export const eventRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const frame = (session: ConsoleSession, title: string) => ({
    session,
    sandbox: config.sandbox,
    section: 'events' as const,
    title,
  });

  return new Elysia({ name: 'console-events' })
    .use(consoleSessionPlugin(deps))
    .get(
      '/console/events',
      async ({ request, session }) => {
        const searchParams = nonEmptyQuery(request);
        const page = parsePage(searchParams, config.pageSizeMax);
        const { count, rows } = await listEvents(
          sql,
          session.organizationId,
          parseFilters(EventFilters, searchParams),
          page,
        );
        const content = html`
${filterForm(
  '/console/events',
  select(
    'type',
    'Type',
    EVENT_TYPES.map((type) => [type, type] as const),
    queryValues(searchParams),
    {},
    true,
  ),
  anyFilter(searchParams, ['type']),
)}
${table(
  ['Event', 'Type', 'Object', 'Created'],
  rows.map((row) => [
    html`<a href="/console/events/${row.id}">#${row.id}</a>`,
    row.type,
    typeof row.data.id === 'number' ? `#${row.data.id}` : '',
    when(row.created),
  ]),
  'No events match.',
)}
${pager('/console/events', searchParams, page, count)}`;
        return htmlResponse(layout(frame(session, 'Events'), content));
      },
      { page: 'view' },
    )
    .get(
      '/console/events/:id',
      async ({ params, session }) => {
        const row = await ownedOrMissing(
          findOwnEvent(sql, session.organizationId, ownedId(params.id, 'Event')),
          'No such event in your organization.',
        );
        // The event exactly as GET /api/events/<id> answers it in the current version; escaped like every other value.
        const resource = eventForVersion(serializeEvent(row), {
          version: CURRENT_API_VERSION,
          organizationName: session.organizationName,
        });
        const content = html`<section class="card">${details([
          ['Type', row.type],
          ['Created', when(row.created)],
        ])}</section>
<h2>JSON</h2><pre class="json">${JSON.stringify(resource, null, 2)}</pre>`;
        return htmlResponse(layout(frame(session, `Event #${row.id}`), content));
      },
      { page: 'view' },
    );
};
