import type { Sql } from '../db';
import type { RetrySchedule } from '../domain/webhook-schedule';
import type { Launcher } from '../temporal/launcher';
import { dispatchDeliveries } from './webhook-dispatcher';
import type { WebhookSending } from './webhook-sending';
import type { DispatcherInput, DispatcherResult } from '../workflows/contracts/webhook-dispatcher';

export type WebhookActivityDeps = {
  sql: Sql;
  launcher: Launcher;
  sandbox: boolean;
  webhooks: RetrySchedule & { caFile: string | undefined; disableAfterHours: number; concurrency: number; dispatchWindow: number; dispatchQueue: string | null };
};

export function createWebhookActivities(deps: WebhookActivityDeps, { transport, schedule, wakeups }: WebhookSending) {
  return {
    /** A dispatcher of the webhook delivery pool: sends the due deliveries of every webhook for a few minutes (activities/webhook-dispatcher.ts). */
    async dispatchDeliveries(input: DispatcherInput): Promise<DispatcherResult> {
      return await dispatchDeliveries(deps, transport, wakeups, schedule, input);
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
