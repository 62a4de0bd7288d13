/**
 * Bulk payouts through the API (the app against real PostgreSQL; the batch workflow waits on a task
 * queue with no worker here, test/workflows/payment-batches.test.ts runs it): JSON and CSV uploads,
 * every row checked before anything is written, the wallet's funding checked against the rows' sum,
 * Duplicate-Check-Key, tenant scope, and the chunk step that reserves rows, run concurrently.
 */
import { asId } from '../../src/domain/ids';
import { beforeAll, describe, expect, test } from 'bun:test';
import { fundWallet } from '../../src/services/merchants/organizations';
import { reserveBatchChunk } from '../../src/services/payments/payment-batch-steps';
import { walletsOutOfBalance } from '../../src/services/wallets/wallets';
import { createMerchant, numberSequence, testApp, testSql, type TestApp, type TestMerchant } from '../helpers';

let ctx: TestApp;
let other: TestMerchant;

beforeAll(async () => {
  ctx = await testApp();
  other = await createMerchant(ctx.app);
});

const nextNumber = numberSequence('+256772');
const row = (fields: Record<string, unknown> = {}) => ({
  phonenumber: nextNumber(),
  amount: '10',
  currency: 'BXC',
  description: 'Payroll',
  ...fields,
});

const balanceOf = async (organizationId: number, currency = 'BXC') =>
  (
    await testSql()<
      { balance: string }[]
    >`select balance::text from accounts where organization_id = ${organizationId} and currency = ${currency} order by id limit 1`
  )[0]!.balance;

const csvUpload = (owner: TestMerchant, text: string, headers: Record<string, string> = {}) =>
  owner.request('/api/payment-batches', { body: text, headers: { 'Content-Type': 'text/csv', ...headers } });

