/**
 * The console's page frame and the small pieces pages are built from: navigation, forms whose
 * every input has a label and shows its own error next to it, tables, pagers, status badges.
 */
import type { Page } from '../http/pagination';
import { displayAmount } from '../domain/collection-requests';
import { groupedAmount } from '../domain/money';
import type { ConsoleSession } from '../services/merchants/console-sessions';
import { html, type Child, type Html } from './html';
import type { Capability } from '../domain/roles';
import { allows } from './session';

type Section =
  | 'overview'
  | 'requests'
  | 'collections'
  | 'payments'
  | 'wallets'
  | 'settlements'
  | 'contacts'
  | 'events'
  | 'webhooks'
  | 'settings'
  | 'audit'
  | 'sandbox';

type NavItem = { section: Section; href: string; label: string; capability: Capability; sandboxOnly?: boolean };

/**
 * The navigation, in order (reversals are reached from Collections, whose section they belong to);
 * a section listed twice links to the first of its pages the user's role opens.
 */
const NAVIGATION: readonly NavItem[] = [
  { section: 'overview', href: '/console', label: 'Overview', capability: 'view' },
  { section: 'requests', href: '/console/requests', label: 'Requests', capability: 'view' },
  { section: 'collections', href: '/console/collections', label: 'Collections', capability: 'view' },
  { section: 'payments', href: '/console/payments', label: 'Payments', capability: 'view' },
  { section: 'wallets', href: '/console/wallets', label: 'Wallets', capability: 'view' },
  { section: 'settlements', href: '/console/settlements', label: 'Settlement', capability: 'reconcile' },
  { section: 'contacts', href: '/console/contacts', label: 'Contacts', capability: 'view' },
  { section: 'events', href: '/console/events', label: 'Events', capability: 'view' },
  { section: 'webhooks', href: '/console/webhooks', label: 'Webhooks', capability: 'integrate' },
  { section: 'settings', href: '/console/settings', label: 'Settings', capability: 'administer' },
  { section: 'settings', href: '/console/settings/keys', label: 'Settings', capability: 'integrate' },
  { section: 'audit', href: '/console/audit', label: 'Audit trail', capability: 'audit' },
  { section: 'sandbox', href: '/console/sandbox', label: 'Sandbox', capability: 'collect', sandboxOnly: true },
];

export type Frame = { session: ConsoleSession; sandbox: boolean; section: Section; title: string };

/** The frame of every page of a section: `frame(session, title)`. */
export const sectionFrame =
  (sandbox: boolean, section: Section) =>
  (session: ConsoleSession, title: string): Frame => ({ session, sandbox, section, title });

const head = (title: string) => html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Console</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/static/console.css"><script src="/console/static/console.js" \
defer></script></head>`;

/** A whole page for a signed-in user. */
export function layout({ session, sandbox, section, title }: Frame, content: Child): Html {
  const items = NAVIGATION.filter(
    (item, index) =>
      allows(session, item.capability) &&
      (!item.sandboxOnly || sandbox) &&
      !NAVIGATION.slice(0, index).some(
        (earlier) => earlier.section === item.section && allows(session, earlier.capability),
      ),
  );
  return html`${head(title)}
<body>
<header class="top">
  <a class="brand" \
href="/console">${session.organizationName}${
    sandbox
      ? html` <span \
class="badge sandbox">sandbox</span>`
      : ''
  }</a>
  <div class="who"><span>${session.email}</span>
    <form method="post" action="/console/sign-out" class="inline">${csrfField(session)}<button type="submit" \
class="link">Sign out</button></form>
  </div>
</header>
<nav \
aria-label="Console"><ul>${items.map(
    (item) => html`<li><a \
href="${item.href}"${item.section === section ? html` aria-current="page"` : ''}>${item.label}</a></li>`,
  )}</ul></nav>
<main>
<h1>${title}</h1>
${content}
</main>
</body></html>`;
}

/** A page for someone who is not signed in (the sign-in form). */
export function bareLayout(title: string, content: Child): Html {
  return html`${head(title)}<body><main class="narrow"><h1>${title}</h1>${content}</main></body></html>`;
}

const csrfField = (session: Pick<ConsoleSession, 'csrfToken'>): Html =>
  html`<input type="hidden" name="_csrf" value="${session.csrfToken}">`;

/** A POST form carrying the session's CSRF token. */
export function postForm(
  session: Pick<ConsoleSession, 'csrfToken'>,
  action: string,
  content: Child,
  className = 'stack',
): Html {
  return html`<form method="post" action="${action}" class="${className}">${csrfField(session)}${content}</form>`;
}

