/**
 * The one writer of `network_operations` (migrations 013, 029, 032): the operation journal's entries
 * (recorded, then accepted, refused or in doubt: src/network/routes.ts keeps it for every route alike)
 * and what the core records for the connectors through their port (./records.ts): the operator's
 * reference, the callbacks kept as hints, the status queries and their answers, the receipt a push
 * settled. No other module writes the table (scripts/architecture.ts checks it).
 */
import { inTransaction, type Queryable } from '../../db';
import { ENTRY_COLUMNS, type JournalEntry, type JournalKind } from './entries';
import { OPERATION_COLUMNS, type NetworkOperation, type OperationKind } from './operations';
import { promptOfReceipt } from './receipts';

type NewOperation = {
  network: string;
  kind: OperationKind;
  reference: string;
  workflowId: string;
  subject: string;
  operatorReference?: string | null;
  phoneNumber?: string | null;
  amount?: string | null;
};

/**
 * Records an operation once per (network, reference) among those not refused; `inserted` is false when an earlier call
 * recorded it.
 */
export async function recordOperation(
  sql: Queryable,
  operation: NewOperation,
): Promise<NetworkOperation & { inserted: boolean }> {
  const [row] = await sql<(NetworkOperation & { inserted: boolean })[]>`
    insert into network_operations
      (network, kind, reference, operator_reference, workflow_id, subject, phone_number, amount)
    values
      (${operation.network}, ${operation.kind}, ${operation.reference}, ${operation.operatorReference ?? null},
       ${operation.workflowId}, ${operation.subject}, ${operation.phoneNumber ?? null}, ${operation.amount ?? null})
    on conflict (network, reference) where state <> 'refused'
    do update set
      operator_reference = coalesce(network_operations.operator_reference, excluded.operator_reference),
      modified = now()
    returning ${sql.unsafe(OPERATION_COLUMNS)}, (xmax = 0) as inserted`;
  return row!;
}

/** The operator's reference, once it answered (the first one recorded stays). */
export async function setOperatorReference(sql: Queryable, id: number, operatorReference: string): Promise<void> {
  await sql`
    update network_operations
    set operator_reference = coalesce(operator_reference, ${operatorReference}), modified = now()
    where id = ${id}`;
}

/**
 * An operation of a connector's own sent to the operator now: its last send and count of sends (the columns the
 * operation journal keeps for its entries, migration 032).
 */
export async function markOperationSent(sql: Queryable, id: number): Promise<void> {
  await sql`
    update network_operations
    set sent_at = now(), sends = sends + 1, modified = now()
    where id = ${id}`;
}

/**
 * Takes the turn to send an operation again once `windowSeconds` have passed since its last send (or, never marked
 * sent, since it was recorded), counting that send: true for one caller only, so concurrent looks at it send it once
 * per window.
 */
export async function claimResend(sql: Queryable, id: number, windowSeconds: number): Promise<boolean> {
  const rows = await sql`
    update network_operations
    set sent_at = now(), sends = sends + 1, modified = now()
    where id = ${id}
      and coalesce(sent_at, created) <= now() - ${windowSeconds}::float8 * interval '1 second'
    returning id`;
  return rows.length > 0;
}

/** Forgets an operation the operator refused outright (nothing was carried out), so a retry may ask again. */
export async function forgetOperation(sql: Queryable, id: number): Promise<void> {
  await sql`delete from network_operations where id = ${id} and operator_reference is null`;
}

/**
 * A prompt whose operator reference was never learnt (the call's answer was lost) for this number
 * and amount, still young enough for the operator's callback about it to arrive: the callback then
 * names it. Only when exactly one such prompt in the whole service fits: two organizations (or two
 * requests) with unanswered prompts of one number and amount cannot be told apart by number and
 * amount, and guessing could give one organization's payment to another; the callback then names no
 * prompt, and its payment is reported on its own (never matched by number and amount). The fitting
 * prompts are locked, so a concurrent callback about another of them waits and then sees it named.
 */
