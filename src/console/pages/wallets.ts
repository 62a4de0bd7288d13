/**
 * Wallets: the organization's wallets with their balances, and a wallet's page with the
 * transactions behind its balance (the same `listWallets` and `listTransactions` as
 * `GET /api/accounts` and `GET /api/transactions`), newest first, paged, each linked to the
 * collection, payment or reversal it belongs to; a wallet's statement for a UTC period (the same
 * `walletStatement` as `GET /api/accounts/<id>/statement`) with its running balance and its CSV.
 */
import type { WalletId } from '../../domain/ids';
import { Elysia } from 'elysia';
import type { AppDeps } from '../../http/context';
import { parsePage } from '../../http/pagination';
import { parseFilters } from '../../http/filters';
import { TRANSACTION_TYPES, type LedgerRow } from '../../domain/money-out';
import { LEDGER_LINKS, movementNoun, movementPage, transactionLabel } from '../../domain/money-movements';
import { statementCsv } from '../../domain/statements';
import { csvResponse } from '../../http/request';
import { findApiError } from '../../http/errors';
import {
  StatementPeriod,
  TransactionFilters,
  findOwnWallet,
  listTransactions,
  listWallets,
  walletStatement,
} from '../../services/wallets/wallets';
import { html, type Child, type Html } from '../html';
import { htmlResponse } from '../http';
import {
  anyFilter,
  badge,
  details,
  filterForm,
  input,
  layout,
  money,
  notice,
  pager,
  queryValues,
  sectionFrame,
  select,
  signedMoney,
  table,
  when,
  type FieldErrors,
  type Values,
} from '../layout';
import { listPage } from '../list-page';
import { allows, consoleSessionPlugin } from '../session';
import { nonEmptyQuery, ownedId, ownedOrMissing } from './common';

/** The movements a transaction belongs to (a reversal's: the reversal and its collection), as links to their pages. */
function belongsTo(transaction: LedgerRow): Child {
  const links = LEDGER_LINKS.flatMap(({ kind, field }) => {
    const id = transaction[field];
    return id === null ? [] : [html`<a href="${movementPage(kind, id)}">${movementNoun(kind)} #${id}</a>`];
  });
  return links.length === 0
    ? html`<span class="muted">—</span>`
    : links.map((link, index) => html`${index > 0 ? ', ' : ''}${link}`);
}

/** Wallet transactions as a table: signed amounts, their type, what they belong to; `wallet` adds the wallet column. */
export function transactionsTable(
  transactions: readonly LedgerRow[],
  options: { wallet?: boolean; empty?: string } = {},
): Html {
  return table(
    ['Transaction', 'Time', 'Type', 'Description', 'Amount', ...(options.wallet ? ['Wallet'] : []), 'Belongs to'],
    transactions.map((transaction) => [
      `#${transaction.id}`,
      when(transaction.created),
      html`<span title="${transaction.type}">${transactionLabel(transaction.type)}</span>`,
      transaction.description,
      signedMoney(transaction.amount, transaction.currency),
      ...(options.wallet
        ? [html`<a href="/console/wallets/${transaction.accountId}">#${transaction.accountId}</a>`]
        : []),
      belongsTo(transaction),
    ]),
    options.empty ?? 'No transactions.',
  );
}

/** The period of a wallet's statement (GET): UTC dates, with the errors of a period refused. */
const statementForm = (
  walletId: WalletId,
  values: Values,
  errors: FieldErrors,
): Html => html`<form method="get" action="/console/wallets/${walletId}/statement" class="grid">
${input('since', 'From', values, errors, {
  placeholder: 'YYYY-MM-DD',
  hint: 'UTC; inclusive. Empty: the start of today.',
})}
${input('until', 'Until', values, errors, { placeholder: 'YYYY-MM-DD', hint: 'UTC; exclusive. Empty: now.' })}
<div class="actions"><button type="submit">Show statement</button></div></form>`;

