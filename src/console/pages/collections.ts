/**
 * Collections: the list with the API's filters, a collection's page (with its wallet transactions
 * and its reversal), the claim form (the claim of docs/api.md#collections), and the "send back" form of a successful
 * collection (through `reverseCollection`, as POST /api/reversals).
 */
import { Elysia } from 'elysia';
import { CollectionFilters, findOwnCollection, listCollections } from '../../services/collections/collection-reads';
import { claimCollectionFor } from '../../services/collections/collection-claims';
import { parseFilters } from '../../http/filters';
import type { AppDeps } from '../../http/context';
import { validate } from '../../domain/input';
import { findApiError } from '../../http/errors';
import { COLLECTION_STATUSES, type CollectionRow } from '../../domain/collections';
import { SUPPORTED_CURRENCIES } from '../../domain/money';
import { findRequest } from '../../services/collections/request-reads';
import type { ConsoleSession } from '../../services/merchants/console-sessions';
import { ReversalCreate, listReversals, reverseCollection } from '../../services/payments/reversals';
import { transactionsBelongingTo } from '../../services/wallets/wallets';
import { html } from '../html';
import { htmlResponse, redirect } from '../http';
import {
  badge,
  details,
  formErrors,
  givenFields,
  input,
  layout,
  money,
  notice,
  postForm,
  sectionFrame,
  when,
  type FieldErrors,
  type Values,
} from '../layout';
import { choicesOf, dateFilters, listPage, selectFilter, spaced, textFilter, type ListView } from '../list-page';
import { allows, consoleSessionPlugin } from '../session';
import { ownedId, ownedOrMissing } from './common';
import { transactionsTable } from './wallets';

/** The claim form's values and errors, and what a claim that found nothing says. */
type ClaimState = { values: Values; errors: FieldErrors; message?: string };

const CLAIM_FIELDS = ['amount', 'remote_transaction_id', 'phonenumber'];
const REVERSE_FIELDS = ['reason'];

export const collectionRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const frame = sectionFrame(config.sandbox, 'collections');

  const ownedCollection = (session: ConsoleSession, rawId: string): Promise<CollectionRow> =>
    ownedOrMissing(
      findOwnCollection(sql, session.organizationId, ownedId(rawId, 'Collection')),
      'No such collection in your organization.',
    );

  async function detailPage(
    session: ConsoleSession,
    collection: CollectionRow,
    reverse: { values: Values; errors: FieldErrors },
    status = 200,
  ) {
    const [
      found,
      {
        rows: [reversal],
      },
      transactions,
    ] = await Promise.all([
      collection.collectionRequestId === null ? undefined : findRequest(sql, collection.collectionRequestId),
      listReversals(sql, session.organizationId, { collection: collection.id }, { limit: 1, offset: 0 }),
      transactionsBelongingTo(sql, { collectionId: collection.id }),
    ]);
    const content = html`<section class="card">${details([
      ['Amount', money(collection.amount, collection.currency)],
      ['Status', badge(collection.status)],
      ['From', collection.phoneNumber],
      ['Network', collection.network],
      ['Remote transaction', collection.remoteTransactionId],
      ['Reference', collection.reference],
      ['Paid', when(collection.paymentDate)],
      ['Received', when(collection.created)],
      ['Rejection reason', collection.rejectionReason],
      [
        'Request',
        found
          ? html`<a \
href="/console/requests/${found.request.id}">#${found.request.id}</a> ${badge(found.request.status)}`
          : 'none (claimed or unmatched)',
      ],
      [
        'Contact',
        collection.contactId === null
          ? null
          : html`<a href="/console/contacts/${collection.contactId}">#${collection.contactId}</a>`,
      ],
    ])}</section>
