/**
 * Reconciliation for operators: the daily settlement report across every organization (an
 * operator's statement covers the service's whole till, shortcode or account), and an operator's
 * statement compared with it line by line (exit 1 when anything differs).
 */
import { readFileSync } from 'node:fs';
import { UnreadableCsvError } from '../domain/csv';
import { checkFields } from '../domain/input';
import { currenciesOfNetwork, networkByName } from '../domain/networks';
import {
  readOperatorStatement,
  statementFormatOf,
  statementRouteOf,
  type OperatorLine,
} from '../domain/operator-statements';
import { reconcile, type Reconciliation } from '../domain/reconciliation';
import { nextDay, serializeSettlement, serializeSettlementLine, type SettlementLine } from '../domain/settlements';
import { SettlementQuery, settlementReport } from '../services/wallets/settlements';
import { UsageError, print, type Command, type Options } from './cli';

const ALL = { allOrganizations: true } as const;

/**
 * `--date`, `--network` and `--currency` checked as the API checks its query (a usage error naming
 * the option otherwise); `required` names the options that must be given.
 */
function reportOptions(values: Options, required: readonly ('date' | 'network')[] = []) {
  for (const name of required) if (values[name] === undefined) throw new UsageError(`--${name} is required`);
  const given = Object.fromEntries(
    (['date', 'network', 'currency'] as const).flatMap((name) =>
      values[name] === undefined ? [] : [[name, values[name]]],
    ),
  );
  const checked = checkFields(SettlementQuery, given);
  if (!checked.success)
    throw new UsageError(
      Object.entries(checked.errors)
        .map(([name, messages]) => `--${name}: ${messages.join(' ')}`)
        .join('; '),
    );
  return checked.output;
}

const ourLine = (line: SettlementLine) =>
  [
    `${line.type} ${line.id} (organization ${line.organizationId}) ${line.amount} ${line.currency},`,
    `operator id ${line.operatorTransactionId ?? '—'},`,
    `reference ${line.reference ?? '—'}, ${line.phoneNumber}, final ${line.finalAt.toISOString()}`,
  ].join(' ');
const theirLine = (line: OperatorLine) =>
  [
    `line ${line.row}: ${line.operatorId}${line.reference ? ` (${line.reference})` : ''}`,
    `${line.amount}${line.currency ? ` ${line.currency}` : ''}`,
    `${line.status}${line.time ? ` ${line.time.toISOString()}` : ''}${line.party ? `, ${line.party}` : ''}`,
  ].join(' ');

/** The comparison in words, one line per finding. */
function describe(found: Reconciliation, heading: string): string[] {
  const pairs = (label: string, list: Reconciliation['amountMismatches']) =>
    list.map(({ ours, theirs }) => `${label}: ${theirLine(theirs)} ≠ ours: ${ourLine(ours)}`);
  return [
    `${heading}: ${found.matched} matched, ${found.differs ? 'DIFFERENCES FOUND' : 'no difference'}`,
    ...found.missingOnOurSide.map((line) => `missing on our side: ${theirLine(line)}`),
    ...found.missingOnOperatorSide.map((line) => `missing on the operator's side: ${ourLine(line)}`),
    ...pairs('amount mismatch', found.amountMismatches),
    ...pairs('status mismatch', found.statusMismatches),
    ...pairs('on another day (information)', found.onAnotherDay),
    ...(found.outsideDay.length > 0
      ? [`${found.outsideDay.length} line(s) of the statement fall on other days (information)`]
      : []),
    ...(found.notCompleted > 0
      ? [
          [
            `${found.notCompleted} line(s) the operator did not complete match nothing of ours`,
            '(information: no money moved)',
          ].join(' '),
        ]
      : []),
    ...found.fees.map((fee) =>
      [
        `fee (information): ${fee.amount}${fee.currency ? ` ${fee.currency}` : ''}`,
        `for ${fee.operatorId}${fee.ours ? ` (our ${fee.ours.type} ${fee.ours.id})` : ''}`,
      ].join(' '),
    ),
  ];
}

