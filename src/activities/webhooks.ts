import { log } from '@temporalio/activity';
import type { Sql } from '../db';
import { retryDelayMs, type RetrySchedule } from '../domain/webhook-schedule';
import {
  WEBHOOK_TIMEOUT_MS, attemptOutcome, type DeliveryStatus,
} from '../domain/webhooks';
import {
  deliveryContext, deliverySecrets, findAttempt, finishDelivery, logAttempt, openDelivery, recordAttempt, takeDeliveries, webhooksListeningTo,
  type OpenDelivery,
} from '../services/webhooks';
import { recordWebhookAttempt } from '../telemetry/metrics';
import { disableIfFailing } from '../services/webhook-recovery';
import type { SenderInput, SenderResult, WebhookEnd } from '../workflows/contracts/webhook';
import { cancelPending } from '../services/webhook-queue';
import { logger } from '../log';
import { sendDueDeliveries } from './webhook-sender';
import type { WebhookActivityDeps } from './webhook-attempt';

export type { WebhookActivityDeps } from './webhook-attempt';
import { dispatchDeliveries } from './webhook-dispatcher';
import type { DispatcherInput, DispatcherResult } from '../workflows/contracts/webhook-dispatcher';
import { createWakeups } from './webhook-wakeups';
import { outgoingTransport, postDelivery, type TransportSettings } from '../outbound/merchant-http';


/** What the actor's batch found out: each delivery's outcome, and, when the webhook no longer takes deliveries, why. */
type BatchResult = { outcomes: Record<number, AttemptResult['outcome']>; webhookLive: boolean; end?: WebhookEnd };

type WebhookDeliveryPlan = { webhookIds: number[]; schedule: RetrySchedule };

/** What an attempt came to, as the workflow needs it. `cancelled`: the hook or the event is gone, nothing was sent. */
type AttemptResult = { outcome: 'delivered' | 'failed' | 'gone' | 'cancelled'; statusCode: number | null; detail: string | null };

/**
 * The webhook actor's attempts, all at once: the deliveries taken and read in one statement, the
 * organization's secrets once, then each POST and its log (the delivery closed with its final
 * attempt, the webhook retired by a 410) in one statement each. Idempotent per delivery and
 * attempt: an attempt logged before (the worker died after sending) is answered from the log and
 * not sent again. Answers each delivery's outcome, and whether the webhook still lives.
 */
async function attemptBatch(
  deps: WebhookActivityDeps, transport: TransportSettings, webhookId: number, attempts: readonly { deliveryId: number; attempt: number; last: boolean }[],
): Promise<BatchResult> {
  const { sql } = deps;
  const { webhook, taken } = await takeDeliveries(sql, webhookId, attempts);
  const outcomes: Record<number, AttemptResult['outcome']> = Object.fromEntries(attempts.map((item) => [item.deliveryId, 'cancelled']));
  const last = new Map(attempts.map((item) => [item.deliveryId, item.last]));
  if (webhook === null || webhook.deletedAt !== null || webhook.disabledAt !== null) {
    // Deleted or disabled meanwhile: nothing is sent, and what the actor held is closed cancelled.
    for (const item of attempts) await finishDelivery(sql, item.deliveryId, 'cancelled');
    return { outcomes, webhookLive: false, end: webhook?.disabledAt ? 'disabled' : 'deleted' };
  }
  const secrets = await deliverySecrets(sql, webhook.organizationId);
  await Promise.all(taken.map(async ({ deliveryId, attempt, redelivery, event, logged }) => {
    let recorded = logged;
    if (recorded === null) {
      const sent = await postDelivery(webhook, event, secrets, transport);
      const outcome = attemptOutcome(sent.statusCode);
      const final = outcome !== 'failed' || last.get(deliveryId) === true;
      // The row's next attempt, for the current actor once this one hands the webhook over.
      const nextAttemptAt = final ? null : new Date(Date.now() + retryDelayMs(deps.webhooks, attempt + 1, Math.random()));
      recorded = await logAttempt(sql, { deliveryId, webhookId: webhook.id, attempt, ...sent, outcome, final, nextAttemptAt });
      recordWebhookAttempt({ outcome: recorded.outcome, attempt, eventCreatedAt: event.created, redelivery });
    }
    log.info('webhook attempt', { webhookId, deliveryId, attempt, outcome: recorded.outcome, statusCode: recorded.statusCode });
    outcomes[deliveryId] = recorded.outcome;
  }));
  // A delivery whose event is gone (past the retention) is closed cancelled, unsent.
  for (const item of attempts) if (!taken.some((row) => row.deliveryId === item.deliveryId)) await finishDelivery(sql, item.deliveryId, 'cancelled');
  if (Object.values(outcomes).includes('gone')) return { outcomes, webhookLive: false, end: 'gone' };
  // A target failing every attempt for the configured period has its webhook disabled (services/webhook-recovery.ts).
  if (Object.values(outcomes).includes('failed') && await disableIfFailing(deps, webhookId, deps.webhooks.disableAfterHours)) {
    return { outcomes, webhookLive: false, end: 'disabled' };
  }
  return { outcomes, webhookLive: true };
}

/**
 * Attempt `attempt` of a delivery: signs and POSTs `{"hook", "data"}` and logs the result.
 * Idempotent per (delivery, attempt): when this attempt is already in the log (the worker died
 * after sending, before Temporal heard back), the logged result is returned and nothing is sent.
 */
