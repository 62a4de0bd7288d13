/**
 * A daily settlement report: for one UTC day, every movement of money that reached a mobile
 * network (collections in, payments out, reversals out), each with the operator's transaction id,
 * and the totals per network and currency. A finance team matches it against the operator's own
 * statement (the admin CLI's `reconcile` does it line by line).
 *
 * The day rule: a movement belongs to the UTC day in which it became final in our books, the moment
 * recorded with it. A collection is final when its wallet was credited (its `mobile_collection`
 * transaction); a payment or a reversal when it was recorded `completed` (its row's last change: a
 * completed row never changes again). Nothing else moves money with a network: a payment that
 * failed or was cancelled and a reversal that failed gave their amount back and paid nobody.
 */
import { stringify } from 'csv-stringify/sync';
import * as v from 'valibot';
import { textCell } from './csv';
import { differenceOf, sumAmounts } from './money';
import { precise } from './money-out';
import { MONEY_MOVEMENTS, SETTLEMENT_KINDS, movementNoun, type SettlementKind } from './money-movements';
import { Amount, CurrencyCode, Id, OwningOrganization, PhoneNumber, described } from './shapes';
import type { OrganizationId } from './ids';
import { parseFilterDate } from '../formats/time';

/** The kinds of movement with a network (src/domain/money-movements.ts): collections, payments, reversals. */
const SETTLEMENT_LINE_TYPES = SETTLEMENT_KINDS;
type SettlementLineType = SettlementKind;
const settlementOf = (type: SettlementLineType) => MONEY_MOVEMENTS[type].settlement;

/** The report's totals per network and currency, one per line type (`in`, `out`, `reversed`), in the list's order. */
export const SETTLEMENT_TOTALS = SETTLEMENT_LINE_TYPES.map((type) => settlementOf(type).total);
type TotalName = ReturnType<typeof settlementOf>['total'];

/** `a`, `a or b`, `a, b or c`. */
const orList = (words: readonly string[]): string =>
  words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
const typesGoing = (direction: 'in' | 'out'): string =>
  orList(
    SETTLEMENT_LINE_TYPES.filter((type) => settlementOf(type).direction === direction).map((type) => `\`${type}\``),
  );

/** One movement of money with a network, as the services read it. */
export type SettlementLine = {
  network: string;
  currency: string;
  type: SettlementLineType;
  id: number;
  organizationId: OrganizationId;
  /** The operator's id of the movement (M-Pesa's receipt, MoMo's financial transaction id, the sandbox's). */
  operatorTransactionId: string | null;
  /** Ours, as the operator holds it where it holds one (MoMo's external id): a prompt's, `pay-<id>`, `rev-<id>`. */
  reference: string | null;
  /** A reversal's: the operator's id of the collection it sent back. */
  originalTransactionId: string | null;
  /**
   * The route that moved it (`daraja`, `momo`, `airtel`, `vodacom`, `pawapay`); null for the sandbox and for movements
   * from before routes.
   */
  route: string | null;
  amount: string;
  phoneNumber: string;
  finalAt: Date;
};

export type Settlement = {
  day: Date;
  since: Date;
  until: Date;
  asOf: Date;
  network: string | null;
  currency: string | null;
  lines: SettlementLine[];
};

const MESSAGE = 'Enter a valid date, such as 2025-05-01.';

/** A UTC day written `YYYY-MM-DD` (1900 to 2099), as its midnight; null for anything else. */
function parseSettlementDay(text: string): Date | null {
  return /^\d{4}-\d{2}-\d{2}$/.test(text.trim()) ? parseFilterDate(text) : null;
}

/** The day query parameter: `YYYY-MM-DD`, UTC. */
export const SettlementDay = v.pipe(
  v.string(MESSAGE),
  v.description('A UTC day, `YYYY-MM-DD`; default: today (so far).'),
  v.transform(parseSettlementDay),
  v.custom<Date>((value) => value instanceof Date, MESSAGE),
);

/** The UTC day that follows `day`'s midnight. */
export const nextDay = (day: Date): Date => new Date(day.getTime() + 86_400_000);
/** Midnight UTC of the day `instant` falls in. */
export const dayOf = (instant: Date): Date =>
  new Date(Date.UTC(instant.getUTCFullYear(), instant.getUTCMonth(), instant.getUTCDate()));
const dayText = (day: Date): string => day.toISOString().slice(0, 10);

