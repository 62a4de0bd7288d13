/**
 * Wallet statements (reconciliation): the opening balance, every transaction of a UTC period with
 * the balance after it, the closing balance, as JSON and CSV; the closing balance equals the
 * wallet's balance, also while payments commit at the same moment; tenant scope and bad periods.
 */
import { beforeAll, describe, expect, test } from 'bun:test';
import { walletsOutOfBalance } from '../../src/services/wallets/wallets';
import { createMerchant, numberSequence, testApp, testSql, type TestApp, type TestMerchant } from '../helpers';

let ctx: TestApp;

beforeAll(async () => {
  ctx = await testApp();
});

const nextNumber = numberSequence('+256772');
const pay = (owner: TestMerchant, amount: string) =>
  owner.request('/api/payments', {
    form: { phonenumber: nextNumber(), amount, currency: 'BXC', description: 'Statement test' },
  });

async function walletOf(owner: TestMerchant): Promise<{ id: number; balance: string }> {
  return (await owner.request('/api/accounts?currency=BXC')).body.results[0];
}

type Line = { amount: string; balance_after: string; type: string };

/** Opening plus each line gives each line's balance after it, and the closing balance (exact: in ten-thousandths). */
function expectConsistent(statement: { opening_balance: string; closing_balance: string; transactions: Line[] }): void {
  const units = (amount: string) => BigInt(amount.replace('.', ''));
  let running = units(statement.opening_balance);
  for (const line of statement.transactions) {
    running += units(line.amount);
    expect(units(line.balance_after)).toBe(running);
    expect(running >= 0n).toBe(true);
  }
  expect(units(statement.closing_balance)).toBe(running);
}

describe('wallet statements', () => {
  test("a period's opening balance, transactions with running balances and closing balance, as JSON and CSV", async () => {
    const owner = await createMerchant(ctx.app);
    const wallet = await walletOf(owner);
    const start = (await testSql()<{ now: Date }[]>`select clock_timestamp() as now`)[0]!.now;
    expect((await pay(owner, '100')).status).toBe(201);
    expect((await pay(owner, '250.5')).status).toBe(201);
    const statement = await owner.request(
      `/api/accounts/${wallet.id}/statement?since=${encodeURIComponent(start.toISOString())}`,
    );
    expect(statement.status).toBe(200);
    expect(statement.body).toMatchObject({
      account: wallet.id,
      currency: 'BXC',
      opening_balance: '1000.0000',
      credits: '0.0000',
      debits: '-350.5000',
      closing_balance: '649.5000',
    });
    expect(statement.body.transactions.map((line: Line) => [line.type, line.amount, line.balance_after])).toEqual([
      ['mobile_payment', '-100.0000', '900.0000'],
      ['mobile_payment', '-250.5000', '649.5000'],
    ]);
    expect(statement.body.closing_balance).toBe((await walletOf(owner)).balance);
    // The whole history: from nothing to the balance.
    const all = (await owner.request(`/api/accounts/${wallet.id}/statement?since=2000-01-01`)).body;
    expect(all).toMatchObject({ opening_balance: '0.0000', credits: '1000.0000', closing_balance: '649.5000' });
    expectConsistent(all);

    const csv = await owner.request(`/api/accounts/${wallet.id}/statement.csv?since=2000-01-01`, {
      headers: { Accept: 'text/csv' },
    });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toStartWith('text/csv');
    const lines = (csv.body as string).trim().split('\n');
    expect(lines[0]).toBe('time,transaction,type,belongs_to,description,amount,balance,currency');
    expect(lines[1]).toBe('2000-01-01T00:00:00.000Z,,opening_balance,,,,0.0000,BXC');
    expect(lines[2]).toMatch(/,funding,,.*,1000\.0000,1000\.0000,BXC$/);
    expect(lines[3]).toMatch(/,mobile_payment,payment \d+,Payment \d+ to \+256772\d+,-100\.0000,900\.0000,BXC$/);
    expect(lines.at(-1)).toMatch(/,,closing_balance,,,,649\.5000,BXC$/);
    expect(lines).toHaveLength(6);
  });

  test("a period before anything happened, another organization's wallet, and bad periods", async () => {
    const owner = await createMerchant(ctx.app);
    const other = await createMerchant(ctx.app);
    const wallet = await walletOf(owner);
    const empty = (await owner.request(`/api/accounts/${wallet.id}/statement?since=2000-01-01&until=2000-02-01`)).body;
    expect(empty).toMatchObject({ opening_balance: '0.0000', closing_balance: '0.0000', transactions: [] });
    expect((await other.request(`/api/accounts/${wallet.id}/statement`)).status).toBe(403);
    expect((await other.request(`/api/accounts/${wallet.id}/statement.csv`)).status).toBe(403);
    expect((await owner.request('/api/accounts/99999999/statement')).status).toBe(404);
    const backwards = await owner.request(`/api/accounts/${wallet.id}/statement?since=2025-02-01&until=2025-01-01`);
    expect(backwards.status).toBe(400);
    expect(backwards.body.until[0]).toContain('must come after its start');
    expect((await owner.request(`/api/accounts/${wallet.id}/statement?since=yesterday-ish`)).status).toBe(400);
  });

  test("statements taken while payments commit: each one adds up, and the last one's closing balance is the wallet's", async () => {
    const owner = await createMerchant(ctx.app);
    const wallet = await walletOf(owner);
    const statementOf = () => owner.request(`/api/accounts/${wallet.id}/statement?since=2000-01-01`);
    const answers = await Promise.all([
      ...Array.from({ length: 25 }, () => pay(owner, '10')),
      ...Array.from({ length: 6 }, statementOf),
    ]);
    expect(answers.slice(0, 25).every((answer) => answer.status === 201)).toBe(true);
    for (const statement of answers.slice(25)) {
      expect(statement.status).toBe(200);
      expectConsistent(statement.body);
      // Read in one snapshot: every payment in it is whole (its debit counted once), nothing half-seen.
      expect(Number(statement.body.closing_balance)).toBe(1000 - 10 * (statement.body.transactions.length - 1));
    }
    const last = (await statementOf()).body;
    expectConsistent(last);
    expect(last.closing_balance).toBe('750.0000');
    expect(last.closing_balance).toBe((await walletOf(owner)).balance);
    expect(await walletsOutOfBalance(testSql(), owner.organization.id)).toEqual([]);
  });
});
