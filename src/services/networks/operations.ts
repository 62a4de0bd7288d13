/**
 * What the service asked a real operator, and what the operator said back (migration 013), as the
 * core reads it: an operation by our reference or the operator's, and the newest status query about a
 * subject with its answer. Every write is in ./journal.ts.
 */
import type { Queryable } from '../../db';

export type OperationKind = 'prompt' | 'payout' | 'reversal' | 'status_query';

export type NetworkOperation = {
  id: number;
  network: string;
  kind: OperationKind;
  reference: string;
  operatorReference: string | null;
  workflowId: string;
  subject: string;
  phoneNumber: string | null;
  amount: string | null;
  remoteTransactionId: string | null;
  hint: Record<string, unknown> | null;
  result: Record<string, unknown> | null;
  created: Date;
};

export const OPERATION_COLUMNS = `
  id, network, kind, reference, operator_reference as "operatorReference", workflow_id as "workflowId", subject,
  phone_number as "phoneNumber", amount::text as amount, remote_transaction_id as "remoteTransactionId", hint, result,
  created`;

/**
 * The operation of ours under `reference` that is not refused (a refused one may have been tried again on another
 * route).
 */
export async function findOperation(
  sql: Queryable,
  network: string,
  reference: string,
): Promise<NetworkOperation | undefined> {
  const [row] = await sql<NetworkOperation[]>`
    select ${sql.unsafe(OPERATION_COLUMNS)}
    from network_operations
    where network = ${network} and reference = ${reference} and state <> 'refused'`;
  return row;
}

/**
 * The operation an operator's reference names, on `network` or (an operator serving several networks) on any of them.
 */
export async function findOperationByOperatorReference(
  sql: Queryable,
  network: string | readonly string[],
  operatorReference: string,
): Promise<NetworkOperation | undefined> {
  const networks = typeof network === 'string' ? [network] : [...network];
  if (networks.length === 0) return undefined;
  const [row] = await sql<NetworkOperation[]>`
    select ${sql.unsafe(OPERATION_COLUMNS)}
    from network_operations
    where network in ${sql(networks)} and operator_reference = ${operatorReference}
    order by state = 'refused', id desc
    limit 1`;
  return row;
}

/**
 * The newest live operation of `kind` about `subject` whose operator reference was never learnt (the
 * operator's first answer was lost): an operator's result that names the subject names it.
 */
export async function unansweredOperationAbout(
  sql: Queryable,
  network: string,
  kind: OperationKind,
  subject: string,
): Promise<NetworkOperation | undefined> {
  const [row] = await sql<NetworkOperation[]>`
    select ${sql.unsafe(OPERATION_COLUMNS)} from network_operations
    where network = ${network} and kind = ${kind} and subject = ${subject} and operator_reference is null
      and state <> 'refused'
    order by created desc, id desc
    limit 1`;
  return row;
}

/**
 * The operator's own reference of an operation, or null when it never gave one: an answer lost before
 * it came leaves the column empty, or holding our own reference (the operation journal keeps what the
 * connector handed on as the prompt's reference while nothing better was known).
 */
export const operatorReferenceOf = (operation: NetworkOperation): string | null =>
  operation.operatorReference === null || operation.operatorReference === operation.reference
    ? null
    : operation.operatorReference;

/**
 * The newest status query about `subject`, with the newest answer any query about it got
 * (`newestAnswer`): an operator slower than a poll answers a query after the next one was asked.
 */
export async function latestStatusQuery(
  sql: Queryable,
  network: string,
  subject: string,
): Promise<(NetworkOperation & { newestAnswer: Record<string, unknown> | null }) | undefined> {
  const [row] = await sql<(NetworkOperation & { newestAnswer: Record<string, unknown> | null })[]>`
    select ${sql.unsafe(OPERATION_COLUMNS)}, (
      select answered.result from network_operations answered
      where answered.network = ${network} and answered.kind = 'status_query' and answered.subject = ${subject}
        and answered.result is not null
      order by answered.created desc, answered.id desc
      limit 1) as "newestAnswer"
    from network_operations
    where network = ${network} and kind = 'status_query' and subject = ${subject}
    order by created desc, id desc
    limit 1`;
  return row;
}