export async function attemptDelivery(sql: Sql, transport: TransportSettings, deliveryId: number, attempt: number): Promise<AttemptResult> {
  const logged = await findAttempt(sql, deliveryId, attempt);
  if (logged) return { outcome: logged.outcome, statusCode: logged.statusCode, detail: logged.error };
  const context = await deliveryContext(sql, deliveryId);
  if (!context) return { outcome: 'cancelled', statusCode: null, detail: 'the event no longer exists' };
  if (context.webhook.deletedAt !== null) return { outcome: 'cancelled', statusCode: null, detail: 'the webhook was deleted' };
  if (context.webhook.disabledAt !== null) return { outcome: 'cancelled', statusCode: null, detail: 'the webhook is disabled' };

  const { webhook, event } = context;
  const sent = await postDelivery(webhook, event, await deliverySecrets(sql, webhook.organizationId), transport);
  const recorded = await recordAttempt(sql, { deliveryId, webhookId: webhook.id, attempt, ...sent, outcome: attemptOutcome(sent.statusCode) });
  recordWebhookAttempt({ outcome: recorded.outcome, attempt, eventCreatedAt: event.created, redelivery: context.delivery.redelivery });
  return { outcome: recorded.outcome, statusCode: recorded.statusCode, detail: recorded.error };
}

export function createWebhookActivities(deps: WebhookActivityDeps) {
  const { sql, sandbox, webhooks } = deps;
  const transport = outgoingTransport({ sandbox, caFile: webhooks.caFile, timeoutMs: WEBHOOK_TIMEOUT_MS, connectionsPerReceiver: webhooks.concurrency });
  const schedule: RetrySchedule = { retryDelaysMs: webhooks.retryDelaysMs, jitter: webhooks.jitter };
  const wakeups = createWakeups(sql, (message, fields) => logger.warn(message, fields));

  return {
    /** A dispatcher of the webhook delivery pool: sends the due deliveries of every webhook for a few minutes (activities/webhook-dispatcher.ts). */
    async dispatchDeliveries(input: DispatcherInput): Promise<DispatcherResult> {
      return await dispatchDeliveries(deps, transport, wakeups, schedule, input);
    },

    /** The webhook actor's sender (an earlier shape, until its actor hands over): drains its due deliveries (activities/webhook-sender.ts). */
    async sendDueDeliveries(input: SenderInput): Promise<SenderResult> {
      return await sendDueDeliveries(deps, transport, wakeups, input);
    },

    /** The pending deliveries of a webhook that ended (gone, deleted or disabled): closed `cancelled`, nothing sent. How many. */
    async cancelWebhookDeliveries(webhookId: number): Promise<number> {
      return await cancelPending(sql, webhookId);
    },

    /**
     * The organization's live webhooks for the event's type that existed when it happened (a hook
     * fires for future events only), and the retry schedule their deliveries follow.
     */
    async planWebhookDeliveries(eventId: number): Promise<WebhookDeliveryPlan> {
      return { webhookIds: await webhooksListeningTo(sql, eventId), schedule };
    },

    /** The attempts of a webhook actor of the first shape (`attemptBatch`). */
    async attemptDeliveries({ webhookId, attempts }: { webhookId: number; attempts: { deliveryId: number; attempt: number; last: boolean }[] }): Promise<BatchResult> {
      return await attemptBatch(deps, transport, webhookId, attempts);
    },

    /** Deliveries an actor of the first shape held when its webhook went: closed `cancelled`, nothing sent. */
    async cancelDeliveries(deliveryIds: number[]): Promise<void> {
      for (const deliveryId of deliveryIds) await finishDelivery(sql, deliveryId, 'cancelled');
    },

    /** Idempotent: the row is keyed by the workflow id. */
    async openWebhookDelivery(input: OpenDelivery): Promise<number | null> {
      return await openDelivery(sql, input);
    },

    /** Attempt `attempt` of a delivery (see `attemptDelivery`), logged. */
    async attemptWebhookDelivery({ deliveryId, attempt }: { deliveryId: number; attempt: number }): Promise<AttemptResult> {
      const result = await attemptDelivery(sql, transport, deliveryId, attempt);
      log.info('webhook attempt', { deliveryId, attempt, ...result });
      return result;
    },

    async finishWebhookDelivery({ deliveryId, status }: { deliveryId: number; status: Exclude<DeliveryStatus, 'pending'> }): Promise<void> {
      await finishDelivery(sql, deliveryId, status);
    },

    /**
     * One attempt as one activity: opens the delivery's log row on the first (idempotent: keyed by
     * the workflow id), makes and logs the attempt, and closes the row when the outcome is final
     * (anything but a failure with attempts left). A delivery that succeeds at once costs one
     * activity instead of three; every step is idempotent, so a retry redoes none of them twice.
     */
    async sendWebhookAttempt(input: { open: OpenDelivery; deliveryId: number | null; attempt: number; last: boolean }): Promise<AttemptResult & { deliveryId: number | null }> {
      const deliveryId = input.deliveryId ?? (await openDelivery(sql, input.open));
      if (deliveryId === null) return { deliveryId: null, outcome: 'cancelled', statusCode: null, detail: 'the event or the webhook no longer exists' };
      const result = await attemptDelivery(sql, transport, deliveryId, input.attempt);
      log.info('webhook attempt', { deliveryId, attempt: input.attempt, ...result });
      if (result.outcome !== 'failed' || input.last) await finishDelivery(sql, deliveryId, result.outcome);
      return { ...result, deliveryId };
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
