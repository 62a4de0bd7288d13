/**
 * Money visible (docs/api.md#payments-wallets-and-reversals-money-out): the organization's wallets (`/api/accounts`)
 * and the transactions behind their balances (`/api/transactions`), read only; another organization's are 403.
 */
import { Elysia } from 'elysia';
import {
  AccountSchema,
  LedgerTransactionSchema,
  serializeAccount,
  serializeLedgerTransaction,
} from '../domain/money-out';
import { listSchemaForVersion, ownedForVersion, ownedSchemaForVersion } from '../domain/versions';
import { StatementSchema, serializeStatement, statementCsv } from '../domain/statements';
import {
  STATEMENT_MAX_TRANSACTIONS,
  StatementPeriod,
  TransactionFilters,
  WalletFilters,
  findOwnTransaction,
  findOwnWallet,
  listTransactions,
  listWallets,
  walletStatement,
} from '../services/wallets/wallets';
import { authPlugin } from '../http/auth';
import { pathId, type AppDeps } from '../http/context';
import { listAnswer, listQuery, parsePage } from '../http/pagination';
import { csvResponse } from '../http/request';
import { PathIdParams, requestSchema, routeDocs } from '../http/route-docs';

const accountSchemaForVersion = ownedSchemaForVersion(AccountSchema);

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  listAccounts: routeDocs({
    operationId: 'listAccounts',
    summary: 'List wallets',
    description:
      "The organization's wallets, oldest first (the default wallet of a currency first), each with its balance.",
    tags: ['Accounts'],
    caller: 'merchant',
    responses: {
      200: {
        description: 'A page of wallets.',
        schema: (version) => listSchemaForVersion(accountSchemaForVersion(version), version),
      },
    },
  }),
  getAccount: routeDocs({
    operationId: 'getAccount',
    summary: 'Get a wallet',
    tags: ['Accounts'],
    caller: 'merchant',
    errors: [403, 404],
    responses: { 200: { description: 'The wallet.', schema: accountSchemaForVersion } },
  }),
  getAccountStatement: routeDocs({
    operationId: 'getAccountStatement',
    summary: "A wallet's statement for a period",
    description: [
      'The balance at `since` (the sum of every earlier transaction),',
      'every transaction of `[since, until)` oldest first with the balance after it,',
      'and the closing balance, read in one snapshot:',
      "for a period that reaches the present the closing balance is the wallet's balance at `as_of`.",
      `Periods are UTC; at most ${STATEMENT_MAX_TRANSACTIONS} transactions (400 otherwise: ask for a shorter period).`,
      'A transaction is dated when its database transaction began,',
      'so a period that ended seconds ago may still gain one that was committing then.',
    ].join(' '),
    tags: ['Accounts'],
    caller: 'merchant',
    errors: [403, 404],
    responses: { 200: { description: 'The statement.', schema: StatementSchema } },
  }),
  getAccountStatementCsv: routeDocs({
    operationId: 'getAccountStatementCsv',
    summary: "A wallet's statement for a period, as CSV",
    description: [
      'The statement of `getAccountStatement` as CSV: an opening balance line,',
      'a line per transaction (time, transaction, type, what it belongs to, description, amount, balance after),',
      'a closing balance line.',
    ].join(' '),
    tags: ['Accounts'],
    caller: 'merchant',
    errors: [403, 404],
    responses: {
      200: {
        description: 'The statement as CSV.',
        mediaType: 'text/csv',
        example: [
          'time,transaction,type,belongs_to,description,amount,balance,currency',
          '2025-05-01T00:00:00.000Z,,opening_balance,,,,1000.0000,UGX',
          '2025-05-01T13:47:02.512Z,311,mobile_payment,payment 77,Payment 77 to +256772123456,-250.0000,750.0000,UGX',
          '2025-05-02T00:00:00.000Z,,closing_balance,,,,750.0000,UGX',
          '',
        ].join('\n'),
      },
    },
  }),
  listTransactions: routeDocs({
    operationId: 'listTransactions',
    summary: 'List wallet transactions',
    description: [
      "Every credit and debit of the organization's wallets, newest first;",
      "a wallet's balance is the sum of its transactions.",
    ].join(' '),
    tags: ['Accounts'],
    caller: 'merchant',
    responses: {
      200: {
        description: 'A page of transactions.',
        schema: (version) => listSchemaForVersion(LedgerTransactionSchema, version),
      },
    },
  }),
  getTransaction: routeDocs({
    operationId: 'getTransaction',
    summary: 'Get a wallet transaction',
    tags: ['Accounts'],
    caller: 'merchant',
    errors: [403, 404],
    responses: { 200: { description: 'The transaction.', schema: LedgerTransactionSchema } },
  }),
};

export const accountRoutes = ({ sql, config }: AppDeps) =>
  new Elysia({ name: 'accounts', prefix: '/api/accounts' })
    .use(authPlugin(sql))
    .get(
      '',
      async ({ request, query: filters, principal, apiVersion }) => {
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const { count, rows } = await listWallets(sql, principal.organizationId, filters, page);
        const results = rows.map((row) => ownedForVersion(serializeAccount(row), apiVersion));
        return listAnswer(request, config.publicBaseUrl, page, { count, results }, apiVersion);
      },
      {
        can: 'view',
        query: listQuery(WalletFilters),
        ...DOCS.listAccounts,
      },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion }) => {
        return ownedForVersion(
          serializeAccount(await findOwnWallet(sql, principal.organizationId, pathId(params.id, 'Wallet'))),
          apiVersion,
        );
      },
      {
        can: 'view',
        params: PathIdParams,
        ...DOCS.getAccount,
      },
    )
    .get(
      '/:id/statement',
      async ({ params, query, principal }) =>
        serializeStatement(await walletStatement(sql, principal.organizationId, pathId(params.id, 'Wallet'), query)),
      { can: 'reconcile', params: PathIdParams, query: requestSchema(StatementPeriod), ...DOCS.getAccountStatement },
    )
    .get(
      '/:id/statement.csv',
      async ({ params, query, principal }) => {
        const statement = await walletStatement(sql, principal.organizationId, pathId(params.id, 'Wallet'), query);
        return csvResponse(
          statementCsv(statement),
          `wallet-${statement.walletId}-statement-${statement.since.toISOString().slice(0, 10)}.csv`,
        );
      },
      { can: 'reconcile', params: PathIdParams, query: requestSchema(StatementPeriod), ...DOCS.getAccountStatementCsv },
    );

export const transactionRoutes = ({ sql, config }: AppDeps) =>
  new Elysia({ name: 'transactions', prefix: '/api/transactions' })
    .use(authPlugin(sql))
    .get(
      '',
      async ({ request, query: filters, principal, apiVersion }) => {
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const { count, rows } = await listTransactions(sql, principal.organizationId, filters, page);
        return listAnswer(
          request,
          config.publicBaseUrl,
          page,
          { count, results: rows.map(serializeLedgerTransaction) },
          apiVersion,
        );
      },
      {
        can: 'view',
        query: listQuery(TransactionFilters),
        ...DOCS.listTransactions,
      },
    )
    .get(
      '/:id',
      async ({ params, principal }) => {
        return serializeLedgerTransaction(
          await findOwnTransaction(sql, principal.organizationId, pathId(params.id, 'Transaction')),
        );
      },
      {
        can: 'view',
        params: PathIdParams,
        ...DOCS.getTransaction,
      },
    );
