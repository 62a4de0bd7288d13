/**
 * What must hold after a schedule heals (docs/operations.md, Several hosts): the exactly-once
 * checker's rules over the operators' records and the service's database (test/money/ledger.ts),
 * every operation final (or in a documented waiting state) within two minutes, every event
 * delivered at least once to every webhook of its type, no 5xx but 503 with Retry-After seen by a
 * merchant, and no workflow failing its tasks.
 */
import { spawnSync } from 'node:child_process';
import { ensureTemporalCli } from '../../scripts/infra.mjs';
import { testSql } from '../helpers';
import {
  type Anomaly,
  type Intents,
  checkCredits,
  checkMoneyOut,
  operatorLedgers,
  serviceRecords,
} from '../money/ledger';
import type { World } from '../money/world';
import type { OperatorRecords } from '../simulators/run';
import type { Operation } from './merchants';

export type Row = {
  schedule: string;
  tried: number;
  succeeded: number;
  failedClearly: number;
  inDoubtResolved: number;
  unfinished: number;
  status5xx: number;
  status503: number;
  slowestSeconds: number;
  eventsMissing: number;
  failingWorkflows: number;
  /** API and worker processes that ended by themselves with an error (not a signal the schedule sent): the supervisor started them again. */
  crashes: number;
  /** Operator operations sent more than once (the same reference, after an answer that said nothing), and those still in doubt. */
  operatorResent: number;
  operatorInDoubt: number;
  anomalies: Anomaly[];
  recoverSeconds: number;
};

const REQUEST_FINAL = ['successful', 'failed', 'expired', 'reversed'];
const PAYMENT_FINAL = ['completed', 'rejected', 'failed', 'cancelled'];

/** The operators' records as the ledger code reads a World. */
function worldOf(records: OperatorRecords, operations: Operation[]): World {
  const list =
    <T>(items: T[]) =>
    () =>
      items;
  return {
    daraja: {
      stkPushes: list(records.daraja.stkPushes),
      payouts: list(records.daraja.payouts),
      reversals: list(records.daraja.reversals),
    },
    momo: { requestsToPay: list(records.momo.requestsToPay), transfers: list(records.momo.transfers) },
    airtel: {
      collections: list(records.airtel.collections),
      disbursements: list(records.airtel.disbursements),
      refunds: list(records.airtel.refunds),
    },
    vodacom: { transactions: list(records.vodacom.transactions) },
    pawapay: {
      deposits: list(records.pawapay.deposits),
      payouts: list(records.pawapay.payouts),
      refunds: list(records.pawapay.refunds),
    },
    paybills: operations
      .filter((operation) => operation.paybill)
      .map((operation) => ({
        phone: operation.phone,
        transId: operation.paybill!.transId,
        amount: operation.amount,
        completed: operation.paybill!.completed,
        intended: operation.organizationId,
      })),
  } as unknown as World;
}

/** Operations of the schedule still not final in the database. */
export async function unfinished(phones: string[]): Promise<string[]> {
  const sql = testSql();
  const rows = await sql<{ what: string }[]>`
    select 'collection request ' || id || ' ' || status as what from collection_requests
      where phone_number = any(${phones}) and status <> all(${REQUEST_FINAL})
    union all
    select 'payment ' || id || ' ' || state from payments
      where phone_number = any(${phones}) and state <> all(${PAYMENT_FINAL})
    union all
    select 'reversal ' || id || ' ' || state from reversals
      where phone_number = any(${phones}) and state = 'processing'`;
  return rows.map((row) => row.what);
}

