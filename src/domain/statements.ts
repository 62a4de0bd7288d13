/**
 * A wallet's statement for a UTC period, as the API and the CSV show it: the opening balance, every
 * transaction with the balance after it, the closing balance. A finance team reconciles against it.
 */
import { stringify } from 'csv-stringify/sync';
import * as v from 'valibot';
import { LedgerTransactionSchema, precise, serializeLedgerTransaction, type LedgerRow } from './money-out';
import { ledgerLinkOf } from './money-movements';
import { CurrencyCode, Id, described } from './shapes';
import type { WalletId } from './ids';

const SignedDecimal = v.pipe(
  v.string(),
  v.regex(/^-?\d+\.\d{4}$/),
  v.description('Decimal string with four decimals; negative for money out.'),
);

export type StatementRow = {
  walletId: WalletId;
  currency: string;
  since: Date;
  until: Date;
  asOf: Date;
  openingBalance: string;
  closingBalance: string;
  credits: string;
  debits: string;
  lines: (LedgerRow & { balanceAfter: string })[];
};

export const StatementSchema = v.pipe(
  v.object({
    account: described(Id, 'The wallet.'),
    currency: CurrencyCode,
    since: described(v.string(), 'The start of the period (inclusive), UTC with milliseconds.'),
    until: described(v.string(), 'The end of the period (exclusive).'),
    as_of: described(
      v.string(),
      [
        'When the statement was read: every transaction committed by then is in it',
        '(a period that reaches the present may still grow).',
      ].join(' '),
    ),
    opening_balance: described(SignedDecimal, 'The balance at `since`: the sum of every earlier transaction.'),
    credits: described(SignedDecimal, "The sum of the period's credits."),
    debits: described(SignedDecimal, "The sum of the period's debits (negative)."),
    closing_balance: described(
      SignedDecimal,
      [
        'The opening balance plus every transaction of the period;',
        "for a period that reaches `as_of`, the wallet's balance then.",
      ].join(' '),
    ),
    transactions: described(
      v.array(
        v.object({
          ...LedgerTransactionSchema.pipe[0].entries,
          balance_after: described(SignedDecimal, "The wallet's balance right after it."),
        }),
      ),
      "The period's transactions, oldest first.",
    ),
  }),
  v.description("A wallet's statement for a period: opening balance, every transaction, closing balance."),
  v.examples([
    {
      account: 12,
      currency: 'UGX',
      since: '2025-05-01T00:00:00.000Z',
      until: '2025-05-02T00:00:00.000Z',
      as_of: '2025-05-03T08:00:00.000Z',
      opening_balance: '1000.0000',
      credits: '1500.0000',
      debits: '-250.0000',
      closing_balance: '2250.0000',
      transactions: [
        {
          id: 311,
          account: 12,
          amount: '-250.0000',
          currency: 'UGX',
          type: 'mobile_payment',
          description: 'Payment 77 to +256772123456',
          collection: null,
          payment: 77,
          reversal: null,
          fee_transaction: null,
          created: '2025-05-01T13:47:02.512Z',
          balance_after: '750.0000',
        },
      ],
    },
  ]),
);
type StatementResource = v.InferOutput<typeof StatementSchema>;

export const serializeStatement = (statement: StatementRow): StatementResource => ({
  account: statement.walletId,
  currency: statement.currency,
  since: precise(statement.since),
  until: precise(statement.until),
  as_of: precise(statement.asOf),
  opening_balance: statement.openingBalance,
  credits: statement.credits,
  debits: statement.debits,
  closing_balance: statement.closingBalance,
  transactions: statement.lines.map((line) => ({
    ...serializeLedgerTransaction(line),
    balance_after: line.balanceAfter,
  })),
});

/**
 * What a transaction belongs to, in the CSV: the movement that wrote it (`payment 77`, `reversal 9`); nothing for a
 * funding.
 */
function belongsTo(line: LedgerRow): string {
  const link = ledgerLinkOf(line.type);
  const id = link === undefined ? null : line[link.field];
  return link === undefined || id === null ? '' : `${link.kind} ${id}`;
}

/**
 * The statement as CSV: a line for the opening balance, one per transaction (its time, id, type,
 * what it belongs to, amount, balance after) and one for the closing balance.
 */
export function statementCsv(statement: StatementRow): string {
  return stringify([
    ['time', 'transaction', 'type', 'belongs_to', 'description', 'amount', 'balance', 'currency'],
    [precise(statement.since), '', 'opening_balance', '', '', '', statement.openingBalance, statement.currency],
    ...statement.lines.map((line) => [
      precise(line.created),
      line.id,
      line.type,
      belongsTo(line),
      line.description,
      line.amount,
      line.balanceAfter,
      line.currency,
    ]),
    [precise(statement.until), '', 'closing_balance', '', '', '', statement.closingBalance, statement.currency],
  ]);
}
