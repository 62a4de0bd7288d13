/**
 * What the webhook senders of one worker share (the dispatch pool's, activities/webhooks.ts): one transport, its
 * connections kept open to each receiver, the retry schedule, and one listening connection for the wake-ups.
 */
import type { Sql } from '../db';
import type { RetrySchedule } from '../domain/webhook-schedule';
import { WEBHOOK_TIMEOUT_MS } from '../domain/webhooks';
import { logger } from '../log';
import { outgoingTransport, type TransportSettings } from '../outbound/merchant-http';
import { createWakeups, type Wakeups } from './webhook-wakeups';

export type WebhookSending = { transport: TransportSettings; schedule: RetrySchedule; wakeups: Wakeups };

type SendingSettings = {
  sql: Sql;
  sandbox: boolean;
  webhooks: RetrySchedule & { caFile: string | undefined; receiverConcurrency: number };
};

export function webhookSending({ sql, sandbox, webhooks }: SendingSettings): WebhookSending {
  return {
    transport: outgoingTransport({
      sandbox,
      caFile: webhooks.caFile,
      timeoutMs: WEBHOOK_TIMEOUT_MS,
      connectionsPerReceiver: webhooks.receiverConcurrency,
    }),
    schedule: { retryDelaysMs: webhooks.retryDelaysMs, jitter: webhooks.jitter },
    wakeups: createWakeups(sql, (message, fields) => logger.warn(message, fields)),
  };
}
