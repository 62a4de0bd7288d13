/**
 * Wake-ups of the webhook senders and dispatchers running in this process: PostgreSQL notifies
 * `webhook_deliveries` with the webhook ids of every statement that records deliveries (migration
 * 021), and whoever sends those webhooks' rows looks for due rows at once instead of at its next
 * poll. One listening connection per process, opened by the first subscriber; a notification lost
 * (the connection dropped) costs only latency, as everyone polls anyway.
 */
import type { WebhookId } from '../domain/ids';
import type { Sql } from '../db';

/**
 * A subscriber's wait: resolves at once when a notification for it came since it last looked for
 * work (`take`, or the previous wait's return), else at the next one, or after `ms`.
 */
type Wakeup = {
  wait(ms: number): Promise<void>;
  /**
   * The subscriber is about to look for work: what was notified so far is answered by that look.
   * A notification that comes during it (while no wait is pending, or while an earlier wait the
   * subscriber stopped awaiting still is) is kept for the next wait, never lost.
   */
  take(): void;
  close(): void;
};

export type Wakeups = {
  /** Hears the notifications of one webhook (the sender draining it). */
  subscribe(webhookId: WebhookId): Wakeup;
  /** Hears the notifications of every webhook (a dispatcher of the pool). */
  subscribeAll(): Wakeup;
};

type Subscriber = { notified: boolean; wake: (() => void) | null };

export function createWakeups(sql: Sql, log: (message: string, fields: Record<string, unknown>) => void): Wakeups {
  /**
   * Per webhook drained here (null: every webhook): whether a notification came since the last wait, and the waiter to
   * wake.
   */
  const subscribers = new Map<Subscriber, number | null>();
  // biome-ignore lint/correctness/noUnusedVariables: read by `??=` below, which Biome does not count
  let listening: Promise<unknown> | null = null;

  const poke = (subscriber: Subscriber) => {
    subscriber.notified = true;
    subscriber.wake?.();
  };
  const notified = (payload: string) => {
    const ids = new Set(payload.split(',').map(Number));
    for (const [subscriber, webhookId] of subscribers) if (webhookId === null || ids.has(webhookId)) poke(subscriber);
  };

  function subscribeTo(webhookId: WebhookId | null): Wakeup {
    listening ??= sql.listen('webhook_deliveries', notified).catch((error: unknown) => {
      log('webhook senders poll without notifications: LISTEN failed', { error });
      listening = null;
    });
    const subscriber: Subscriber = { notified: false, wake: null };
    subscribers.set(subscriber, webhookId);
    return {
      async wait(ms) {
        if (subscriber.notified) {
          subscriber.notified = false;
          return;
        }
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            subscriber.wake = null;
            resolve();
          };
          const timer = setTimeout(done, Math.max(0, ms));
          subscriber.wake = done;
        });
      },
      take() {
        subscriber.notified = false;
      },
      close() {
        subscribers.delete(subscriber);
      },
    };
  }

  return { subscribe: (webhookId) => subscribeTo(webhookId), subscribeAll: () => subscribeTo(null) };
}