export async function claimUnanswered(
  sql: Queryable,
  network: string,
  phoneNumber: string,
  amount: string,
  operatorReference: string,
  withinSeconds: number,
): Promise<NetworkOperation | undefined> {
  const [row] = await sql<NetworkOperation[]>`
    with fitting as (
      select id from network_operations
      where network = ${network} and kind = 'prompt' and (operator_reference is null or operator_reference = reference)
        and state <> 'refused' and phone_number = ${phoneNumber} and amount = ${amount}::numeric
        and created > now() - ${withinSeconds}::int * interval '1 second'
      for update)
    update network_operations
    set operator_reference = ${operatorReference}, modified = now()
    where id = (select id from fitting limit 1) and (select count(*) from fitting) = 1
    returning ${sql.unsafe(OPERATION_COLUMNS)}`;
  return row;
}

/** The last callback about an operation: kept to read, never believed alone. */
export async function recordHint(sql: Queryable, id: number, hint: unknown): Promise<void> {
  await sql`
    update network_operations
    set hint = ${sql.json(hint as never)}, modified = now()
    where id = ${id}`;
}

/** A status query's answer, as the operator sent it. The first answer stays. */
export async function recordResult(sql: Queryable, id: number, result: unknown): Promise<boolean> {
  const rows = await sql`
    update network_operations
    set result = ${sql.json(result as never)}, modified = now()
    where id = ${id} and result is null
    returning id`;
  return rows.length > 0;
}

/** The operator's transaction id of an operation: the first one recorded wins, so every retry reports the same. */
export async function settleRemoteTransactionId(sql: Queryable, id: number, candidate: string): Promise<string> {
  const [row] = await sql<{ remoteTransactionId: string }[]>`
    update network_operations
    set remote_transaction_id = coalesce(remote_transaction_id, ${candidate}), modified = now()
    where id = ${id}
    returning remote_transaction_id as "remoteTransactionId"`;
  return row!.remoteTransactionId;
}

/**
 * A prompt the operator says failed: it no longer holds back reports of its number and amount (`unsettledPromptFor`).
 */
export async function settlePrompt(sql: Queryable, id: number, outcome: 'failed'): Promise<void> {
  await sql`
    update network_operations
    set result = ${sql.json({ status: outcome })}, modified = now()
    where id = ${id} and kind = 'prompt' and result is null`;
}

/**
 * A prompt the operator says was paid while its receipt is not known: credited under the prompt (its
 * operator reference), it keeps that credit until the operator names its receipt (`attachReceipt`).
 * Only while the operator's last callback is still `seenHint`, the one the caller read: a callback
 * that came meanwhile may name the receipt, and is followed first. True when the prompt is (or
 * already was) paid.
 */
export async function markPromptPaid(
  sql: Queryable,
  id: number,
  seenHint: Record<string, unknown> | null,
): Promise<boolean> {
  const seen = seenHint === null ? null : sql.json(seenHint as never);
  const rows = await sql<{ paid: boolean }[]>`
    update network_operations
    set result = coalesce(result, ${sql.json({ status: 'paid' })}), modified = now()
    where id = ${id} and kind = 'prompt'
      and ((result is null and hint is not distinct from ${seen}::jsonb)
        or result->>'status' = 'paid')
    returning true as paid`;
  return rows.length > 0;
}

const UNIQUE_VIOLATION = '23505';

/**
 * The prompt of ours whose payment `receipt` is: the one that settled it, or else the push the
 * operator named for it (`pushOperatorReference`: the operator's own identifier of the push, read
 * from its answer about the receipt or found by `pushNamingReceipt`), when that push was paid while
 * its receipt was unknown (`markPromptPaid`), or is not settled yet (its request ended, and the request
 * follows it on), and the receipt is of its number and amount: it takes it now (`attachReceiptIn`).
 * Never a push chosen by number and amount: a payment the operator names no push for is a payment of
 * its own. A unique violation means another prompt or collection took the receipt meanwhile: it is
 * theirs, and read here. docs/architecture.md#one-receipt-one-credit
 */
export async function attachReceipt(
  sql: Queryable,
  network: string,
  payment: { phoneNumber: string; amount: string },
  receipt: string,
  pushOperatorReference: string | null,
): Promise<string | null> {
  if (pushOperatorReference !== null) {
    try {
      await inTransaction(sql, (tx) => attachReceiptIn(tx, network, payment, receipt, pushOperatorReference));
    } catch (error) {
      if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error;
    }
  }
  return await promptOfReceipt(sql, network, receipt);
}

