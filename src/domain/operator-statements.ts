/**
 * Operators' statements as their portals export them, read into lines the reconciliation compares
 * with our settlement report (src/domain/reconciliation.ts):
 *
 * - `mpesa`: M-PESA's organisation statement (Safaricom's business portal) as CSV. Descriptive lines
 *   may come before the header row; the columns used are `Receipt No.`, `Completion Time`,
 *   `Transaction Status`, `Paid In`, `Withdrawn` (required) and `Details`, `Reason Type`, `Other
 *   Party Info`, `Linked Transaction ID`. A charge is a line of its own (a Reason Type naming a
 *   charge, a Withdrawn amount) linked to the receipt it was charged for: it is that receipt's fee.
 * - `momo`: MTN MoMo's partner portal transaction export. The columns used are `Id` (the financial
 *   transaction id), `Date`, `Status`, `Amount` (required) and `External Transaction Id`, `Type`,
 *   `From`, `To`, `Fee`. `Currency` appears several times, each after the amount it qualifies: it
 *   is read by position, after `Amount` and after `Fee`.
 *
 * Amounts may carry thousands separators and a sign (or parentheses); they are compared as absolute
 * values, exactly. A time without an offset is the operator's local time: East Africa Time (UTC+3,
 * no daylight saving) for both Safaricom and MTN Uganda.
 */
import { UnreadableCsvError, csvRecords } from './csv';
import { quoted } from './errors';
import { sumAmounts } from './money';

type StatementFormat = 'mpesa' | 'momo';

/**
 * The statement a network's operator exports: M-PESA's for Safaricom, MoMo's for MTN Uganda; null for a network with
 * none read here.
 */
export const statementFormatOf = (network: string): StatementFormat | null =>
  network === 'Safaricom' ? 'mpesa' : network === 'MTN Uganda' ? 'momo' : null;

/**
 * The route whose statement a format is: a movement another route carried (pawaPay) is on that route's statement, not
 * this one.
 */
export const statementRouteOf = (format: StatementFormat): string => (format === 'mpesa' ? 'daraja' : 'momo');

/** One line of an operator's statement. */
export type OperatorLine = {
  /** Its line in the file (1 is the first), for a reader to find it. */
  row: number;
  operatorId: string;
  /** Our reference as the operator holds it (MoMo's External Transaction Id), when given. */
  reference: string | null;
  /** The transaction this one belongs to (M-PESA's Linked Transaction ID: a charge's or a reversal's original). */
  linkedId: string | null;
  time: Date | null;
  status: string;
  /** The operator says the money moved (M-PESA `Completed`, MoMo `Successful`). */
  completed: boolean;
  /** `in` to the service's account, `out` of it; null when the format does not say. */
  direction: 'in' | 'out' | null;
  /** Absolute, four decimals. */
  amount: string;
  currency: string | null;
  /** The fee the line reports (MoMo's Fee column, in the currency after it), when above zero. */
  fee: { amount: string; currency: string | null } | null;
  /** An M-PESA charge line: the fee of `linkedId`, not a movement of its own. */
  charge: boolean;
  party: string;
};

/** The operator's local time: both connected operators write East Africa Time. */
const OPERATOR_UTC_OFFSET = '+03:00';

/** A cell's amount: absolute, four decimals, and whether it was negative; null for an empty cell. */
function statementAmount(cell: string, where: string): { amount: string; negative: boolean } | null {
  let text = cell.replace(/[\s,]/g, '');
  if (text === '' || text === '-') return null;
  let negative = false;
  if (/^\(.*\)$/.test(text)) [text, negative] = [text.slice(1, -1), true];
  if (/^[-+]/.test(text)) [text, negative] = [text.slice(1), negative || text.startsWith('-')];
  if (!/^\d{1,16}(?:\.\d{1,4})?$/.test(text))
    throw new UnreadableCsvError(`${where}: ${quoted(cell)} is not an amount.`);
  return { amount: sumAmounts([text]), negative };
}

const TIME_FORMS: readonly { pattern: RegExp; order: [number, number, number] }[] = [
  {
    pattern: /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i,
    order: [1, 2, 3],
  },
  {
    pattern: /^(\d{1,2})[-/.](\d{1,2})[-/.](\d{4})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i,
    order: [3, 2, 1],
  },
];

/**
 * A statement's time (`YYYY-MM-DD HH:MM[:SS]` or day first, `DD-MM-YYYY`, `DD/MM/YYYY`), operator's local time unless
 * it names an offset.
 */
function statementTime(cell: string, where: string): Date | null {
  const text = cell.trim();
  if (text === '') return null;
  for (const { pattern, order } of TIME_FORMS) {
    const match = pattern.exec(text);
    if (!match) continue;
    const [year, month, day] = order.map((index) => match[index]!.padStart(2, '0'));
    const [hour = '00', minute = '00', second = '00'] = [match[4]?.padStart(2, '0'), match[5], match[6]];
    const zone =
      match[7] === undefined
        ? OPERATOR_UTC_OFFSET
        : match[7].toUpperCase() === 'Z'
          ? 'Z'
          : match[7].replace(/^([+-]\d{2})(\d{2})$/, '$1:$2');
    const parsed = new Date(`${year}-${month}-${day}T${hour}:${minute}:${second}${zone}`);
    if (!Number.isNaN(parsed.getTime())) return parsed;
  }
  throw new UnreadableCsvError(`${where}: ${quoted(cell)} is not a time such as 2025-05-01 13:45:00.`);
}

