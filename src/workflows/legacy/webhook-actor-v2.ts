/**
 * The webhook actor (`webhook-<id>`), an earlier shape: the dispatch pool sends every webhook's
 * deliveries now (workflows/webhook-dispatcher.ts). An open actor hands its webhook over at its
 * next turn (the worker wakes every open one at its start) and ends, leaving its pending deliveries
 * to the pool; the rest describes what it did before.
 *
 * One workflow per webhook, living while the webhook lives. Its queue is the webhook's delivery rows in PostgreSQL, never its own state:
 * while any delivery is due it keeps a sender running (activities/legacy/webhook-actor-v2.ts, a
 * long activity that drains due rows with bounded concurrency and heartbeats); with nothing due it
 * sleeps until the next due time or until a commit wakes it. A 410 from the target, the webhook's
 * deletion or its disabling ends it (its pending deliveries cancelled). Its history stays bounded
 * however its messages arrive: past the limit it stops its sender and continues as new, with an
 * input of a few fields.
 */
import { CancellationScope, ActivityCancellationType, type ActivityOptions, condition, continueAsNew, isCancellation, patched, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { LegacyActivities } from '../../activities/legacy';
import { RETRY_POLICIES } from '../contracts/retry-policies';
import {
  DEFAULT_WEBHOOK_CONCURRENCY, deliveriesQueuedSignal, webhookDeletedSignal, webhookDisabledSignal, webhookQueueQuery, type SenderResult,
  type WebhookActorInput, type WebhookActorResult, type WebhookActorState, type WebhookEnd,
} from '../contracts/webhook';

/** The sender's activity options: `taskQueue` is the senders' own (the input names it). */
const senderOptions = (taskQueue: string | undefined): ActivityOptions => ({
  ...(taskQueue === undefined ? {} : { taskQueue }),
  // The sender returns within about five minutes (activities/legacy/webhook-actor-v2.ts) and
  // heartbeats every few seconds: a sender whose worker died is run again elsewhere after the
  // heartbeat timeout.
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '6 seconds',
  // Stopped for a continue-as-new, it finishes the POSTs in flight before the actor goes on.
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: RETRY_POLICIES.untilDone,
});
const { cancelWebhookDeliveries } = proxyActivities<LegacyActivities>({ startToCloseTimeout: '1 minute', retry: RETRY_POLICIES.untilDone });

/** History events after which the actor continues as new, when the input names no limit. */
const HISTORY_LIMIT = 5_000;

/** From this marker on, an actor at its turn hands its webhook over to the dispatch pool and ends. */
const HAND_OVER_TO_POOL = 'hand-over-to-dispatch-pool';

export async function webhookV2(input: WebhookActorInput): Promise<WebhookActorResult> {
  const { sendDueDeliveries } = proxyActivities<LegacyActivities>(senderOptions(input.senderTaskQueue));
  const counts = { delivered: 0, failed: 0, gone: 0, cancelled: 0 };
  const state: Pick<WebhookActorState, 'state' | 'nextDueAt'> = { state: 'sending', nextDueAt: null };
  /** Set when a delivery was recorded since the sender last looked. */
  let woken = false;
  /** Set when the actor is to end: by a signal, or by what its sender found. */
  let ended: WebhookEnd | null = null;
  setHandler(deliveriesQueuedSignal, () => {
    woken = true;
  });
  setHandler(webhookDeletedSignal, () => {
    ended ??= 'deleted';
  });
  setHandler(webhookDisabledSignal, () => {
    ended ??= 'disabled';
  });
  setHandler(webhookQueueQuery, (): WebhookActorState => ({ webhookId: input.webhookId, ...state, ...counts }));

  const historyFull = () => workflowInfo().historyLength > (input.historyLimit ?? HISTORY_LIMIT) || workflowInfo().continueAsNewSuggested;

  /** One sender run, stopped early when the actor is to end or its history is full. */
  async function send(): Promise<SenderResult> {
    let done = false;
    const scope = new CancellationScope();
    const sending = scope.run(() => sendDueDeliveries({
      webhookId: input.webhookId, concurrency: input.concurrency ?? DEFAULT_WEBHOOK_CONCURRENCY, schedule: input.schedule,
    }));
    void sending.then(() => { done = true; }, () => { done = true; });
    await condition(() => done || ended !== null || historyFull());
    if (!done) scope.cancel();
    try {
      return await sending;
    } catch (error) {
      if (isCancellation(error)) return { state: 'paused', delivered: 0, failed: 0, gone: 0 };
      throw error;
    }
  }

  while (ended === null) {
    // The pool sends the webhook's deliveries from now on: nothing is cancelled, nothing more is sent from here.
    if (patched(HAND_OVER_TO_POOL)) return { ended: 'handed-over', ...counts };
    woken = false;
    state.state = 'sending';
    const result = await send();
    counts.delivered += result.delivered;
    counts.failed += result.failed;
    counts.gone += result.gone;
    if (result.state === 'ended') {
      ended ??= result.end;
      break;
    }
    if (result.state === 'idle' && ended === null) {
      Object.assign(state, { state: 'waiting', nextDueAt: result.nextDueAt });
      const wake = () => ended !== null || woken || historyFull();
      if (result.nextDueAt === null) await condition(wake);
      else await condition(wake, Math.max(1, Date.parse(result.nextDueAt) - Date.now()));
    }
    if (ended === null && historyFull()) await continueAsNew<typeof webhookV2>(input);
  }
  // Gone, deleted or disabled: what is still pending will never be sent.
  counts.cancelled += await cancelWebhookDeliveries(input.webhookId);
  return { ended: ended ?? 'deleted', ...counts };
}
