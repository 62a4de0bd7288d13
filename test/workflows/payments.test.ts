/**
 * Payments and reversals on the real worker and dev server, through the sandbox network's test
 * numbers: completed, refused by the network, silent until a status query, failed; a scheduled
 * payment cancelled; state events delivered to webhooks and to the payment's callback URL, signed;
 * a reversal that completes (the request ends `reversed`) or fails (the amount given back). Every
 * wallet's balance equals the sum of its transactions after each scenario.
 */
import { asId } from '../../src/domain/ids';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Webhook } from 'standardwebhooks';
import {
  SANDBOX_PAYOUT_FAILED_ERROR,
  SANDBOX_PAYOUT_FAILING_NUMBER,
  SANDBOX_PAYOUT_REJECTED_ERROR,
  SANDBOX_PAYOUT_REJECTED_NUMBER,
  SANDBOX_PAYOUT_SILENT_NUMBER,
} from '../../src/network/sandbox';
import { showSigningSecret } from '../../src/services/webhooks/webhook-secrets';
import { walletsOutOfBalance } from '../../src/services/wallets/wallets';
import { paymentWorkflowId, reversalWorkflowId } from '../../src/contracts/money-out';
import { collectionRequestWorkflowId } from '../../src/contracts/collection-request';
import {
  createMerchant,
  eventually,
  numberSequence,
  recordHistory,
  startWorker,
  testApp,
  testSql,
  uniqueTaskQueue,
  type TestApp,
  type TestMerchant,
  type WorkerProcess,
} from '../helpers';
import { makeCertificate, startReceiver, type Receiver } from '../webhook-receiver';

const taskQueue = uniqueTaskQueue('payments');
let worker: WorkerProcess;
let ctx: TestApp;
let receiver: Receiver;

