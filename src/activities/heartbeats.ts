/**
 * Heartbeats for the activities that call an operator. Such a call may take a few operator timeouts
 * (a status query, then a resend), so its activity's start-to-close timeout is long; the heartbeat
 * timeout is what hands the activity of a worker that died to another worker within seconds.
 */
import { Context } from '@temporalio/activity';

/** How often an activity waiting on an operator heartbeats (its heartbeat timeout is a few times this). */
const OPERATOR_CALL_HEARTBEAT_MS = 2_000;

/**
 * `work`, heartbeating every OPERATOR_CALL_HEARTBEAT_MS from before its first step until it settles: its database
 * steps too, which a slow or distant database may hold longer than the heartbeat timeout.
 */
export async function heartbeating<T>(work: () => Promise<T>): Promise<T> {
  const context = Context.current();
  const timer = setInterval(() => context.heartbeat(), OPERATOR_CALL_HEARTBEAT_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
