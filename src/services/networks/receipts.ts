/**
 * The receipt rules, read for every operator alike: a receipt is credited once in the whole service,
 * and attaches to a push of ours only by the operator's own identifiers, never by number and amount
 * (docs/architecture.md#one-receipt-one-credit). Their one write, `attachReceipt`, is in ./journal.ts.
 */
import type { Queryable } from '../../db';
import { OPEN_STATUSES, type RequestStatus } from '../../domain/collection-requests';
import { requestOfPromptReference } from '../../domain/collections';
import type { NetworkOperation } from './operations';

/**
 * Whether the request a prompt of ours asks for is still open (not final, not paid, not expired): its
 * workflow then follows the prompt. A prompt whose request ended is followed on by that request only to
 * record its payment unassigned: a report of that payment does not wait for it to settle.
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
    select p.operator_reference as "operatorReference"
    from network_operations p
    where p.network = ${network} and p.kind = 'prompt' and p.operator_reference is not null
      and p.remote_transaction_id is null and p.result->>'status' = 'paid'
      and (p.hint @> ${sql.json(naming.hintNaming as never)}::jsonb
        or exists (
          select 1 from network_operations q
          where q.network = p.network and q.kind = 'status_query'
            and q.subject = ${naming.statusSubjectPrefix} || p.operator_reference
            and q.result @> ${sql.json(naming.answerNaming as never)}::jsonb))
    order by p.created, p.id
    limit 1`;
  return row?.operatorReference ?? null;
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
    select remote_transaction_id as receipt
    from network_operations
    where network = ${payment.network} and reference = ${payment.promptReference} and kind = 'prompt'
      and operator_reference = ${payment.remoteTransactionId}
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
 * domain/collections.ts): a request that ended credits nobody with its prompt's payment, and its prompt
 * may settle only days later, so a report does not wait for it.
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
      and remote_transaction_id is null and result is null and state <> 'refused'
      and created > now() - ${withinSeconds}::int * interval '1 second'
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
    where network = ${network} and remote_transaction_id = ${receipt}
      and prompt_reference is distinct from ${promptReference}
    limit 1`;
  return rows.length > 0;
}

/** The reference of the prompt of ours whose payment `receipt` is, once that prompt settled it. */
export async function promptOfReceipt(sql: Queryable, network: string, receipt: string): Promise<string | null> {
  const [row] = await sql<{ reference: string }[]>`
    select reference
    from network_operations
    where network = ${network} and kind = 'prompt' and remote_transaction_id = ${receipt}
    limit 1`;
  return row?.reference ?? null;
}
