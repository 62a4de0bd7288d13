/**
 * Bulk payouts: a batch of payments uploaded at once (JSON or CSV), its rows, and how the API
 * shows them. A batch is `processing` until every row is final, then `completed`; a row is
 * `pending` until the batch creates its payment (reserving its amount), `failed` when its wallet
 * could not pay it then, and after that has its payment's state.
 */
import { stringify } from 'csv-stringify/sync';
import * as v from 'valibot';
import { UnreadableCsvError, csvRecords, textCell } from './csv';
import { quoted } from './errors';
import { sumAmounts } from './money';
import { PAYMENT_STATES } from './money-out';
import {
  Amount,
  Author,
  CurrencyCode,
  Id,
  NullableTimestamp,
  OwningOrganization,
  PhoneNumber,
  Timestamp,
  described,
} from './shapes';
import { formatNullableTimestamp, formatTimestamp } from '../formats/time';
import type { OrganizationId, PaymentBatchId, PaymentId } from './ids';

/** The most rows one batch takes (a larger payroll is several batches). */
export const MAX_BATCH_ROWS = 10_000;

export const BATCH_STATES = ['processing', 'completed'] as const;
type BatchState = (typeof BATCH_STATES)[number];

/** Where a row stands: before its payment exists (`pending`, `failed`), then its payment's state. */
const BATCH_ROW_STATES = ['pending', 'failed', ...PAYMENT_STATES] as const;
type BatchRowState = (typeof BATCH_ROW_STATES)[number];
const FINAL_ROW_STATES: readonly BatchRowState[] = [
  'failed',
  'completed',
  'rejected',
  'processed_with_errors',
  'cancelled',
];

/** The columns a CSV upload may have: the fields of `POST /api/payments` a batch row takes. */
export const BATCH_CSV_COLUMNS = [
  'phonenumber',
  'amount',
  'currency',
  'description',
  'payment_type',
  'first_name',
  'last_name',
  'account',
  'callback_url',
  'send_sms_message',
] as const;

export type PaymentBatchRow = {
  id: PaymentBatchId;
  organizationId: OrganizationId;
  state: BatchState;
  rowCount: number;
  author: number | null;
  completedAt: Date | null;
  created: Date;
  modified: Date;
};

/** Rows of a batch counted by state and currency (`amount` the sum of their amounts). */
export type BatchTally = { state: BatchRowState; currency: string; rows: number; amount: string };

export type BatchLineRow = {
  rowNumber: number;
  phoneNumber: string;
  amount: string;
  currency: string;
  description: string;
  state: BatchRowState;
  paymentId: PaymentId | null;
  remoteTransactionId: string | null;
  error: string | null;
};

const Counts = v.object(
  Object.fromEntries(BATCH_ROW_STATES.map((state) => [state, v.number()])) as Record<
    BatchRowState,
    v.NumberSchema<undefined>
  >,
);

export const PaymentBatchSchema = v.pipe(
  v.object({
    id: Id,
    organization: OwningOrganization,
    state: described(
      v.picklist(BATCH_STATES),
      '`processing` while any row is not final, then `completed` (a `payment_batch.completed` event).',
    ),
    row_count: described(v.number(), 'How many payments the batch holds.'),
    counts: described(
      Counts,
      [
        'Rows by state: `pending` (its payment not created yet),',
        '`failed` (its wallet could not pay it when its turn came),',
        "then its payment's state.",
      ].join(' '),
    ),
    totals: described(
      v.array(v.object({ currency: CurrencyCode, rows: v.number(), amount: Amount, completed_amount: Amount })),
      'Per currency: the rows, the sum of their amounts, and the sum of the completed ones.',
    ),
    created: Timestamp,
    author: Author,
    modified: Timestamp,
    completed_at: described(NullableTimestamp, 'When the last row became final.'),
  }),
  v.description('Payments uploaded together and sent by one workflow, a bounded number at a time.'),
  v.examples([
    {
      id: 4,
      organization: 3,
      state: 'processing' as const,
      row_count: 3,
      counts: {
        pending: 0,
        failed: 0,
        new: 0,
        scheduled: 0,
        processing: 1,
        completed: 2,
        rejected: 0,
        processed_with_errors: 0,
        cancelled: 0,
      },
      totals: [{ currency: 'UGX', rows: 3, amount: '45000.0000', completed_amount: '30000.0000' }],
      created: '2025-05-01T13:45:00Z',
      author: 5,
      modified: '2025-05-01T13:45:00Z',
      completed_at: null,
    },
  ]),
);
export type PaymentBatchResource = v.InferOutput<typeof PaymentBatchSchema>;

