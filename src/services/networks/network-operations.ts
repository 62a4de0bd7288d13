/**
 * What the service asked a real operator, and what the operator said back (migration 013): the
 * connectors record each call that may move money or ask about it, the callback routes find the
 * operation by the operator's reference and wake its workflow, and a status query's answer waits
 * here for the workflow that asked.
 */
import { inTransaction, type Queryable } from '../../db';
import { OPEN_STATUSES, type RequestStatus } from '../../domain/collection-requests';
import { requestOfPromptReference } from '../../domain/collections';

type OperationKind = 'prompt' | 'payout' | 'reversal' | 'status_query';

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

const COLUMNS = `id, network, kind, reference, operator_reference as "operatorReference", workflow_id as "workflowId",
  subject,
  phone_number as "phoneNumber", amount::text as amount, remote_transaction_id as "remoteTransactionId", hint, result,
    created`;

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
    insert into network_operations (network, kind, reference, operator_reference, workflow_id, subject, phone_number,
      amount)
    values
      (${operation.network}, ${operation.kind}, ${operation.reference}, ${operation.operatorReference ?? null},
        ${operation.workflowId},
            ${operation.subject}, ${operation.phoneNumber ?? null}, ${operation.amount ?? null})
    on conflict (network, reference) where state <> 'refused' do update set
      operator_reference = coalesce(network_operations.operator_reference, excluded.operator_reference), modified =
        now()
    returning ${sql.unsafe(COLUMNS)}, (xmax = 0) as inserted`;
  return row!;
}

/** The operator's reference, once it answered (the first one recorded stays). */
export async function setOperatorReference(sql: Queryable, id: number, operatorReference: string): Promise<void> {
  await sql`update network_operations set operator_reference = coalesce(operator_reference, ${operatorReference}),
    modified = now() where id = ${id}`;
}

/**
 * An operation of a connector's own sent to the operator now: its last send and count of sends (the columns the
 * operation journal keeps for its entries, migration 032).
 */
export async function markOperationSent(sql: Queryable, id: number): Promise<void> {
  await sql`update network_operations set sent_at = now(), sends = sends + 1, modified = now() where id = ${id}`;
}

/**
 * Takes the turn to send an operation again once `windowSeconds` have passed since its last send (or, never marked
 * sent, since it was recorded), counting that send: true for one caller only, so concurrent looks at it send it once
 * per window.
 */
export async function claimResend(sql: Queryable, id: number, windowSeconds: number): Promise<boolean> {
  const rows = await sql`
    update network_operations set sent_at = now(), sends = sends + 1, modified = now()
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
 * The operation of ours under `reference` that is not refused (a refused one may have been tried again on another
 * route).
 */
