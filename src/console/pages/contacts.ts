/** Contacts: the list with the API's filters, a contact's page, and the create form with instant verification. */
import { Elysia } from 'elysia';
import { validate } from '../../domain/input';
import type { AppDeps } from '../../http/context';
import { findApiError } from '../../http/errors';
import { parseFilters } from '../../http/filters';
import { parsePage } from '../../http/pagination';
import { CONTACT_TYPES } from '../../domain/contacts';
import {
  ContactCreate,
  ContactFilters,
  createContact,
  listContacts,
  readContact,
} from '../../services/collections/contacts';
import type { ConsoleSession } from '../../services/merchants/console-sessions';
import { html, type Html } from '../html';
import { htmlResponse, redirect } from '../http';
import {
  anyFilter,
  checkbox,
  dateRangeInputs,
  details,
  filterForm,
  formErrors,
  givenFields,
  input,
  layout,
  notice,
  pager,
  postForm,
  queryValues,
  select,
  table,
  when,
  type FieldErrors,
  type Values,
} from '../layout';
import { allows, consoleSessionPlugin } from '../session';
import { DONE_NOTICES, nonEmptyQuery, ownedId, ownedOrMissing } from './common';

const FILTERS = ['first_name', 'last_name', 'email', 'phone_number', 'created_after', 'created_before'] as const;
const FORM_FIELDS = ['first_name', 'last_name', 'phone_number', 'email', 'type', 'verify'];

function createForm(session: ConsoleSession, values: Values, errors: FieldErrors): Html {
  return html`${formErrors(errors, FORM_FIELDS)}${postForm(
    session,
    '/console/contacts',
    html`
${input('first_name', 'First name', values, errors, { required: true })}
${input('last_name', 'Last name', values, errors, { required: true })}
${input('phone_number', 'Phone number', values, errors, {
  required: true,
  inputmode: 'tel',
  hint: 'International format, for example +256772123456.',
})}
${input('email', 'Email', values, errors, { type: 'email' })}
${select(
  'type',
  'Type',
  CONTACT_TYPES.map((type) => [type, type] as const),
  { type: 'other', ...values },
  errors,
)}
${checkbox(
  'verify',
  'Verify the name with the network now',
  values.verify !== 'false',
  'Instant verification (metadata sync=1): the network tells the registered name, and a match score is kept.',
)}
<div class="actions"><button type="submit" class="primary">Create contact</button></div>`,
  )}`;
}

export const contactRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const frame = (session: ConsoleSession, title: string) => ({
    session,
    sandbox: config.sandbox,
    section: 'contacts' as const,
    title,
  });

  return new Elysia({ name: 'console-contacts' })
    .use(consoleSessionPlugin(deps))
    .get(
      '/console/contacts',
      async ({ request, session }) => {
        const searchParams = nonEmptyQuery(request);
        const page = parsePage(searchParams, config.pageSizeMax);
        const { count, rows } = await listContacts(
          sql,
          session.organizationId,
          parseFilters(ContactFilters, searchParams),
          page,
        );
        const values = queryValues(searchParams);
        const content = html`${
          allows(session, 'collect')
            ? html`<p><a href="/console/contacts/new">New \
contact</a></p>`
            : ''
        }
${filterForm(
  '/console/contacts',
  html`
${input('first_name', 'First name', values, {})}${input('last_name', 'Last name', values, {})}
${input('email', 'Email', values, {})}${input('phone_number', 'Phone number', values, {}, { inputmode: 'tel' })}
${dateRangeInputs(values)}`,
  anyFilter(searchParams, FILTERS),
)}
${table(
  ['Contact', 'Name', 'Number', 'Email', 'Type', 'Created'],
  rows.map((row) => [
    html`<a href="/console/contacts/${row.id}">#${row.id}</a>`,
    html`<span class="contact-name">${row.firstName} ${row.lastName}</span>`,
    row.phoneNumber,
    row.email ?? '',
    row.type,
    when(row.created),
  ]),
  'No contacts match.',
)}
${pager('/console/contacts', searchParams, page, count)}`;
        return htmlResponse(layout(frame(session, 'Contacts'), content));
      },
      { page: 'view' },
    )
    .get(
      '/console/contacts/new',
      ({ session }) => htmlResponse(layout(frame(session, 'New contact'), createForm(session, {}, {}))),
      { page: 'collect' },
    )
    .post(
      '/console/contacts',
      async ({ session, form }) => {
        const { verify, ...fields } = givenFields(form);
        // The API's instant verification: metadata sync=1 (docs/api.md#contacts).
        const body = verify === 'true' ? { ...fields, metadata: { sync: '1' } } : fields;
        try {
          const contact = await createContact(deps, session, validate(ContactCreate, body), null);
          return redirect(`/console/contacts/${contact.id}?done=contact-created`);
        } catch (error) {
          const apiError = findApiError(error);
          if (apiError?.status !== 400) throw error;
          return htmlResponse(
            layout(
              frame(session, 'New contact'),
              createForm(session, { ...form, verify: verify ?? 'false' }, apiError.body as FieldErrors),
            ),
            400,
          );
        }
      },
      { action: 'collect', parse: 'none' },
    )
    .get(
      '/console/contacts/:id',
      async ({ params, request, session }) => {
        const contact = await ownedOrMissing(
          readContact(deps, session.organizationId, ownedId(params.id, 'Contact'), null),
          'No such contact in your organization.',
        );
        const done = DONE_NOTICES[new URL(request.url).searchParams.get('done') ?? ''];
        const verification = contact.verification;
        const content = html`${done ? notice(done) : ''}
<section class="card">${details([
          ['Name', html`<span class="contact-name">${contact.firstName} ${contact.lastName}</span>`],
          ['Number', contact.phoneNumber],
          ['Email', contact.email],
          ['Type', contact.type],
          ['Status', contact.status],
          ['Created', when(contact.created)],
          ['Metadata', contact.metadata ? html`<pre>${JSON.stringify(contact.metadata, null, 2)}</pre>` : null],
        ])}</section>
<section class="card"><h2>Verification</h2>${
          verification
            ? details([
                ['Number supported', verification.phoneIsSupported],
                ['Registered for mobile money', verification.phoneIsMmRegistered],
                ['Name on the network', verification.nameOnNetwork],
                ['Name check', verification.nameMatchesNetworkStatus],
                [
                  'Match score',
                  verification.nameMatchesNetworkScore === null
                    ? null
                    : `${verification.nameMatchesNetworkScore} / 100`,
                ],
                ['Network', verification.networkName],
                [
                  'National id',
                  verification.nationalId === null
                    ? null
                    : `${verification.nationalId} (${verification.nationalIdType ?? ''})`,
                ],
              ])
            : html`<p class="empty">Not verified.</p>`
        }</section>`;
        return htmlResponse(layout(frame(session, `Contact #${contact.id}`), content));
      },
      { page: 'view' },
    );
};
