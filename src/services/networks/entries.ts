/**
 * The operation journal (migrations 029, 032): every call that may move money is recorded, with the
 * route that takes it, before it is sent, and what came of it after: `accepted` (the route took it),
 * `refused` (nothing happened there, and nothing will) or `in_doubt` (no answer, a 5xx: only that
 * route's own evidence can tell, and a status query that finds nothing proves nothing until the
 * operator's in-flight window has passed since the last send). The network router
 * (src/network/routes.ts) keeps it for every route alike, and moves an operation to another route
 * only once the journal knows nothing happened on the first.
 * Its writes are in ./journal.ts. docs/going-live.md#routes-health-and-failover
 */
import type { Queryable } from '../../db';

type JournalState = 'recorded' | 'accepted' | 'refused' | 'in_doubt';
export type JournalKind = 'prompt' | 'payout' | 'reversal';

export type JournalEntry = {
  id: number;
  network: string;
  /** The route (connector) that took it; null for operations from before routes were journaled (the direct route's). */
  route: string | null;
  kind: JournalKind;
  reference: string;
  operatorReference: string | null;
  state: JournalState;
  fault: string | null;
  /** When it was last sent (null: recorded, never sent yet). */
  sentAt: Date | null;
  /** How many times it was sent under this entry (a resend repeats our reference). */
  sends: number;
  /** Seconds since the last send, by the database's clock (null: never sent). */
  sinceSentSeconds: number | null;
  /** When it was first recorded. */
  created: Date;
};

export const ENTRY_COLUMNS = `
  id, network, route, kind, reference, operator_reference as "operatorReference", state, fault, created,
  sent_at as "sentAt", sends, extract(epoch from now() - sent_at)::float8 as "sinceSentSeconds"`;

/** The live entry of our reference on `network`: the operation no route refused. */
export async function liveEntry(sql: Queryable, network: string, reference: string): Promise<JournalEntry | undefined> {
  const [row] = await sql<JournalEntry[]>`
    select ${sql.unsafe(ENTRY_COLUMNS)}
    from network_operations
    where network = ${network} and reference = ${reference} and state <> 'refused'`;
  return row;
}

/** An entry as it stands now (a connector may have added the operator's reference since it was read). */
export async function entryById(sql: Queryable, id: number): Promise<JournalEntry | undefined> {
  const [row] = await sql<JournalEntry[]>`select ${sql.unsafe(ENTRY_COLUMNS)} from network_operations where id = ${id}`;
  return row;
}

/** The routes that refused this reference for their own reasons (a route fault): tried after the others for it. */
export async function routesThatFaulted(sql: Queryable, network: string, reference: string): Promise<string[]> {
  const rows = await sql<{ route: string }[]>`
    select distinct route from network_operations
    where network = ${network} and reference = ${reference} and state = 'refused'
      and fault is not null and route is not null`;
  return rows.map((row) => row.route);
}

/**
 * The route a collection came by, named by its operator's id (a receipt, or pawaPay's depositId):
 * its reversal goes back the same way. Null when no journaled prompt names it.
 */
export async function routeOfPayment(
  sql: Queryable,
  network: string,
  remoteTransactionId: string,
): Promise<string | null> {
  const [row] = await sql<{ route: string | null }[]>`
    select route from network_operations
    where network = ${network} and kind = 'prompt' and state <> 'refused'
      and (remote_transaction_id = ${remoteTransactionId}
        or operator_reference = ${remoteTransactionId}
        or reference = (
          select prompt_reference from collections
          where network = ${network} and remote_transaction_id = ${remoteTransactionId}
          limit 1))
    order by id desc
    limit 1`;
  return row?.route ?? null;
}

/** An operation no route has settled yet: in doubt, or recorded and not answered. */
export type UnsettledOperation = {
  network: string;
  route: string | null;
  kind: JournalKind;
  reference: string;
  state: 'recorded' | 'in_doubt';
  fault: string | null;
  sends: number;
  sentAt: Date | null;
};

/**
 * The operations in doubt, and those recorded and unanswered for longer than `olderThanSeconds`, oldest first: what an
 * operator looks at when an operator's API misbehaves (docs/operations.md).
 */
export async function unsettledOperations(sql: Queryable, olderThanSeconds: number): Promise<UnsettledOperation[]> {
  return await sql<UnsettledOperation[]>`
    select network, route, kind, reference, state, fault, sends, sent_at as "sentAt"
    from network_operations
    where state = 'in_doubt'
      or (state = 'recorded' and sent_at < now() - ${olderThanSeconds}::int * interval '1 second')
    order by sent_at nulls first, id
    limit 1000`;
}