export function serializePaymentBatch(batch: PaymentBatchRow, tallies: readonly BatchTally[]): PaymentBatchResource {
  const counts = Object.fromEntries(BATCH_ROW_STATES.map((state) => [state, 0])) as Record<BatchRowState, number>;
  for (const tally of tallies) counts[tally.state] += tally.rows;
  const currencies = [...new Set(tallies.map((tally) => tally.currency))].sort();
  const totals = currencies.map((currency) => {
    const ofCurrency = tallies.filter((tally) => tally.currency === currency);
    return {
      currency,
      rows: ofCurrency.reduce((sum, tally) => sum + tally.rows, 0),
      amount: sumAmounts(ofCurrency.map((tally) => tally.amount)),
      completed_amount: sumAmounts(
        ofCurrency.filter((tally) => tally.state === 'completed').map((tally) => tally.amount),
      ),
    };
  });
  return {
    id: batch.id,
    organization: batch.organizationId,
    state: batch.state,
    row_count: batch.rowCount,
    counts,
    totals,
    created: formatTimestamp(batch.created),
    author: batch.author,
    modified: formatTimestamp(batch.modified),
    completed_at: formatNullableTimestamp(batch.completedAt),
  };
}

/** How many of a batch's rows are final, for progress bars. */
export const finalRows = (batch: PaymentBatchResource): number =>
  FINAL_ROW_STATES.reduce((sum, state) => sum + batch.counts[state], 0);

export const PaymentBatchLineSchema = v.pipe(
  v.object({
    row: described(v.number(), 'Its place in the upload, from 1.'),
    phonenumber: PhoneNumber,
    amount: Amount,
    currency: CurrencyCode,
    description: v.string(),
    state: described(v.picklist(BATCH_ROW_STATES), "`pending`, `failed`, or its payment's state."),
    payment: described(v.nullable(Id), 'The payment made of it, once created.'),
    remote_transaction_id: described(v.nullable(v.string()), "The network's id of the transfer, once sent."),
    error: described(
      v.nullable(v.string()),
      'Why it failed: insufficient funds when its turn came, or what the network said.',
    ),
  }),
  v.description('A row of a batch and what became of it.'),
  v.examples([
    {
      row: 1,
      phonenumber: '+256772123456',
      amount: '15000.0000',
      currency: 'UGX',
      description: 'Salary May',
      state: 'completed' as const,
      payment: 77,
      remote_transaction_id: 'SBX-PAY-77',
      error: null,
    },
  ]),
);
type PaymentBatchLineResource = v.InferOutput<typeof PaymentBatchLineSchema>;

export const serializeBatchLine = (line: BatchLineRow): PaymentBatchLineResource => ({
  row: line.rowNumber,
  phonenumber: line.phoneNumber,
  amount: line.amount,
  currency: line.currency,
  description: line.description,
  state: line.state,
  payment: line.paymentId,
  remote_transaction_id: line.remoteTransactionId,
  error: line.error,
});

/** The result CSV: one line per row, in upload order, with what became of it. */
export function batchResultsCsv(lines: readonly BatchLineRow[]): string {
  return stringify(
    lines.map((line) => ({ ...serializeBatchLine(line), description: textCell(line.description) })),
    {
      header: true,
      columns: [
        'row',
        'phonenumber',
        'amount',
        'currency',
        'description',
        'state',
        'payment',
        'remote_transaction_id',
        'error',
      ],
    },
  );
}

/**
 * A CSV upload's rows as objects keyed by the header's columns (each of `BATCH_CSV_COLUMNS`, in
 * any order); an empty cell is an absent field. A BOM, CRLF line ends and quoted cells are taken.
 */
export function readBatchCsv(text: string): Record<string, string>[] {
  const [header, ...rows] = csvRecords(text);
  if (header === undefined) throw new UnreadableCsvError('The CSV is empty: its first line names the columns.');
  const columns = header.map((name) => name.toLowerCase());
  const unknown = columns.filter((name) => !(BATCH_CSV_COLUMNS as readonly string[]).includes(name));
  if (unknown.length > 0)
    throw new UnreadableCsvError(
      `Unknown column ${unknown
        .slice(0, 3)
        .map((name) => quoted(name))
        .join(', ')}${
        unknown.length > 3 ? ` and ${unknown.length - 3} more` : ''
      }: the columns are ${BATCH_CSV_COLUMNS.join(', ')}.`,
    );
  const repeated = columns.find((name, index) => columns.indexOf(name) !== index);
  if (repeated !== undefined) throw new UnreadableCsvError(`The column ${quoted(repeated)} appears twice.`);
  return rows.map((cells) =>
    Object.fromEntries(columns.flatMap((name, index) => (cells[index] === '' ? [] : [[name, cells[index]!]]))),
  );
}