/** A one-button POST form (delete, revoke, redeliver...). */
export function actionButton(
  session: Pick<ConsoleSession, 'csrfToken'>,
  action: string,
  label: string,
  hidden: Record<string, string | number> = {},
  variant = '',
): Html {
  return html`<form method="post" action="${action}" \
class="inline">${csrfField(session)}${Object.entries(hidden).map(
    ([name, value]) => html`<input type="hidden" \
name="${name}" value="${value}">`,
  )}<button type="submit" class="${variant}">${label}</button></form>`;
}

export type FieldErrors = Record<string, string[]>;
export type Values = Record<string, unknown>;

type InputOptions = {
  type?: string;
  required?: boolean;
  hint?: string;
  autocomplete?: string;
  inputmode?: string;
  placeholder?: string;
};

const fieldValue = (values: Values, name: string): string => {
  const value = values[name];
  return typeof value === 'string' || typeof value === 'number' ? String(value) : '';
};

function errorList(name: string, errors: FieldErrors): Html {
  const messages = errors[name];
  return messages && messages.length > 0
    ? html`<p class="field-error" id="error-${name}">${messages.join(' ')}</p>`
    : html``;
}

/** A labelled input with its hint and its error next to it. */
export function input(
  name: string,
  label: string,
  values: Values,
  errors: FieldErrors,
  options: InputOptions = {},
): Html {
  const invalid = (errors[name]?.length ?? 0) > 0;
  const describedBy = [options.hint ? `hint-${name}` : '', invalid ? `error-${name}` : ''].filter(Boolean).join(' ');
  return html`<div class="field${invalid ? ' invalid' : ''}">
<label for="field-${name}">${label}${options.required ? '' : html` <span class="optional">(optional)</span>`}</label>
<input id="field-${name}" name="${name}" type="${options.type ?? 'text'}" \
value="${options.type === 'password' ? '' : fieldValue(values, name)}"${options.required ? html` required` : ''}\
${options.autocomplete ? html` autocomplete="${options.autocomplete}"` : ''}\
${options.inputmode ? html` inputmode="${options.inputmode}"` : ''}\
${options.placeholder ? html` placeholder="${options.placeholder}"` : ''}\
${describedBy ? html` aria-describedby="${describedBy}"` : ''}${invalid ? html` aria-invalid="true"` : ''}>
${options.hint ? html`<p class="hint" id="hint-${name}">${options.hint}</p>` : ''}${errorList(name, errors)}
</div>`;
}

/** A list filter's date range: `<field>_after` and `<field>_before` inputs for each field (the API's filter names). */
export function dateRangeInputs(values: Values, fields: readonly ('created' | 'modified')[] = ['created']): Html {
  const label = { created: 'Created', modified: 'Modified' } as const;
  return html`${fields.flatMap((field) =>
    (['after', 'before'] as const).map((side) =>
      input(`${field}_${side}`, `${label[field]} ${side}`, values, {}, { placeholder: 'YYYY-MM-DD HH:MM' }),
    ),
  )}`;
}

/** A labelled select; `choices` are [value, label] pairs. */
export function select(
  name: string,
  label: string,
  choices: readonly (readonly [string, string])[],
  values: Values,
  errors: FieldErrors,
  optional = false,
): Html {
  const current = fieldValue(values, name);
  const invalid = (errors[name]?.length ?? 0) > 0;
  return html`<div class="field${invalid ? ' invalid' : ''}">
<label for="field-${name}">${label}${optional ? html` <span class="optional">(optional)</span>` : ''}</label>
<select id="field-${name}" name="${name}"${invalid ? html` aria-invalid="true" aria-describedby="error-${name}"` : ''}>
${
  optional
    ? html`<option \
value="">Any</option>`
    : ''
}${choices.map(
  ([value, text]) => html`<option \
value="${value}"${value === current ? html` selected` : ''}>${text}</option>`,
)}
</select>${errorList(name, errors)}
</div>`;
}

/** A labelled checkbox sending `true` when ticked. */
export function checkbox(name: string, label: string, checked: boolean, hint?: string): Html {
  return html`<div class="field check"><input id="field-${name}" name="${name}" type="checkbox" \
value="true"${checked ? html` checked` : ''}>
<label for="field-${name}">${label}</label>${hint ? html`<p class="hint">${hint}</p>` : ''}</div>`;
}

