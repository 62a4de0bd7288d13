/** Contacts: the list with the API's filters, a contact's page, and the create form with instant verification. */
import { Elysia } from 'elysia';
import { validate } from '../../domain/input';
import type { AppDeps } from '../../http/context';
import { findApiError } from '../../http/errors';
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
  checkbox,
  details,
  formErrors,
  givenFields,
  input,
  layout,
  notice,
  postForm,
  sectionFrame,
  select,
  when,
  type FieldErrors,
  type Values,
} from '../layout';
import { dateFilters, listPage, textFilter } from '../list-page';
import { allows, consoleSessionPlugin } from '../session';
import { DONE_NOTICES, ownedId, ownedOrMissing } from './common';

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
  const frame = sectionFrame(config.sandbox, 'contacts');

  const contactList = listPage(config, {
    path: '/console/contacts',
    section: 'contacts',
    title: 'Contacts',
    filters: {
      schema: ContactFilters,
      fields: [
        textFilter('first_name', 'First name'),
        textFilter('last_name', 'Last name'),
        textFilter('email', 'Email'),
        textFilter('phone_number', 'Phone number', { inputmode: 'tel' }),
        dateFilters('created'),
      ],
    },
    page: (session, filters, page) => listContacts(sql, session.organizationId, filters, page),
    columns: [
      ['Contact', (contact) => html`<a href="/console/contacts/${contact.id}">#${contact.id}</a>`],
      ['Name', (contact) => html`<span class="contact-name">${contact.firstName} ${contact.lastName}</span>`],
      ['Number', (contact) => contact.phoneNumber],
      ['Email', (contact) => contact.email ?? ''],
      ['Type', (contact) => contact.type],
      ['Created', (contact) => when(contact.created)],
    ],
    empty: 'No contacts match.',
    above: ({ session }) =>
      allows(session, 'collect') ? html`<p><a href="/console/contacts/new">New contact</a></p>` : '',
  });

  return new Elysia({ name: 'console-contacts' })
    .use(consoleSessionPlugin(deps))
    .get('/console/contacts', ({ request, session }) => contactList({ request, session }), { page: 'view' })
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