export async function findOperation(
  sql: Queryable,
  network: string,
  reference: string,
): Promise<NetworkOperation | undefined> {
  const [row] = await sql<NetworkOperation[]>`
    select ${sql.unsafe(COLUMNS)} from network_operations where network = ${network} and reference = ${reference} and
      state <> 'refused'`;
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
    select ${sql.unsafe(COLUMNS)} from network_operations where network in ${sql(networks)} and operator_reference
      = ${operatorReference}
    order by state = 'refused', id desc limit 1`;
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
    select ${sql.unsafe(COLUMNS)} from network_operations
    where network = ${network} and kind = ${kind} and subject = ${subject} and operator_reference is null
      and state <> 'refused'
    order by created desc, id desc limit 1`;
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
    update network_operations set operator_reference = ${operatorReference}, modified = now()
    where id = (select id from fitting limit 1) and (select count(*) from fitting) = 1
    returning ${sql.unsafe(COLUMNS)}`;
  return row;
}

/**
 * Whether the request a prompt of ours asks for is still open (not final, not paid, not expired): its
 * workflow then follows the prompt. A prompt whose request ended is followed by nobody, so its payment,
 * if one comes, is reported on its own, and nothing waits for it to settle.
 */
export async function promptRequestOpen(sql: Queryable, reference: string): Promise<boolean> {
  const requestId = requestOfPromptReference(reference);
  if (requestId === null) return false;
  const rows = await sql`
    select 1 from collection_requests
    where id = ${requestId} and ${openRequest(sql)}`;
  return rows.length > 0;
}

/** A request still waiting for its payment (`r.` or unqualified columns). */
const openRequest = (sql: Queryable, t = '') => sql`
  ${sql.unsafe(t)}status in ${sql(OPEN_STATUSES as RequestStatus[])} and ${sql.unsafe(t)}collection_id is null
    and ${sql.unsafe(t)}expiry_date > now()`;

/** The last callback about an operation: kept to read, never believed alone. */
export async function recordHint(sql: Queryable, id: number, hint: unknown): Promise<void> {
  await sql`update network_operations set hint = ${sql.json(hint as never)}, modified = now() where id = ${id}`;
}

/** A status query's answer, as the operator sent it. The first answer stays. */
export async function recordResult(sql: Queryable, id: number, result: unknown): Promise<boolean> {
  const rows =
    await sql`update network_operations set result = ${sql.json(result as never)}, modified = now() where id = ${id} and
      result is null returning id`;
  return rows.length > 0;
}

/** The operator's transaction id of an operation: the first one recorded wins, so every retry reports the same. */
export async function settleRemoteTransactionId(sql: Queryable, id: number, candidate: string): Promise<string> {
  const [row] = await sql<{ remoteTransactionId: string }[]>`
    update network_operations set remote_transaction_id = coalesce(remote_transaction_id, ${candidate}), modified =
      now()
    where id = ${id} returning remote_transaction_id as "remoteTransactionId"`;
  return row!.remoteTransactionId;
}

/**
 * A prompt the operator says failed: it no longer holds back reports of its number and amount (`unsettledPromptFor`).
 */
export async function settlePrompt(sql: Queryable, id: number, outcome: 'failed'): Promise<void> {
  await sql`update network_operations set result = ${sql.json({ status: outcome })}, modified = now() where id
    = ${id} and kind = 'prompt' and result is null`;
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
  const rows = await sql<{ paid: boolean }[]>`
    update network_operations set result = coalesce(result, ${sql.json({ status: 'paid' })}), modified = now()
    where id = ${id} and kind = 'prompt'
      and ((result is null and hint is not distinct
        from ${seenHint === null ? null : sql.json(seenHint as never)}::jsonb) or result->>'status' = 'paid')
    returning true as paid`;
  return rows.length > 0;
}

/** Whether a prompt was credited before its receipt was known, and waits for that receipt (`markPromptPaid`). */
export const awaitsReceipt = (operation: NetworkOperation): boolean =>
  operation.kind === 'prompt' && operation.remoteTransactionId === null && operation.result?.status === 'paid';

/**
 * What ties a receipt to a push of ours awaiting it, in the operator's own words, never by number and
 * amount: the push's callback named it (`hintNaming`, contained in the callback kept as the push's
 * hint), or a status query about the push (subject `statusSubjectPrefix` + the push's operator
 * reference) was answered naming it (`answerNaming`, contained in that answer).
 */
export type ReceiptNaming = {
  hintNaming: Record<string, unknown>;
  answerNaming: Record<string, unknown>;
  statusSubjectPrefix: string;
};

/**
 * The operator reference of the push of ours, paid while its receipt was unknown (`markPromptPaid`),
 * whose own callback or status query named the receipt (`ReceiptNaming`); null when none did.
 */
export async function pushNamingReceipt(
  sql: Queryable,
  network: string,
  naming: ReceiptNaming,
): Promise<string | null> {
  const [row] = await sql<{ operatorReference: string }[]>`
    select p.operator_reference as "operatorReference" from network_operations p
    where p.network = ${network} and p.kind = 'prompt' and p.operator_reference is not null
      and p.remote_transaction_id is null and p.result->>'status' = 'paid'
      and (p.hint @> ${sql.json(naming.hintNaming as never)}::jsonb
        or exists (
          select 1 from network_operations q
          where q.network = p.network and q.kind = 'status_query'
            and q.subject = ${naming.statusSubjectPrefix} || p.operator_reference
            and q.result @> ${sql.json(naming.answerNaming as never)}::jsonb))
    order by p.created, p.id limit 1`;
  return row?.operatorReference ?? null;
}

const UNIQUE_VIOLATION = '23505';

/**
 * The prompt of ours whose payment `receipt` is: the one that settled it, or else the push the
 * operator named for it (`pushOperatorReference`: the operator's own identifier of the push, read
 * from its answer about the receipt or found by `pushNamingReceipt`), when that push was paid while
 * its receipt was unknown (`markPromptPaid`) and the receipt is of its number and amount: it takes it
 * now (`attachReceiptIn`). Never a push chosen by number and amount: a payment the operator names no
 * push for is a payment of its own. A unique violation means another prompt or collection took the
 * receipt meanwhile: it is theirs, and read here. docs/architecture.md#one-receipt-one-credit
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
 * Attaches `receipt` to the named push, paid and awaiting one, of this number and amount, in one
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
    select id, reference, operator_reference as "operatorReference" from network_operations
    where network = ${network} and kind = 'prompt' and operator_reference = ${pushOperatorReference}
      and phone_number = ${payment.phoneNumber} and amount = ${payment.amount}::numeric
      and remote_transaction_id is null and result->>'status' = 'paid' and state <> 'refused'
    for update`;
  if (!prompt) return;
  const held = await tx`select 1 from collections where network = ${network} and remote_transaction_id = ${receipt}`;
  if (held.length > 0) return;
  await tx`update network_operations set remote_transaction_id = ${receipt}, modified = now() where id = ${prompt.id}`;
  const renamed = await tx<{ id: number }[]>`
    update collections set remote_transaction_id = ${receipt}, modified = now()
    where network = ${network} and remote_transaction_id = ${prompt.operatorReference} and prompt_reference
      = ${prompt.reference} returning id`;
  if (renamed.length === 0) return;
  await tx`update collection_requests set remote_transaction_id = ${receipt}, modified = now() where collection_id
    in ${tx(renamed.map((row) => row.id))}`;
}

