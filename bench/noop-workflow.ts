import { proxyActivities } from '@temporalio/workflow';

/** Bench-only workflows (never in src/workflows): the baselines bench/run.ts compares the service with. */
const { benchNoopActivity } = proxyActivities<{ benchNoopActivity(): Promise<void> }>({
  startToCloseTimeout: '10 seconds',
});
const { benchPostActivity } = proxyActivities<{
  benchPostActivity(delivery: { url: string; body: string }): Promise<number>;
}>({
  startToCloseTimeout: '10 seconds',
});

/** Create-throughput baseline: a workflow that does nothing. */
export async function benchNoop(): Promise<void> {}

/** `count` empty activities one after another: one bare activity execution per step. */
export async function benchSteps(count: number): Promise<void> {
  for (let step = 0; step < count; step += 1) await benchNoopActivity();
}

/**
 * End-to-end floor: the least any design that notifies a merchant durably must do, one workflow
 * whose one activity POSTs the same kind of body to the same HTTPS receiver.
 */
export async function benchNotify(delivery: { url: string; body: string }): Promise<number> {
  return await benchPostActivity(delivery);
}
