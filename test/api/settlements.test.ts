/**
 * The daily settlement report (reconciliation): collections in, payments and reversals out on
 * several networks and currencies, each line with the operator's id and the time it became final;
 * exact totals per network and currency; only the caller's organization; only the day asked for
 * (its bounds exactly); CSV equal to JSON; bad input 400. Money moves through the services the
 * workflows call (test/settlement-helpers.ts).
 */
import { beforeAll, describe, expect, test } from 'bun:test';
import { parse } from 'csv-parse/sync';
import { fundWallet } from '../../src/services/merchants/organizations';
import { createMerchant, testApp, testSql, type TestApp } from '../helpers';
import { collected, paid, reversed } from '../settlement-helpers';

let ctx: TestApp;

beforeAll(async () => {
  ctx = await testApp();
});

const MTN = '+256772';
const SAFARICOM = '+254711';

describe('daily settlement report', () => {
  test("a day's collections, payments and reversals on several networks and currencies, with exact totals, CSV equal to JSON", async () => {
    const owner = await createMerchant(ctx.app);
    const other = await createMerchant(ctx.app);
    await fundWallet(testSql(), owner.organization.id, 'UGX', '10000');
    const day = '2024-02-29';
    // The day's first instant is in it; its end is not.
    const ugx = await collected(owner, 'MTN Uganda', MTN, 'UGX', '5000', '2024-02-29T00:00:00.000Z');
    const kes = await collected(owner, 'Safaricom', SAFARICOM, 'KES', '1250', '2024-02-29T10:00:00.000Z');
    const tenth = await collected(owner, 'MTN Uganda', MTN, 'BXC', '0.1', '2024-02-29T11:00:00.000Z');
    const fifth = await collected(owner, 'MTN Uganda', MTN, 'BXC', '0.2', '2024-02-29T12:00:00.000Z');
    const payout = await paid(owner, MTN, 'UGX', '1500', '2024-02-29T13:00:00.000Z');
    const small = await paid(owner, MTN, 'BXC', '0.05', '2024-02-29T14:00:00.000Z');
    await paid(owner, MTN, 'UGX', '700', '2024-02-29T15:00:00.000Z', 'rejected');
    const sentBack = await reversed(owner, kes.id, '2024-02-29T16:00:00.000Z');
    await collected(owner, 'MTN Uganda', MTN, 'UGX', '300', '2024-02-28T23:59:59.999Z');
    await paid(owner, MTN, 'UGX', '200', '2024-03-01T00:00:00.000Z');
    // Another organization's movement on the same day and network.
    const theirs = await collected(other, 'MTN Uganda', MTN, 'UGX', '999', '2024-02-29T09:00:00.000Z');

    const report = await owner.request(`/api/settlements?date=${day}`);
    expect(report.status).toBe(200);
    expect(report.body).toMatchObject({
      date: day,
      since: '2024-02-29T00:00:00.000Z',
      until: '2024-03-01T00:00:00.000Z',
      network: null,
      currency: null,
      totals: [
        {
          network: 'MTN Uganda',
          currency: 'BXC',
          in: { count: 2, amount: '0.3000' },
          out: { count: 1, amount: '0.0500' },
          reversed: { count: 0, amount: '0.0000' },
          net: '0.2500',
        },
        {
          network: 'MTN Uganda',
          currency: 'UGX',
          in: { count: 1, amount: '5000.0000' },
          out: { count: 1, amount: '1500.0000' },
          reversed: { count: 0, amount: '0.0000' },
          net: '3500.0000',
        },
        {
          network: 'Safaricom',
          currency: 'KES',
          in: { count: 1, amount: '1250.0000' },
          out: { count: 0, amount: '0.0000' },
          reversed: { count: 1, amount: '1250.0000' },
          net: '0.0000',
        },
      ],
    });
    const org = owner.organization.id;
    expect(report.body.lines).toEqual([
      {
        network: 'MTN Uganda',
        currency: 'BXC',
        type: 'collection',
        id: tenth.id,
        organization: org,
        operator_transaction_id: tenth.remoteTransactionId,
        reference: tenth.promptReference,
        original_transaction_id: null,
        route: null,
        amount: '0.1000',
        fee: null,
        phonenumber: tenth.phoneNumber,
        final_at: '2024-02-29T11:00:00.000Z',
      },
      expect.objectContaining({ currency: 'BXC', type: 'collection', id: fifth.id, amount: '0.2000' }),
      {
        network: 'MTN Uganda',
        currency: 'BXC',
        type: 'payment',
        id: small.id,
        organization: org,
        operator_transaction_id: small.remoteTransactionId,
        reference: `pay-${small.id}`,
        original_transaction_id: null,
        route: null,
        amount: '0.0500',
        fee: null,
        phonenumber: small.phoneNumber,
        final_at: '2024-02-29T14:00:00.000Z',
      },
      expect.objectContaining({
        currency: 'UGX',
        type: 'collection',
        id: ugx.id,
        operator_transaction_id: ugx.remoteTransactionId,
        final_at: '2024-02-29T00:00:00.000Z',
      }),
      expect.objectContaining({
        currency: 'UGX',
        type: 'payment',
        id: payout.id,
        operator_transaction_id: payout.remoteTransactionId,
        amount: '1500.0000',
      }),
      expect.objectContaining({ network: 'Safaricom', type: 'collection', id: kes.id, phonenumber: kes.phoneNumber }),
      {
        network: 'Safaricom',
        currency: 'KES',
        type: 'reversal',
        id: sentBack.id,
        organization: org,
        operator_transaction_id: sentBack.remoteTransactionId,
        reference: `rev-${sentBack.id}`,
        original_transaction_id: kes.remoteTransactionId,
        route: null,
        amount: '1250.0000',
        fee: null,
        phonenumber: kes.phoneNumber,
        final_at: '2024-02-29T16:00:00.000Z',
      },
    ]);
    expect(JSON.stringify(report.body)).not.toContain(theirs.remoteTransactionId);

    // The other organization sees its own only; filters narrow to one network or currency.
    const theirReport = (await other.request(`/api/settlements?date=${day}`)).body;
    expect(theirReport.lines.map((line: { id: number }) => line.id)).toEqual([theirs.id]);
    const safaricom = (await owner.request(`/api/settlements?date=${day}&network=safaricom`)).body;
    expect(safaricom).toMatchObject({ network: 'Safaricom', totals: [{ network: 'Safaricom', currency: 'KES' }] });
    expect(safaricom.lines).toHaveLength(2);
    expect((await owner.request(`/api/settlements?date=${day}&currency=bxc`)).body.lines).toHaveLength(3);
    expect(
      (await owner.request('/api/settlements?date=2024-02-28')).body.lines.map(
        (line: { amount: string }) => line.amount,
      ),
    ).toEqual(['300.0000']);

    // The CSV: the same lines with the same fields, then the totals.
    const csv = await owner.request(`/api/settlements.csv?date=${day}`, { headers: { Accept: 'text/csv' } });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toStartWith('text/csv');
    expect(csv.headers.get('content-disposition')).toBe('attachment; filename="settlement-2024-02-29.csv"');
    const rows: Record<string, string>[] = parse(csv.body as string, { columns: true });
    const text = (value: unknown) => (value === null ? '' : String(value));
    expect(rows.slice(0, 7)).toEqual(
      report.body.lines.map((line: Record<string, unknown>) => ({
        ...Object.fromEntries(Object.entries(line).map(([key, value]) => [key, text(value)])),
        count: '',
      })),
    );
    expect(rows.slice(7).map((row) => [row.network, row.currency, row.type, row.amount, row.count])).toEqual([
      ['MTN Uganda', 'BXC', 'total_in', '0.3000', '2'],
      ['MTN Uganda', 'BXC', 'total_out', '0.0500', '1'],
      ['MTN Uganda', 'BXC', 'total_reversed', '0.0000', '0'],
      ['MTN Uganda', 'BXC', 'net', '0.2500', ''],
      ['MTN Uganda', 'UGX', 'total_in', '5000.0000', '1'],
      ['MTN Uganda', 'UGX', 'total_out', '1500.0000', '1'],
      ['MTN Uganda', 'UGX', 'total_reversed', '0.0000', '0'],
      ['MTN Uganda', 'UGX', 'net', '3500.0000', ''],
      ['Safaricom', 'KES', 'total_in', '1250.0000', '1'],
      ['Safaricom', 'KES', 'total_out', '0.0000', '0'],
      ['Safaricom', 'KES', 'total_reversed', '1250.0000', '1'],
      ['Safaricom', 'KES', 'net', '0.0000', ''],
    ]);
  });

  test('without a date: today so far; a day with nothing moved is empty', async () => {
    const owner = await createMerchant(ctx.app);
    const now = new Date();
    const today = await collected(owner, 'MTN Uganda', MTN, 'BXC', '12.5', now.toISOString());
    const report = (await owner.request('/api/settlements')).body;
    expect(report.date).toBe(now.toISOString().slice(0, 10));
    expect(new Date(report.until).getTime()).toBeLessThanOrEqual(new Date(report.as_of).getTime());
    expect(report.lines.map((line: { id: number }) => line.id)).toEqual([today.id]);
    expect((await owner.request('/api/settlements?date=2001-01-01')).body).toMatchObject({ totals: [], lines: [] });
    const empty = await owner.request('/api/settlements.csv?date=2001-01-01');
    expect(empty.body).toBe(
      'network,currency,type,id,organization,operator_transaction_id,reference,original_transaction_id,route,amount,fee,phonenumber,final_at,count\n',
    );
  });

  test.each([
    ['date=2024-02-30', 'date'],
    ['date=yesterday', 'date'],
    ['date=2024-2-1', 'date'],
    ['date=2024-02-01T10:00', 'date'],
    ['date=3024-01-01', 'date'],
    ['network=Nowhere%20Mobile', 'network'],
    ['currency=EUR', 'currency'],
  ])('%s is a 400 naming %s, as JSON and as CSV', async (query, field) => {
    const owner = await createMerchant(ctx.app);
    for (const path of ['/api/settlements', '/api/settlements.csv']) {
      const answer = await owner.request(`${path}?${query}`);
      expect(answer.status).toBe(400);
      expect(Object.keys(answer.body)).toEqual([field]);
      expect(answer.body[field][0]).toMatch(/valid|choice/);
    }
  });

  test('without a key: 401', async () => {
    const answer = await ctx.app.handle(new Request('http://localhost/api/settlements'));
    expect(answer.status).toBe(401);
  });
});
