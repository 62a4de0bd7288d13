import type { PaymentId, ReversalId } from '../domain/ids';
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { findCollection } from '../services/collections/collection-reads';
import type { Sql } from '../db';
import { movementReference } from '../domain/money-movements';
import { networkByName } from '../domain/networks';
import type { NetworkAdapter, Payout, PayoutResult } from '../network/adapter';
import { heartbeating } from './heartbeats';
import { beginPayment, finishPayment, type PayoutOutcome, type StateChange } from '../services/payments/payment-state';
import { findPayment } from '../services/payments/payment-reads';
import { findReversal, finishReversal } from '../services/payments/reversals';
import { recordFinalRequestStatuses, recordPaymentState, recordWalletMovement } from '../telemetry/metrics';
import type { Launcher } from '../services/platform/ports';
import { paymentWorkflowId, reversalWorkflowId } from '../contracts/money-out';

type PaymentActivityDeps = { sql: Sql; launcher: Launcher; network: NetworkAdapter };

/** What a payout sends: a payment, or a reversal of a collection, by its id. */
type PayoutSubject = { kind: 'payment'; id: PaymentId } | { kind: 'reversal'; id: ReversalId };

export function createPaymentActivities({ sql, network }: PaymentActivityDeps) {
  /** The payout a payment or reversal asks the network for; its reference is ours and unique. */
  async function payoutOf(subject: PayoutSubject): Promise<Payout> {
    const { kind, id } = subject;
    const row = subject.kind === 'payment' ? await findPayment(sql, subject.id) : await findReversal(sql, subject.id);
    // Nothing can bring a deleted row back: retrying would not help.
    if (!row) throw ApplicationFailure.nonRetryable(`${kind} ${id} does not exist`, 'NotFound');
    const payoutNetwork = networkByName(row.network);
    if (!payoutNetwork) throw ApplicationFailure.nonRetryable(`unknown network ${row.network}`, 'UnknownNetwork');
    // A reversal names the payment it sends back: the operator's id of its collection.
    const original =
      'collectionId' in row ? (await findCollection(sql, row.collectionId))?.remoteTransactionId : undefined;
    return {
      reference: movementReference(kind, id),
      kind,
      phoneNumber: row.phoneNumber,
      amount: row.amount,
      currency: row.currency,
      network: payoutNetwork,
      ...(original ? { originalTransactionId: original } : {}),
      workflowId:
        Context.current().info.workflowExecution?.workflowId ??
        (subject.kind === 'payment' ? paymentWorkflowId(subject.id) : reversalWorkflowId(subject.id)),
    };
  }

  /** After a state change's commit: its events' deliveries start; the metrics count it. */
  async function settled(change: StateChange | null): Promise<string | null> {
    if (change === null) return null;
    const { state, amount, currency } = change.payment;
    recordPaymentState(state);
    if (state === 'rejected' || state === 'processed_with_errors' || state === 'cancelled') {
      recordWalletMovement({ type: 'payment_release', direction: 'credit', currency, amount });
    }
    return state;
  }

  return {
    /**
     * A local activity: the payment is handed to the network (`processing`); its current state when it was cancelled
     * first.
     */
    async beginPaymentStep({ paymentId }: { paymentId: PaymentId }): Promise<string> {
      const begun = await settled(await beginPayment(sql, paymentId));
      if (begun !== null) return begun;
      return (await findPayment(sql, paymentId))?.state ?? 'missing';
    },

    /** A local activity: what the network made of the payment (the release of a failed one included). */
    async finishPaymentStep({ paymentId, outcome }: { paymentId: PaymentId; outcome: PayoutOutcome }): Promise<string> {
      const finished = await settled(await finishPayment(sql, paymentId, outcome));
      return finished ?? (await findPayment(sql, paymentId))?.state ?? 'missing';
    },

    /** A local activity: what the network made of the reversal (the request `reversed`, or the amount given back). */
    async finishReversalStep({
      reversalId,
      outcome,
    }: {
      reversalId: ReversalId;
      outcome: PayoutOutcome;
    }): Promise<string> {
      const change = await finishReversal(sql, reversalId, outcome);
      if (change === null) return (await findReversal(sql, reversalId))?.state ?? 'missing';
      recordFinalRequestStatuses(change.events);
      if (change.reversal.state === 'failed') {
        recordWalletMovement({
          type: 'reversal_release',
          direction: 'credit',
          currency: change.reversal.currency,
          amount: change.reversal.amount,
        });
      }
      return change.reversal.state;
    },

    /**
     * Sends a payment or reversal through the network adapter (a call that leaves the process); idempotent per
     * reference.
     */
    async sendPayout(subject: PayoutSubject): Promise<PayoutResult> {
      const result = await heartbeating(async () => network.sendMoney(await payoutOf(subject)));
      log.info('payout sent', { kind: subject.kind, id: subject.id, status: result.status });
      return result;
    },

    /** Asks the network where a payout it has not confirmed stands. */
    async queryPayout(subject: PayoutSubject): Promise<PayoutResult> {
      return await heartbeating(async () => network.payoutStatus(await payoutOf(subject)));
    },
  };
}
