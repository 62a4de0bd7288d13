import { executeChild, proxyActivities } from '@temporalio/workflow';

/** Bench-only workflows (never in src/workflows): the baselines bench/run.ts compares the service with. */
const { benchNoopActivity } = proxyActivities<{ benchNoopActivity(): Promise<void> }>({ startToCloseTimeout: '10 seconds' });

/** Create-throughput baseline: a workflow that does nothing. */
export async function benchNoop(): Promise<void> {}

/** `count` empty activities one after another: one bare activity execution per step. */
export async function benchSteps(count: number): Promise<void> {
  for (let step = 0; step < count; step += 1) await benchNoopActivity();
}

/**
 * End-to-end baseline: the Temporal shape of one lifecycle with every step empty. The request's
 * workflow runs its activities (text, status, prompt, status); the payment and the incoming
 * collection are further workflows (deliver; store, match, verify, credit); the request records
 * `successful`; its event is dispatched by one more workflow and delivered by another (open,
 * attempt, finish): the same workflow starts and activities on the path the service takes, with
 * no PostgreSQL, HTTP or business logic.
 */
export async function benchLifecycle(): Promise<void> {
  await benchSteps(4);
  await executeChild(benchSteps, { args: [1] });
  await executeChild(benchSteps, { args: [4] });
  await benchSteps(1);
  await executeChild(benchSteps, { args: [1] });
  await executeChild(benchSteps, { args: [3] });
}