<section class="card" aria-labelledby="reversal"><h2 id="reversal">Reversal</h2>
${formErrors(reverse.errors, REVERSE_FIELDS)}
${
  reversal
    ? details([
        ['Reversal', html`<a href="/console/reversals/${reversal.id}">#${reversal.id}</a> ${badge(reversal.state)}`],
        ['Amount', money(reversal.amount, reversal.currency)],
        ['Reason', reversal.reason],
        ['Started', when(reversal.created)],
      ])
    : collection.status !== 'successful'
      ? html`<p class="empty">Only a successful collection can be sent back.</p>`
      : !allows(session, 'pay')
        ? html`<p class="empty">Your role does not send money back.</p>`
        : html`
<p>Send the ${money(collection.amount, collection.currency)} back to ${collection.phoneNumber}: the amount leaves the \
wallet this collection credited \
at once (if it still holds it) and goes back through the network; the request it paid ends reversed. A collection is \
sent back once at most.</p>
${postForm(
  session,
  `/console/collections/${collection.id}/reverse`,
  html`
${input('reason', 'Reason', reverse.values, reverse.errors, { hint: 'Up to 255 characters, kept with the reversal.' })}
<div class="actions"><button type="submit" class="danger">Send back</button></div>`,
)}`
}
</section>
<h2>Wallet transactions</h2>
${transactionsTable(transactions, { wallet: true, empty: "This collection moved no wallet's money." })}`;
    return htmlResponse(layout(frame(session, `Collection #${collection.id}`), content), status);
  }

  const collectionList = listPage(config, {
    path: '/console/collections',
    section: 'collections',
    title: 'Collections',
    filters: {
      schema: CollectionFilters,
      fields: [
        selectFilter('status', 'Status', choicesOf(COLLECTION_STATUSES, spaced)),
        selectFilter('currency', 'Currency', choicesOf(SUPPORTED_CURRENCIES)),
        textFilter('amount', 'Amount', { inputmode: 'decimal' }),
        textFilter('phonenumber', 'Phone number', { inputmode: 'tel' }),
        textFilter('reference', 'Reference'),
        textFilter('remote_transaction_id', 'Remote transaction id'),
        textFilter('network', 'Network'),
        textFilter('contact_first_name', 'Contact first name'),
        textFilter('contact_last_name', 'Contact last name'),
        dateFilters('created', 'modified'),
      ],
    },
    // The list shows the organization's collections: `claim` is the claim's own filter, not the list's.
    page: (session, filters, page) =>
      listCollections(sql, session.organizationId, { ...filters, claim: undefined }, page),
    columns: [
      ['Collection', (collection) => html`<a href="/console/collections/${collection.id}">#${collection.id}</a>`],
      ['Received', (collection) => when(collection.created)],
      ['Number', (collection) => collection.phoneNumber],
      ['Amount', (collection) => money(collection.amount, collection.currency)],
      ['Reference', (collection) => collection.reference],
      ['Network', (collection) => collection.network],
      ['Status', (collection) => badge(collection.status)],
    ],
    empty: 'No collections match.',
    above: ({ state: claim, status }: ListView<ClaimState>) => html`<p><a href="/console/reversals">Reversals \
(collections sent back)</a></p>
${claim.message ? notice(claim.message, status === 200 ? 'ok' : 'error') : ''}`,
    below: ({ session, state: claim }) =>
      allows(session, 'collect')
        ? html`<section class="card" aria-labelledby="claim"><h2 id="claim">Claim a collection</h2>
<p class="muted">A payment that matched none of your requests waits unassigned. Give its amount, remote transaction id \
and number \
(all three must match exactly) to assign it to your organization and credit your wallet.</p>
${formErrors(claim.errors, CLAIM_FIELDS)}
${postForm(
  session,
  '/console/collections/claim',
  html`
${input('amount', 'Amount', claim.values, claim.errors, { required: true, inputmode: 'decimal' })}
${input('remote_transaction_id', 'Remote transaction id', claim.values, claim.errors, { required: true })}
${input('phonenumber', 'Phone number', claim.values, claim.errors, { required: true, inputmode: 'tel' })}
<div class="actions"><button type="submit" class="primary">Claim</button></div>`,
)}</section>`
        : '',
  });

  return new Elysia({ name: 'console-collections' })
    .use(consoleSessionPlugin(deps))
    .get(
      '/console/collections',
      ({ request, session }) => collectionList({ request, session }, { values: {}, errors: {} }),
      { page: 'view' },
    )
    .post(
      '/console/collections/claim',
      async ({ request, session, form }) => {
        const values = {
          amount: String(form.amount ?? '').trim(),
          remote_transaction_id: String(form.remote_transaction_id ?? '').trim(),
          phonenumber: String(form.phonenumber ?? '').trim(),
        };
        try {
          const filters = parseFilters(
            CollectionFilters,
            new URLSearchParams(Object.entries(values).filter(([, value]) => value !== '')),
          );
          const claimed = await claimCollectionFor(deps, session, filters, values.phonenumber);
          if (claimed !== null) return redirect(`/console/collections/${claimed.id}`);
          return await collectionList(
            { request, session },
            { values, errors: {}, message: 'No unassigned collection matches these three values.' },
            404,
          );
        } catch (error) {
          const apiError = findApiError(error);
          if (apiError?.status !== 400) throw error;
          const errors = (
            typeof apiError.body.detail === 'string' ? { non_field_errors: [apiError.body.detail] } : apiError.body
          ) as FieldErrors;
          return await collectionList({ request, session }, { values, errors }, 400);
        }
      },
      { action: 'collect', parse: 'none' },
    )
    .get(
      '/console/collections/:id',
      async ({ params, session }) =>
        detailPage(session, await ownedCollection(session, params.id), { values: {}, errors: {} }),
      { page: 'view' },
    )
    .post(
      '/console/collections/:id/reverse',
      async ({ params, session, form }) => {
        const collection = await ownedCollection(session, params.id);
        try {
          const { reason } = validate(ReversalCreate, { ...givenFields(form), collection: collection.id });
          const reversal = await reverseCollection(deps, session, { collection: collection.id, reason }, null);
          return redirect(`/console/reversals/${reversal.id}?done=reversal-created`);
        } catch (error) {
          const apiError = findApiError(error);
          if (apiError?.status !== 400) throw error;
          // The refusal (not successful, reversed before, the wallet no longer holds it) is about the collection: above
          // the form.
          const { collection: refusal, ...fieldErrors } = apiError.body as FieldErrors;
          const errors = refusal ? { ...fieldErrors, non_field_errors: refusal } : fieldErrors;
          return await detailPage(
            session,
            await findOwnCollection(sql, session.organizationId, collection.id),
            { values: form, errors },
            400,
          );
        }
      },
      { action: 'pay', parse: 'none' },
    );
};
