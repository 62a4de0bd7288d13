/**
 * Collection requests: the list with the API's filters and paging, the create form (through
 * `createCollectionRequest`, as POST /api/collectionrequests), and a request's page with its status
 * timeline, its collection and its workflow in the Temporal UI; the timeline updates by itself. A
 * request that carries a subscription shows it, with a button that cancels it (through
 * `cancelOwnSubscription`, as POST /api/collectionrequests/<id>/subscription/cancel).
 */
import { Elysia } from 'elysia';
import { CollectionRequestCreate, createCollectionRequest } from '../../services/collections/request-creation';
import {
  RequestFilters,
  findOwnRequest,
  listCollectionRequests,
  type RequestWithContact,
} from '../../services/collections/request-reads';
import { cancelOwnSubscription, subscriptionCancelled } from '../../services/collections/subscriptions';
import { validate } from '../../domain/input';
import type { AppDeps } from '../../http/context';
import { findApiError } from '../../http/errors';
import {
  FINAL_STATUSES,
  REQUEST_STATUSES,
  requestCode,
  type CollectionRequestRow,
} from '../../domain/collection-requests';
import { SUPPORTED_CURRENCIES } from '../../domain/money';
import { findCollection } from '../../services/collections/collection-reads';
import { requestStatusTimeline } from '../../services/webhooks/events';
import type { ConsoleSession } from '../../services/merchants/console-sessions';
import { collectionRequestWorkflowId } from '../../contracts/collection-request';
import { html, type Html } from '../html';
import { htmlResponse, redirect } from '../http';
import {
  actionButton,
  badge,
  checkbox,
  details,
  formErrors,
  givenFields,
  input,
  layout,
  money,
  notice,
  postForm,
  sectionFrame,
  select,
  when,
  type FieldErrors,
  type Values,
} from '../layout';
import { choicesOf, dateFilters, listPage, selectFilter, spaced, textFilter } from '../list-page';
import { allows, consoleSessionPlugin } from '../session';
import { DONE_NOTICES, ownedId, ownedOrMissing, timelineList, workflowUrl } from './common';

const FORM_FIELDS = [
  'phonenumber',
  'amount',
  'currency',
  'first_name',
  'last_name',
  'reason',
  'account',
  'expiry_date',
  'start_date',
  'send_instructions',
  'instructions',
  'success_message',
  'retry_interval_minutes',
  'max_attempts',
];
const currencies = choicesOf(SUPPORTED_CURRENCIES);

function createForm(session: ConsoleSession, values: Values, errors: FieldErrors): Html {
  return html`${formErrors(errors, FORM_FIELDS)}
${postForm(
  session,
  '/console/requests',
  html`
${input('phonenumber', 'Phone number', values, errors, {
  type: 'text',
  required: true,
  inputmode: 'tel',
  hint: 'International format, for example +256772123456.',
})}
${input('amount', 'Amount', values, errors, { required: true, inputmode: 'decimal', hint: 'No thousands separators.' })}
${select('currency', 'Currency', currencies, values, errors)}
${input('first_name', 'Customer first name', values, errors)}
${input('last_name', 'Customer last name', values, errors)}
${input('reason', 'Reason', values, errors, {
  hint: 'What the customer sees; keep it under 20 characters. Defaults to your organization name.',
})}
${checkbox(
  'send_instructions',
  'Prompt the customer now (USSD/PIN prompt and SMS)',
  values.send_instructions === 'true',
  'Unticked, the request waits for the customer to pay by themselves (pending).',
)}
<details><summary>More options</summary><div class="stack">
${input('account', 'Wallet id', values, errors, {
  inputmode: 'numeric',
  hint: 'Defaults to your oldest active wallet in the currency.',
})}
${input('expiry_date', 'Expires', values, errors, {
  hint: 'Default 24 hours; "tomorrow", "2 hours", "31/12/2025 13:00:00".',
})}
${input('start_date', 'Starts', values, errors, { hint: 'Leave empty to start now.' })}
${input('instructions', 'Instructions text', values, errors, { hint: 'Replaces the default SMS; "skip" sends none.' })}
${input('success_message', 'Success message', values, errors, {
  hint: 'Up to 140 characters; {amount} and {customer} are filled in.',
})}
${input('retry_interval_minutes', 'Retry interval (minutes)', values, errors, { inputmode: 'numeric' })}
${input('max_attempts', 'Retries', values, errors, { inputmode: 'numeric', hint: '0 to 3, default 3.' })}
</div></details>
<div class="actions"><button type="submit" class="primary">Create request</button></div>`,
)}`;
}

