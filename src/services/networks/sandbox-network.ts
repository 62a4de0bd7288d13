/**
 * What the sandbox network records of its own doings, as a real operator keeps its books: the
 * payments its subscribers make (once per transaction id), its payouts (once per reference), the
 * text messages it would have sent and the payments merchants rejected. Every write is idempotent,
 * so a retried activity finds what the first try recorded.
 */
import type { CollectionRequestId } from '../../domain/ids';
import type { Queryable } from '../../db';

type SandboxPayment = {
  remoteTransactionId: string;
  phoneNumber: string;
  amount: string;
  currency: string;
  reference: string;
  network: string;
  promptReference: string | null;
  /** When the subscriber pays (a prompt's payment is dated its delay ahead). */
  paidAt: Date;
};

/** The payment as first recorded under its transaction id (a repeat returns the first one). */
export async function recordSandboxPayment(
  sql: Queryable,
  payment: SandboxPayment,
): Promise<{ reference: string; promptReference: string | null; created: Date }> {
  const [recorded] = await sql<{ reference: string; promptReference: string | null; created: Date }[]>`
    insert into sandbox_payments (remote_transaction_id, phone_number, amount, currency, reference, network,
      prompt_reference, created)
    values
      (${payment.remoteTransactionId}, ${payment.phoneNumber}, ${payment.amount}, ${payment.currency},
        ${payment.reference}, ${payment.network},
            ${payment.promptReference}, ${payment.paidAt})
    on conflict (remote_transaction_id) do update set remote_transaction_id = excluded.remote_transaction_id
    returning reference, prompt_reference as "promptReference", created`;
  return recorded!;
}

export async function findSandboxPayment(
  sql: Queryable,
  remoteTransactionId: string,
): Promise<{ remoteTransactionId: string; amount: string; phoneNumber: string; created: Date } | undefined> {
  const [found] = await sql<{ remoteTransactionId: string; amount: string; phoneNumber: string; created: Date }[]>`
    select remote_transaction_id as "remoteTransactionId", amount::text as amount, phone_number as "phoneNumber",
      created
    from sandbox_payments where remote_transaction_id = ${remoteTransactionId}`;
  return found;
}

export type SandboxPayout = { outcome: string; remoteTransactionId: string; created: Date };

/** The payout as first recorded under its reference (a repeat returns the first one, outcome and time included). */
export async function recordSandboxPayout(
  sql: Queryable,
  payout: {
    reference: string;
    phoneNumber: string;
    amount: string;
    currency: string;
    outcome: string;
    remoteTransactionId: string;
  },
): Promise<SandboxPayout> {
  const [recorded] = await sql<SandboxPayout[]>`
    insert into sandbox_payouts (reference, phone_number, amount, currency, outcome, remote_transaction_id)
    values
      (${payout.reference}, ${payout.phoneNumber}, ${payout.amount}, ${payout.currency}, ${payout.outcome},
        ${payout.remoteTransactionId})
    on conflict (reference) do update set reference = excluded.reference
    returning outcome, remote_transaction_id as "remoteTransactionId", created`;
  return recorded!;
}

export async function findSandboxPayout(sql: Queryable, reference: string): Promise<SandboxPayout | undefined> {
  const [recorded] = await sql<SandboxPayout[]>`
    select outcome, remote_transaction_id as "remoteTransactionId", created
    from sandbox_payouts
    where reference = ${reference}`;
  return recorded;
}

/** A text message the sandbox would have sent: once per request, kind and attempt. */
export async function recordSandboxMessage(
  sql: Queryable,
  message: { requestId: CollectionRequestId; kind: string; attempt: number; phoneNumber: string; text: string },
): Promise<void> {
  await sql`
    insert into sandbox_messages (request_id, kind, attempt, phone_number, text)
    values (${message.requestId}, ${message.kind}, ${message.attempt}, ${message.phoneNumber}, ${message.text})
    on conflict (request_id, kind, attempt) do nothing`;
}

/** A merchant's rejection of a payment, as the sandbox network is told it (once per payment). */
export async function recordSandboxRejection(
  sql: Queryable,
  remoteTransactionId: string,
  reason: string | null,
): Promise<void> {
  await sql`insert into sandbox_rejections (remote_transaction_id, reason) values (${remoteTransactionId}, ${reason})
            on conflict (remote_transaction_id) do nothing`;
}
