/**
 * Bulk payouts on the real worker and dev server, through the sandbox network's test numbers: a
 * batch whose rows complete, are refused and fail ends `completed` with its event delivered to a
 * webhook, each row paid once and the failed ones given back; the result CSV says what became of
 * each row; a run that continues as new between chunks finishes the batch. Every wallet's balance
 * equals the sum of its transactions after each scenario.
 */
import { asId } from '../../src/domain/ids';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { SANDBOX_PAYOUT_FAILING_NUMBER, SANDBOX_PAYOUT_REJECTED_NUMBER } from '../../src/network/sandbox';
import { walletsOutOfBalance } from '../../src/services/wallets/wallets';
import { paymentBatchWorkflowId, type PaymentBatchInput } from '../../src/contracts/payment-batch';
import {
  createMerchant,
  numberSequence,
  recordHistory,
  startWorker,
  testApp,
  testSql,
  uniqueTaskQueue,
  eventually,
  type TestApp,
  type TestMerchant,
  type WorkerProcess,
} from '../helpers';
import { makeCertificate, startReceiver, type Receiver } from '../webhook-receiver';

const taskQueue = uniqueTaskQueue('payment-batches');
let worker: WorkerProcess;
let ctx: TestApp;
let receiver: Receiver;

beforeAll(async () => {
  const certificate = makeCertificate();
  receiver = await startReceiver(certificate);
  const env = {
    SANDBOX_PAYOUT_DELAY_SECONDS: '0',
    PAYOUT_STATUS_POLL_SECONDS: '1',
    PAYMENT_BATCH_CONCURRENCY: '3',
    WEBHOOK_CA_FILE: certificate.certFile,
    WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms',
  };
  worker = await startWorker(taskQueue, env);
  ctx = await testApp(taskQueue, env);
});

afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
});

const nextNumber = numberSequence('+256772');
const row = (phonenumber = nextNumber()) => ({ phonenumber, amount: '10', currency: 'BXC', description: 'Payroll' });

const balanceOf = async (organizationId: number) =>
  (
    await testSql()<
      { balance: string }[]
    >`select balance::text from accounts where organization_id = ${organizationId} and currency = 'BXC' order by id limit 1`
  )[0]!.balance;

async function expectBalanced(merchant: TestMerchant): Promise<void> {
  expect(await walletsOutOfBalance(testSql(), merchant.organization.id)).toEqual([]);
}

/** How many debits each of a batch's rows' payments had: exactly one each, whatever retried. */
const debitsPerRow = async (batchId: number) =>
  (
    await testSql()<{ debits: number }[]>`
    select count(t.id)::int as debits from payment_batch_rows r left join transactions t on t.payment_id = r.payment_id and t.type = 'mobile_payment'
    where r.batch_id = ${batchId} group by r.id`
  ).map((line) => line.debits);

