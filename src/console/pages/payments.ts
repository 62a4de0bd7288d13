/**
 * Payments (money out): the list with the API's filters and paging, the create form (through
 * `createPayment` after `validate(PaymentCreate, form)`, as POST /api/payments), a payment's page
 * with its state timeline, its wallet transactions and its workflow in the Temporal UI (updating by
 * itself until the payment is final), and the cancel form of a payment not yet handed to the
 * network (through `cancelOwnPayment`, as POST /api/payments/<id>/cancel).
 */
import { Elysia } from 'elysia';
import type { AppDeps } from '../../http/context';
import { validate } from '../../domain/input';
import { findApiError } from '../../http/errors';
import { SUPPORTED_CURRENCIES } from '../../domain/money';
import {
  CANCELLABLE_PAYMENT_STATES,
  FINAL_PAYMENT_STATES,
  PAYMENT_STATES,
  PAYMENT_TYPES,
  type PaymentRow,
  type WalletRow,
} from '../../domain/money-out';
import type { ConsoleSession } from '../../services/merchants/console-sessions';
import { paymentStateTimeline } from '../../services/webhooks/events';
import { PaymentCancel, cancelOwnPayment } from '../../services/payments/payment-state';
import { PaymentCreate, createPayment } from '../../services/payments/payment-creation';
import { PaymentFilters, findOwnPayment, listPayments } from '../../services/payments/payment-reads';
import { listWallets, transactionsBelongingTo } from '../../services/wallets/wallets';
import { paymentWorkflowId } from '../../contracts/money-out';
import { html, type Html } from '../html';
import { htmlResponse, redirect } from '../http';
import {
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
import { transactionsTable } from './wallets';

const FORM_FIELDS = [
  'phonenumber',
  'amount',
  'currency',
  'description',
  'payment_type',
  'first_name',
  'last_name',
  'account',
  'start_date',
  'callback_url',
  'send_sms_message',
];
const MORE_OPTIONS = ['account', 'start_date', 'callback_url'];
const currencies = choicesOf(SUPPORTED_CURRENCIES);
const INSUFFICIENT_FUNDS = 'insufficient funds';

/** The 400 of a payment the wallet cannot pay, shown above the form with what the wallet holds. */
function insufficientFunds(detail: string, values: Values, wallets: readonly WalletRow[]): Html {
  const account = Number(values.account);
  const currency = String(values.currency ?? '').toUpperCase();
  const wallet =
    wallets.find((candidate) => candidate.id === account) ??
    wallets.find((candidate) => candidate.currency === currency);
  const reason = detail.slice(INSUFFICIENT_FUNDS.length).replace(/^:\s*/, '');
  return html`<div class="alert error" role="alert" id="insufficient-funds"><strong>Insufficient \
funds.</strong> ${reason}
${
  wallet
    ? html` Wallet <a href="/console/wallets/${wallet.id}">#${wallet.id}</a> holds \
<strong>${money(wallet.balance, wallet.currency)}</strong>.`
    : ''
}
Nothing was sent and nothing was taken out of the wallet.</div>`;
}

function createForm(session: ConsoleSession, wallets: readonly WalletRow[], values: Values, errors: FieldErrors): Html {
  const { detail, ...fieldErrors } = errors;
  const insufficient = detail?.find((message) => message.startsWith(INSUFFICIENT_FUNDS));
  const walletChoices = [
    ['', "The currency's default wallet"] as const,
    ...wallets.map(
      (wallet) =>
        [String(wallet.id), `#${wallet.id} ${wallet.label} (${money(wallet.balance, wallet.currency)})`] as const,
    ),
  ];
  const moreOpen = MORE_OPTIONS.some(
    (name) => (fieldErrors[name]?.length ?? 0) > 0 || (typeof values[name] === 'string' && values[name] !== ''),
  );
  return html`${insufficient ? insufficientFunds(insufficient, values, wallets) : ''}
${formErrors(insufficient ? fieldErrors : errors, FORM_FIELDS)}
${postForm(
  session,
  '/console/payments',
  html`
${input('phonenumber', 'Recipient phone number', values, fieldErrors, {
  required: true,
  inputmode: 'tel',
  hint: 'International format, for example +256772123456.',
})}
${input('amount', 'Amount', values, fieldErrors, {
  required: true,
  inputmode: 'decimal',
  hint: 'No thousands separators. Taken out of the wallet at once.',
})}
${select('currency', 'Currency', currencies, values, fieldErrors)}
${input('description', 'Description', values, fieldErrors, {
  required: true,
  hint: "Up to 255 characters, for your records and the recipient's statement.",
})}
${select(
  'payment_type',
  'Type',
  PAYMENT_TYPES.map((type) => [type, type === 'money' ? 'mobile money' : type] as const),
  values,
  fieldErrors,
)}
${input('first_name', 'Recipient first name', values, fieldErrors, {
  hint: 'A new number becomes a contact (Anonymous Contact without a name).',
})}
${input('last_name', 'Recipient last name', values, fieldErrors)}
${checkbox('send_sms_message', 'Text the recipient about the payment', values.send_sms_message === 'true')}
<details${moreOpen ? html` open` : ''}><summary>More options</summary><div class="stack">
${select('account', 'Pay from wallet', walletChoices, values, fieldErrors)}
${input('start_date', 'Send at', values, fieldErrors, {
  hint: [
    'Leave empty to send now; "tomorrow", "2 hours", "31/12/2025 13:00:00" (UTC).',
    'Until then the payment is scheduled and can be cancelled.',
  ].join(' '),
})}
${input('callback_url', 'Callback URL', values, fieldErrors, {
  type: 'url',
  hint: "Receives this payment's payment.status.changed events, signed as webhooks are.",
})}
</div></details>
<div class="actions"><button type="submit" class="primary">Send payment</button></div>`,
)}`;
}

/** The part of a payment's page that changes while its workflow runs (served alone for the live refresh). */
async function liveContent(deps: AppDeps, payment: PaymentRow): Promise<Html> {
  const [timeline, transactions] = await Promise.all([
    paymentStateTimeline(deps.sql, payment.organizationId, payment.id),
    transactionsBelongingTo(deps.sql, { paymentId: payment.id }),
  ]);
  const final = FINAL_PAYMENT_STATES.includes(payment.state);
  // data-cancellable: while it is absent the stylesheet hides the cancel form (the payment moved on since the page was
  // drawn).
  const cancellable = CANCELLABLE_PAYMENT_STATES.includes(payment.state);
  return html`<div${final ? html` data-final` : ''}${cancellable ? html` data-cancellable` : ''}>
<p>State: <strong \
id="payment-state">${badge(payment.state)}</strong>${
    payment.lastError
      ? html` <span \
class="field-error">${payment.lastError}</span>`
      : ''
  }
${
  final
    ? ''
    : html` <span class="muted">(updates by itself; <a \
href="/console/payments/${payment.id}">reload</a>)</span>`
}</p>
${details([
  ['Remote transaction', payment.remoteTransactionId],
  ...(payment.rejectedTime
    ? [
        [
          'Rejected',
          html`${when(payment.rejectedTime)} by ${payment.rejectedBy ?? 'the network'}: \
${payment.rejectedReason ?? ''}`,
        ] as const,
      ]
    : []),
  ...(payment.cancelledTime
    ? [
        [
          'Cancelled',
          html`${when(payment.cancelledTime)}${payment.cancelledBy === null ? '' : ` by user #${payment.cancelledBy}`}`,
        ] as const,
        ['Cancellation reason', payment.cancelledReason] as const,
      ]
    : []),
])}
<h2>State timeline</h2>
${timelineList(timeline, 'No state change yet.')}
<h2>Wallet transactions</h2>
${transactionsTable(transactions, { wallet: true, empty: 'No wallet transaction.' })}
</div>`;
}

export const paymentRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const frame = sectionFrame(config.sandbox, 'payments');

  const paymentList = listPage(config, {
    path: '/console/payments',
    section: 'payments',
    title: 'Payments',
    filters: {
      schema: PaymentFilters,
      fields: [
        selectFilter('state', 'State', choicesOf(PAYMENT_STATES, spaced)),
        selectFilter('currency', 'Currency', currencies),
        textFilter('phonenumber', 'Phone number', { inputmode: 'tel' }),
        dateFilters('created'),
      ],
    },
    page: (session, filters, page) => listPayments(sql, session.organizationId, filters, page),
    columns: [
      ['Payment', (payment) => html`<a href="/console/payments/${payment.id}">#${payment.id}</a>`],
      ['Created', (payment) => when(payment.created)],
      ['Recipient', (payment) => payment.phoneNumber],
      ['Description', (payment) => html`<span class="payment-description">${payment.description}</span>`],
      ['Amount', (payment) => money(payment.amount, payment.currency)],
      ['State', (payment) => badge(payment.state)],
    ],
    empty: 'No payments match.',
    above: ({ session }) => html`<p>${
      allows(session, 'pay') ? html`<a href="/console/payments/new">New payment</a> · ` : ''
    }<a href="/console/payment-batches">Payment batches (bulk payouts)</a> · <a href="/console/reversals">Reversals \
(collections sent back)</a></p>`,
  });

  const ownedPayment = (session: ConsoleSession, rawId: string): Promise<PaymentRow> =>
    ownedOrMissing(
      findOwnPayment(sql, session.organizationId, ownedId(rawId, 'Payment')),
      'No such payment in your organization.',
    );

  const activeWallets = async (session: ConsoleSession) =>
    (await listWallets(sql, session.organizationId, { status: 'active' }, { limit: config.pageSizeMax, offset: 0 }))
      .rows;

  type DetailState = { done?: string; cancel?: { values: Values; errors: FieldErrors }; error?: string };

  async function detailPage(
    session: ConsoleSession,
    payment: PaymentRow,
    state: DetailState,
    status = 200,
  ): Promise<Response> {
    const done = state.done ? DONE_NOTICES[state.done] : undefined;
    const cancel = state.cancel ?? { values: {}, errors: {} };
    const workflowId = paymentWorkflowId(payment.id);
    const content = html`${done ? notice(done) : ''}${state.error ? notice(state.error, 'error') : ''}
<section class="card">${details([
      ['Amount', money(payment.amount, payment.currency)],
      ['Recipient', `${payment.phoneNumber} (${payment.network})`],
      [
        'Contact',
        payment.contactId === null
          ? null
          : html`<a href="/console/contacts/${payment.contactId}">#${payment.contactId}</a>`,
      ],
      [
        'Description',
        payment.description ? html`<span class="payment-description">${payment.description}</span>` : null,
      ],
      ['Type', payment.paymentType],
      ['Wallet', html`<a href="/console/wallets/${payment.accountId}">#${payment.accountId}</a>`],
      ['Created', when(payment.created)],
      ['Send at', payment.startDate ? when(payment.startDate) : 'at once'],
      ['Text to recipient', payment.sendSmsMessage ? 'yes' : 'no'],
      ['Callback URL', payment.callbackUrl],
      ['Metadata', payment.metadata ? html`<pre>${JSON.stringify(payment.metadata, null, 2)}</pre>` : null],
      [
        'Workflow',
        html`<a href="${workflowUrl(config, workflowId)}" rel="noopener" target="_blank">${workflowId} in the Temporal \
UI</a>`,
      ],
    ])}</section>
