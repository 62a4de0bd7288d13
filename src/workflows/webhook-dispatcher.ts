/**
 * A dispatcher of the webhook delivery pool (`webhook-dispatcher-<task queue>-<slot>`, docs/architecture.md,
 * Webhook delivery): it keeps one long-running activity (activities/webhook-dispatcher.ts) sending
 * the due deliveries of every webhook, run after run, for as long as the service runs. Nothing
 * signals it: new deliveries reach its activity through PostgreSQL, so its history grows by a few
 * events per run (about five minutes) whatever the traffic, and it continues as new now and then.
 * A worker that dies takes the running activity with it; the heartbeat timeout hands it to another.
 */
import { type ActivityOptions, continueAsNew, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks';
import { RETRY_POLICIES } from '../contracts/retry-policies';
import type { DispatcherInput } from '../contracts/webhook-dispatcher';

const dispatcherOptions = (taskQueue: string | undefined): ActivityOptions => ({
  ...(taskQueue === undefined ? {} : { taskQueue }),
  // A run returns within about five minutes and heartbeats every two seconds.
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '10 seconds',
  retry: RETRY_POLICIES.untilDone,
});

/** Runs after which a dispatcher continues as new (each costs a handful of history events). */
const RUNS_PER_EXECUTION = 100;

export async function webhookDispatcher(input: DispatcherInput): Promise<void> {
  const { dispatchDeliveries } = proxyActivities<WebhookActivities>(dispatcherOptions(input.senderTaskQueue));
  for (let run = 0; run < RUNS_PER_EXECUTION && !workflowInfo().continueAsNewSuggested; run += 1) {
    await dispatchDeliveries(input);
  }
  await continueAsNew<typeof webhookDispatcher>(input);
}
