/**
 * The webhook actor's contract (`webhook-<id>`): one workflow per webhook, woken when deliveries
 * are recorded for it, which keeps a sender draining them while any is due. Its id, input,
 * signals, query and its sender's input and result. Safe to import from workflow code and from clients alike: no I/O, no Node built-ins.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { RetrySchedule } from '../../domain/webhook-schedule';
import type { DeliveryId, EventId, OrganizationId, WebhookId } from '../../domain/ids';

export const webhookActorId = (webhookId: WebhookId): string => `webhook-${webhookId}`;

/**
 * The task queue of webhook senders: their own worker (in each worker process) with its own slots,
 * so receivers that hang can hold only sender slots, never those of prompts and payouts.
 */
export const webhookSenderTaskQueue = (taskQueue: string): string => `${taskQueue}-webhook-senders`;

/** Deliveries the actor is told of (ids of their rows): it reads them from PostgreSQL, the signal only wakes it. */
export type QueuedDelivery = { deliveryId: DeliveryId; eventId: EventId };

/** Why a webhook's actor stops: what its sender found, or what a signal said. */
export type WebhookEnd = 'gone' | 'deleted' | 'disabled';

/** Deliveries of one webhook in flight at once, unless configured (WEBHOOK_CONCURRENCY). */
export const DEFAULT_WEBHOOK_CONCURRENCY = 16;

export type WebhookActorInput = {
  webhookId: WebhookId;
  organizationId: OrganizationId;
  schedule: RetrySchedule;
  /** History events after which the actor continues as new (absent: 5,000). */
  historyLimit?: number;
  /** Deliveries in flight at once (absent: `DEFAULT_WEBHOOK_CONCURRENCY`). */
  concurrency?: number;
  /** Where its sender runs (`webhookSenderTaskQueue`; absent: the actor's own task queue). */
  senderTaskQueue?: string;
};

/**
 * Why the actor ended: its webhook is gone (a 410 from the target), was deleted, or was disabled;
 * or it handed its webhook over to the dispatch pool (workflows/webhook-dispatcher.ts), which sends
 * its pending deliveries.
 */
export type WebhookActorResult = { ended: WebhookEnd | 'handed-over'; delivered: number; failed: number; gone: number; cancelled: number };

/** What the sender activity is given: the webhook, its window and its retry schedule. */
export type SenderInput = { webhookId: WebhookId; concurrency: number; schedule: RetrySchedule };

type SenderCounts = { delivered: number; failed: number; gone: number };

/**
 * How a sender run ended: nothing due for a moment (`idle`, with when the next delivery is due,
 * null when none is pending), the webhook gone, deleted or disabled (`ended`, its pending
 * deliveries cancelled), or cancelled or out of time (`paused`: the actor runs it again).
 */
export type SenderResult = SenderCounts & ({ state: 'idle'; nextDueAt: string | null } | { state: 'ended'; end: WebhookEnd } | { state: 'paused' });

/** The actor as an operator asks for it (the Queries tab, `queue`); the queue itself is the delivery rows. */
export type WebhookActorState = {
  webhookId: WebhookId;
  /** `sending`: its sender drains due deliveries now; `waiting`: nothing is due until `nextDueAt` (null: until a delivery is recorded). */
  state: 'sending' | 'waiting';
  nextDueAt: string | null;
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

export const webhookQueueQuery = defineQuery<WebhookActorState>('queue');
