/**
 * The operation journal (migrations 029, 032): every call that may move money is recorded, with the
 * route that takes it, before it is sent, and what came of it after: `accepted` (the route took it),
 * `refused` (nothing happened there, and nothing will) or `in_doubt` (no answer, a 5xx: only that
 * route's own evidence can tell, and a status query that finds nothing proves nothing until the
 * operator's in-flight window has passed since the last send). The network router
 * (src/network/routes.ts) keeps it for every route alike, and moves an operation to another route
 * only once the journal knows nothing happened on the first.
 * docs/going-live.md#routes-health-and-failover
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
};

const COLUMNS =
  `id, network, route, kind, reference, operator_reference as "operatorReference", state, fault, ` +
  `sent_at as "sentAt", sends, extract(epoch from now() - sent_at)::float8 as "sinceSentSeconds"`;

type NewEntry = {
  network: string;
  route: string;
  kind: JournalKind;
  reference: string;
  workflowId: string;
  phoneNumber: string;
  amount: string;
};

/**
 * Records an operation on `route` as it is sent (its in-flight window counts from now). Returns the
 * live entry of the reference (not refused): the one just recorded (`inserted`), or the one an
 * earlier call recorded, on this route or another.
 */
export async function recordEntry(sql: Queryable, entry: NewEntry): Promise<JournalEntry & { inserted: boolean }> {
  const [row] = await sql<(JournalEntry & { inserted: boolean })[]>`
    insert into network_operations
      (network, route, kind, reference, workflow_id, subject, phone_number, amount, state, sent_at, sends)
    values
      (${entry.network}, ${entry.route}, ${entry.kind}, ${entry.reference}, ${entry.workflowId}, ${entry.reference},
       ${entry.phoneNumber}, ${entry.amount}, 'recorded', now(), 1)
    on conflict (network, reference) where state <> 'refused' do update set route = coalesce(network_operations.route,
      excluded.route), modified = now()
    returning ${sql.unsafe(COLUMNS)}, (xmax = 0) as inserted`;
  return row!;
}

/** The live entry of our reference on `network`: the operation no route refused. */
export async function liveEntry(sql: Queryable, network: string, reference: string): Promise<JournalEntry | undefined> {
  const [row] = await sql<JournalEntry[]>`
    select ${sql.unsafe(COLUMNS)} from network_operations where network = ${network} and reference = ${reference} and
      state <> 'refused'`;
  return row;
}

/** An entry as it stands now (a connector may have added the operator's reference since it was read). */
export async function entryById(sql: Queryable, id: number): Promise<JournalEntry | undefined> {
  const [row] = await sql<JournalEntry[]>`select ${sql.unsafe(COLUMNS)} from network_operations where id = ${id}`;
  return row;
}

/** The routes that refused this reference for their own reasons (a route fault): tried after the others for it. */
export async function routesThatFaulted(sql: Queryable, network: string, reference: string): Promise<string[]> {
  const rows = await sql<{ route: string }[]>`
    select distinct route from network_operations
    where network = ${network} and reference = ${reference} and state = 'refused' and fault is not null and route is not
      null`;
  return rows.map((row) => row.route);
}

/** The route took it: with the operator's reference when it gave one (the first one recorded stays). */
export async function markAccepted(sql: Queryable, id: number, operatorReference?: string | null): Promise<void> {
  await sql`
    update network_operations set state = 'accepted', operator_reference =
      coalesce(operator_reference, ${operatorReference ?? null}), modified = now()
    where id = ${id} and state <> 'refused'`;
}

/**
 * Nothing happened on the route (it refused, its connection was refused, or its status query said it
 * holds no such operation). `fault` names the route's own trouble, null for a subscriber's refusal.
 */
export async function markRefused(sql: Queryable, id: number, fault: string | null): Promise<void> {
  await sql`update network_operations set state = 'refused', fault = ${fault}, modified = now() where id = ${id}`;
}

/** About to be sent (again) under this entry: the in-flight window counts from now. */
export async function markSent(sql: Queryable, id: number): Promise<void> {
  await sql`
    update network_operations
    set sent_at = now(), sends = sends + 1, modified = now()
    where id = ${id}`;
}

/**
 * The route did not say (no answer, a 5xx it does not document as final): the operation stays there,
 * in doubt, until the route's own evidence tells. `why` is what the journal shows.
 */
export async function markInDoubt(sql: Queryable, id: number, why: string): Promise<void> {
  await sql`
    update network_operations
    set state = 'in_doubt', fault = ${why}, modified = now()
    where id = ${id}
      and state in ('recorded', 'in_doubt')`;
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
      and (remote_transaction_id = ${remoteTransactionId} or operator_reference = ${remoteTransactionId}
           or reference = (select prompt_reference from collections where network = ${network} and remote_transaction_id
             = ${remoteTransactionId} limit 1))
    order by id desc limit 1`;
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
