/**
 * The service wired to an operator simulator for the network tests: the app served over HTTP on
 * loopback (its address is PUBLIC_BASE_URL, where the simulator calls back), a real worker process
 * with the same configuration, and helpers to follow requests and payments to their end.
 */
import { asId } from '../../src/domain/ids';
import { fundWallet } from '../../src/services/merchants/organizations';
import type { Currency } from '../../src/domain/money';
import { collectionRequestWorkflowId } from '../../src/contracts/collection-request';
import { incomingCollectionWorkflowId } from '../../src/contracts/incoming-collection';
import {
  createMerchant,
  eventually,
  recordHistory as recordFinishedHistory,
  startWorker,
  testApp,
  testSql,
  uniqueTaskQueue,
  type TestApp,
  type TestMerchant,
  type WorkerProcess,
} from '../helpers';

export type Stack = {
  ctx: TestApp;
  /** Its task queue: also the scope of its routes' health (NETWORK_ROUTES_SCOPE=task-queue). */
  taskQueue: string;
  env: Record<string, string>;
  worker: () => WorkerProcess;
  /** kill -9 of the worker and a new one on the same task queue. */
  killWorker: () => Promise<void>;
  startWorker: () => Promise<void>;
  stop: () => Promise<void>;
};

/** Polls and retries short, so a test follows an operator's answer in seconds. */
export const FAST_ENV = {
  NETWORK_STATUS_POLL_SECONDS: '1',
  PAYOUT_STATUS_POLL_SECONDS: '1',
  FAILED_PROMPT_RETRY_SECONDS: '1',
  SANDBOX_PAYMENT_DELAY_SECONDS: '1',
  SANDBOX_PAYOUT_DELAY_SECONDS: '1',
  VERIFICATION_TIMEOUT_SECONDS: '3',
  // The simulators hold a call a second or two at most, unless a test holds it longer (and sets its own window).
  OPERATOR_IN_FLIGHT_WINDOW_SECONDS: '5',
};

export async function startStack(name: string, operatorEnv: Record<string, string>): Promise<Stack> {
  let handle: (request: Request) => Response | Promise<Response> = () => new Response('starting', { status: 503 });
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => handle(request) });
  const taskQueue = uniqueTaskQueue(name);
  const env = { ...FAST_ENV, PUBLIC_BASE_URL: `http://127.0.0.1:${server.port}`, ...operatorEnv };
  let worker = await startWorker(taskQueue, env);
  const ctx = await testApp(taskQueue, env);
  handle = (request) => ctx.app.handle(request);
  return {
    ctx,
    taskQueue,
    env,
    worker: () => worker,
    killWorker: () => worker.kill(),
    startWorker: async () => {
      worker = await startWorker(taskQueue, env);
    },
    stop: async () => {
      await worker.stop();
      server.stop(true);
    },
  };
}

/** A merchant with a funded wallet in `currency` (besides the BXC one every test merchant has). */
export async function fundedMerchant(stack: Stack, currency: Currency, amount = '1000000'): Promise<TestMerchant> {
  const merchant = await createMerchant(stack.ctx.app);
  await fundWallet(testSql(), merchant.organization.id, currency, amount);
  return merchant;
}

export async function balanceOf(organizationId: number, currency: string): Promise<string> {
  const [wallet] = await testSql()<{ balance: string }[]>`
    select balance::text as balance from accounts where organization_id = ${organizationId} and currency = ${currency} order by id limit 1`;
  return wallet?.balance ?? '0';
}

/** Every wallet of the organization equals the sum of its transactions. */
export async function expectBalanced(organizationId: number): Promise<void> {
  const rows = await testSql()<{ id: number }[]>`
    select a.id from accounts a where a.organization_id = ${organizationId}
      and a.balance <> coalesce((select sum(t.amount) from transactions t where t.account_id = a.id), 0)`;
  if (rows.length > 0) throw new Error(`wallets out of balance: ${rows.map((row) => row.id).join(', ')}`);
}

