import { proxyActivities, sleep } from '@temporalio/workflow';
import type { createCollectionRequestActivities } from '../../activities/collection-requests';
import type { SandboxPaymentInput } from '../contracts/legacy';
import { RETRY_POLICIES } from '../contracts/retry-policies';

const { deliverSandboxPayment } = proxyActivities<ReturnType<typeof createCollectionRequestActivities>>({
  startToCloseTimeout: '30 seconds',
  // The payment must arrive eventually, as a real network's would.
  retry: RETRY_POLICIES.untilDone,
});

/**
 * The sandbox subscriber of the first shape (`sandbox-payment-<request id>`): pays after the
 * configured delay. The sandbox network now reports its payment with a start delay instead; kept
 * for executions in flight (test/histories).
 */
export async function sandboxPayment(input: SandboxPaymentInput): Promise<string> {
  await sleep(input.delaySeconds * 1000);
  return await deliverSandboxPayment(input);
}
