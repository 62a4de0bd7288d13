import { dispatchDeliveries } from './webhook-dispatcher';
import type { WebhookActivityDeps } from './webhook-attempt';
import type { WebhookSending } from './webhook-sending';
import type { DispatcherInput, DispatcherResult } from '../contracts/webhook-dispatcher';

export type { WebhookActivityDeps } from './webhook-attempt';

export function createWebhookActivities(deps: WebhookActivityDeps, { transport, schedule, wakeups }: WebhookSending) {
  return {
    /**
     * A dispatcher of the webhook delivery pool: sends the due deliveries of every webhook for a few minutes
     * (activities/webhook-dispatcher.ts).
     */
    async dispatchDeliveries(input: DispatcherInput): Promise<DispatcherResult> {
      return await dispatchDeliveries(deps, transport, wakeups, schedule, input);
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
