import type { NetworkAdapter } from '../network/adapter';
import { createCollectionActivities, type CollectionActivityDeps } from './collections';
import { createCollectionRequestActivities, type CollectionRequestActivityDeps } from './collection-requests';
import { createEventActivities, type EventActivityDeps } from './events';
import { failingPermanently } from './failures';
import { createOutboxActivities } from './outbox';
import { createPaymentBatchActivities } from './payment-batches';
import { createPaymentActivities } from './payments';
import { createRetentionActivities, type RetentionActivityDeps } from './retention';
import { createWebhookActivities, type WebhookActivityDeps } from './webhooks';

type ActivityDeps = EventActivityDeps & CollectionRequestActivityDeps & CollectionActivityDeps & WebhookActivityDeps & RetentionActivityDeps & { network: NetworkAdapter };

export function createActivities(deps: ActivityDeps) {
  return failingPermanently({
    ...createEventActivities(deps),
    ...createCollectionRequestActivities(deps),
    ...createCollectionActivities(deps),
    ...createWebhookActivities(deps),
    ...createRetentionActivities(deps),
    ...createPaymentActivities(deps),
    ...createPaymentBatchActivities(deps),
    ...createOutboxActivities(deps),
  });
}
