/**
 * A payment's state changes: handed to the network by its workflow, finished as the network answered, or cancelled by
 * its merchant; a payment that fails or is cancelled gets its amount back through a reversing transaction. Every state
 * change writes the row and a `payment.status.changed` event in one transaction, and each step is idempotent: a state
 * is left only from the states it can be left from, so a retried step changes nothing twice.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import { RefusedError } from '../../domain/errors';
import type { PaymentId } from '../../domain/ids';
import { optionalText } from '../../domain/input';
import {
  CANCELLABLE_PAYMENT_STATES,
  type PaymentResource,
  type PaymentRow,
  type PaymentState,
} from '../../domain/money-out';
import { recordPaymentState, recordWalletMovement } from '../../telemetry/metrics';
import type { Actor, ServiceDeps } from '../platform/deps';
import { markAuditedWrite } from '../merchants/audit';
import { claimDuplicateCheckKey, type DuplicateCheck } from '../collections/duplicate-checks';
import { recordEvent, type RecordedEvent } from '../webhooks/events';
import { moveMoney } from '../wallets/ledger';
import { PAYMENT_COLUMNS, findOwnPayment, findPayment, paymentResources } from './payment-reads';

/** A cancellation of a payment already handed to the network (or finished). */
class NotCancellableError extends Error {}

/** The `payment.status.changed` event of the payment as it now is, in the caller's transaction. */
export async function recordStateEvent(
  tx: Queryable,
  payment: PaymentRow,
  author: number | null,
): Promise<RecordedEvent> {
  const [resource] = await paymentResources(tx, [payment]);
  return await recordEvent(tx, {
    organizationId: payment.organizationId,
    type: 'payment.status.changed',
    data: resource!,
    author,
  });
}

export type StateChange = { payment: PaymentRow; events: RecordedEvent[] };
/** A state change a merchant asked for (a cancellation): recorded as its actor's, claiming its Duplicate-Check-Key. */
type MerchantRequest = { actor: Actor; duplicateCheck: DuplicateCheck | null };

/**
 * Moves a payment from one of `from` to `to` with the given columns, in one transaction with its
 * event and, when `release` is set, the reversing transaction that gives the amount back. Null when
 * the payment is not in one of `from` (another step moved it first): nothing is written.
 */
async function changeState(
  sql: Sql,
  paymentId: PaymentId,
  from: readonly PaymentState[],
  to: PaymentState,
  set: {
    lastError?: string | null;
    remoteTransactionId?: string | null;
    rejected?: { reason: string; by: string };
    cancelled?: { reason: string | null; by: number | null };
  },
  release: boolean,
  merchant: MerchantRequest | null = null,
): Promise<StateChange | null> {
  return (await sql.begin(async (tx): Promise<StateChange | null> => {
    if (merchant !== null) await markAuditedWrite(tx, merchant.actor);
    const remoteTransactionId =
      set.remoteTransactionId === undefined ? tx`remote_transaction_id` : set.remoteTransactionId;
    const [payment] = await tx<PaymentRow[]>`
      update payments set
        state = ${to},
        last_error = ${set.lastError === undefined ? tx`last_error` : set.lastError},
        remote_transaction_id = ${remoteTransactionId},
        rejected_reason = ${set.rejected ? set.rejected.reason : tx`rejected_reason`},
        rejected_by = ${set.rejected ? set.rejected.by : tx`rejected_by`},
        rejected_time = ${set.rejected ? tx`now()` : tx`rejected_time`},
        cancelled_reason = ${set.cancelled ? set.cancelled.reason : tx`cancelled_reason`},
        cancelled_by = ${set.cancelled ? set.cancelled.by : tx`cancelled_by`},
        cancelled_time = ${set.cancelled ? tx`now()` : tx`cancelled_time`},
        updated_by = ${set.cancelled ? set.cancelled.by : tx`updated_by`},
        workflow_started_at = coalesce(workflow_started_at, now()),
        modified = now()
      where id = ${paymentId} and state in ${tx(from as PaymentState[])}
      returning ${tx.unsafe(PAYMENT_COLUMNS)}`;
    if (!payment) return null;
    // A merchant's request (a cancellation) claims its Duplicate-Check-Key with the change it made.
    if (merchant?.duplicateCheck) await claimDuplicateCheckKey(tx, merchant.duplicateCheck);
    if (release) {
      const released = await moveMoney(tx, {
        accountId: payment.accountId,
        amount: payment.amount,
        currency: payment.currency,
        type: 'payment_release',
        description: `Payment ${payment.id} ${to === 'cancelled' ? 'cancelled' : 'failed'}: amount given back`,
        paymentId: payment.id,
      });
      if (!released) throw new Error(`payment ${payment.id}: the release could not be credited`);
    }
    return { payment, events: [await recordStateEvent(tx, payment, set.cancelled?.by ?? null)] };
  })) as StateChange | null;
}