function readStatement(path: string | undefined, network: string): OperatorLine[] {
  const format = statementFormatOf(network);
  if (format === null)
    throw new UsageError(
      `no operator statement format is known for ${network}: reconcile takes Safaricom (M-PESA) or MTN Uganda (MoMo)`,
    );
  if (path === undefined) throw new UsageError("--file takes the operator's statement (CSV)");
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    throw new UsageError(`cannot read --file ${path}: ${(cause as Error).message}`, { cause });
  }
  try {
    return readOperatorStatement(format, text);
  } catch (error) {
    if (error instanceof UnreadableCsvError) throw new UsageError(`${path}: ${error.message}`, { cause: error });
    throw error;
  }
}

export const settlementCommands: Record<string, Command> = {
  settlement: {
    usage: [
      'settlement [--date YYYY-MM-DD] [--network NAME] [--currency CODE] [--json]',
      '(every organization; default today, UTC)',
    ].join('   '),
    async run({ sql, values }) {
      const settlement = serializeSettlement(await settlementReport(sql, ALL, reportOptions(values)));
      print(values.json, settlement, [
        `settlement of ${settlement.date} (UTC, ${settlement.since} to ${settlement.until}), every organization:`,
        ...settlement.totals.map((total) =>
          [
            `${total.network} ${total.currency}: in ${total.in.count} (${total.in.amount}),`,
            `out ${total.out.count} (${total.out.amount}),`,
            `reversed ${total.reversed.count} (${total.reversed.amount}), net ${total.net}`,
          ].join(' '),
        ),
        ...settlement.lines.map((line) =>
          [
            `${line.final_at} ${line.network} ${line.currency} ${line.type} ${line.id}`,
            `(organization ${line.organization}) ${line.amount},`,
            `operator id ${line.operator_transaction_id ?? '—'},`,
            `reference ${line.reference ?? '—'}, ${line.phonenumber}`,
          ].join(' '),
        ),
        ...(settlement.lines.length === 0 ? ['no movement'] : []),
      ]);
    },
  },
  reconcile: {
    usage: 'reconcile --network NAME --date YYYY-MM-DD --file STATEMENT.csv [--json]   (exit 1 when anything differs)',
    async run({ sql, values }) {
      const { network, date: day } = reportOptions(values, ['date', 'network']) as { network: string; date: Date };
      const statement = readStatement(values.file, network);
      // The network's own currency: what its operator's statement holds (sandbox money on its numbers is BXC);
      // every currency of a network that carries several.
      const own = currenciesOfNetwork(networkByName(network)!);
      const currency = own.length === 1 ? own[0] : undefined;
      const report = (date: Date) => settlementReport(sql, ALL, { date, network, currency });
      const [before, ours, after] = await Promise.all([
        report(new Date(day.getTime() - 86_400_000)),
        report(day),
        report(nextDay(day)),
      ]);
      // Only what this operator moved is on its statement: a movement its network's other route carried is on that
      // route's.
      const route = statementRouteOf(statementFormatOf(network)!);
      const byThisRoute = (lines: readonly SettlementLine[]) =>
        lines.filter((line) => line.route === null || line.route === route);
      const found = reconcile(day, byThisRoute(ours.lines), byThisRoute([...before.lines, ...after.lines]), statement);
      const date = day.toISOString().slice(0, 10);
      const ourLines = { missingOnOperatorSide: found.missingOnOperatorSide.map(serializeSettlementLine) };
      const pairs = (list: Reconciliation['amountMismatches']) =>
        list.map(({ ours: line, theirs }) => ({ ours: serializeSettlementLine(line), theirs }));
      print(
        values.json,
        {
          network,
          currency: currency ?? null,
          date,
          ...found,
          ...ourLines,
          amountMismatches: pairs(found.amountMismatches),
          statusMismatches: pairs(found.statusMismatches),
          onAnotherDay: pairs(found.onAnotherDay),
        },
        describe(found, `${network} ${currency ?? ''} ${date}`.replace(/\s+/g, ' ')),
      );
      if (found.differs) process.exitCode = 1;
    },
  },
};