export async function moneyAnomalies(
  records: OperatorRecords,
  operations: Operation[],
  organizations: number[],
): Promise<Anomaly[]> {
  const ledgers = operatorLedgers(worldOf(records, operations));
  const phones = [...new Set(operations.map((operation) => operation.phone))];
  const service = await serviceRecords(phones, organizations);
  const paybills = new Map<string, number | null>(
    operations.filter((each) => each.paybill).map((each) => [each.paybill!.transId, each.organizationId]),
  );
  const anomalies: Anomaly[] = [];
  for (const phone of phones) {
    const asker = operations.find((operation) => operation.phone === phone)!.organizationId;
    const intents: Intents = { asker, paybills };
    anomalies.push(
      ...checkCredits(
        phone,
        ledgers.debits.filter((debit) => debit.phone === phone),
        service.collections.filter((collection) => collection.phone === phone),
        intents,
      ),
      ...checkMoneyOut(
        phone,
        ledgers.outs.filter((out) => out.phone === phone),
        service.moneyOut.filter((record) => record.phone === phone),
      ),
    );
  }
  for (const account of service.unbalanced)
    anomalies.push({
      phone: null,
      rule: 'd',
      text: `account ${account.accountId} of ${account.organizationId}: balance ${account.balance}, transactions ${account.sum}`,
    });
  return anomalies;
}

/** The schedule's operator operations sent again under the same reference, and those still in doubt. */
export async function operatorDoubts(phones: string[]): Promise<{ operatorResent: number; operatorInDoubt: number }> {
  const [row] = await testSql()<{ resent: number; inDoubt: number }[]>`
    select count(*) filter (where sends > 1) as resent, count(*) filter (where state = 'in_doubt') as "inDoubt"
    from network_operations where phone_number = any(${phones})`;
  return { operatorResent: row!.resent, operatorInDoubt: row!.inDoubt };
}

/** Events of these organizations since `since` that a webhook of their type never received. */
export async function missingEvents(
  organizations: number[],
  since: Date,
  received: Record<string, Record<string, number>>,
): Promise<string[]> {
  const sql = testSql();
  const expected = await sql<{ event: string; webhook: string }[]>`
    select e.id::text as event, w.id::text as webhook
    from events e join webhooks w on w.organization_id = e.organization_id and w.event = e.type
    where e.organization_id = any(${organizations}) and e.created >= ${since} and w.disabled_at is null`;
  return expected
    .filter((pair) => !received[pair.webhook]?.[pair.event])
    .map((pair) => `event ${pair.event} to webhook ${pair.webhook}`);
}

/** How many workflows `query` finds (Temporal's visibility), -1 when the server cannot say. */
function countWorkflows(temporalAddress: string, query: string): number {
  const result = spawnSync(ensureTemporalCli(), ['workflow', 'count', '--address', temporalAddress, '--query', query], {
    encoding: 'utf8',
  });
  const count = /Total:\s*(\d+)/.exec(result.stdout ?? '')?.[1];
  return count === undefined ? -1 : Number(count);
}

/** Workflows that Temporal reports as failing their tasks (TemporalReportedProblems). */
export function failingWorkflows(temporalAddress: string): number {
  return countWorkflows(
    temporalAddress,
    "ExecutionStatus = 'Running' AND TemporalReportedProblems IN ('category=WorkflowTaskFailed', 'category=WorkflowTaskTimedOut')",
  );
}

/**
 * Requests that ended (their status final, so set in RequestStatus) and still follow a prompt the operator had not
 * answered then: their payment is not stored yet, so the money check waits for them.
 */
export function requestsFollowingAPrompt(temporalAddress: string): string[] {
  const count = countWorkflows(
    temporalAddress,
    "WorkflowType = 'collectionRequest' AND ExecutionStatus = 'Running' AND RequestStatus IS NOT NULL",
  );
  return count === 0 ? [] : [`${count < 0 ? 'some' : count} ended request(s) still following a prompt`];
}

/** Counts of what merchants saw: operations tried, created, refused with a clear 4xx, and the statuses. */
export function merchantCounts(operations: Operation[]) {
  const statuses = operations.flatMap((operation) => operation.statuses);
  return {
    tried: operations.length,
    succeeded: operations.filter((operation) => operation.outcome === 'created').length,
    failedClearly: operations.filter((operation) => /: 4\d\d /.test(operation.outcome)).length,
    inDoubtResolved: operations.filter((operation) =>
      operation.statuses.some((status) => status === 0 || status >= 500),
    ).length,
    status5xx: statuses.filter((status) => status >= 500 && status !== 503).length,
    status503: statuses.filter((status) => status === 503).length,
    slowestSeconds: Math.round(Math.max(0, ...operations.map((operation) => operation.slowestMs)) / 100) / 10,
  };
}