describe('payment batches', () => {
  test('a JSON batch is created processing with its rows pending; nothing is debited until its workflow reserves them', async () => {
    const owner = await createMerchant(ctx.app);
    const created = await owner.request('/api/payment-batches', {
      body: { payments: [row(), row({ amount: '25.5', metadata: { employee: 'E-1' } })] },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      organization: owner.organization.id,
      state: 'processing',
      row_count: 2,
      completed_at: null,
      totals: [{ currency: 'BXC', rows: 2, amount: '35.5000', completed_amount: '0.0000' }],
    });
    expect(created.body.counts).toMatchObject({ pending: 2, failed: 0, completed: 0 });
    expect(await balanceOf(owner.organization.id)).toBe('1000.0000');
    expect((await owner.request(`/api/payment-batches/${created.body.id}`)).body).toEqual(created.body);
    const rows = await owner.request(`/api/payment-batches/${created.body.id}/rows`);
    expect(rows.body.count).toBe(2);
    expect(
      rows.body.results.map((line: { row: number; state: string; payment: null }) => [
        line.row,
        line.state,
        line.payment,
      ]),
    ).toEqual([
      [1, 'pending', null],
      [2, 'pending', null],
    ]);
    const list = await owner.request('/api/payment-batches?state=processing');
    expect(list.body.results.map((batch: { id: number }) => batch.id)).toEqual([created.body.id]);
    expect((await other.request(`/api/payment-batches/${created.body.id}`)).status).toBe(403);
    expect((await other.request(`/api/payment-batches/${created.body.id}/rows`)).status).toBe(403);
    expect((await owner.request('/api/payment-batches/99999999')).status).toBe(404);
    const v1 = await owner.request(`/api/payment-batches/${created.body.id}`, { headers: { 'Api-Version': 'v1' } });
    expect(v1.body.organization).toBe(owner.organization.name);
  });

  test('a CSV batch takes the same columns; an unknown column or a broken CSV is a 400 on payments', async () => {
    const owner = await createMerchant(ctx.app);
    const first = nextNumber();
    const created = await csvUpload(
      owner,
      `\uFEFFPhoneNumber,amount,currency,description\r\n${first},12,BXC,"Salary, May"\r\n${nextNumber()},8,bxc,Bonus\r\n`,
    );
    expect(created.status).toBe(201);
    expect(created.body.row_count).toBe(2);
    const rows = (await owner.request(`/api/payment-batches/${created.body.id}/rows`)).body.results;
    expect(rows[0]).toMatchObject({
      row: 1,
      phonenumber: first,
      amount: '12.0000',
      currency: 'BXC',
      description: 'Salary, May',
    });
    const unknown = await csvUpload(
      owner,
      'phonenumber,amount,currency,description,iban\n+256772000001,1,BXC,x,DE00\n',
    );
    expect(unknown.status).toBe(400);
    expect(unknown.body.payments[0]).toContain('Unknown column "iban"');
    const broken = await csvUpload(owner, 'phonenumber,amount,currency,description\n+256772000001,1,BXC\n');
    expect(broken.status).toBe(400);
    expect(broken.body.payments[0]).toContain('The CSV cannot be read');
    const headerOnly = await csvUpload(owner, 'phonenumber,amount,currency,description\n');
    expect(headerOnly.status).toBe(400);
    expect(headerOnly.body.payments).toEqual(['A batch holds at least one payment.']);
    // A CSV is only taken where rows are uploaded.
    expect(
      (
        await owner.request('/api/payments', {
          body: 'phonenumber\n+256772000001\n',
          headers: { 'Content-Type': 'text/csv' },
        })
      ).status,
    ).toBe(415);
  });

  test('every row is checked before anything is written: each error keyed by its row and field', async () => {
    const owner = await createMerchant(ctx.app);
    const refused = await owner.request('/api/payment-batches', {
      body: {
        payments: [
          row(),
          row({ amount: '-1' }),
          row({ phonenumber: 'nope', description: undefined }),
          row({ currency: 'KES' }),
          row({ start_date: 'tomorrow' }),
        ],
      },
    });
    expect(refused.status).toBe(400);
    expect(Object.keys(refused.body).sort()).toEqual([
      'payments[1].amount',
      'payments[2].description',
      'payments[2].phonenumber',
      'payments[3].currency',
      'payments[3].phonenumber',
    ]);
    expect(refused.body['payments[3].currency'][0]).toContain('no active KES wallet');
    expect((await owner.request('/api/payment-batches')).body.count).toBe(0);
    expect((await owner.request('/api/payment-batches', { body: { payments: [] } })).status).toBe(400);
    expect((await owner.request('/api/payment-batches', { body: { payments: ['x'] } })).body).toEqual({
      payments: ['Each payment is an object of its fields.'],
    });
    expect((await owner.request('/api/payment-batches', { body: {} })).body).toEqual({
      payments: ['This field is required.'],
    });
  });

  test('a wallet that does not hold the sum of its rows refuses the whole batch', async () => {
    const owner = await createMerchant(ctx.app);
    await fundWallet(testSql(), owner.organization.id, 'UGX', '100');
    const refused = await owner.request('/api/payment-batches', {
      body: { payments: [row({ amount: '600' }), row({ amount: '500' }), row({ currency: 'UGX', amount: '50' })] },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toMatch(
      /^insufficient funds: the BXC wallet \d+ holds 1,000\.0000; the batch's 2 rows from it add up to 1,100\.0000\.$/,
    );
    expect((await owner.request('/api/payment-batches')).body.count).toBe(0);
  });

  test('a re-upload with the same Duplicate-Check-Key is a 409, even at the same moment', async () => {
    const owner = await createMerchant(ctx.app);
    const payments = [row(), row()];
    const headers = { 'Duplicate-Check-Key': 'payroll-2025-05' };
    const answers = await Promise.all(
      [0, 1, 2].map(() => owner.request('/api/payment-batches', { body: { payments }, headers })),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409, 409]);
    expect((await owner.request('/api/payment-batches')).body.count).toBe(1);
  });

  test("the chunk step run twice at once creates each row's payment once and debits it once", async () => {
    const owner = await createMerchant(ctx.app);
    const created = await owner.request('/api/payment-batches', {
      body: { payments: Array.from({ length: 7 }, () => row({ amount: '100' })) },
    });
    const batchId = created.body.id as number;
    const sql = testSql();
    const [first, second] = await Promise.all([
      reserveBatchChunk(sql, asId('PaymentBatch', batchId), 0, 5),
      reserveBatchChunk(sql, asId('PaymentBatch', batchId), 0, 5),
    ]);
    expect([...first.paymentIds].sort()).toEqual([...second.paymentIds].sort());
    expect(first.paymentIds).toHaveLength(5);
    expect(first.last || second.last).toBe(false);
    const rest = await reserveBatchChunk(sql, asId('PaymentBatch', batchId), 1, 5);
    expect(rest.paymentIds).toHaveLength(2);
    expect(rest.last).toBe(true);
    const [totals] = await sql<{ payments: number; debits: string }[]>`
      select count(distinct r.payment_id)::int as payments, sum(t.amount)::text as debits
      from payment_batch_rows r join transactions t on t.payment_id = r.payment_id where r.batch_id = ${batchId}`;
    expect(totals).toEqual({ payments: 7, debits: '-700.0000' });
    expect(await balanceOf(owner.organization.id)).toBe('300.0000');
    expect(await walletsOutOfBalance(sql, owner.organization.id)).toEqual([]);
    const batch = (await owner.request(`/api/payment-batches/${batchId}`)).body;
    expect(batch.counts).toMatchObject({ pending: 0, new: 7 });
  });

  test('rows its wallet can no longer pay when their turn comes end failed, and the others go on', async () => {
    const owner = await createMerchant(ctx.app);
    const created = await owner.request('/api/payment-batches', {
      body: { payments: Array.from({ length: 6 }, () => row({ amount: '150' })) },
    });
    // Money spent elsewhere after the upload.
    expect(
      (
        await owner.request('/api/payments', {
          form: { phonenumber: nextNumber(), amount: '400', currency: 'BXC', description: 'Elsewhere' },
        })
      ).status,
    ).toBe(201);
    const reserved = await reserveBatchChunk(testSql(), asId('PaymentBatch', created.body.id), 0, 10);
    expect(reserved.paymentIds).toHaveLength(4);
    expect(await balanceOf(owner.organization.id)).toBe('0.0000');
    const rows = (await owner.request(`/api/payment-batches/${created.body.id}/rows`)).body.results;
    expect(rows.map((line: { state: string }) => line.state)).toEqual(['new', 'new', 'new', 'new', 'failed', 'failed']);
    expect(rows[4].error).toContain('insufficient funds');
    expect((await owner.request(`/api/payment-batches/${created.body.id}`)).body.counts).toMatchObject({
      new: 4,
      failed: 2,
      pending: 0,
    });
    expect(await walletsOutOfBalance(testSql(), owner.organization.id)).toEqual([]);
  });

  test('two batches and single payments spending one wallet at once never overdraw it', async () => {
    const owner = await createMerchant(ctx.app);
    const upload = async () =>
      (
        await owner.request('/api/payment-batches', {
          body: { payments: Array.from({ length: 8 }, () => row({ amount: '100' })) },
        })
      ).body.id as number;
    // Each batch fits the wallet at upload; together with the single payments they cannot all be paid.
    const [first, second] = [await upload(), await upload()];
    const results = await Promise.all([
      reserveBatchChunk(testSql(), asId('PaymentBatch', first), 0, 8),
      reserveBatchChunk(testSql(), asId('PaymentBatch', second), 0, 8),
      ...[0, 1, 2].map(() =>
        owner.request('/api/payments', {
          form: { phonenumber: nextNumber(), amount: '100', currency: 'BXC', description: 'Elsewhere' },
        }),
      ),
    ]);
    const batchPayments =
      (results[0] as { paymentIds: number[] }).paymentIds.length +
      (results[1] as { paymentIds: number[] }).paymentIds.length;
    const singles = results.slice(2).filter((answer) => (answer as { status: number }).status === 201).length;
    expect(batchPayments + singles).toBe(10);
    expect(await balanceOf(owner.organization.id)).toBe('0.0000');
    expect(await walletsOutOfBalance(testSql(), owner.organization.id)).toEqual([]);
  });
});
