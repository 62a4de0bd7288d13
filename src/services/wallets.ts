/** Wallets (accounts) and the transactions behind their balances, as the API and the console read them. */
import type { Queryable, Sql } from '../db';
import type { LedgerRow, WalletRow } from '../domain/money-out';
import { timeRange } from './queries';

export const WALLET_COLUMNS = `id, organization_id as "organizationId", currency, label, description, status, balance::text as balance,
  low_balance_threshold::text as "lowBalanceThreshold", low_balance_notification_last_send_time as "lowBalanceNotificationLastSendTime",
  author, updated_by as "updatedBy", created, modified`;

export const LEDGER_COLUMNS = `t.id, t.account_id as "accountId", t.amount::text as amount, t.currency, t.type, t.description,
  t.collection_id as "collectionId", t.payment_id as "paymentId", t.reversal_id as "reversalId", t.created`;

export async function findWallet(sql: Queryable, id: number): Promise<WalletRow | undefined> {
  const [row] = await sql<WalletRow[]>`select ${sql.unsafe(WALLET_COLUMNS)} from accounts where id = ${id}`;
  return row;
}

/** An organization's wallets (oldest first: the default one of a currency comes first). */
export async function listWallets(
  sql: Sql, organizationId: number, filters: { currency?: string; status?: string }, page: { limit: number; offset: number },
): Promise<{ count: number; rows: WalletRow[] }> {
  const where = sql`
    where organization_id = ${organizationId}
    ${filters.currency !== undefined ? sql`and currency = ${filters.currency}` : sql``}
    ${filters.status !== undefined ? sql`and status = ${filters.status}` : sql``}`;
  const [[total], rows] = await Promise.all([
    sql<{ count: number }[]>`select count(*)::int as count from accounts ${where}`,
    sql<WalletRow[]>`select ${sql.unsafe(WALLET_COLUMNS)} from accounts ${where} order by created, id limit ${page.limit} offset ${page.offset}`,
  ]);
  return { count: total?.count ?? 0, rows };
}

/** A transaction with the organization that owns its wallet (for the 403 of another's). */
export async function findTransaction(sql: Queryable, id: number): Promise<(LedgerRow & { organizationId: number }) | undefined> {
  const [row] = await sql<(LedgerRow & { organizationId: number })[]>`
    select ${sql.unsafe(LEDGER_COLUMNS)}, a.organization_id as "organizationId"
    from transactions t join accounts a on a.id = t.account_id where t.id = ${id}`;
  return row;
}

export type TransactionFilters = { account?: number; type?: string; currency?: string; created_after?: Date; created_before?: Date };

/** One page of the transactions of an organization's wallets, newest first, with the total count. */
export async function listTransactions(
  sql: Sql, organizationId: number, filters: TransactionFilters, page: { limit: number; offset: number },
): Promise<{ count: number; rows: LedgerRow[] }> {
  const where = sql`
    where a.organization_id = ${organizationId}
    ${filters.account !== undefined ? sql`and t.account_id = ${filters.account}` : sql``}
    ${filters.type !== undefined ? sql`and t.type = ${filters.type}` : sql``}
    ${filters.currency !== undefined ? sql`and t.currency = ${filters.currency}` : sql``}
    ${timeRange(sql, 't.created', filters.created_after, filters.created_before)}`;
  const from = sql`transactions t join accounts a on a.id = t.account_id`;
  const [[total], rows] = await Promise.all([
    sql<{ count: number }[]>`select count(*)::int as count from ${from} ${where}`,
    sql<LedgerRow[]>`select ${sql.unsafe(LEDGER_COLUMNS)} from ${from} ${where} order by t.created desc, t.id desc limit ${page.limit} offset ${page.offset}`,
  ]);
  return { count: total?.count ?? 0, rows };
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
