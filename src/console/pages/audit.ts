/**
 * The audit trail: every change made through the API or the console, searched by object, user,
 * action and period (UTC), newest first and paged (the same `listAuditEvents` as
 * GET /api/audit-events). Each entry shows who, with which key, through what, from where, and the
 * changed fields before and after.
 */
import { Elysia } from 'elysia';
import { AUDITED_OBJECT_TYPES, type AuditChange, type AuditEventRow } from '../../domain/audit';
import type { AppDeps } from '../../http/context';
import { parseFilters } from '../../http/filters';
import { parsePage } from '../../http/pagination';
import { AuditFilters, listAuditEvents } from '../../services/merchants/audit';
import type { ConsoleSession } from '../../services/merchants/console-sessions';
import { listUsers } from '../../services/merchants/users';
import { html, type Child, type Html } from '../html';
import { htmlResponse } from '../http';
import {
  anyFilter,
  dateRangeInputs,
  filterForm,
  input,
  layout,
  pager,
  queryValues,
  select,
  table,
  when,
} from '../layout';
import { consoleSessionPlugin } from '../session';
import { nonEmptyQuery } from './common';

const FILTERS = ['object_type', 'object_id', 'user', 'action', 'created_after', 'created_before'] as const;

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

/** The entry's who, through what, what and how, as the table's cells. */
function entryCells(row: AuditEventRow): Child[] {
  const objectHistory = `/console/audit?object_type=${row.objectType}&object_id=${row.objectId}`;
  return [
    when(row.created),
    html`${row.userName ?? 'user'} <span class="muted">#${row.userId ?? '—'}</span>`,
    row.channel === 'api'
      ? html`API key #${row.apiKeyId} <span class="muted">${row.apiKeyPrefix ?? ''}…</span>`
      : html`console`,
    row.clientAddress ?? html`<span class="muted">unknown</span>`,
    html`<code>${row.action}</code>`,
    html`<a href="${objectHistory}" \
title="This object's history">${row.objectType.replaceAll('_', ' ')} #${row.objectId}</a>`,
    changeList(row.change),
  ];
}

export const auditRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const frame = (session: ConsoleSession, title: string) => ({
    session,
    sandbox: config.sandbox,
    section: 'audit' as const,
    title,
  });

  return new Elysia({ name: 'console-audit' }).use(consoleSessionPlugin(deps)).get(
    '/console/audit',
    async ({ request, session }) => {
      const searchParams = nonEmptyQuery(request);
      const page = parsePage(searchParams, config.pageSizeMax);
      const [{ count, rows }, users] = await Promise.all([
        listAuditEvents(sql, session.organizationId, parseFilters(AuditFilters, searchParams), page),
        listUsers(sql, session.organizationId),
      ]);
      const values = queryValues(searchParams);
      const filters = html`
${select(
  'object_type',
  'Object type',
  AUDITED_OBJECT_TYPES.map((type) => [type, type.replaceAll('_', ' ')] as const),
  values,
  {},
  true,
)}
${input('object_id', 'Object id', values, {}, { inputmode: 'numeric' })}
${select(
  'user',
  'User',
  users.map((user) => [String(user.id), `${user.name} (#${user.id})`] as const),
  values,
  {},
  true,
)}
${input('action', 'Action', values, {}, { placeholder: 'POST /api/payments' })}
${dateRangeInputs(values)}`;
      const content = html`<p class="muted">Every change made through the API or this console, recorded with the \
change \
itself. Times are UTC.</p>
${filterForm('/console/audit', filters, anyFilter(searchParams, FILTERS))}
${table(
  ['When', 'Who', 'Key', 'Address', 'Action', 'Object', 'Change'],
  rows.map(entryCells),
  'No audit entries match.',
)}
${pager('/console/audit', searchParams, page, count)}`;
      return htmlResponse(layout(frame(session, 'Audit trail'), content));
    },
    { page: 'audit' },
  );
};
