/**
 * Money visible (facts.md): the organization's wallets (`/api/accounts`) and the transactions
 * behind their balances (`/api/transactions`), read only; another organization's are 403.
 */
import { Elysia } from 'elysia';
import * as v from 'valibot';
import {
  ACCOUNT_STATUSES, AccountSchema, LedgerTransactionSchema, TRANSACTION_TYPES, serializeAccount, serializeLedgerTransaction,
} from '../domain/money-out';
import { listForVersion, listSchemaForVersion, ownedForVersion, ownedSchemaForVersion } from '../domain/versions';
import { findTransaction, findWallet, listTransactions, listWallets } from '../services/wallets';
import { authPlugin } from '../http/auth';
import { ownedBy, parseId, type AppDeps } from '../http/context';
import { notFound } from '../http/errors';
import { choiceMessage, validate } from '../domain/input';
import { queryObject } from '../http/filters';
import { filterDate } from '../domain/input';
import { listQuery, pagedList, parsePage } from '../http/pagination';
import { PathIdParams, routeDocs } from '../http/route-docs';

const accountSchemaForVersion = ownedSchemaForVersion(AccountSchema);
const upperCase = v.optional(v.pipe(v.string(), v.transform((value) => value.toUpperCase())));
const INTEGER = 'A valid integer is required.';

const AccountFilters = v.object({
  currency: upperCase,
  status: v.optional(v.picklist(ACCOUNT_STATUSES, choiceMessage)),
});

const TransactionFilters = v.object({
  account: v.optional(v.pipe(v.string(), v.regex(/^\d{1,15}$/, INTEGER), v.transform(Number), v.description('A wallet id.'))),
  type: v.optional(v.picklist(TRANSACTION_TYPES, choiceMessage)),
  currency: upperCase,
  created_after: filterDate,
  created_before: filterDate,
});

/** Transaction filters from a query string, as the REST list reads them (a wallet's console page uses it too). */
export const parseTransactionFilters = (searchParams: URLSearchParams): v.InferOutput<typeof TransactionFilters> =>
  validate(TransactionFilters, queryObject(searchParams));

export const accountRoutes = ({ sql, config }: AppDeps) =>
  new Elysia({ name: 'accounts', prefix: '/api/accounts' })
    .use(authPlugin(sql))
    .get(
      '',
      async ({ request, query: filters, principal, apiVersion }) => {
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const { count, rows } = await listWallets(sql, principal.organizationId, filters, page);
        const results = rows.map((row) => ownedForVersion(serializeAccount(row), apiVersion));
        return listForVersion(pagedList(request, config.publicBaseUrl, page, count, results), apiVersion);
      },
      {
        auth: true,
        query: listQuery(AccountFilters),
        ...routeDocs({
          operationId: 'listAccounts',
          summary: 'List wallets',
          description: 'The organization\'s wallets, oldest first (the default wallet of a currency first), each with its balance.',
          tags: ['Accounts'],
          caller: 'merchant',
          responses: { 200: { description: 'A page of wallets.', schema: (version) => listSchemaForVersion(accountSchemaForVersion(version), version) } },
        }),
      },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion }) => {
        const id = parseId(params.id);
        if (id === null) throw notFound();
        return ownedForVersion(serializeAccount(ownedBy(await findWallet(sql, id), principal.organizationId)), apiVersion);
      },
      {
        auth: true,
        params: PathIdParams,
        ...routeDocs({
          operationId: 'getAccount',
          summary: 'Get a wallet',
          tags: ['Accounts'],
          caller: 'merchant',
          errors: [403, 404],
          responses: { 200: { description: 'The wallet.', schema: accountSchemaForVersion } },
        }),
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
        return listForVersion(pagedList(request, config.publicBaseUrl, page, count, rows.map(serializeLedgerTransaction)), apiVersion);
      },
      {
        auth: true,
        query: listQuery(TransactionFilters),
        ...routeDocs({
          operationId: 'listTransactions',
          summary: 'List wallet transactions',
          description: 'Every credit and debit of the organization\'s wallets, newest first; a wallet\'s balance is the sum of its transactions.',
          tags: ['Accounts'],
          caller: 'merchant',
          responses: { 200: { description: 'A page of transactions.', schema: (version) => listSchemaForVersion(LedgerTransactionSchema, version) } },
        }),
      },
    )
    .get(
      '/:id',
      async ({ params, principal }) => {
        const id = parseId(params.id);
        if (id === null) throw notFound();
        return serializeLedgerTransaction(ownedBy(await findTransaction(sql, id), principal.organizationId));
      },
      {
        auth: true,
        params: PathIdParams,
        ...routeDocs({
          operationId: 'getTransaction',
          summary: 'Get a wallet transaction',
          tags: ['Accounts'],
          caller: 'merchant',
          errors: [403, 404],
          responses: { 200: { description: 'The transaction.', schema: LedgerTransactionSchema } },
        }),
      },
    );
