/**
 * Money visible (facts.md): the organization's wallets (`/api/accounts`) and the transactions
 * behind their balances (`/api/transactions`), read only; another organization's are 403.
 */
import { Elysia } from 'elysia';
import { AccountSchema, LedgerTransactionSchema, serializeAccount, serializeLedgerTransaction } from '../domain/money-out';
import { listSchemaForVersion, ownedForVersion, ownedSchemaForVersion } from '../domain/versions';
import { TransactionFilters, WalletFilters, findOwnTransaction, findOwnWallet, listTransactions, listWallets } from '../services/wallets';
import { authPlugin } from '../http/auth';
import { pathId, type AppDeps } from '../http/context';
import { listAnswer, listQuery, parsePage } from '../http/pagination';
import { PathIdParams, routeDocs } from '../http/route-docs';

const accountSchemaForVersion = ownedSchemaForVersion(AccountSchema);

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  listAccounts: routeDocs({
    operationId: 'listAccounts',
    summary: 'List wallets',
    description: 'The organization\'s wallets, oldest first (the default wallet of a currency first), each with its balance.',
    tags: ['Accounts'],
    caller: 'merchant',
    responses: { 200: { description: 'A page of wallets.', schema: (version) => listSchemaForVersion(accountSchemaForVersion(version), version) } },
  }),
  getAccount: routeDocs({
    operationId: 'getAccount',
    summary: 'Get a wallet',
    tags: ['Accounts'],
    caller: 'merchant',
    errors: [403, 404],
    responses: { 200: { description: 'The wallet.', schema: accountSchemaForVersion } },
  }),
  listTransactions: routeDocs({
    operationId: 'listTransactions',
    summary: 'List wallet transactions',
    description: 'Every credit and debit of the organization\'s wallets, newest first; a wallet\'s balance is the sum of its transactions.',
    tags: ['Accounts'],
    caller: 'merchant',
    responses: { 200: { description: 'A page of transactions.', schema: (version) => listSchemaForVersion(LedgerTransactionSchema, version) } },
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
        auth: true,
        query: listQuery(WalletFilters),
        ...DOCS.listAccounts,
      },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion }) => {
        return ownedForVersion(serializeAccount(await findOwnWallet(sql, principal.organizationId, pathId(params.id))), apiVersion);
      },
      {
        auth: true,
        params: PathIdParams,
        ...DOCS.getAccount,
      },
    );

export const transactionRoutes = ({ sql, config }: AppDeps) =>
  new Elysia({ name: 'transactions', prefix: '/api/transactions' })
    .use(authPlugin(sql))
    .get(
      '',
      async ({ request, query: filters, principal, apiVersion }) => {
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const { count, rows } = await listTransactions(sql, principal.organizationId, filters, page);
        return listAnswer(request, config.publicBaseUrl, page, { count, results: rows.map(serializeLedgerTransaction) }, apiVersion);
      },
      {
        auth: true,
        query: listQuery(TransactionFilters),
        ...DOCS.listTransactions,
      },
    )
    .get(
      '/:id',
      async ({ params, principal }) => {
        return serializeLedgerTransaction(await findOwnTransaction(sql, principal.organizationId, pathId(params.id)));
      },
      {
        auth: true,
        params: PathIdParams,
        ...DOCS.getTransaction,
      },
    );