/**
 * Attaches `receipt` to the named push, paid and awaiting one or not settled yet, of this number and amount, in one
 * transaction, under the prompt's row lock: the prompt settles the receipt (no other prompt may hold
 * it, migration 025), and the collection credited under the prompt's operator reference, with the
 * request it paid, is renamed to it (no other collection may hold it, the collections' own key). A
 * credit of the prompt being stored holds the same lock (`receiptOfPromptIn`): it commits before the
 * statements after the lock look (each with a fresh snapshot), or it stores under the receipt. A
 * receipt a collection already holds is not taken.
 */
async function attachReceiptIn(
  tx: Queryable,
  network: string,
  payment: { phoneNumber: string; amount: string },
  receipt: string,
  pushOperatorReference: string,
): Promise<void> {
  const [prompt] = await tx<{ id: number; reference: string; operatorReference: string }[]>`
    select id, reference, operator_reference as "operatorReference"
    from network_operations
    where network = ${network} and kind = 'prompt' and operator_reference = ${pushOperatorReference}
      and phone_number = ${payment.phoneNumber} and amount = ${payment.amount}::numeric
      and remote_transaction_id is null and (result is null or result->>'status' = 'paid') and state <> 'refused'
    for update`;
  if (!prompt) return;
  const held = await tx`select 1 from collections where network = ${network} and remote_transaction_id = ${receipt}`;
  if (held.length > 0) return;
  await tx`
    update network_operations
    set remote_transaction_id = ${receipt}, modified = now()
    where id = ${prompt.id}`;
  const renamed = await tx<{ id: number }[]>`
    update collections
    set remote_transaction_id = ${receipt}, modified = now()
    where network = ${network} and remote_transaction_id = ${prompt.operatorReference}
      and prompt_reference = ${prompt.reference}
    returning id`;
  if (renamed.length === 0) return;
  await tx`
    update collection_requests
    set remote_transaction_id = ${receipt}, modified = now()
    where collection_id in ${tx(renamed.map((row) => row.id))}`;
}

type NewEntry = {
  network: string;
  route: string;
  kind: JournalKind;
  reference: string;
  workflowId: string;
  phoneNumber: string;
  amount: string;
  /** The id the operator will know it by, where the connector chooses it before sending. */
  operatorReference: string | null;
};

/**
 * Records an operation on `route` as it is sent (its in-flight window counts from now). Returns the
 * live entry of the reference (not refused): the one just recorded (`inserted`), or the one an
 * earlier call recorded, on this route or another (with the operator's id that one recorded).
 */
export async function recordEntry(sql: Queryable, entry: NewEntry): Promise<JournalEntry & { inserted: boolean }> {
  const [row] = await sql<(JournalEntry & { inserted: boolean })[]>`
    insert into network_operations
      (network, route, kind, reference, operator_reference, workflow_id, subject, phone_number, amount, state, sent_at,
       sends)
    values
      (${entry.network}, ${entry.route}, ${entry.kind}, ${entry.reference}, ${entry.operatorReference},
       ${entry.workflowId}, ${entry.reference}, ${entry.phoneNumber}, ${entry.amount}, 'recorded', now(), 1)
    on conflict (network, reference) where state <> 'refused'
    do update set route = coalesce(network_operations.route, excluded.route), modified = now()
    returning ${sql.unsafe(ENTRY_COLUMNS)}, (xmax = 0) as inserted`;
  return row!;
}

/** The route took it: with the operator's reference when it gave one (the first one recorded stays). */
export async function markAccepted(sql: Queryable, id: number, operatorReference?: string | null): Promise<void> {
  await sql`
    update network_operations
    set state = 'accepted', operator_reference = coalesce(operator_reference, ${operatorReference ?? null}),
      modified = now()
    where id = ${id} and state <> 'refused'`;
}

/**
 * Nothing happened on the route (it refused, its connection was refused, or its status query said it
 * holds no such operation). `fault` names the route's own trouble, null for a subscriber's refusal.
 */
export async function markRefused(sql: Queryable, id: number, fault: string | null): Promise<void> {
  await sql`
    update network_operations
    set state = 'refused', fault = ${fault}, modified = now()
    where id = ${id}`;
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