/** The part of a request's page that changes while its workflow runs (served alone for the live refresh). */
async function liveContent(deps: AppDeps, request: CollectionRequestRow): Promise<Html> {
  const timeline = await requestStatusTimeline(deps.sql, request.organizationId, request.id);
  const collection = request.collectionId === null ? undefined : await findCollection(deps.sql, request.collectionId);
  const final = (FINAL_STATUSES as readonly string[]).includes(request.status);
  return html`<div${final ? html` data-final` : ''}>
<p>Status: <strong id="request-status">${badge(request.status)}</strong> \
· ${request.attempts} prompt${request.attempts === 1 ? '' : 's'} made${
    request.errorMessage ? html` <span class="field-error">${request.errorMessage}</span>` : ''
  }
${
  final
    ? ''
    : html` <span class="muted">(updates by itself; <a \
href="/console/requests/${request.id}">reload</a>)</span>`
}</p>
<h2>Status timeline</h2>
${timelineList(timeline, 'No status change yet.')}
<h2>Collection</h2>
${
  collection
    ? details([
        ['Collection', html`<a href="/console/collections/${collection.id}">#${collection.id}</a>`],
        ['Amount', money(collection.amount, collection.currency)],
        ['Remote transaction', collection.remoteTransactionId],
        ['Status', badge(collection.status)],
        ['Received', when(collection.created)],
      ])
    : html`<p class="empty">No collection has paid this request yet.</p>`
}
</div>`;
}

/** The subscription a request carries: its schedule, and the cancel button while it runs (for who may collect). */
function subscriptionSection(session: ConsoleSession, request: CollectionRequestRow): Html | '' {
  const settings = request.subscriptionSettings as Record<string, unknown> | null;
  if (settings === null || request.subscriptionId !== null) return '';
  const cancelled = subscriptionCancelled(request);
  return html`<section class="card subscription" aria-labelledby="subscription"><h2 id="subscription">Subscription</h2>
${details([
  ['Frequency', String(settings.frequency)],
  ['From', String(settings.start_date)],
  ['Until', String(settings.end_date)],
  [
    'Status',
    cancelled
      ? html`<span id="subscription-status">cancelled on ${String(settings.cancelled_at)}</span>`
      : html`<span id="subscription-status">active</span>`,
  ],
])}
${
  !cancelled && allows(session, 'collect')
    ? html`<p class="muted">Cancelling creates no further request from this subscription; requests already made, and \
a prompt already sent, go on.</p>
${actionButton(session, `/console/requests/${request.id}/subscription/cancel`, 'Cancel subscription', {}, 'danger')}`
    : ''
}</section>`;
}

export const requestRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const frame = sectionFrame(config.sandbox, 'requests');

  const requestList = listPage(config, {
    path: '/console/requests',
    section: 'requests',
    title: 'Collection requests',
    filters: {
      schema: RequestFilters,
      fields: [
        selectFilter('status', 'Status', choicesOf(REQUEST_STATUSES, spaced)),
        selectFilter('currency', 'Currency', currencies),
        textFilter('amount', 'Amount', { inputmode: 'decimal' }),
        textFilter('phonenumber', 'Phone number', { inputmode: 'tel' }),
        textFilter('collection', 'Collection id', { inputmode: 'numeric' }),
        textFilter('remote_transaction_id', 'Remote transaction id'),
        textFilter('reason', 'Reason'),
        textFilter('contact_first_name', 'Contact first name'),
        textFilter('contact_last_name', 'Contact last name'),
        dateFilters('created', 'modified'),
      ],
    },
    page: (session, filters, page) => listCollectionRequests(sql, session.organizationId, filters, page),
    columns: [
      ['Request', ({ request }) => html`<a href="/console/requests/${request.id}">#${request.id}</a>`],
      ['Created', ({ request }) => when(request.created)],
      ['Customer', ({ contact }) => `${contact.firstName} ${contact.lastName}`],
      ['Number', ({ request }) => request.phoneNumber],
      ['Amount', ({ request }) => money(request.amount, request.currency)],
      ['Status', ({ request }) => badge(request.status)],
    ],
    empty: 'No collection requests match.',
    above: ({ session }) =>
      allows(session, 'collect') ? html`<p><a href="/console/requests/new">New collection request</a></p>` : '',
  });

  const ownedRequest = (session: ConsoleSession, rawId: string) =>
    ownedOrMissing(
      findOwnRequest(sql, session.organizationId, ownedId(rawId, 'CollectionRequest')),
      'No such collection request in your organization.',
    );

  async function detailPage(
    session: ConsoleSession,
    { request, contact }: RequestWithContact,
    state: { done?: string; error?: string },
    status = 200,
  ): Promise<Response> {
    const done = state.done ? DONE_NOTICES[state.done] : undefined;
    const content = html`${done ? notice(done) : ''}${state.error ? notice(state.error, 'error') : ''}
<section class="card">${details([
      ['Amount', money(request.amount, request.currency)],
      ['Customer', html`<a href="/console/contacts/${contact.id}">${contact.firstName} ${contact.lastName}</a>`],
      ['Number', `${request.phoneNumber} (${request.network})`],
      ['Reason', request.reason],
      ['Request code', requestCode(request)],
      ['Created', when(request.created)],
      ['Starts', request.startDate ? when(request.startDate) : 'at once'],
      ['Expires', when(request.expiryDate)],
      ['Retries', `up to ${request.maxAttempts}`],
      [
        'Subscription',
        request.subscriptionId === null
          ? null
          : html`an occurrence of <a href="/console/requests/${request.subscriptionId}">#${request.subscriptionId}</a>`,
      ],
      [
        'Workflow',
        html`<a href="${workflowUrl(config, collectionRequestWorkflowId(request.id))}" rel="noopener" \
target="_blank">${collectionRequestWorkflowId(request.id)} in the Temporal UI</a>`,
      ],
    ])}</section>
