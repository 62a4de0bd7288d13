/**
 * Wake-ups of the webhook senders running in this process: PostgreSQL notifies
 * `webhook_deliveries` with the webhook ids of every statement that records deliveries (migration
 * 021), and the sender draining one of them looks for due rows at once instead of at its next poll.
 * One listening connection per process, opened by the first sender; a notification lost (the
 * connection dropped) costs only latency, as senders poll anyway.
 */
import type { Sql } from '../db';

export type Wakeups = {
  /** Starts hearing the webhook's notifications (a sender draining it); `wait` resolves at the next one since it last returned, or after `ms`. */
  subscribe(webhookId: number): { wait(ms: number): Promise<void>; close(): void };
};

export function createWakeups(sql: Sql, log: (message: string, fields: Record<string, unknown>) => void): Wakeups {
  /** Per webhook drained here: whether a notification came since the last wait, and the waiter to wake. */
  const senders = new Map<number, { notified: boolean; wake: (() => void) | null }>();
  let listening: Promise<unknown> | null = null;

  const notified = (payload: string) => {
    for (const id of payload.split(',').map(Number)) {
      const sender = senders.get(id);
      if (sender === undefined) continue;
      if (sender.wake) sender.wake();
      else sender.notified = true;
    }
  };

  return {
    subscribe(webhookId) {
      listening ??= sql.listen('webhook_deliveries', notified).catch((error: unknown) => {
        log('webhook senders poll without notifications: LISTEN failed', { error });
        listening = null;
      });
      const sender = { notified: false, wake: null as (() => void) | null };
      senders.set(webhookId, sender);
      return {
        async wait(ms) {
          if (sender.notified) {
            sender.notified = false;
            return;
          }
          await new Promise<void>((resolve) => {
            const done = () => {
              clearTimeout(timer);
              sender.wake = null;
              resolve();
            };
            const timer = setTimeout(done, ms);
            sender.wake = done;
          });
        },
        close() {
          if (senders.get(webhookId) === sender) senders.delete(webhookId);
        },
      };
    },
  };
}
