/** Wallets (accounts) and the transactions behind their balances, as the API and the console read them. */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import { fieldErrors } from '../../domain/errors';
import type { OrganizationId, TransactionId, WalletId } from '../../domain/ids';
import { choiceMessage, filterDate, filterId, instantField } from '../../domain/input';
import { ACCOUNT_STATUSES, TRANSACTION_TYPES, type LedgerRow, type WalletRow } from '../../domain/money-out';
import { LEDGER_LINKS, type LedgerField, type LedgerLinks } from '../../domain/money-movements';
import type { StatementRow } from '../../domain/statements';
import { tenantScope, timeRange, type ListPage, type PageWindow } from '../platform/queries';

const WALLET_COLUMNS = `id, organization_id as "organizationId", currency, label, description, status,
  balance::text as balance, low_balance_threshold::text as "lowBalanceThreshold",
  low_balance_notification_last_send_time as "lowBalanceNotificationLastSendTime",
  author, updated_by as "updatedBy", created, modified`;

/**
 * A transaction's columns as a `LedgerRow`: with each movement's column of src/domain/money-movements.ts
 * (`t.payment_id as "paymentId"`).
 */
const LEDGER_COLUMNS = `t.id, t.account_id as "accountId", t.amount::text as amount, t.currency, t.type, t.description,
  ${LEDGER_LINKS.map(({ column, field }) => `t.${column} as "${field}"`).join(', ')}, t.created`;

const upperCase = v.optional(
  v.pipe(
    v.string(),
    v.transform((value) => value.toUpperCase()),
  ),
);

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
export async function findOwnWallet(sql: Queryable, organizationId: OrganizationId, id: WalletId): Promise<WalletRow> {
  return await tenantScope(sql, organizationId).ownRow<WalletRow>({
    table: 'accounts',
    id,
    columns: sql.unsafe(WALLET_COLUMNS),
  });
}

/** An organization's wallets (oldest first: the default one of a currency comes first). */
export async function listWallets(
  sql: Sql,
  organizationId: OrganizationId,
  filters: WalletFilterValues,
  page: PageWindow,
): Promise<ListPage<WalletRow>> {
  return await tenantScope(sql, organizationId).listPage<WalletRow>(
    {
      columns: sql.unsafe(WALLET_COLUMNS),
      from: sql`accounts`,
      filters: sql`
      ${filters.currency !== undefined ? sql`and currency = ${filters.currency}` : sql``}
      ${filters.status !== undefined ? sql`and status = ${filters.status}` : sql``}`,
      orderBy: sql`order by created, id`,
    },
    page,
  );
}

/** A transaction of one of the organization's wallets (403 when another organization's, 404 when none). */
export async function findOwnTransaction(
  sql: Queryable,
  organizationId: OrganizationId,
  id: TransactionId,
): Promise<LedgerRow> {
  return await tenantScope(sql, organizationId).ownRow<LedgerRow>({
    table: 'transactions',
    id,
    columns: sql.unsafe(LEDGER_COLUMNS),
    through: { from: sql`transactions t join accounts a on a.id = t.account_id`, row: 't', owner: 'a' },
  });
}

/** One page of the transactions of an organization's wallets, newest first, with the total count. */
export async function listTransactions(
  sql: Sql,
  organizationId: OrganizationId,
  filters: TransactionFilterValues,
  page: PageWindow,
): Promise<ListPage<LedgerRow>> {
  return await tenantScope(sql, organizationId).listPage<LedgerRow>(
    {
      columns: sql.unsafe(LEDGER_COLUMNS),
      from: sql`transactions t join accounts a on a.id = t.account_id`,
      alias: 'a',
      filters: sql`
      ${filters.account !== undefined ? sql`and t.account_id = ${filters.account}` : sql``}
      ${filters.type !== undefined ? sql`and t.type = ${filters.type}` : sql``}
      ${filters.currency !== undefined ? sql`and t.currency = ${filters.currency}` : sql``}
      ${timeRange(sql, 't.created', filters.created_after, filters.created_before)}`,
      orderBy: sql`order by t.created desc, t.id desc`,
    },
    page,
  );
}

/** One movement the ledger names, by its field: `{ paymentId: 77 }`. */
type LedgerOwner = { [Field in LedgerField]: { [Key in Field]: NonNullable<LedgerLinks[Field]> } }[LedgerField];

/**
 * The transactions of one movement (a payment, a reversal, ...), or of one collection (its credit and
 * its reversal's transactions), oldest first; each form of the condition is one the indexes answer.
 */
export async function transactionsBelongingTo(sql: Queryable, owner: LedgerOwner): Promise<LedgerRow[]> {
  const [field, id] = Object.entries(owner)[0] as [LedgerField, number];
  const where =
    field === 'collectionId'
      ? sql`(t.collection_id = ${id} and t.type = 'mobile_collection')
          or t.reversal_id = (select id from reversals where collection_id = ${id})`
      : sql`${sql(`t.${LEDGER_LINKS.find((link) => link.field === field)!.column}`)} = ${id}`;
  return await sql<LedgerRow[]>`select ${sql.unsafe(LEDGER_COLUMNS)} from transactions t where ${where} order by t.id`;
}