export const walletRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const frame = sectionFrame(config.sandbox, 'wallets');

  const walletList = listPage(config, {
    path: '/console/wallets',
    section: 'wallets',
    title: 'Wallets',
    page: (session, _filters, page) => listWallets(sql, session.organizationId, {}, page),
    columns: [
      ['Wallet', (wallet) => html`<a href="/console/wallets/${wallet.id}">#${wallet.id}</a>`],
      ['Label', (wallet) => wallet.label],
      ['Currency', (wallet) => wallet.currency],
      ['Balance', (wallet) => html`<strong>${money(wallet.balance, wallet.currency)}</strong>`],
      ['Status', (wallet) => badge(wallet.status)],
      ['Created', (wallet) => when(wallet.created)],
    ],
    empty: 'No wallet yet.',
    below: ({
      session,
    }) => html`<p class="muted">A balance is the sum of its wallet's transactions; a payment's amount \
leaves it when the payment is created.
${allows(session, 'pay') ? html`<a href="/console/payments/new">Send a payment</a>` : ''}</p>`,
  });

  return new Elysia({ name: 'console-wallets' })
    .use(consoleSessionPlugin(deps))
    .get('/console/wallets', ({ request, session }) => walletList({ request, session }), { page: 'view' })
    .get(
      '/console/wallets/:id',
      async ({ params, request, session }) => {
        const wallet = await ownedOrMissing(
          findOwnWallet(sql, session.organizationId, ownedId(params.id, 'Wallet')),
          'No such wallet in your organization.',
        );
        const searchParams = nonEmptyQuery(request);
        const filters = parseFilters(TransactionFilters, searchParams);
        const page = parsePage(searchParams, config.pageSizeMax);
        const { count, rows } = await listTransactions(
          sql,
          session.organizationId,
          { type: filters.type, account: wallet.id },
          page,
        );
        const path = `/console/wallets/${wallet.id}`;
        const content = html`<section class="card">${details([
          ['Balance', html`<span class="stat" id="wallet-balance">${money(wallet.balance, wallet.currency)}</span>`],
          ['Label', wallet.label],
          ['Currency', wallet.currency],
          ['Status', badge(wallet.status)],
          ['Description', wallet.description || null],
          [
            'Low balance threshold',
            wallet.lowBalanceThreshold === null ? null : money(wallet.lowBalanceThreshold, wallet.currency),
          ],
          ['Created', when(wallet.created)],
        ])}</section>
${
  allows(session, 'reconcile')
    ? html`<section class="card" aria-labelledby="statement"><h2 \
id="statement">Statement</h2>${statementForm(wallet.id, {}, {})}</section>`
    : ''
}
<h2 id="transactions">Transactions</h2>
${filterForm(
  path,
  select(
    'type',
    'Type',
    TRANSACTION_TYPES.map((type) => [type, transactionLabel(type)] as const),
    queryValues(searchParams),
    {},
    true,
  ),
  anyFilter(searchParams, ['type']),
)}
${transactionsTable(rows, { empty: 'No transactions match.' })}
${pager(path, searchParams, page, count)}`;
        return htmlResponse(layout(frame(session, `Wallet #${wallet.id} · ${wallet.currency}`), content));
      },
      { page: 'view' },
    )
    .get(
      '/console/wallets/:id/statement',
      async ({ params, request, session }) => {
        const id = ownedId(params.id, 'Wallet');
        const searchParams = nonEmptyQuery(request);
        const values = queryValues(searchParams);
        const title = `Statement of wallet #${id}`;
        try {
          const statement = await ownedOrMissing(
            walletStatement(sql, session.organizationId, id, parseFilters(StatementPeriod, searchParams)),
            'No such wallet in your organization.',
          );
          const { currency } = statement;
          const content = html`<p><a href="/console/wallets/${id}">Back to the wallet</a> ·
<a href="/console/wallets/${id}/statement.csv?${searchParams.toString()}" download>Download as CSV</a></p>
<section class="card">${details([
            ['Period (UTC)', html`${when(statement.since)} to ${when(statement.until)}`],
            ['Opening balance', html`<span id="opening-balance">${money(statement.openingBalance, currency)}</span>`],
            ['Credits', signedMoney(statement.credits, currency)],
            ['Debits', signedMoney(statement.debits, currency)],
            [
              'Closing balance',
              html`<strong id="closing-balance">${money(statement.closingBalance, currency)}</strong>`,
            ],
            ['Read at', when(statement.asOf)],
          ])}</section>
${table(
  ['Time', 'Transaction', 'Type', 'Description', 'Amount', 'Balance', 'Belongs to'],
  statement.lines.map((line) => [
    when(line.created),
    `#${line.id}`,
    transactionLabel(line.type),
    line.description,
    signedMoney(line.amount, currency),
    money(line.balanceAfter, currency),
    belongsTo(line),
  ]),
  'No transactions in the period.',
)}`;
          return htmlResponse(layout(frame(session, title), content));
        } catch (error) {
          const apiError = findApiError(error);
          if (apiError?.status !== 400) throw error;
          const errors = apiError.body as FieldErrors;
          return htmlResponse(
            layout(
              frame(session, title),
              html`${notice(Object.values(errors).flat().join(' '), 'error')}
${statementForm(id, values, errors)}`,
            ),
            400,
          );
        }
      },
      { page: 'reconcile' },
    )
    .get(
      '/console/wallets/:id/statement.csv',
      async ({ params, request, session }) => {
        const statement = await ownedOrMissing(
          walletStatement(
            sql,
            session.organizationId,
            ownedId(params.id, 'Wallet'),
            parseFilters(StatementPeriod, nonEmptyQuery(request)),
          ),
          'No such wallet in your organization.',
        );
        return csvResponse(
          statementCsv(statement),
          `wallet-${statement.walletId}-statement-${statement.since.toISOString().slice(0, 10)}.csv`,
        );
      },
      { page: 'reconcile' },
    );
};
