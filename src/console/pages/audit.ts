/**
 * The audit trail: every change made through the API or the console, searched by object, user,
 * action and period (UTC), newest first and paged (the same `listAuditEvents` as
 * GET /api/audit-events). Each entry shows who, with which key, through what, from where, and the
 * changed fields before and after.
 */
import { Elysia } from 'elysia';
import { AUDITED_OBJECT_TYPES, type AuditChange, type AuditEventRow } from '../../domain/audit';
import type { AppDeps } from '../../http/context';
import { AuditFilters, listAuditEvents } from '../../services/merchants/audit';
import { listUsers } from '../../services/merchants/users';
import { html, type Html } from '../html';
import { when } from '../layout';
import { choicesOf, dateFilters, listPage, selectFilter, spaced, textFilter, type Column } from '../list-page';
import { consoleSessionPlugin } from '../session';

/** A value of a change as JSON text: `null`, `"text"`, `12`, `{...}`. */
const shown = (value: unknown): string => (value === undefined ? '—' : JSON.stringify(value));

/**
 * Each changed field on its line: `field: before → after` (only the new value for a creation, the old one for a
 * deletion).
 */
function changeList({ before, after }: AuditChange): Html {
  const fields = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])];
  return html`<ul class="changes">${fields.map((field) => {
    const value =
      before === null
        ? shown(after?.[field])
        : after === null
          ? `${shown(before[field])} (deleted)`
          : `${shown(before[field])} → ${shown(after[field])}`;
    return html`<li><code>${field}</code>: ${value}</li>`;
  })}</ul>`;
}

/** An entry's when, who, through what, from where, what and how. */
const COLUMNS: readonly Column<AuditEventRow>[] = [
  ['When', (entry) => when(entry.created)],
  ['Who', (entry) => html`${entry.userName ?? 'user'} <span class="muted">#${entry.userId ?? '—'}</span>`],
  [
    'Key',
    (entry) =>
      entry.channel === 'api'
        ? html`API key #${entry.apiKeyId} <span class="muted">${entry.apiKeyPrefix ?? ''}…</span>`
        : html`console`,
  ],
  ['Address', (entry) => entry.clientAddress ?? html`<span class="muted">unknown</span>`],
  ['Action', (entry) => html`<code>${entry.action}</code>`],
  [
    'Object',
    (entry) => html`<a href="${`/console/audit?object_type=${entry.objectType}&object_id=${entry.objectId}`}" \
title="This object's history">${spaced(entry.objectType)} #${entry.objectId}</a>`,
  ],
  ['Change', (entry) => changeList(entry.change)],
];

export const auditRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const auditList = listPage(config, {
    path: '/console/audit',
    section: 'audit',
    title: 'Audit trail',
    filters: {
      schema: AuditFilters,
      fields: [
        selectFilter('object_type', 'Object type', choicesOf(AUDITED_OBJECT_TYPES, spaced)),
        textFilter('object_id', 'Object id', { inputmode: 'numeric' }),
        selectFilter('user', 'User', async (session) =>
          (await listUsers(sql, session.organizationId)).map(
            (user) => [String(user.id), `${user.name} (#${user.id})`] as const,
          ),
        ),
        textFilter('action', 'Action', { placeholder: 'POST /api/payments' }),
        dateFilters('created'),
      ],
    },
    page: (session, filters, page) => listAuditEvents(sql, session.organizationId, filters, page),
    columns: COLUMNS,
    empty: 'No audit entries match.',
    above: () => html`<p class="muted">Every change made through the API or this console, recorded with the \
change \
itself. Times are UTC.</p>`,
  });

  return new Elysia({ name: 'console-audit' })
    .use(consoleSessionPlugin(deps))
    .get('/console/audit', ({ request, session }) => auditList({ request, session }), { page: 'audit' });
};
