import type { NetworkAdapter } from '../network/adapter';
import { createCollectionActivities, type CollectionActivityDeps } from './collections';
import { createCollectionRequestActivities, type CollectionRequestActivityDeps } from './collection-requests';
import { failingPermanently } from './failures';
import { createOutboxActivities } from './outbox';
import { createPaymentBatchActivities } from './payment-batches';
import { createPaymentActivities } from './payments';
import { createRetentionActivities, type RetentionActivityDeps } from './retention';
import { createWebhookActivities, type WebhookActivityDeps } from './webhooks';
import { webhookSending } from './webhook-sending';

type ActivityDeps = CollectionRequestActivityDeps &
  CollectionActivityDeps &
  WebhookActivityDeps &
  RetentionActivityDeps & { network: NetworkAdapter };

/** Every activity the worker registers. */
export function createActivities(deps: ActivityDeps) {
  const sending = webhookSending(deps);
  return failingPermanently({
    ...createCollectionRequestActivities(deps),
    ...createCollectionActivities(deps),
    ...createWebhookActivities(deps, sending),
    ...createRetentionActivities(deps),
    ...createPaymentActivities(deps),
    ...createPaymentBatchActivities(deps),
    ...createOutboxActivities(deps),
  });
}

/** The activities of the webhook senders' own task queue (src/worker.ts): the dispatch pool's. */
export function senderActivities(activities: ReturnType<typeof createActivities>) {
  return { dispatchDeliveries: activities.dispatchDeliveries };
}
