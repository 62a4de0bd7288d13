/** Events: the list (filter by type, paged) and an event's page with its data as pretty-printed, escaped JSON. */
import { Elysia } from 'elysia';
import type { AppDeps } from '../../http/context';
import { EventFilters, findOwnEvent, listEvents } from '../../services/webhooks/events';
import { EVENT_TYPES, serializeEvent } from '../../domain/events';
import { eventForVersion } from '../../domain/versions';
import { CURRENT_API_VERSION } from '../../domain/versions';
import { html } from '../html';
import { htmlResponse } from '../http';
import { details, layout, sectionFrame, when } from '../layout';
import { choicesOf, listPage, selectFilter } from '../list-page';
import { consoleSessionPlugin } from '../session';
import { ownedId, ownedOrMissing } from './common';

export const eventRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const frame = sectionFrame(config.sandbox, 'events');

  const eventList = listPage(config, {
    path: '/console/events',
    section: 'events',
    title: 'Events',
    filters: { schema: EventFilters, fields: [selectFilter('type', 'Type', choicesOf(EVENT_TYPES))] },
    page: (session, filters, page) => listEvents(sql, session.organizationId, filters, page),
    columns: [
      ['Event', (event) => html`<a href="/console/events/${event.id}">#${event.id}</a>`],
      ['Type', (event) => event.type],
      ['Object', (event) => (typeof event.data.id === 'number' ? `#${event.data.id}` : '')],
      ['Created', (event) => when(event.created)],
    ],
    empty: 'No events match.',
  });

  return new Elysia({ name: 'console-events' })
    .use(consoleSessionPlugin(deps))
    .get('/console/events', ({ request, session }) => eventList({ request, session }), { page: 'view' })
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