/**
 * Wallets whose balance is not the sum of their transactions: none, ever (the admin CLI and the
 * tests check). Every organization's when none is given (the operator's check).
 */
export async function walletsOutOfBalance(
  sql: Queryable,
  organizationId?: OrganizationId,
): Promise<{ id: WalletId; balance: string; sum: string }[]> {
  return await sql<{ id: WalletId; balance: string; sum: string }[]>`
    select a.id, a.balance::text as balance, coalesce(sum(t.amount), 0)::text as sum
    from accounts a left join transactions t on t.account_id = a.id
    ${organizationId === undefined ? sql`` : sql`where ${tenantScope(sql, organizationId).owned('a')}`}
    group by a.id having a.balance <> coalesce(sum(t.amount), 0)`;
}

/**
 * The organization's active wallets in a currency, oldest first, and whether each holds money: what a request or
 * payment chooses from.
 */
export async function activeWallets(
  sql: Queryable,
  organizationId: OrganizationId,
  currency: string,
): Promise<{ id: WalletId; funded: boolean }[]> {
  return await sql<{ id: WalletId; funded: boolean }[]>`
    select id, balance > 0 as funded from accounts
    where ${tenantScope(sql, organizationId).owned()} and currency = ${currency} and status = 'active'
    order by created, id`;
}

// ---------------------------------------------------------------------------------------------
// Statements

/** The most transactions one statement lists (a busier period is asked for in shorter ones). */
export const STATEMENT_MAX_TRANSACTIONS = 50_000;

export const StatementPeriod = v.object({
  since: v.optional(
    instantField(
      [
        'The start of the period, inclusive: `YYYY-MM-DD` (midnight UTC) or a date and time;',
        'default: the start of today (UTC).',
      ].join(' '),
    ),
  ),
  until: v.optional(
    instantField('The end of the period, exclusive: `YYYY-MM-DD` (midnight UTC) or a date and time; default: now.'),
  ),
});
type StatementPeriodValues = v.InferOutput<typeof StatementPeriod>;

/**
 * A wallet's statement for `[since, until)`: the balance before the period (the sum of every earlier
 * transaction), each transaction of the period oldest first with the balance after it, and the
 * closing balance. Read in one REPEATABLE READ snapshot, so the closing balance of a period that
 * reaches the present equals the wallet's balance at `asOf`, however many payments commit meanwhile.
 */
export async function walletStatement(
  sql: Sql,
  organizationId: OrganizationId,
  walletId: WalletId,
  period: StatementPeriodValues,
): Promise<StatementRow> {
  return (await sql.begin('isolation level repeatable read read only', async (tx) => {
    const wallet = await findOwnWallet(tx, organizationId, walletId);
    const asOf = (await tx<{ now: Date }[]>`select clock_timestamp() as now`)[0]!.now;
    const until = period.until ?? asOf;
    const since = period.since ?? new Date(Date.UTC(until.getUTCFullYear(), until.getUTCMonth(), until.getUTCDate()));
    if (since.getTime() >= until.getTime())
      throw fieldErrors({ until: ['The end of the period must come after its start.'] });
    const inPeriod = tx`t.account_id = ${wallet.id} and t.created >= ${since} and t.created < ${until}`;
    const [summary] = await tx<{ opening: string; count: number; credits: string; debits: string }[]>`
      select coalesce(
               (select sum(amount) from transactions where account_id = ${wallet.id} and created < ${since}), 0
             )::numeric(20,4)::text as opening,
             count(*)::int as count,
             coalesce(sum(t.amount) filter (where t.amount > 0), 0)::numeric(20,4)::text as credits,
             coalesce(sum(t.amount) filter (where t.amount < 0), 0)::numeric(20,4)::text as debits
      from transactions t where ${inPeriod}`;
    const { opening, count, credits, debits } = summary!;
    if (count > STATEMENT_MAX_TRANSACTIONS) {
      throw fieldErrors({
        until: [
          [
            `The period holds ${count} transactions; a statement lists at most ${STATEMENT_MAX_TRANSACTIONS}:`,
            'ask for a shorter period.',
          ].join(' '),
        ],
      });
    }
    const lines = await tx<StatementRow['lines']>`
      select ${tx.unsafe(LEDGER_COLUMNS)},
             (${opening}::numeric + sum(t.amount) over (order by t.created, t.id))::text as "balanceAfter"
      from transactions t where ${inPeriod}
      order by t.created, t.id`;
    const closing = lines.at(-1)?.balanceAfter ?? opening;
    return {
      walletId: wallet.id,
      currency: wallet.currency,
      since,
      until,
      asOf,
      openingBalance: opening,
      closingBalance: closing,
      credits,
      debits,
      lines,
    };
  })) as StatementRow;
}
