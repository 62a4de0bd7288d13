/**
 * Reversals (collections sent back): the list (the same `listReversals` as GET /api/reversals) and
 * a reversal's page with its wallet transactions and its workflow in the Temporal UI, updating by
 * itself until the network has answered. A reversal is started from its collection's page.
 */
import { Elysia } from 'elysia';
import type { AppDeps } from '../../http/context';
import { REVERSAL_STATES, type ReversalRow } from '../../domain/money-out';
import type { ConsoleSession } from '../../services/merchants/console-sessions';
import { ReversalFilters, findOwnReversal, listReversals } from '../../services/payments/reversals';
import { transactionsBelongingTo } from '../../services/wallets/wallets';
import { reversalWorkflowId } from '../../contracts/money-out';
import { html, type Html } from '../html';
import { htmlResponse } from '../http';
import { badge, details, layout, money, notice, sectionFrame, when } from '../layout';
import { choicesOf, listPage, selectFilter, textFilter } from '../list-page';
import { consoleSessionPlugin } from '../session';
import { DONE_NOTICES, ownedId, ownedOrMissing, workflowUrl } from './common';
import { transactionsTable } from './wallets';

/** The part of a reversal's page that changes while its workflow runs (served alone for the live refresh). */
async function liveContent(deps: AppDeps, reversal: ReversalRow): Promise<Html> {
  const transactions = await transactionsBelongingTo(deps.sql, { reversalId: reversal.id });
  const final = reversal.state !== 'processing';
  return html`<div${final ? html` data-final` : ''}>
<p>State: <strong \
id="reversal-state">${badge(reversal.state)}</strong>${
    reversal.lastError
      ? html` <span \
class="field-error">${reversal.lastError}</span>`
      : ''
  }
${
  final
    ? ''
    : html` <span class="muted">(updates by itself; <a \
href="/console/reversals/${reversal.id}">reload</a>)</span>`
}</p>
${details([
  ['Remote transaction', reversal.remoteTransactionId],
  ['Last change', when(reversal.modified)],
])}
<h2>Wallet transactions</h2>
${transactionsTable(transactions, { wallet: true, empty: 'No wallet transaction.' })}
</div>`;
}

export const reversalRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const frame = sectionFrame(config.sandbox, 'collections');

  const reversalList = listPage(config, {
    path: '/console/reversals',
    section: 'collections',
    title: 'Reversals',
    filters: {
      schema: ReversalFilters,
      fields: [
        selectFilter('state', 'State', choicesOf(REVERSAL_STATES)),
        textFilter('collection', 'Collection id', { inputmode: 'numeric' }),
      ],
    },
    page: (session, filters, page) => listReversals(sql, session.organizationId, filters, page),
    columns: [
      ['Reversal', (reversal) => html`<a href="/console/reversals/${reversal.id}">#${reversal.id}</a>`],
      ['Created', (reversal) => when(reversal.created)],
      [
        'Collection',
        (reversal) => html`<a href="/console/collections/${reversal.collectionId}">#${reversal.collectionId}</a>`,
      ],
      ['Number', (reversal) => reversal.phoneNumber],
      ['Amount', (reversal) => money(reversal.amount, reversal.currency)],
      ['Reason', (reversal) => reversal.reason ?? ''],
      ['State', (reversal) => badge(reversal.state)],
    ],
    empty: 'No reversals match.',
    above: () => html`<p class="muted">A successful collection is sent back to the subscriber from its page
(<a href="/console/collections?status=successful">successful collections</a>): its amount leaves the wallet it \
credited.</p>`,
  });

  const ownedReversal = (session: ConsoleSession, rawId: string): Promise<ReversalRow> =>
    ownedOrMissing(
      findOwnReversal(sql, session.organizationId, ownedId(rawId, 'Reversal')),
      'No such reversal in your organization.',
    );

  return new Elysia({ name: 'console-reversals' })
    .use(consoleSessionPlugin(deps))
    .get('/console/reversals', ({ request, session }) => reversalList({ request, session }), { page: 'view' })
    .get(
      '/console/reversals/:id',
      async ({ params, request, session }) => {
        const reversal = await ownedReversal(session, params.id);
        const done = DONE_NOTICES[new URL(request.url).searchParams.get('done') ?? ''];
        const workflowId = reversalWorkflowId(reversal.id);
        const content = html`${done ? notice(done) : ''}
<section class="card">${details([
          ['Amount', money(reversal.amount, reversal.currency)],
          ['Collection', html`<a href="/console/collections/${reversal.collectionId}">#${reversal.collectionId}</a>`],
          ['Sent back to', `${reversal.phoneNumber} (${reversal.network})`],
          ['Wallet', html`<a href="/console/wallets/${reversal.accountId}">#${reversal.accountId}</a>`],
          ['Reason', reversal.reason],
          ['Created', when(reversal.created)],
          [
            'Workflow',
            html`<a href="${workflowUrl(config, workflowId)}" rel="noopener" target="_blank">${workflowId} in the \
Temporal UI</a>`,
          ],
        ])}</section>
<section class="card" id="live" \
data-live="/console/reversals/${reversal.id}/live">${await liveContent(deps, reversal)}</section>`;
        return htmlResponse(layout(frame(session, `Reversal #${reversal.id}`), content));
      },
      { page: 'view' },
    )
    .get(
      '/console/reversals/:id/live',
      async ({ params, session }) => htmlResponse(await liveContent(deps, await ownedReversal(session, params.id))),
      { page: 'view' },
    );
};