beforeAll(async () => {
  const certificate = makeCertificate();
  receiver = await startReceiver(certificate);
  const env = {
    SANDBOX_PAYMENT_DELAY_SECONDS: '1',
    SANDBOX_PAYOUT_DELAY_SECONDS: '0',
    PAYOUT_STATUS_POLL_SECONDS: '1',
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
let hooks = 0;

const balanceOf = async (organizationId: number) =>
  (
    await testSql()<
      { balance: string }[]
    >`select balance::text from accounts where organization_id = ${organizationId} and currency = 'BXC' order by id limit 1`
  )[0]!.balance;

async function pay(merchant: TestMerchant, fields: Record<string, string>) {
  const response = await merchant.request('/api/payments', {
    form: { amount: '100', currency: 'BXC', description: 'Payout', ...fields },
  });
  expect(response.status).toBe(201);
  return response.body as { id: number; state: string };
}

async function finished(merchant: TestMerchant, paymentId: number) {
  await ctx.client.workflow.getHandle(paymentWorkflowId(asId('Payment', paymentId))).result();
  return (await merchant.request(`/api/payments/${paymentId}`)).body;
}

/** The states of a payment's `payment.status.changed` events, in order. */
async function stateEvents(paymentId: number): Promise<string[]> {
  const rows = await testSql()<{ state: string }[]>`
    select data->>'state' as state from events where type = 'payment.status.changed' and (data->>'id')::bigint = ${paymentId} order by id`;
  return rows.map((row) => row.state);
}

async function expectBalanced(merchant: TestMerchant): Promise<void> {
  expect(await walletsOutOfBalance(testSql(), merchant.organization.id)).toEqual([]);
}

describe('payments through the sandbox network', () => {
  test('completes: new → processing → completed, debited once; the webhook and the callback URL hear each state, signed', async () => {
    const merchant = await createMerchant(ctx.app);
    const hookPath = `/payments/hook-${++hooks}`;
    const callbackPath = `/payments/callback-${hooks}`;
    expect(
      (
        await merchant.request('/api/webhooks', {
          form: { event: 'payment.status.changed', target: receiver.url(hookPath) },
        })
      ).status,
    ).toBe(201);
    const created = await pay(merchant, {
      phonenumber: nextNumber(),
      callback_url: receiver.url(callbackPath),
      'metadata[order]': 'O-1',
    });
    const payment = await finished(merchant, created.id);
    expect(payment).toMatchObject({
      state: 'completed',
      last_error: null,
      remote_transaction_id: `SBX-PAY-${created.id}`,
    });
    expect(payment.transactions.map((transaction: { type: string }) => transaction.type)).toEqual(['mobile_payment']);
    expect(await balanceOf(merchant.organization.id)).toBe('900.0000');
    expect(await stateEvents(created.id)).toEqual(['new', 'processing', 'completed']);
    const { signingSecret } = await showSigningSecret(testSql(), { organizationId: merchant.organization.id });
    for (const path of [hookPath, callbackPath]) {
      await eventually(`${path} to receive the three states`, async () => receiver.requests(path).length === 3);
      const states = receiver.requests(path).map((request) => {
        const verified = new Webhook(signingSecret).verify(request.body, request.headers) as {
          data: { state: string; id: number };
        };
        expect(verified.data.id).toBe(created.id);
        return verified.data.state;
      });
      expect(states.sort()).toEqual(['completed', 'new', 'processing']);
    }
    // The callback URL is the payment's own: not one of the organization's webhooks.
    expect((await merchant.request('/api/webhooks')).body.count).toBe(1);
    await expectBalanced(merchant);
    await recordHistory(ctx.client, paymentWorkflowId(asId('Payment', created.id)), 'payment-completed');
  });

  test.each([
    [
      'refused by the network (recipient not registered)',
      SANDBOX_PAYOUT_REJECTED_NUMBER,
      'rejected',
      SANDBOX_PAYOUT_REJECTED_ERROR,
    ],
    [
      'failed by the network after a status query',
      SANDBOX_PAYOUT_FAILING_NUMBER,
      'processed_with_errors',
      SANDBOX_PAYOUT_FAILED_ERROR,
    ],
  ])('%s: the amount is given back by a reversing transaction, once', async (_name, phonenumber, state, error) => {
    const merchant = await createMerchant(ctx.app);
    const created = await pay(merchant, { phonenumber });
    const payment = await finished(merchant, created.id);
    expect(payment).toMatchObject({ state, last_error: error });
    if (state === 'rejected') expect(payment).toMatchObject({ rejected_reason: error, rejected_by: 'network' });
    expect(
      payment.transactions.map((transaction: { type: string; amount: string }) => [
        transaction.type,
        transaction.amount,
      ]),
    ).toEqual([
      ['mobile_payment', '-100.0000'],
      ['payment_release', '100.0000'],
    ]);
    expect(await balanceOf(merchant.organization.id)).toBe('1000.0000');
    expect(await stateEvents(created.id)).toEqual(['new', 'processing', state]);
    await expectBalanced(merchant);
    await recordHistory(
      ctx.client,
      paymentWorkflowId(asId('Payment', created.id)),
      `payment-${state.replaceAll('_', '-')}`,
    );
  });

  test('a network silent until asked completes when a status query resolves it', async () => {
    const merchant = await createMerchant(ctx.app);
    const created = await pay(merchant, { phonenumber: SANDBOX_PAYOUT_SILENT_NUMBER });
    const result = await ctx.client.workflow.getHandle(paymentWorkflowId(asId('Payment', created.id))).result();
    expect(result).toMatchObject({ state: 'completed', attempts: 2 });
    expect((await merchant.request(`/api/payments/${created.id}`)).body.state).toBe('completed');
    await expectBalanced(merchant);
  });

  test('a scheduled payment waits for its start date; cancelled meanwhile, its workflow ends at once and nothing is sent', async () => {
    const merchant = await createMerchant(ctx.app);
    const later = await pay(merchant, { phonenumber: nextNumber(), start_date: '1 hour' });
    expect(later.state).toBe('scheduled');
    await eventually(
      'the workflow to wait',
      async () =>
        (
          (await ctx.client.workflow.getHandle(paymentWorkflowId(asId('Payment', later.id))).query('status')) as {
            state: string;
          }
        ).state === 'scheduled',
    );
    const cancelled = await merchant.request(`/api/payments/${later.id}/cancel`, { body: { reason: 'Not needed' } });
    expect(cancelled.body.state).toBe('cancelled');
    expect(await ctx.client.workflow.getHandle(paymentWorkflowId(asId('Payment', later.id))).result()).toMatchObject({
      state: 'cancelled',
    });
    expect(await testSql()`select 1 from sandbox_payouts where reference = ${`pay-${later.id}`}`).toHaveLength(0);
    expect(await stateEvents(later.id)).toEqual(['scheduled', 'cancelled']);
    await recordHistory(ctx.client, paymentWorkflowId(asId('Payment', later.id)), 'payment-cancelled');
    // A start date that has come: sent at once.
    const soon = await pay(merchant, {
      phonenumber: nextNumber(),
      start_date: new Date(Date.now() + 2000).toISOString(),
    });
    expect((await finished(merchant, soon.id)).state).toBe('completed');
    expect(await balanceOf(merchant.organization.id)).toBe('900.0000');
    await expectBalanced(merchant);
  });
});

describe('reversals through the sandbox network', () => {
  async function paidRequest(
    merchant: TestMerchant,
    phonenumber: string,
  ): Promise<{ requestId: number; collectionId: number }> {
    const response = await merchant.request('/api/collectionrequests', {
      form: { phonenumber, amount: '250', currency: 'BXC', send_instructions: 'true', expiry_date: '5 minutes' },
    });
    expect(response.status).toBe(201);
    await ctx.client.workflow
      .getHandle(collectionRequestWorkflowId(asId('CollectionRequest', response.body.id)))
      .result();
    const request = (await merchant.request(`/api/collectionrequests/${response.body.id}`)).body;
    expect(request.status).toBe('successful');
    return { requestId: request.id, collectionId: request.collection };
  }

  test('completes: the subscriber has it back, the request ends reversed with its event', async () => {
    const merchant = await createMerchant(ctx.app);
    const { requestId, collectionId } = await paidRequest(merchant, nextNumber());
    expect(await balanceOf(merchant.organization.id)).toBe('1250.0000');
    const reversal = await merchant.request('/api/reversals', {
      form: { collection: String(collectionId), reason: 'Returned goods' },
    });
    expect(reversal.status).toBe(201);
    expect(
      await ctx.client.workflow.getHandle(reversalWorkflowId(asId('Reversal', reversal.body.id))).result(),
    ).toMatchObject({ state: 'completed' });
    expect((await merchant.request(`/api/reversals/${reversal.body.id}`)).body).toMatchObject({
      state: 'completed',
      remote_transaction_id: `SBX-REV-${reversal.body.id}`,
    });
    expect((await merchant.request(`/api/collectionrequests/${requestId}`)).body.status).toBe('reversed');
    const statuses = await testSql()<{ status: string }[]>`
      select data->>'status' as status from events where type = 'collectionrequest.status.changed' and (data->>'id')::bigint = ${requestId} order by id`;
    expect(statuses.map((row) => row.status).at(-1)).toBe('reversed');
    expect(await balanceOf(merchant.organization.id)).toBe('1000.0000');
    await expectBalanced(merchant);
    await recordHistory(ctx.client, reversalWorkflowId(asId('Reversal', reversal.body.id)), 'reversal-completed');
  });

  test('fails at the network: the amount goes back to the wallet, the request stays successful', async () => {
    const merchant = await createMerchant(ctx.app);
    // The payer's number is the sandbox's failing payout number: its payments in, its payouts fail.
    const { requestId, collectionId } = await paidRequest(merchant, SANDBOX_PAYOUT_FAILING_NUMBER);
    const reversal = await merchant.request('/api/reversals', { form: { collection: String(collectionId) } });
    expect(
      await ctx.client.workflow.getHandle(reversalWorkflowId(asId('Reversal', reversal.body.id))).result(),
    ).toMatchObject({ state: 'failed' });
    expect((await merchant.request(`/api/reversals/${reversal.body.id}`)).body).toMatchObject({
      state: 'failed',
      last_error: SANDBOX_PAYOUT_FAILED_ERROR,
    });
    await recordHistory(ctx.client, reversalWorkflowId(asId('Reversal', reversal.body.id)), 'reversal-failed');
    expect((await merchant.request(`/api/collectionrequests/${requestId}`)).body.status).toBe('successful');
    expect(await balanceOf(merchant.organization.id)).toBe('1250.0000');
    const types = await testSql()<
      { type: string }[]
    >`select type from transactions where reversal_id = ${reversal.body.id} order by id`;
    expect(types.map((row) => row.type)).toEqual(['reversal', 'reversal_release']);
    await expectBalanced(merchant);
  });
});
