/**
 * The webhook actor's contract (`webhook-<id>`): one workflow per webhook, which receives the
 * deliveries recorded for it and attempts each on its own schedule. Its id, input, signals and
 * query. Safe to import from workflow code and from clients alike: no I/O, no Node built-ins.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { RetrySchedule } from '../../domain/webhook-schedule';

export const webhookActorId = (webhookId: number): string => `webhook-${webhookId}`;

/** A delivery the actor is told of: its row (recorded with its event, or asked for as a redelivery). */
export type QueuedDelivery = { deliveryId: number; eventId: number };

/** A delivery in the actor's queue: the attempt it makes next, and when. */
export type PendingAttempt = QueuedDelivery & { attempt: number; dueAt: number };

/** Why a webhook's actor stops: what the attempt activity found, or what a signal said. */
export type WebhookEnd = 'gone' | 'deleted' | 'disabled';

export type WebhookActorInput = {
  webhookId: number;
  organizationId: number;
  schedule: RetrySchedule;
  /** History events after which the actor continues as new (absent: 5,000). */
  historyLimit?: number;
  /** Deliveries still to attempt, carried over a continue-as-new (empty at the first start). */
  queue: PendingAttempt[];
};

/** Why the actor ended: its webhook is gone (a 410 from the target), was deleted, or was disabled. */
export type WebhookActorResult = { ended: WebhookEnd; delivered: number; failed: number; gone: number; cancelled: number };

/** The actor's queue, as an operator asks for it (the Queries tab, `queue`). */
export type WebhookQueue = {
  webhookId: number;
  /** What it is attempting now. */
  sending: QueuedDelivery[];
  /** What waits for its next attempt, soonest first (`dueAt` as an ISO instant). */
  waiting: (QueuedDelivery & { attempt: number; dueAt: string })[];
  /** Deliveries this run has finished, by outcome. */
  delivered: number;
  failed: number;
  gone: number;
  cancelled: number;
};

/** New deliveries for the webhook (signal-with-start, after the commit that recorded them). */
export const deliveriesQueuedSignal = defineSignal<[QueuedDelivery[]]>('deliveriesQueued');

/** The webhook was deleted: the actor cancels what it still holds and ends. */
export const webhookDeletedSignal = defineSignal('webhookDeleted');

/** The webhook was disabled (by the merchant; the service's own disabling ends the actor from its activity): as deleted, the actor cancels what it holds and ends. */
export const webhookDisabledSignal = defineSignal('webhookDisabled');

export const webhookQueueQuery = defineQuery<WebhookQueue>('queue');