const FEE_NOTE = [
  'The fee the network reports for this movement;',
  "null: neither M-Pesa's (Daraja) nor MTN MoMo's API results report one per transaction",
  "(the charges of an operator's statement are listed by the admin CLI's `reconcile`).",
].join(' ');

const SettlementLineSchema = v.object({
  network: described(v.string(), 'The mobile network.'),
  currency: CurrencyCode,
  type: described(
    v.picklist(SETTLEMENT_LINE_TYPES),
    `${typesGoing('in')} (money in), ${typesGoing('out')} (money out).`,
  ),
  id: described(Id, `Our id of the ${orList(SETTLEMENT_LINE_TYPES.map(movementNoun))}.`),
  organization: OwningOrganization,
  operator_transaction_id: described(
    v.nullable(v.string()),
    "The operator's id of the movement: M-Pesa's receipt, MTN MoMo's financial transaction id.",
  ),
  reference: described(
    v.nullable(v.string()),
    [
      "Our reference as the operator holds it, where it holds one (MTN MoMo's external transaction id):",
      "`pay-<id>`, `rev-<id>`, a prompt's `req-<request>-<attempt>`.",
    ].join(' '),
  ),
  original_transaction_id: described(
    v.nullable(v.string()),
    "A reversal's: the operator's id of the collection sent back.",
  ),
  route: described(
    v.nullable(v.string()),
    [
      'The route that moved it, whose statement lists it: `daraja`, `momo`, `airtel`, `vodacom` or `pawapay`',
      '(a network with two routes may move money through either); null for the sandbox.',
    ].join(' '),
  ),
  amount: described(Amount, 'The amount moved (always positive; `type` gives the direction).'),
  fee: described(v.nullable(Amount), FEE_NOTE),
  phonenumber: PhoneNumber,
  final_at: described(v.string(), "When it became final, UTC with milliseconds: the line's day."),
});

const Tally = (what: string) => described(v.object({ count: v.number(), amount: Amount }), what);
const TALLIES = Object.fromEntries(
  SETTLEMENT_LINE_TYPES.map((type) => [settlementOf(type).total, Tally(settlementOf(type).totalNote)]),
) as Record<TotalName, ReturnType<typeof Tally>>;

const SettlementTotalSchema = v.object({
  network: v.string(),
  currency: CurrencyCode,
  ...TALLIES,
  net: described(
    v.pipe(v.string(), v.regex(/^-?\d+\.\d{4}$/)),
    'In less out less reversed; negative when more left than came in.',
  ),
});

export const SettlementSchema = v.pipe(
  v.object({
    date: described(v.string(), 'The UTC day, `YYYY-MM-DD`.'),
    since: described(v.string(), "The day's start (inclusive)."),
    until: described(v.string(), "The day's end (exclusive), or `as_of` for today."),
    as_of: described(v.string(), 'When the report was read.'),
    network: described(v.nullable(v.string()), 'The network asked for; null: all.'),
    currency: described(v.nullable(v.string()), 'The currency asked for; null: all.'),
    totals: described(
      v.array(SettlementTotalSchema),
      'One per network and currency with a movement, by network then currency.',
    ),
    lines: described(
      v.array(SettlementLineSchema),
      'Every movement, by network, currency, then the time it became final.',
    ),
  }),
  v.description('The movements of money with the mobile networks on one UTC day, with their totals.'),
  v.examples([
    {
      date: '2025-05-01',
      since: '2025-05-01T00:00:00.000Z',
      until: '2025-05-02T00:00:00.000Z',
      as_of: '2025-05-03T08:00:00.000Z',
      network: null,
      currency: null,
      totals: [
        {
          network: 'MTN Uganda',
          currency: 'UGX',
          in: { count: 1, amount: '5000.0000' },
          out: { count: 1, amount: '1500.0000' },
          reversed: { count: 0, amount: '0.0000' },
          net: '3500.0000',
        },
      ],
      lines: [
        {
          network: 'MTN Uganda',
          currency: 'UGX',
          type: 'collection',
          id: 812,
          organization: 42,
          operator_transaction_id: '8871245531',
          reference: 'req-77-0',
          original_transaction_id: null,
          route: 'momo',
          amount: '5000.0000',
          fee: null,
          phonenumber: '+256772123456',
          final_at: '2025-05-01T09:12:44.120Z',
        },
        {
          network: 'MTN Uganda',
          currency: 'UGX',
          type: 'payment',
          id: 91,
          organization: 42,
          operator_transaction_id: '8871290012',
          reference: 'pay-91',
          original_transaction_id: null,
          route: 'momo',
          amount: '1500.0000',
          fee: null,
          phonenumber: '+256772654321',
          final_at: '2025-05-01T13:47:02.512Z',
        },
      ],
    },
  ]),
);
type SettlementResource = v.InferOutput<typeof SettlementSchema>;
type SettlementTotal = v.InferOutput<typeof SettlementTotalSchema>;

