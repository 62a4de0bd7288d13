/** Wallets (accounts) and the transactions behind their balances, as the API and the console read them. */
import * as v from 'valibot';
import type { Queryable, Sql } from '../db';
import { choiceMessage, filterDate, filterId } from '../domain/input';
import { ACCOUNT_STATUSES, TRANSACTION_TYPES, type LedgerRow, type WalletRow } from '../domain/money-out';
import { listPage, ownRow, timeRange, type ListPage, type PageWindow } from './queries';

const WALLET_COLUMNS = `id, organization_id as "organizationId", currency, label, description, status, balance::text as balance,
  low_balance_threshold::text as "lowBalanceThreshold", low_balance_notification_last_send_time as "lowBalanceNotificationLastSendTime",
  author, updated_by as "updatedBy", created, modified`;

const LEDGER_COLUMNS = `t.id, t.account_id as "accountId", t.amount::text as amount, t.currency, t.type, t.description,
  t.collection_id as "collectionId", t.payment_id as "paymentId", t.reversal_id as "reversalId", t.created`;

const upperCase = v.optional(v.pipe(v.string(), v.transform((value) => value.toUpperCase())));

export const WalletFilters = v.object({
  currency: upperCase,
  status: v.optional(v.picklist(ACCOUNT_STATUSES, choiceMessage)),
});
type WalletFilterValues = v.InferOutput<typeof WalletFilters>;

export const TransactionFilters = v.object({
  account: filterId('A wallet id.'),
  type: v.optional(v.picklist(TRANSACTION_TYPES, choiceMessage)),
  currency: upperCase,
  created_after: filterDate,
  created_before: filterDate,
});
type TransactionFilterValues = v.InferOutput<typeof TransactionFilters>;

/** The organization's wallet `id` (403 when another organization's, 404 when none). */
export async function findOwnWallet(sql: Queryable, organizationId: number, id: number): Promise<WalletRow> {
  return await ownRow(sql, 'accounts', id, async () =>
    (await sql<WalletRow[]>`select ${sql.unsafe(WALLET_COLUMNS)} from accounts where id = ${id} and organization_id = ${organizationId}`)[0]);
}

/** An organization's wallets (oldest first: the default one of a currency comes first). */
export async function listWallets(sql: Sql, organizationId: number, filters: WalletFilterValues, page: PageWindow): Promise<ListPage<WalletRow>> {
  return await listPage<WalletRow>(sql, {
    columns: sql.unsafe(WALLET_COLUMNS),
    from: sql`accounts`,
    where: sql`
      where organization_id = ${organizationId}
      ${filters.currency !== undefined ? sql`and currency = ${filters.currency}` : sql``}
      ${filters.status !== undefined ? sql`and status = ${filters.status}` : sql``}`,
    orderBy: sql`order by created, id`,
  }, page);
}

/** A transaction of one of the organization's wallets (403 when another organization's, 404 when none). */
export async function findOwnTransaction(sql: Queryable, organizationId: number, id: number): Promise<LedgerRow> {
  return await ownRow(sql, 'transactions', id, async () => (await sql<LedgerRow[]>`
    select ${sql.unsafe(LEDGER_COLUMNS)} from transactions t join accounts a on a.id = t.account_id
    where t.id = ${id} and a.organization_id = ${organizationId}`)[0]);
}

/** One page of the transactions of an organization's wallets, newest first, with the total count. */
export async function listTransactions(sql: Sql, organizationId: number, filters: TransactionFilterValues, page: PageWindow): Promise<ListPage<LedgerRow>> {
  return await listPage<LedgerRow>(sql, {
    columns: sql.unsafe(LEDGER_COLUMNS),
    from: sql`transactions t join accounts a on a.id = t.account_id`,
    where: sql`
      where a.organization_id = ${organizationId}
      ${filters.account !== undefined ? sql`and t.account_id = ${filters.account}` : sql``}
      ${filters.type !== undefined ? sql`and t.type = ${filters.type}` : sql``}
      ${filters.currency !== undefined ? sql`and t.currency = ${filters.currency}` : sql``}
      ${timeRange(sql, 't.created', filters.created_after, filters.created_before)}`,
    orderBy: sql`order by t.created desc, t.id desc`,
  }, page);
}

/**
 * The transactions of one payment, one reversal, or one collection (its credit and its reversal's
 * transactions), oldest first; each form of the condition is one the indexes answer.
 */
export async function transactionsBelongingTo(
  sql: Queryable, owner: { paymentId: number } | { reversalId: number } | { collectionId: number },
): Promise<LedgerRow[]> {
  const where = 'paymentId' in owner ? sql`t.payment_id = ${owner.paymentId}`
    : 'reversalId' in owner ? sql`t.reversal_id = ${owner.reversalId}`
    : sql`(t.collection_id = ${owner.collectionId} and t.type = 'mobile_collection')
          or t.reversal_id = (select id from reversals where collection_id = ${owner.collectionId})`;
  return await sql<LedgerRow[]>`select ${sql.unsafe(LEDGER_COLUMNS)} from transactions t where ${where} order by t.id`;
}

/** Wallets whose balance is not the sum of their transactions: none, ever (the admin CLI and the tests check). */
export async function walletsOutOfBalance(sql: Queryable, organizationId?: number): Promise<{ id: number; balance: string; sum: string }[]> {
  return await sql<{ id: number; balance: string; sum: string }[]>`
    select a.id, a.balance::text as balance, coalesce(sum(t.amount), 0)::text as sum
    from accounts a left join transactions t on t.account_id = a.id
    ${organizationId === undefined ? sql`` : sql`where a.organization_id = ${organizationId}`}
    group by a.id having a.balance <> coalesce(sum(t.amount), 0)`;
}

/** The organization's active wallets in a currency, oldest first, and whether each holds money: what a request or payment chooses from. */
export async function activeWallets(sql: Queryable, organizationId: number, currency: string): Promise<{ id: number; funded: boolean }[]> {
  return await sql<{ id: number; funded: boolean }[]>`
    select id, balance > 0 as funded from accounts
    where organization_id = ${organizationId} and currency = ${currency} and status = 'active'
    order by created, id`;
}