<section class="card" id="live" \
data-live="/console/payments/${payment.id}/live">${await liveContent(deps, payment)}</section>
${
  CANCELLABLE_PAYMENT_STATES.includes(payment.state) && allows(session, 'pay')
    ? html`<section class="card cancel-payment" aria-labelledby="cancel"><h2 id="cancel">Cancel this payment</h2>
<p class="muted">Until it is handed to the network a ${payment.state} payment can be cancelled: it ends cancelled and \
its amount goes back to the wallet.</p>
${formErrors(cancel.errors, ['reason'])}
${postForm(
  session,
  `/console/payments/${payment.id}/cancel`,
  html`
${input('reason', 'Reason', cancel.values, cancel.errors, { hint: 'Up to 255 characters, kept with the payment.' })}
<div class="actions"><button type="submit" class="danger">Cancel payment</button></div>`,
)}</section>`
    : ''
}`;
    return htmlResponse(layout(frame(session, `Payment #${payment.id}`), content), status);
  }

  return new Elysia({ name: 'console-payments' })
    .use(consoleSessionPlugin(deps))
    .get('/console/payments', ({ request, session }) => paymentList({ request, session }), { page: 'view' })
    .get(
      '/console/payments/new',
      async ({ session }) =>
        htmlResponse(
          layout(
            frame(session, 'New payment'),
            createForm(session, await activeWallets(session), { currency: 'BXC', payment_type: 'money' }, {}),
          ),
        ),
      { page: 'pay' },
    )
    .post(
      '/console/payments',
      async ({ session, form }) => {
        try {
          const payment = await createPayment(deps, session, validate(PaymentCreate, givenFields(form)), null);
          return redirect(`/console/payments/${payment.id}?done=payment-created`);
        } catch (error) {
          const apiError = findApiError(error);
          if (apiError?.status !== 400) throw error;
          const errors = (
            typeof apiError.body.detail === 'string' ? { detail: [apiError.body.detail] } : apiError.body
          ) as FieldErrors;
          return htmlResponse(
            layout(frame(session, 'New payment'), createForm(session, await activeWallets(session), form, errors)),
            400,
          );
        }
      },
      { action: 'pay', parse: 'none' },
    )
    .get(
      '/console/payments/:id',
      async ({ params, request, session }) =>
        detailPage(session, await ownedPayment(session, params.id), {
          done: new URL(request.url).searchParams.get('done') ?? undefined,
        }),
      { page: 'view' },
    )
    .get(
      '/console/payments/:id/live',
      async ({ params, session }) => htmlResponse(await liveContent(deps, await ownedPayment(session, params.id))),
      { page: 'view' },
    )
    .post(
      '/console/payments/:id/cancel',
      async ({ params, session, form }) => {
        const payment = await ownedPayment(session, params.id);
        try {
          const { reason } = validate(PaymentCancel, givenFields(form));
          await cancelOwnPayment(deps, session, payment.id, reason, null);
          return redirect(`/console/payments/${payment.id}?done=payment-cancelled`);
        } catch (error) {
          const apiError = findApiError(error);
          if (apiError?.status !== 400) throw error;
          // Not cancellable any more (the workflow handed it to the network first), or a reason too long.
          const current = await findOwnPayment(sql, session.organizationId, payment.id);
          if (typeof apiError.body.detail === 'string')
            return await detailPage(session, current, { error: apiError.body.detail }, 400);
          return await detailPage(
            session,
            current,
            { cancel: { values: form, errors: apiError.body as FieldErrors } },
            400,
          );
        }
      },
      { action: 'pay', parse: 'none' },
    );
};