export const serializeSettlementLine = (line: SettlementLine): SettlementResource['lines'][number] => ({
  network: line.network,
  currency: line.currency,
  type: line.type,
  id: line.id,
  organization: line.organizationId,
  operator_transaction_id: line.operatorTransactionId,
  reference: line.reference,
  original_transaction_id: line.originalTransactionId,
  route: line.route,
  amount: line.amount,
  fee: null,
  phonenumber: line.phoneNumber,
  final_at: precise(line.finalAt),
});

/** The totals per network and currency (exact sums), in the lines' order. */
export function settlementTotals(lines: readonly SettlementLine[]): SettlementTotal[] {
  const groups = new Map<string, SettlementLine[]>();
  for (const line of lines) {
    const key = JSON.stringify([line.network, line.currency]);
    const group = groups.get(key);
    // Appended in place: copying the group at every line would be quadratic on a busy day (up to 100,000 lines).
    if (group === undefined) groups.set(key, [line]);
    else group.push(line);
  }
  return [...groups.values()].map((group) => {
    const tallies = SETTLEMENT_LINE_TYPES.map((type) => {
      const ofType = group.filter((line) => line.type === type);
      return { type, count: ofType.length, amount: sumAmounts(ofType.map((line) => line.amount)) };
    });
    const going = (direction: 'in' | 'out') =>
      tallies.filter(({ type }) => settlementOf(type).direction === direction).map(({ amount }) => amount);
    return {
      network: group[0]!.network,
      currency: group[0]!.currency,
      ...(Object.fromEntries(
        tallies.map(({ type, count, amount }) => [settlementOf(type).total, { count, amount }]),
      ) as Record<TotalName, { count: number; amount: string }>),
      net: differenceOf(sumAmounts(going('in')), ...going('out')),
    };
  });
}

export const serializeSettlement = (settlement: Settlement): SettlementResource => ({
  date: dayText(settlement.day),
  since: precise(settlement.since),
  until: precise(settlement.until),
  as_of: precise(settlement.asOf),
  network: settlement.network,
  currency: settlement.currency,
  totals: settlementTotals(settlement.lines),
  lines: settlement.lines.map(serializeSettlementLine),
});

export const SETTLEMENT_CSV_COLUMNS = [
  'network',
  'currency',
  'type',
  'id',
  'organization',
  'operator_transaction_id',
  'reference',
  'original_transaction_id',
  'route',
  'amount',
  'fee',
  'phonenumber',
  'final_at',
  'count',
] as const;

/**
 * The report as CSV: a line per movement (the JSON's fields), then per network and currency a
 * `total_in`, `total_out` and `total_reversed` line (sum in `amount`, number in `count`) and a `net` line.
 */
export function settlementCsv(settlement: Settlement): string {
  const movements = settlement.lines.map((line) => {
    const resource = serializeSettlementLine(line);
    // Ids come from operators and merchants' prompts: written as text, never as a formula.
    return {
      ...resource,
      operator_transaction_id: textCell(resource.operator_transaction_id ?? ''),
      reference: textCell(resource.reference ?? ''),
      count: '',
    };
  });
  const totals = settlementTotals(settlement.lines).flatMap((total) => [
    ...SETTLEMENT_TOTALS.map((kind) => ({
      network: total.network,
      currency: total.currency,
      type: `total_${kind}`,
      amount: total[kind].amount,
      count: total[kind].count,
    })),
    { network: total.network, currency: total.currency, type: 'net', amount: total.net, count: '' },
  ]);
  return stringify([...movements, ...totals], { header: true, columns: [...SETTLEMENT_CSV_COLUMNS] });
}

/** The CSV's file name: `settlement-<day>[-<network>][-<currency>].csv`. */
export const settlementFileName = (settlement: Settlement): string =>
  `settlement-${[dayText(settlement.day), settlement.network, settlement.currency]
    .filter((part) => part !== null)
    .join('-')
    .replace(/[^A-Za-z0-9-]+/g, '-')}.csv`;