/** A collection request that prompts at once. */
export async function promptedRequest(merchant: TestMerchant, fields: Record<string, string>): Promise<number> {
  const response = await merchant.request('/api/collectionrequests', {
    form: { send_instructions: 'true', expiry_date: '2 minutes', max_attempts: '0', ...fields },
  });
  if (response.status !== 201)
    throw new Error(`request not created: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.id as number;
}

/** The request's final state, as its workflow ended it. */
export async function requestOutcome(
  stack: Stack,
  requestId: number,
): Promise<{ status: string; errorMessage: string | null; collectionId: number | null }> {
  return await stack.ctx.client.workflow
    .getHandle(collectionRequestWorkflowId(asId('CollectionRequest', requestId)))
    .result();
}

/** Waits until the request's row has `status`. */
export async function requestStatus(
  merchant: TestMerchant,
  requestId: number,
  status: string,
  timeoutMs = 30_000,
): Promise<Record<string, unknown>> {
  return await eventually(
    `request ${requestId} to be ${status}`,
    async () => {
      const response = await merchant.request(`/api/collectionrequests/${requestId}`);
      return response.body.status === status ? (response.body as Record<string, unknown>) : undefined;
    },
    timeoutMs,
  );
}

/**
 * After an operator's callback about a request whose workflow has ended, waits for whatever that
 * callback set going: a callback wakes the workflow of the operation it names (the request's, which
 * has ended, so nothing more can move) or, for a payment no operation of ours names, starts the
 * workflow that confirms it (`collection-<network>-<id>`), whose end is awaited when there is one.
 */
export async function callbackSettled(
  stack: Stack,
  requestId: number,
  network: string,
  remoteTransactionId: string,
): Promise<void> {
  const { client } = stack.ctx;
  const request = await client.workflow
    .getHandle(collectionRequestWorkflowId(asId('CollectionRequest', requestId)))
    .describe();
  if (request.status.name !== 'COMPLETED')
    throw new Error(`request ${requestId}'s workflow is ${request.status.name}, not completed`);
  const confirming = client.workflow.getHandle(incomingCollectionWorkflowId(network, remoteTransactionId));
  if (
    await confirming.describe().then(
      () => true,
      () => false,
    )
  )
    await confirming.result();
}

/** The mobile_collection credits of an organization, by collection. */
export async function creditsOf(
  organizationId: number,
): Promise<{ collectionId: number; amount: string; remoteTransactionId: string }[]> {
  return await testSql()<{ collectionId: number; amount: string; remoteTransactionId: string }[]>`
    select t.collection_id as "collectionId", t.amount::text as amount, c.remote_transaction_id as "remoteTransactionId"
    from transactions t join accounts a on a.id = t.account_id join collections c on c.id = t.collection_id
    where a.organization_id = ${organizationId} and t.type = 'mobile_collection' order by t.id`;
}

/** A payment (money out) created through the API, followed to a final state. */
export async function paidOut(
  stack: Stack,
  merchant: TestMerchant,
  fields: Record<string, string>,
): Promise<{ id: number; state: string }> {
  const created = await merchant.request('/api/payments', { form: { description: 'Network payout', ...fields } });
  if (created.status !== 201) throw new Error(`payment not created: ${created.status} ${JSON.stringify(created.body)}`);
  const result = await stack.ctx.client.workflow.getHandle(`payment-${created.body.id}`).result();
  return { id: created.body.id, state: result.state };
}

/** A reversal of a collection created through the API, followed to its end: the reversal workflow's result. */
export async function reversedOut(
  stack: Stack,
  merchant: TestMerchant,
  collectionId: number | string | null,
  reason = 'Returned goods',
): Promise<{ state: string }> {
  const created = await merchant.request('/api/reversals', { form: { collection: String(collectionId), reason } });
  if (created.status !== 201)
    throw new Error(`reversal not created: ${created.status} ${JSON.stringify(created.body)}`);
  return await stack.ctx.client.workflow.getHandle(`reversal-${created.body.id}`).result();
}

/** `recordHistory` of test/helpers.ts with the stack's client. */
export const recordHistory = (stack: Stack, workflowId: string, name: string): Promise<void> =>
  recordFinishedHistory(stack.ctx.client, workflowId, name);
