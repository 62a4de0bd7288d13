import type { PaymentId, ReversalId } from '../domain/ids';
import { condition, proxyActivities, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type { createPaymentActivities } from '../activities/payments';
import type { PayoutResult } from '../network/adapter';
import type { PayoutOutcome } from '../services/payments/payment-state';
import {
  moneyOutStateQuery,
  paymentCancelledSignal,
  type MoneyOutState,
  type PaymentInput,
  type ReversalInput,
} from '../contracts/money-out';
import { networkHintSignal } from '../contracts/common';
import { RETRY_POLICIES } from '../contracts/retry-policies';

type Activities = ReturnType<typeof createPaymentActivities>;

const { beginPaymentStep, finishPaymentStep, finishReversalStep } = proxyLocalActivities<Activities>({
  // One PostgreSQL transaction each (the state, its event, a release); idempotent, retried through outages.
  startToCloseTimeout: '10 seconds',
  retry: RETRY_POLICIES.untilDone,
});

const { sendPayout, queryPayout } = proxyActivities<Activities>({
  // Calls that leave the process (the network). Idempotent per payout reference, so a retry after a
  // crash mid-call sends nothing twice; a network that keeps failing is retried until it answers. A call
  // may take a few operator timeouts (status, then a resend): it heartbeats, so a dead worker's is
  // retried elsewhere within seconds.
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: RETRY_POLICIES.payout,
});

const NO_CONFIRMATION = 'The network did not confirm the transfer in time.';

/**
 * Sends a payout and follows it until the network says what became of it (or stops answering for
 * too long): asks at every poll, or sooner when the operator's callback wakes the workflow (a hint:
 * the answer is always the operator's status query).
 */
async function payout(
  subject: { kind: 'payment'; id: PaymentId } | { kind: 'reversal'; id: ReversalId },
  input: { statusPollSeconds: number; statusTimeoutSeconds: number },
  state: MoneyOutState,
): Promise<PayoutOutcome> {
  let hinted = false;
  setHandler(networkHintSignal, () => {
    hinted = true;
  });
  let result: PayoutResult = await sendPayout(subject);
  state.attempts = 1;
  const giveUpAt = Date.now() + input.statusTimeoutSeconds * 1000;
  while (result.status === 'pending') {
    if (Date.now() >= giveUpAt)
      return { status: 'failed', error: NO_CONFIRMATION, remoteTransactionId: result.remoteTransactionId };
    await condition(() => hinted, Math.min(input.statusPollSeconds * 1000, Math.max(1, giveUpAt - Date.now())));
    hinted = false;
    result = await queryPayout(subject);
    state.attempts += 1;
  }
  if (result.status !== 'completed') state.lastError = result.error;
  return result;
}

/**
 * A payment (`payment-<id>`): its amount was reserved when it was created. It waits for its start
 * date (a cancellation wakes it), moves to `processing` (a local activity that finds it cancelled,
 * then it ends), sends it through the network (a regular activity) and follows it until the network
 * answers, then records the outcome: `completed`, or `rejected` / `processed_with_errors` with the
 * amount given back by a reversing transaction.
 */
export async function payment(input: PaymentInput): Promise<MoneyOutState> {
  const state: MoneyOutState = { state: 'new', attempts: 0, lastError: null };
  let cancelled = false;
  setHandler(moneyOutStateQuery, () => ({ ...state }));
  setHandler(paymentCancelledSignal, () => {
    cancelled = true;
  });
  const startAt = input.startAt === null ? null : Date.parse(input.startAt);
  if (startAt !== null && startAt > Date.now()) {
    state.state = 'scheduled';
    await condition(() => cancelled, startAt - Date.now());
  }
  state.state = await beginPaymentStep({ paymentId: input.paymentId });
  if (state.state !== 'processing') return { ...state };
  const outcome = await payout({ kind: 'payment', id: input.paymentId }, input, state);
  state.state = await finishPaymentStep({ paymentId: input.paymentId, outcome });
  return { ...state };
}

/**
 * A reversal (`reversal-<id>`): the collection's amount was debited when it was created. It sends
 * the amount back to the subscriber through the network and records the outcome: `completed` (the
 * request the collection paid ends `reversed`), or `failed` with the amount given back.
 */
export async function reversal(input: ReversalInput): Promise<MoneyOutState> {
  const state: MoneyOutState = { state: 'processing', attempts: 0, lastError: null };
  setHandler(moneyOutStateQuery, () => ({ ...state }));
  const outcome = await payout({ kind: 'reversal', id: input.reversalId }, input, state);
  state.state = await finishReversalStep({ reversalId: input.reversalId, outcome });
  return { ...state };
}
