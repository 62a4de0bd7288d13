import { log } from '@temporalio/activity';
import type { Sql } from '../db';
import type { RetrySchedule } from '../domain/webhook-schedule';
import {
  WEBHOOK_TIMEOUT_MS, attemptOutcome, deliveryHeaders, serializeWebhook, webhookMessageId, type DeliveryStatus, type WebhookRow,
} from '../domain/webhooks';
import {
  deliveryContext, deliverySecrets, findAttempt, finishDelivery, logAttempt, openDelivery, recordAttempt, takeDeliveries, webhooksListeningTo,
  type DeliverySecrets, type OpenDelivery,
} from '../services/webhooks';
import { recordWebhookAttempt } from '../telemetry/metrics';
import { withClientSpan } from '../telemetry/trace-context';
import { disableIfFailing } from '../services/webhook-recovery';
import type { Launcher } from '../temporal/launcher';
import type { WebhookEnd } from '../workflows/contracts/webhook';
import { outgoingTransport, postWebhook, type TransportSettings } from './webhook-http';

export type WebhookActivityDeps = {
  sql: Sql;
  launcher: Launcher;
  sandbox: boolean;
  webhooks: RetrySchedule & { caFile: string | undefined; disableAfterHours: number };
};

/** What the actor's batch found out: each delivery's outcome, and, when the webhook no longer takes deliveries, why. */
type BatchResult = { outcomes: Record<number, AttemptResult['outcome']>; webhookLive: boolean; end?: WebhookEnd };

type WebhookDeliveryPlan = { webhookIds: number[]; schedule: RetrySchedule };

/** What an attempt came to, as the workflow needs it. `cancelled`: the hook or the event is gone, nothing was sent. */
type AttemptResult = { outcome: 'delivered' | 'failed' | 'gone' | 'cancelled'; statusCode: number | null; detail: string | null };

/** Signs and POSTs `{"hook", "data"}` of one event to the webhook's target; what the receiver did, never an error. */
async function send(webhook: WebhookRow, event: { id: number; data: Record<string, unknown> }, secrets: DeliverySecrets, transport: TransportSettings) {
  const body = JSON.stringify({ hook: serializeWebhook(webhook), data: event.data });
  const headers = deliveryHeaders(secrets, webhookMessageId(event.id, webhook.id), Math.floor(Date.now() / 1000), body);
  return await withClientSpan('POST webhook', { method: 'POST', url: webhook.target, headers }, () => postWebhook(webhook.target, headers, body, transport));
}

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
      const sent = await send(webhook, event, secrets, transport);
      const outcome = attemptOutcome(sent.statusCode);
      recorded = await logAttempt(sql, { deliveryId, webhookId: webhook.id, attempt, ...sent, outcome, final: outcome !== 'failed' || last.get(deliveryId) === true });
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
  const sent = await send(webhook, event, await deliverySecrets(sql, webhook.organizationId), transport);
  const recorded = await recordAttempt(sql, { deliveryId, webhookId: webhook.id, attempt, ...sent, outcome: attemptOutcome(sent.statusCode) });
  recordWebhookAttempt({ outcome: recorded.outcome, attempt, eventCreatedAt: event.created, redelivery: context.delivery.redelivery });
  return { outcome: recorded.outcome, statusCode: recorded.statusCode, detail: recorded.error };
}

export function createWebhookActivities(deps: WebhookActivityDeps) {
  const { sql, sandbox, webhooks } = deps;
  const transport = outgoingTransport({ sandbox, caFile: webhooks.caFile, timeoutMs: WEBHOOK_TIMEOUT_MS });
  const schedule: RetrySchedule = { retryDelaysMs: webhooks.retryDelaysMs, jitter: webhooks.jitter };

  return {
    /**
     * The organization's live webhooks for the event's type that existed when it happened (a hook
     * fires for future events only), and the retry schedule their deliveries follow.
     */
    async planWebhookDeliveries(eventId: number): Promise<WebhookDeliveryPlan> {
      return { webhookIds: await webhooksListeningTo(sql, eventId), schedule };
    },

    /** The webhook actor's attempts (`attemptBatch`). */
    async attemptDeliveries({ webhookId, attempts }: { webhookId: number; attempts: { deliveryId: number; attempt: number; last: boolean }[] }): Promise<BatchResult> {
      return await attemptBatch(deps, transport, webhookId, attempts);
    },

    /** Deliveries the actor held when its webhook went: closed `cancelled`, nothing sent. */
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