/** The workflow hands the payment to the network: `processing`. Null when it was cancelled (or moved on) first. */
export const beginPayment = (sql: Sql, paymentId: PaymentId) =>
  changeState(sql, paymentId, CANCELLABLE_PAYMENT_STATES, 'processing', {}, false);

export type PayoutOutcome =
  | { status: 'completed'; remoteTransactionId: string }
  | { status: 'rejected' | 'failed'; error: string; remoteTransactionId: string | null };

/** What the network made of it: `completed`, or `rejected` / `processed_with_errors` with the amount given back. */
export function finishPayment(sql: Sql, paymentId: PaymentId, outcome: PayoutOutcome): Promise<StateChange | null> {
  if (outcome.status === 'completed') {
    return changeState(
      sql,
      paymentId,
      ['processing'],
      'completed',
      { remoteTransactionId: outcome.remoteTransactionId, lastError: null },
      false,
    );
  }
  if (outcome.status === 'rejected') {
    return changeState(
      sql,
      paymentId,
      ['processing'],
      'rejected',
      {
        lastError: outcome.error,
        remoteTransactionId: outcome.remoteTransactionId,
        rejected: { reason: outcome.error, by: 'network' },
      },
      true,
    );
  }
  return changeState(
    sql,
    paymentId,
    ['processing'],
    'processed_with_errors',
    { lastError: outcome.error, remoteTransactionId: outcome.remoteTransactionId },
    true,
  );
}

/**
 * Cancels a payment not yet handed to the network, giving its amount back (NotCancellableError
 * otherwise). The workflow, woken by a signal or at its start date, finds it cancelled and ends.
 */
async function cancelPayment(
  sql: Sql,
  paymentId: PaymentId,
  canceller: Actor,
  reason: string | null,
  duplicateCheck: DuplicateCheck | null,
): Promise<StateChange> {
  const cancelled = { reason, by: canceller.userId };
  const change = await changeState(sql, paymentId, CANCELLABLE_PAYMENT_STATES, 'cancelled', { cancelled }, true, {
    actor: canceller,
    duplicateCheck,
  });
  if (change === null) {
    const current = await findPayment(sql, paymentId);
    throw new NotCancellableError(
      `A ${current?.state ?? 'missing'} payment cannot be cancelled: only new and scheduled payments can.`,
    );
  }
  return change;
}

export const PaymentCancel = v.object({ reason: optionalText(255) });

/** Cancels a payment of the organization not yet handed to the network (400 otherwise), giving its amount back. */
export async function cancelOwnPayment(
  { sql, launcher }: Pick<ServiceDeps, 'sql' | 'launcher'>,
  canceller: Actor,
  paymentId: PaymentId,
  reason: string | null,
  duplicateCheck: DuplicateCheck | null,
): Promise<PaymentResource> {
  const payment = await findOwnPayment(sql, canceller.organizationId, paymentId);
  let change;
  try {
    change = await cancelPayment(sql, payment.id, canceller, reason, duplicateCheck);
  } catch (error) {
    if (error instanceof NotCancellableError) throw new RefusedError(error.message, { cause: error });
    throw error;
  }
  await launcher.signalPaymentCancelled(payment.id).catch(() => {});
  recordPaymentState('cancelled');
  recordWalletMovement({
    type: 'payment_release',
    direction: 'credit',
    currency: payment.currency,
    amount: payment.amount,
  });
  const [resource] = await paymentResources(sql, [change.payment]);
  return resource!;
}
