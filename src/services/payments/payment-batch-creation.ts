/**
 * Bulk payouts: a batch of payments uploaded together (JSON, or CSV of the same columns), checked row by row with the
 * single payment's rules before anything is written, and refused when a wallet does not hold the sum of its rows; then
 * sent by its workflow (`payment-batch-<id>`, whose steps are in payment-batch-steps.ts), a bounded number at a time.
 */
import * as v from 'valibot';
import type { Queryable } from '../../db';
import { RefusedError, fieldErrors, type FieldErrors } from '../../domain/errors';
import type { OrganizationId } from '../../domain/ids';
import { MAX_BATCH_ROWS, type PaymentBatchResource, type PaymentBatchRow } from '../../domain/payment-batches';
import { checkFields } from '../../domain/input';
import { compareDecimal, groupedAmount, sumAmounts } from '../../domain/money';
import type { Actor, ServiceDeps } from '../platform/deps';
import { writeOnce, type DuplicateCheck } from '../collections/duplicate-checks';
import { PaymentCreate, checkPayment, type NewPayment } from './payment-creation';
import { tenantScope } from '../platform/queries';
import { activeWallets } from '../wallets/wallets';
import { BATCH_COLUMNS, paymentBatchResources } from './payment-batch-reads';

/** A row of a batch: the fields of `POST /api/payments` but `start_date` (a batch is sent at once). */
const PaymentBatchLine = v.omit(PaymentCreate, ['start_date']);

export const PaymentBatchCreate = v.object(
  {
    payments: v.pipe(
      v.array(
        v.record(v.string(), v.unknown(), 'Each payment is an object of its fields.'),
        'A list of payments is required.',
      ),
      v.minLength(1, 'A batch holds at least one payment.'),
      v.maxLength(MAX_BATCH_ROWS, `A batch holds at most ${MAX_BATCH_ROWS} payments.`),
      v.description(
        [
          'The payments, each with the fields of `POST /api/payments` but `start_date` (a batch is sent at once):',
          '`phonenumber`, `amount`, `currency`, `description`,',
          'and optionally `payment_type`, `metadata`, `first_name`, `last_name`, `account`, `callback_url`,',
          '`send_sms_message`.',
          'Every row is checked before anything is written;',
          "a row's errors are keyed `payments[<index>].<field>` (index from 0).",
        ].join(' '),
      ),
    ),
  },
  'This field is required.',
);
export type PaymentBatchInput = v.InferOutput<typeof PaymentBatchCreate>;

/** A row's values as the batch stores them until its payment is created. */
export type LineFields = Omit<NewPayment, 'organizationId' | 'author' | 'startDate'>;

/** What a wallet must hold for a batch: the sum of its rows, beside what it holds. */
type BatchFunding = {
  accountId: number;
  currency: string;
  rows: number;
  amount: string;
  balance: string;
  enough: boolean;
};

/** A batch checked as a whole: each row's values or errors, the errors keyed for the API, and each wallet's funding. */
export type BatchCheck = {
  lines: { fields: LineFields | null; errors: FieldErrors }[];
  errors: FieldErrors;
  funding: BatchFunding[];
};

/** The organization's active wallets of each currency the rows name, read once per currency. */
async function walletsByCurrency(
  sql: Queryable,
  organizationId: OrganizationId,
  rows: readonly Record<string, unknown>[],
) {
  const currencies = new Set(
    rows.map((row) =>
      String(row.currency ?? '')
        .trim()
        .toUpperCase(),
    ),
  );
  const entries = await Promise.all(
    [...currencies].map(async (currency) => [currency, await activeWallets(sql, organizationId, currency)] as const),
  );
  return new Map(entries);
}

/**
 * Checks every row of a batch with the single payment's rules (`PaymentBatchLine`, then
 * `checkPayment`), and what each wallet must hold against what it holds: nothing is written.
 * The API refuses a batch with any error; the console's preview shows them row by row.
 */
export async function checkPaymentBatch(
  { sql, config, networks }: Pick<ServiceDeps, 'sql' | 'config' | 'networks'>,
  organizationId: OrganizationId,
  rows: readonly Record<string, unknown>[],
): Promise<BatchCheck> {
  const wallets = await walletsByCurrency(sql, organizationId, rows);
  const now = new Date();
  const errors: FieldErrors = {};
  const lines = rows.map((row, index) => {
    const parsed = checkFields(PaymentBatchLine, row);
    const checked = parsed.success
      ? checkPayment(
          { config, networks },
          { ...parsed.output, start_date: null },
          wallets.get(parsed.output.currency) ?? [],
          now,
        )
      : { errors: parsed.errors, fields: null };
    for (const [field, messages] of Object.entries(checked.errors)) errors[`payments[${index}].${field}`] = messages;
    if (checked.fields === null) return { fields: null, errors: checked.errors };
    const { startDate: _sentAtOnce, ...fields } = checked.fields;
    return { fields, errors: checked.errors };
  });
  return {
    lines,
    errors,
    funding: await fundingOf(
      sql,
      organizationId,
      lines.flatMap((line) => (line.fields === null ? [] : [line.fields])),
    ),
  };
}

