import { createEventActivities, type EventActivityDeps } from './events';
import { createRetentionActivities, type RetentionActivityDeps } from './retention';
import { createWebhookActivities, type WebhookActivityDeps } from './webhooks';

export type ActivityDeps = EventActivityDeps & WebhookActivityDeps & RetentionActivityDeps;

export function createActivities(deps: ActivityDeps) {
  return { ...createEventActivities(deps), ...createWebhookActivities(deps), ...createRetentionActivities(deps) };
}