const normalise = (name: string) => name.trim().toLowerCase().replace(/\s+/g, ' ').replace(/\.$/, '');

/** The header row (the first record naming `marker`) and a reader of its columns by name. */
function locateHeader(records: string[][], marker: string, required: readonly string[], format: string) {
  const index = records.findIndex((record) => record.some((cell) => normalise(cell) === marker));
  if (index === -1) throw new UnreadableCsvError(`This is not ${format}: no header row names the column "${marker}".`);
  const header = records[index]!.map(normalise);
  const missing = required.filter((name) => !header.includes(name));
  if (missing.length > 0)
    throw new UnreadableCsvError(
      [
        `The ${format} lacks the column${missing.length > 1 ? 's' : ''}`,
        `${missing.map((name) => `"${name}"`).join(', ')}.`,
      ].join(' '),
    );
  const column = (name: string) => header.indexOf(name);
  /**
   * The column right after `name` when it is `currency` (the repeated Currency headers qualify the column before them).
   */
  const currencyAfter = (name: string) =>
    column(name) !== -1 && header[column(name) + 1] === 'currency' ? column(name) + 1 : -1;
  const rows = records.slice(index + 1).map((cells, offset) => ({
    row: index + offset + 2,
    cell: (at: number) => (at === -1 ? '' : (cells[at] ?? '').trim()),
  }));
  return { column, currencyAfter, rows };
}

function readMpesa(records: string[][]): OperatorLine[] {
  const format = 'M-PESA organisation statement';
  const { column, rows } = locateHeader(
    records,
    'receipt no',
    ['receipt no', 'completion time', 'transaction status', 'paid in', 'withdrawn'],
    format,
  );
  const [receipt, completion, status, paidIn, withdrawn] = [
    'receipt no',
    'completion time',
    'transaction status',
    'paid in',
    'withdrawn',
  ].map(column);
  const [reason, details, party, linked] = ['reason type', 'details', 'other party info', 'linked transaction id'].map(
    column,
  );
  return rows
    .filter(({ cell }) => cell(receipt!) !== '')
    .map(({ row, cell }) => {
      const where = `${format}, line ${row}`;
      const credit = statementAmount(cell(paidIn!), `${where}, Paid In`);
      const debit = statementAmount(cell(withdrawn!), `${where}, Withdrawn`);
      const moved = debit !== null && debit.amount !== '0.0000' ? debit : credit;
      return {
        row,
        operatorId: cell(receipt!),
        reference: null,
        linkedId: cell(linked!) || null,
        time: statementTime(cell(completion!), `${where}, Completion Time`),
        status: cell(status!),
        completed: /^completed$/i.test(cell(status!)),
        direction: moved === debit && debit !== null ? 'out' : 'in',
        amount: moved?.amount ?? '0.0000',
        currency: 'KES',
        fee: null,
        charge: /charge/i.test(cell(reason!) || cell(details!)),
        party: cell(party!),
      };
    });
}

function readMomo(records: string[][]): OperatorLine[] {
  const format = 'MTN MoMo transaction export';
  const { column, currencyAfter, rows } = locateHeader(
    records,
    'external transaction id',
    ['id', 'date', 'status', 'amount'],
    format,
  );
  const [id, external, date, status, amountColumn, feeColumn, from, to] = [
    'id',
    'external transaction id',
    'date',
    'status',
    'amount',
    'fee',
    'from',
    'to',
  ].map(column);
  const [amountCurrency, feeCurrency] = [currencyAfter('amount'), currencyAfter('fee')];
  return rows
    .filter(({ cell }) => cell(id!) !== '')
    .map(({ row, cell }) => {
      const where = `${format}, line ${row}`;
      const amount = statementAmount(cell(amountColumn!), `${where}, Amount`);
      const fee = statementAmount(cell(feeColumn!), `${where}, Fee`);
      const currency = cell(amountCurrency) || null;
      return {
        row,
        operatorId: cell(id!),
        reference: cell(external!) || null,
        linkedId: null,
        time: statementTime(cell(date!), `${where}, Date`),
        status: cell(status!),
        completed: /^successful$/i.test(cell(status!)),
        direction: amount === null ? null : amount.negative ? 'out' : null,
        amount: amount?.amount ?? '0.0000',
        currency,
        fee:
          fee === null || fee.amount === '0.0000'
            ? null
            : { amount: fee.amount, currency: cell(feeCurrency) || currency },
        charge: false,
        party: [cell(from!), cell(to!)].filter(Boolean).join(' → '),
      };
    });
}

/**
 * A statement's lines; an unreadable file or a missing required column is an UnreadableCsvError saying what is wrong.
 */
export function readOperatorStatement(format: StatementFormat, text: string): OperatorLine[] {
  const records = csvRecords(text, { ragged: true });
  if (records.every((record) => record.every((cell) => cell === '')))
    throw new UnreadableCsvError('The statement is empty.');
  return format === 'mpesa' ? readMpesa(records) : readMomo(records);
}
