/**
 * An operator's statement compared with our settlement report of one network and UTC day: what
 * differs (missing on our side, missing on the operator's side, amount mismatch, status mismatch),
 * and, for information, the fees the statement reports and the lines that belong to a neighbouring
 * day. Pure: the admin CLI reads the file and the reports and prints the answer.
 *
 * Matching: an operator line is ours when its id is our line's operator transaction id; failing
 * that, when its reference (MoMo's External Transaction Id) is ours (`pay-<id>`, `rev-<id>`, a
 * prompt's); failing that, a line linked to a collection's receipt is that collection's reversal.
 * Amounts are compared as absolute values, exactly (four decimals, no float).
 */
import { compareDecimal, sumAmounts } from './money';
import type { OperatorLine } from './operator-statements';
import { nextDay, type SettlementLine } from './settlements';

type Pair = { ours: SettlementLine; theirs: OperatorLine };
type Fee = {
  operatorId: string;
  amount: string;
  currency: string | null;
  ours: { type: SettlementLine['type']; id: number } | null;
};

export type Reconciliation = {
  /** Completed operator lines of the day that match none of ours. */
  missingOnOurSide: OperatorLine[];
  /** Our lines of the day the statement does not have. */
  missingOnOperatorSide: SettlementLine[];
  amountMismatches: Pair[];
  /** The operator says the money did not move (Failed, Pending, …); we say it did. */
  statusMismatches: Pair[];
  /** Information: lines that match, one side's time on the day, the other's on a neighbouring day. */
  onAnotherDay: Pair[];
  /**
   * Information: operator lines outside the day, unless one of ours of the day matches them (another day's report
   * compares them).
   */
  outsideDay: OperatorLine[];
  /** Information: the fees the statement reports, by the operator id they were charged for. */
  fees: Fee[];
  matched: number;
  /** Operator lines that say no money moved and match none of ours: both sides agree. */
  notCompleted: number;
  differs: boolean;
};

type Index = {
  byOperatorId: Map<string, SettlementLine>;
  byReference: Map<string, SettlementLine>;
  reversalOf: Map<string, SettlementLine>;
};

function indexLines(lines: readonly SettlementLine[]): Index {
  const index: Index = { byOperatorId: new Map(), byReference: new Map(), reversalOf: new Map() };
  for (const line of lines) {
    if (line.operatorTransactionId !== null) index.byOperatorId.set(line.operatorTransactionId, line);
    if (line.reference !== null) index.byReference.set(line.reference, line);
    // A line that names an original transaction sends that collection back (a reversal's).
    if (line.originalTransactionId !== null) index.reversalOf.set(line.originalTransactionId, line);
  }
  return index;
}

const findOurs = (index: Index, theirs: OperatorLine): SettlementLine | undefined =>
  index.byOperatorId.get(theirs.operatorId) ??
  (theirs.reference === null ? undefined : index.byReference.get(theirs.reference)) ??
  (theirs.linkedId === null ? undefined : index.reversalOf.get(theirs.linkedId));

const sameAmount = ({ ours, theirs }: Pair): boolean =>
  compareDecimal(ours.amount, theirs.amount) === 0 &&
  (theirs.currency === null || theirs.currency.toUpperCase() === ours.currency);

/**
 * The fees: M-PESA's charge lines summed per linked receipt, MoMo's Fee column; each with the movement of ours it was
 * charged for.
 */
function feesOf(statement: readonly OperatorLine[], index: Index): Fee[] {
  const fees = new Map<string, { amounts: string[]; currency: string | null; ours: SettlementLine | undefined }>();
  for (const line of statement) {
    if (!line.charge && line.fee === null) continue;
    const operatorId = line.charge ? (line.linkedId ?? line.operatorId) : line.operatorId;
    const entry = fees.get(operatorId) ?? {
      amounts: [],
      currency: line.charge ? line.currency : line.fee!.currency,
      ours: line.charge ? index.byOperatorId.get(operatorId) : findOurs(index, line),
    };
    entry.amounts.push(line.charge ? line.amount : line.fee!.amount);
    fees.set(operatorId, entry);
  }
  return [...fees].map(([operatorId, { amounts, currency, ours }]) => ({
    operatorId,
    amount: sumAmounts(amounts),
    currency,
    ours: ours ? { type: ours.type, id: ours.id } : null,
  }));
}

/**
 * Compares the statement with our lines of `day` (`ours`) and of the days either side
 * (`neighbours`: an operator's day need not be ours, its clock is East Africa Time).
 */
export function reconcile(
  day: Date,
  ours: readonly SettlementLine[],
  neighbours: readonly SettlementLine[],
  statement: readonly OperatorLine[],
): Reconciliation {
  const index = indexLines([...neighbours, ...ours]);
  const onDay = new Set(ours);
  const seen = new Set<SettlementLine>();
  const inDay = (time: Date | null) => time === null || (time >= day && time < nextDay(day));
  const result: Reconciliation = {
    missingOnOurSide: [],
    missingOnOperatorSide: [],
    amountMismatches: [],
    statusMismatches: [],
    onAnotherDay: [],
    outsideDay: [],
    fees: feesOf(statement, index),
    matched: 0,
    notCompleted: 0,
    differs: false,
  };
  for (const theirs of statement) {
    if (theirs.charge) continue;
    const found = findOurs(index, theirs);
    // A second operator line for a movement of ours already matched is one we do not have.
    const match = found !== undefined && !seen.has(found) ? found : undefined;
    if (match === undefined) {
      if (!theirs.completed) result.notCompleted += 1;
      else if (inDay(theirs.time)) result.missingOnOurSide.push(theirs);
      else result.outsideDay.push(theirs);
      continue;
    }
    seen.add(match);
    // Both sides on another day: that day's report compares them.
    if (!onDay.has(match) && !inDay(theirs.time)) {
      result.outsideDay.push(theirs);
      continue;
    }
    const pair = { ours: match, theirs };
    if (!theirs.completed) result.statusMismatches.push(pair);
    else if (!sameAmount(pair)) result.amountMismatches.push(pair);
    else if (!onDay.has(match) || !inDay(theirs.time)) result.onAnotherDay.push(pair);
    else result.matched += 1;
  }
  result.missingOnOperatorSide = ours.filter((line) => !seen.has(line));
  result.differs =
    result.missingOnOurSide.length +
      result.missingOnOperatorSide.length +
      result.amountMismatches.length +
      result.statusMismatches.length >
    0;
  return result;
}