/** Errors that belong to no field of the form, above it. */
export function formErrors(errors: FieldErrors, fields: readonly string[]): Html {
  const other = Object.entries(errors).filter(([field]) => !fields.includes(field));
  if (other.length === 0) return html``;
  return html`<div class="alert error" role="alert"><ul>${other.map(
    ([field, messages]) =>
      html`<li>${field === 'non_field_errors' || field === 'detail' ? '' : `${field}: `}${messages.join(' ')}</li>`,
  )}</ul></div>`;
}

export const notice = (text: Child, kind: 'ok' | 'error' | 'info' = 'ok'): Html =>
  html`<div class="alert ${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${text}</div>`;

/** A table that scrolls sideways on a phone instead of widening the page. */
export function table(headings: readonly string[], rows: readonly Child[][], empty: string): Html {
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<div \
class="table-wrap"><table><thead><tr>${headings.map(
    (heading) => html`<th \
scope="col">${heading}</th>`,
  )}</tr></thead>
<tbody>${rows.map((row) => html`<tr>${row.map((cell) => html`<td>${cell}</td>`)}</tr>`)}</tbody></table></div>`;
}

/** "1–10 of 42" with previous/next links that keep the filters. */
export function pager(path: string, searchParams: URLSearchParams, page: Page, count: number): Html {
  const link = (offset: number) => {
    const params = new URLSearchParams(searchParams);
    params.delete('offset');
    params.delete('done');
    if (offset > 0) params.set('offset', String(offset));
    const query = params.toString();
    return `${path}${query ? `?${query}` : ''}`;
  };
  const first = count === 0 ? 0 : page.offset + 1;
  const last = Math.min(page.offset + page.limit, count);
  return html`<nav class="pager" aria-label="Pages"><span>${first}–${last} of ${count}</span>
${page.offset > 0 ? html`<a href="${link(Math.max(0, page.offset - page.limit))}" rel="prev">Previous</a>` : ''}
${page.offset + page.limit < count ? html`<a href="${link(page.offset + page.limit)}" rel="next">Next</a>` : ''}</nav>`;
}

export const badge = (status: string): Html =>
  html`<span class="badge status-${status.replace(/[^a-z_]/g, '')}">${status.replaceAll('_', ' ')}</span>`;

/** `2025-05-01 13:45:07 UTC` in a <time> element. */
export function when(date: Date | null | undefined): Html {
  if (!date) return html`<span class="muted">—</span>`;
  const iso = date.toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC</time>`;
}

/** `1,500.5 BXC`: grouped, trailing zeros off, never through a float. */
export function money(amount: string, currency: string): string {
  const [whole = '0', fraction] = displayAmount(amount).split('.');
  return `${groupedAmount(whole)}${fraction ? `.${fraction}` : ''} ${currency}`;
}

/** A wallet transaction's amount with its sign: `+1,500 BXC` in, `-250 BXC` out. */
export function signedMoney(amount: string, currency: string): Html {
  const debit = amount.startsWith('-');
  return html`<span class="amount ${debit ? 'debit' : 'credit'}">${debit ? '' : '+'}${money(amount, currency)}</span>`;
}

/** A definition list of label/value pairs. */
export function details(pairs: readonly (readonly [string, Child])[]): Html {
  return html`<dl \
class="details">${pairs.map(
    ([term, value]) =>
      html`<dt>${term}</dt><dd>${
        value ??
        html`<span \
class="muted">—</span>`
      }</dd>`,
  )}</dl>`;
}

/** A filter form (GET) whose fields keep what was asked; open when any filter is set. */
export function filterForm(path: string, content: Child, active: boolean): Html {
  return html`<details class="filters"${active ? html` open` : ''}><summary>Filters</summary>
<form method="get" action="${path}" class="grid">${content}<div class="actions"><button \
type="submit">Apply</button> <a \
href="${path}">Clear</a></div></form></details>`;
}

/** Query values as form values (the last of a repeated key wins, as the API reads them). */
export const queryValues = (searchParams: URLSearchParams): Values => Object.fromEntries(searchParams.entries());

/** Whether any of `names` is set in the query. */
export const anyFilter = (searchParams: URLSearchParams, names: readonly string[]): boolean =>
  names.some((name) => (searchParams.get(name) ?? '') !== '');

/** Drops empty form fields, so "left blank" means "not given" to the API's validation. */
export function givenFields(form: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(form).filter(([, value]) => !(typeof value === 'string' && value.trim() === '')),
  );
}