${subscriptionSection(session, request)}
<section class="card" id="live" \
data-live="/console/requests/${request.id}/live">${await liveContent(deps, request)}</section>`;
    return htmlResponse(layout(frame(session, `Collection request #${request.id}`), content), status);
  }

  return new Elysia({ name: 'console-requests' })
    .use(consoleSessionPlugin(deps))
    .get('/console/requests', ({ request, session }) => requestList({ request, session }), { page: 'view' })
    .get(
      '/console/requests/new',
      ({ session }) =>
        htmlResponse(
          layout(
            frame(session, 'New collection request'),
            createForm(session, { currency: 'BXC', send_instructions: 'true' }, {}),
          ),
        ),
      { page: 'collect' },
    )
    .post(
      '/console/requests',
      async ({ session, form }) => {
        try {
          const created = await createCollectionRequest(
            deps,
            session,
            validate(CollectionRequestCreate, givenFields(form)),
            null,
          );
          return redirect(`/console/requests/${created.request.id}`);
        } catch (error) {
          const apiError = findApiError(error);
          if (apiError?.status !== 400) throw error;
          const errors = apiError.body as FieldErrors;
          return htmlResponse(layout(frame(session, 'New collection request'), createForm(session, form, errors)), 400);
        }
      },
      { action: 'collect', parse: 'none' },
    )
    .get(
      '/console/requests/:id',
      async ({ params, request, session }) =>
        detailPage(session, await ownedRequest(session, params.id), {
          done: new URL(request.url).searchParams.get('done') ?? undefined,
        }),
      { page: 'view' },
    )
    .post(
      '/console/requests/:id/subscription/cancel',
      async ({ params, session }) => {
        const { request } = await ownedRequest(session, params.id);
        try {
          await cancelOwnSubscription(deps, session, request.id, null);
          return redirect(`/console/requests/${request.id}?done=subscription-cancelled`);
        } catch (error) {
          const apiError = findApiError(error);
          if (apiError?.status !== 400 || typeof apiError.body.detail !== 'string') throw error;
          const current = await ownedRequest(session, params.id);
          return await detailPage(session, current, { error: apiError.body.detail }, 400);
        }
      },
      { action: 'collect', parse: 'none' },
    )
    .get(
      '/console/requests/:id/live',
      async ({ params, session }) => {
        const { request } = await ownedRequest(session, params.id);
        return htmlResponse(await liveContent(deps, request));
      },
      { page: 'view' },
    );
};
