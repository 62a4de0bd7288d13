/**
 * The activities only the earlier workflow types run (src/workflows/legacy/), each file named as
 * its workflow's, under the names their histories recorded (test/histories replays them).
 *
 * Retiring a type, once its rule in src/workflows/registry.ts is met (`npm run admin --
 * legacy-workflows`): delete its files here and in src/workflows/legacy/, their lines in the two
 * legacy index.ts, and its rule in `LEGACY_WORKFLOWS`. Nothing current changes: these files may
 * use what the current activities share, and no current file imports them but
 * src/activities/index.ts, through this one.
 */
import type { createCollectionActivities } from '../collections';
import type { CollectionRequestActivityDeps, createCollectionRequestActivities } from '../collection-requests';
import type { createOutboxActivities } from '../outbox';
import type { WebhookActivityDeps } from '../webhooks';
import type { WebhookSending } from '../webhook-sending';
import { createCollectionRequestV1Activities } from './collection-request';
import { createEventDispatchActivities } from './event-dispatch';
import { createIncomingCollectionV1Activities } from './incoming-collection';
import { createOutboxSweepV2Activities } from './outbox-sweep-v2';
import { createWebhookActorV1Activities } from './webhook-actor';
import { createWebhookActorV2Activities } from './webhook-actor-v2';
import { createWebhookDeliveryActivities } from './webhook-delivery';

export function createLegacyActivities(deps: CollectionRequestActivityDeps & WebhookActivityDeps, sending: WebhookSending) {
  return {
    ...createCollectionRequestV1Activities(deps),
    ...createIncomingCollectionV1Activities(deps),
    ...createEventDispatchActivities({ sql: deps.sql, schedule: sending.schedule }),
    ...createOutboxSweepV2Activities(),
    ...createWebhookActorV1Activities(deps, sending),
    ...createWebhookActorV2Activities(deps, sending),
    ...createWebhookDeliveryActivities(deps, sending),
  };
}

/**
 * The current activities the earlier types still call, under the same names: a change to one of
 * these must keep what those types recorded.
 */
type SharedActivities =
  & Pick<ReturnType<typeof createCollectionRequestActivities>, 'recordRequestStatus' | 'promptSubscriber' | 'checkPrompt' | 'sendSuccessMessage'>
  & Pick<ReturnType<typeof createCollectionActivities>, 'receiveCollection' | 'acceptVerifiedCollection' | 'checkReportedPayment' | 'verifyCollection' | 'rejectCollection'>
  & Pick<ReturnType<typeof createOutboxActivities>, 'startUnlaunchedRows'>;

/** Everything an earlier workflow type may call: the type its `proxyActivities` take. */
export type LegacyActivities = ReturnType<typeof createLegacyActivities> & SharedActivities;

/** The earlier activities served on the webhook senders' own task queue (src/worker.ts): the senders of `webhookV2`. */
export function legacySenderActivities({ sendDueDeliveries }: Pick<LegacyActivities, 'sendDueDeliveries'>) {
  return { sendDueDeliveries };
}
