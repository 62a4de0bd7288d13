/**
 * The webhook delivery pool's contract: a fixed number of dispatchers (`WEBHOOK_DISPATCHERS`), each
 * a workflow (`webhook-dispatcher-<task queue>-<slot>`) that keeps one long-running activity sending the due
 * deliveries of every webhook (activities/webhook-dispatcher.ts). Safe to import from workflow
 * code and from clients alike: no I/O, no Node built-ins.
 */

/**
 * The task queue of webhook senders: their own worker (in each worker process) with its own slots,
 * so receivers that hang can hold only sender slots, never those of prompts and payouts.
 */
export const webhookSenderTaskQueue = (taskQueue: string): string => `${taskQueue}-webhook-senders`;

/** A dispatcher's id: its deployment's task queue and its slot in the pool. */
export const webhookDispatcherId = (taskQueue: string, slot: number): string =>
  `webhook-dispatcher-${taskQueue}-${slot}`;

/** Which dispatcher of the pool it is, and (tests) its window, else the worker's `WEBHOOK_DISPATCH_WINDOW`. */
export type DispatcherInput = { slot: number; window?: number; senderTaskQueue?: string };

/** What one run of a dispatcher's activity did: attempts made, and deliveries finished by outcome. */
export type DispatcherResult = { attempts: number; delivered: number; failed: number; gone: number };