/** Each wallet the rows are paid from: their sum and what it holds now. */
async function fundingOf(
  sql: Queryable,
  organizationId: OrganizationId,
  lines: readonly LineFields[],
): Promise<BatchFunding[]> {
  const byAccount = new Map<number, LineFields[]>();
  for (const line of lines) {
    const ofAccount = byAccount.get(line.accountId);
    if (ofAccount) ofAccount.push(line);
    else byAccount.set(line.accountId, [line]);
  }
  if (byAccount.size === 0) return [];
  const balances = await sql<{ id: number; currency: string; balance: string }[]>`
    select id, currency, balance::text as balance from accounts where ${tenantScope(sql, organizationId).owned()} and id
      in ${sql([...byAccount.keys()])} order by id`;
  return balances.map((wallet) => {
    const amount = sumAmounts(byAccount.get(wallet.id)!.map((line) => line.amount));
    return {
      accountId: wallet.id,
      currency: wallet.currency,
      rows: byAccount.get(wallet.id)!.length,
      amount,
      balance: wallet.balance,
      enough: compareDecimal(wallet.balance, amount) >= 0,
    };
  });
}

/** The wallets a batch's rows would overdraw, in the API's words (400 `insufficient funds: ...`). */
const shortfall = (funding: readonly BatchFunding[]): string | null => {
  const short = funding.filter((wallet) => !wallet.enough);
  if (short.length === 0) return null;
  const wallets = short.map((wallet) =>
    [
      `the ${wallet.currency} wallet ${wallet.accountId} holds ${groupedAmount(wallet.balance)};`,
      `the batch's ${wallet.rows} rows from it add up to ${groupedAmount(wallet.amount)}`,
    ].join(' '),
  );
  return `insufficient funds: ${wallets.join('; ')}.`;
};

const INSERT_ROWS_AT_ONCE = 1000;

/**
 * Creates a batch as the REST route and the console both do: every row checked (400 with each
 * row's errors, or `insufficient funds` when a wallet does not hold the sum of its rows), the batch
 * and its rows written in one transaction with the Duplicate-Check-Key's claim (a re-upload with
 * the same key is a 409), and its workflow started after the commit.
 */
export async function createPaymentBatch(
  { sql, config, launcher, networks }: Pick<ServiceDeps, 'sql' | 'config' | 'launcher' | 'networks'>,
  creator: Actor,
  input: PaymentBatchInput,
  duplicateCheck: DuplicateCheck | null,
): Promise<PaymentBatchResource> {
  const checked = await checkPaymentBatch({ sql, config, networks }, creator.organizationId, input.payments);
  if (Object.keys(checked.errors).length > 0) throw fieldErrors(checked.errors);
  const short = shortfall(checked.funding);
  if (short !== null) throw new RefusedError(short);
  const batch = await writeOnce(
    sql,
    creator,
    duplicateCheck,
    async (tx) => {
      const [row] = await tx<PaymentBatchRow[]>`
        insert into payment_batches (organization_id, row_count, author)
        values (${creator.organizationId}, ${checked.lines.length}, ${creator.userId})
        returning ${tx.unsafe(BATCH_COLUMNS)}`;
      const lines = checked.lines.map(({ fields }, index) => ({
        batch_id: row!.id,
        row_number: index + 1,
        account_id: fields!.accountId,
        network: fields!.network,
        phone_number: fields!.phoneNumber,
        amount: fields!.amount,
        currency: fields!.currency,
        input: tx.json(fields as Parameters<typeof tx.json>[0]),
      }));
      for (let start = 0; start < lines.length; start += INSERT_ROWS_AT_ONCE) {
        await tx`insert into payment_batch_rows ${tx(lines.slice(start, start + INSERT_ROWS_AT_ONCE))}`;
      }
      return row!;
    },
    (row) => ({ type: 'payment_batch', id: row.id }),
  );
  await launcher.afterCommit({ paymentBatches: [{ id: batch.id, organizationId: batch.organizationId }] });
  const [resource] = await paymentBatchResources(sql, [batch]);
  return resource!;
}