describe('payment batches through the sandbox network', () => {
  test('every row sent, a bounded number at a time: completed with its event; refused and failed rows given back', async () => {
    const merchant = await createMerchant(ctx.app);
    const hookPath = '/batches/hook-1';
    expect(
      (
        await merchant.request('/api/webhooks', {
          form: { event: 'payment_batch.completed', target: receiver.url(hookPath) },
        })
      ).status,
    ).toBe(201);
    const payments = [
      row(),
      row(),
      row(SANDBOX_PAYOUT_REJECTED_NUMBER),
      row(),
      row(SANDBOX_PAYOUT_FAILING_NUMBER),
      row(),
      { ...row(), description: '=HYPERLINK("x")' },
    ];
    const created = await merchant.request('/api/payment-batches', { body: { payments } });
    expect(created.status).toBe(201);
    const batchId = created.body.id as number;
    const result = await ctx.client.workflow.getHandle(paymentBatchWorkflowId(asId('PaymentBatch', batchId))).result();
    expect(result).toMatchObject({ completed: true, finished: 7, inFlight: 0 });
    const batch = (await merchant.request(`/api/payment-batches/${batchId}`)).body;
    expect(batch).toMatchObject({
      state: 'completed',
      totals: [{ currency: 'BXC', rows: 7, amount: '70.0000', completed_amount: '50.0000' }],
    });
    expect(batch.completed_at).not.toBeNull();
    expect(batch.counts).toMatchObject({ pending: 0, failed: 0, completed: 5, rejected: 1, processed_with_errors: 1 });
    expect(await balanceOf(merchant.organization.id)).toBe('950.0000');
    expect(await debitsPerRow(batchId)).toEqual([1, 1, 1, 1, 1, 1, 1]);
    await expectBalanced(merchant);

    const events = (await merchant.request('/api/events?type=payment_batch.completed')).body.results;
    expect(events).toHaveLength(1);
    expect(events[0].data).toMatchObject({ id: batchId, state: 'completed', counts: { completed: 5 } });
    await eventually('the webhook to hear of the batch', async () => receiver.requests(hookPath).length === 1);
    expect(JSON.parse(receiver.requests(hookPath)[0]!.body)).toMatchObject({
      hook: { event: 'payment_batch.completed' },
      data: { id: batchId, state: 'completed' },
    });

    const download = await merchant.request(`/api/payment-batches/${batchId}/results.csv`, {
      headers: { Accept: 'text/csv' },
    });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toStartWith('text/csv');
    const lines = (download.body as string).trim().split('\n');
    expect(lines[0]).toBe('row,phonenumber,amount,currency,description,state,payment,remote_transaction_id,error');
    expect(lines).toHaveLength(8);
    expect(lines[1]).toMatch(/^1,\+256772\d+,10\.0000,BXC,Payroll,completed,\d+,SBX-PAY-\d+,$/);
    expect(lines[3]).toContain(',rejected,');
    expect(lines[5]).toContain(',processed_with_errors,');
    // A description that starts like a formula is text in a spreadsheet.
    expect(lines[7]).toContain(`,"'=HYPERLINK(""x"")",completed,`);
    await recordHistory(ctx.client, paymentBatchWorkflowId(asId('PaymentBatch', batchId)), 'payment-batch-completed');
  });

  test('a run past its history limit waits for what is in flight and continues as new from the next chunk', async () => {
    const merchant = await createMerchant(ctx.app);
    // Uploaded through an app whose task queue has no worker: its own workflow never runs, this test's does.
    const idle = await testApp(uniqueTaskQueue('payment-batches-idle'));
    const created = await createMerchantBatch(
      idle,
      merchant,
      Array.from({ length: 9 }, () => row()),
    );
    const input: PaymentBatchInput = {
      batchId: asId('PaymentBatch', created),
      organizationId: merchant.organization.id,
      concurrency: 2,
      chunkSize: 2,
      payment: { statusPollSeconds: 1, statusTimeoutSeconds: 60 },
      historyLimit: 20,
    };
    const workflowId = `test-${paymentBatchWorkflowId(asId('PaymentBatch', created))}`;
    const handle = await ctx.client.workflow.start('paymentBatch', { taskQueue, workflowId, args: [input] });
    expect(await handle.result()).toMatchObject({ completed: true, finished: 9 });
    const description = await ctx.client.workflow.getHandle(workflowId).describe();
    expect(description.runId).not.toBe(handle.firstExecutionRunId);
    const batch = (await merchant.request(`/api/payment-batches/${created}`)).body;
    expect(batch).toMatchObject({ state: 'completed', counts: { completed: 9 } });
    expect(await debitsPerRow(created)).toEqual(Array(9).fill(1));
    expect(await balanceOf(merchant.organization.id)).toBe('910.0000');
    await expectBalanced(merchant);
    await recordHistory(ctx.client, workflowId, 'payment-batch-continued', handle.firstExecutionRunId);
  });
});

async function createMerchantBatch(
  app: TestApp,
  merchant: TestMerchant,
  payments: ReturnType<typeof row>[],
): Promise<number> {
  const response = await app.app.handle(
    new Request('http://localhost/api/payment-batches', {
      method: 'POST',
      headers: { Authorization: `Token ${merchant.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ payments }),
    }),
  );
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: number }).id;
}
