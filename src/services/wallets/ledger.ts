/**
 * The one place a wallet's balance changes: the balance and its transaction row together, in the
 * caller's database transaction, so every balance is the sum of its transactions. Credits are
 * positive, debits negative; a debit that would take the balance below zero moves nothing (the
 * balance's check constraint backs this up), whatever the concurrency: the row lock of the update
 * serialises movements of one wallet.
 */
import type { TransactionId } from '../../domain/ids';
import type { Queryable } from '../../db';
import { LEDGER_LINKS, type LedgerLinks, type TransactionType } from '../../domain/money-movements';

/** A change of one wallet, with the id of each movement it belongs to (`paymentId`: src/domain/money-movements.ts). */
export type Movement = {
  accountId: number;
  /** Signed decimal string: positive adds to the wallet, negative takes out of it. */
  amount: string;
  currency: string;
  type: TransactionType;
  description: string;
} & Partial<LedgerLinks>;

type Moved = { transactionId: number; balance: string };

/** Applies `movement`; null (nothing moved) when a debit is more than the wallet holds. */
export async function moveMoney(tx: Queryable, movement: Movement): Promise<Moved | null> {
  const [account] = await tx<{ balance: string }[]>`
    update accounts set balance = balance + ${movement.amount}::numeric, modified = now()
    where id = ${movement.accountId} and currency = ${movement.currency} and balance + ${movement.amount}::numeric >= 0
    returning balance::text`;
  if (!account) return null;
  const row = {
    account_id: movement.accountId,
    amount: movement.amount,
    currency: movement.currency,
    type: movement.type,
    description: movement.description,
    ...Object.fromEntries(LEDGER_LINKS.map(({ column, field }) => [column, movement[field] ?? null])),
  };
  const [transaction] = await tx<{ id: TransactionId }[]>`insert into transactions ${tx(row)} returning id`;
  return { transactionId: transaction!.id, balance: account.balance };
}

/** `-amount` for a positive decimal string. */
export const debit = (amount: string): string => (amount.startsWith('-') ? amount.slice(1) : `-${amount}`);