/**
 * The receipt a prompt settled, read under a lock on the prompt (`attachReceipt` takes the same) when
 * `payment` is that prompt's payment credited under the prompt's operator reference; null otherwise.
 */
export async function receiptOfPromptIn(
  tx: Queryable,
  payment: { network: string; promptReference?: string | null; remoteTransactionId: string },
): Promise<string | null> {
  if (!payment.promptReference) return null;
  const [row] = await tx<{ receipt: string | null }[]>`
    select remote_transaction_id as receipt from network_operations
    where network = ${payment.network} and reference = ${payment.promptReference} and kind = 'prompt' and
      operator_reference = ${payment.remoteTransactionId}
    for share`;
  return row?.receipt ?? null;
}

/**
 * Whether a prompt of ours to this number for this amount, younger than `withinSeconds`, is neither
 * failed, nor paid (`markPromptPaid`), nor settled with its receipt: a payment of the same number and
 * amount reported meanwhile may be its answer, so the report only waits for the prompt to settle
 * first (its request credited under the receipt its query states, or else under the prompt). A wait,
 * never a match: the report then goes to a push only where the operator names that push for it
 * (`attachReceipt`). Only while the prompt's request is open (its reference is `req-<request>-<attempt>`,
 * domain/collections.ts): a request that ended follows its prompt no more, so the prompt would never
 * settle and the report would wait for nothing.
 */
export async function unsettledPromptFor(
  sql: Queryable,
  network: string,
  phoneNumber: string,
  amount: string,
  withinSeconds: number,
): Promise<boolean> {
  const rows = await sql`
    select 1 from network_operations
    where network = ${network} and kind = 'prompt' and phone_number = ${phoneNumber} and amount = ${amount}::numeric
      and remote_transaction_id is null and result is null and state <> 'refused' and created > now()
        - ${withinSeconds}::int * interval '1 second'
      and exists (
        select 1 from collection_requests r
        where r.id = substring(network_operations.reference from '^req-(\\d{1,15})-\\d{1,6}$')::bigint
          and ${openRequest(sql, 'r.')})
    limit 1`;
  return rows.length > 0;
}

/**
 * Whether `receipt` is already another payment's: settled by another prompt, or held by a collection
 * that does not answer this prompt (`promptReference`). A receipt is credited once in the whole
 * service (migration 025 and the collections' own key enforce it; this reads it ahead).
 */
export async function receiptHeldElsewhere(
  sql: Queryable,
  network: string,
  receipt: string,
  operationId: number,
  promptReference: string,
): Promise<boolean> {
  const rows = await sql`
    select 1 from network_operations
    where network = ${network} and kind = 'prompt' and remote_transaction_id = ${receipt} and id <> ${operationId}
    union all
    select 1 from collections
    where network = ${network} and remote_transaction_id = ${receipt} and prompt_reference is distinct
      from ${promptReference}
    limit 1`;
  return rows.length > 0;
}

/** The reference of the prompt of ours whose payment `receipt` is, once that prompt settled it. */
async function promptOfReceipt(sql: Queryable, network: string, receipt: string): Promise<string | null> {
  const [row] = await sql<{ reference: string }[]>`
    select reference from network_operations where network = ${network} and kind = 'prompt' and remote_transaction_id
      = ${receipt} limit 1`;
  return row?.reference ?? null;
}

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
    select ${sql.unsafe(COLUMNS)}, (
      select answered.result from network_operations answered
      where answered.network = ${network} and answered.kind = 'status_query' and answered.subject = ${subject} and
        answered.result is not null
      order by answered.created desc, answered.id desc limit 1) as "newestAnswer"
    from network_operations
    where network = ${network} and kind = 'status_query' and subject = ${subject} order by created desc, id desc limit
      1`;
  return row;
}
