/**
 * The admin CLI's settlement report across organizations and its `reconcile` of an operator's
 * statement, end to end: the real CLI process against the test database, with statement files
 * written here. Exit 0 when the statement agrees, 1 when it differs, 2 for a usage error.
 */
import { beforeAll, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fundWallet } from '../../src/services/merchants/organizations';
import { ROOT, createMerchant, testApp, testSql, type TestApp } from '../helpers';
import { collected, operatorId, paid } from '../settlement-helpers';

let ctx: TestApp;
const folder = mkdtempSync(join(tmpdir(), 'statements-'));

beforeAll(async () => {
  ctx = await testApp();
});

function admin(...args: string[]) {
  const result = spawnSync(process.execPath, ['src/admin.ts', ...args], {
    cwd: ROOT,
    env: process.env,
    encoding: 'utf8',
  });
  return {
    status: result.status,
    stdout: result.stdout,
    stdoutJson: () => JSON.parse(result.stdout),
    stderr: result.stderr,
  };
}

/** A day of its own, far in the past, so no other test's movements (every organization's are reported) fall on it or beside it. */
const ownDay = () => {
  const day = new Date(
    Date.UTC(1995 + Math.floor(Math.random() * 20), Math.floor(Math.random() * 12), 2 + Math.floor(Math.random() * 25)),
  );
  return day.toISOString().slice(0, 10);
};

/** `time` (UTC) as M-PESA's portal writes it: East Africa Time, `YYYY-MM-DD HH:MM:SS`. */
const eastAfrican = (time: string) =>
  new Date(new Date(time).getTime() + 3 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');

function mpesaFile(name: string, rows: string[]): string {
  const path = join(folder, name);
  writeFileSync(
    path,
    [
      'Organisation Name:,Settlement Test Ltd',
      'Shortcode:,600000',
      '',
      'Receipt No.,Completion Time,Initiation Time,Details,Transaction Status,Paid In,Withdrawn,Balance,Balance Confirmed,Reason Type,Other Party Info,Linked Transaction ID,A/C No.',
      ...rows,
    ].join('\r\n'),
  );
  return path;
}

test('reconcile: a statement that agrees exits 0; one that differs exits 1 and names each difference; fees are reported', async () => {
  const day = ownDay();
  const at = (hour: string) => `${day}T${hour}:00.000Z`;
  const shop = await createMerchant(ctx.app);
  const other = await createMerchant(ctx.app);
  await fundWallet(testSql(), shop.organization.id, 'KES', '10000');
  const first = await collected(shop, 'Safaricom', '+254711', 'KES', '1250', at('06:00'));
  const second = await collected(other, 'Safaricom', '+254711', 'KES', '80', at('20:59'));
  const payout = await paid(shop, '+254711', 'KES', '500', at('09:30'));
  // Sandbox money on a Safaricom number is not in M-PESA's statement: the reconciliation takes KES only.
  await collected(shop, 'Safaricom', '+254711', 'BXC', '3', at('07:00'));

  const report = admin('settlement', '--date', day, '--network', 'safaricom', '--json');
  expect(report.status).toBe(0);
  expect(
    report
      .stdoutJson()
      .lines.map((line: { type: string; organization: number; currency: string }) => [
        line.type,
        line.organization,
        line.currency,
      ]),
  ).toEqual([
    ['collection', shop.organization.id, 'BXC'],
    ['collection', shop.organization.id, 'KES'],
    ['payment', shop.organization.id, 'KES'],
    ['collection', other.organization.id, 'KES'],
  ]);
  expect(admin('settlement', '--date', day).stdout).toContain(
    'Safaricom KES: in 2 (1330.0000), out 1 (500.0000), reversed 0 (0.0000), net 830.0000',
  );

  const row = (
    receipt: string,
    time: string,
    status: string,
    paidIn: string,
    withdrawn: string,
    reason: string,
    linked = '',
  ) => `${receipt},${eastAfrican(time)},,${reason},${status},${paidIn},${withdrawn},,true,${reason},,${linked},`;
  const charge = operatorId('Q');
  const agreeing = mpesaFile('agreeing.csv', [
    row(first.remoteTransactionId, at('06:00'), 'Completed', '"1,250.00"', '', 'Pay Bill'),
    row(payout.remoteTransactionId, at('09:30'), 'Completed', '', '500.00', 'Business Payment'),
    row(charge, at('09:30'), 'Completed', '', '15.00', 'Business Payment Charge', payout.remoteTransactionId),
    row(second.remoteTransactionId, at('20:59'), 'Completed', '80.00', '', 'Pay Bill'),
    row(operatorId('Q'), at('11:00'), 'Failed', '40.00', '', 'Pay Bill Online'),
  ]);
  const agreed = admin('reconcile', '--network', 'Safaricom', '--date', day, '--file', agreeing, '--json');
  expect(agreed.stderr).toBe('');
  expect(agreed.status).toBe(0);
  expect(agreed.stdoutJson()).toMatchObject({
    network: 'Safaricom',
    currency: 'KES',
    date: day,
    differs: false,
    matched: 3,
    notCompleted: 1,
    fees: [
      {
        operatorId: payout.remoteTransactionId,
        amount: '15.0000',
        currency: 'KES',
        ours: { type: 'payment', id: payout.id },
      },
    ],
  });

  const stranger = operatorId('Q');
  const differing = mpesaFile('differing.csv', [
    row(first.remoteTransactionId, at('06:00'), 'Completed', '"1,205.00"', '', 'Pay Bill'),
    row(payout.remoteTransactionId, at('09:30'), 'Failed', '', '500.00', 'Business Payment'),
    row(stranger, at('12:00'), 'Completed', '75.00', '', 'Pay Bill'),
  ]);
  const differed = admin('reconcile', '--network', 'Safaricom', '--date', day, '--file', differing, '--json');
  expect(differed.status).toBe(1);
  const found = differed.stdoutJson();
  expect(found.differs).toBe(true);
  expect(
    found.missingOnOurSide.map((line: { operatorId: string; amount: string }) => [line.operatorId, line.amount]),
  ).toEqual([[stranger, '75.0000']]);
  expect(
    found.missingOnOperatorSide.map((line: { id: number; organization: number }) => [line.id, line.organization]),
  ).toEqual([[second.id, other.organization.id]]);
  expect(
    found.amountMismatches.map((pair: { ours: { id: number; amount: string }; theirs: { amount: string } }) => [
      pair.ours.id,
      pair.ours.amount,
      pair.theirs.amount,
    ]),
  ).toEqual([[first.id, '1250.0000', '1205.0000']]);
  expect(
    found.statusMismatches.map((pair: { ours: { id: number }; theirs: { status: string } }) => [
      pair.ours.id,
      pair.theirs.status,
    ]),
  ).toEqual([[payout.id, 'Failed']]);
  const words = admin('reconcile', '--network', 'Safaricom', '--date', day, '--file', differing);
  expect(words.status).toBe(1);
  expect(words.stdout).toContain(`missing on our side: line 7: ${stranger} 75.0000 KES Completed`);
  expect(words.stdout).toContain(
    `missing on the operator's side: collection ${second.id} (organization ${other.organization.id}) 80.0000 KES`,
  );
  expect(words.stdout).toContain('DIFFERENCES FOUND');
});

test('reconcile: usage errors exit 2 with a message and never a stack trace', () => {
  const noHeader = join(folder, 'not-a-statement.csv');
  writeFileSync(noHeader, 'hello,world\n1,2\n');
  const noAmount = join(folder, 'no-withdrawn.csv');
  writeFileSync(
    noAmount,
    'Receipt No.,Completion Time,Transaction Status,Paid In\nQ1,2025-05-01 10:00:00,Completed,1\n',
  );
  const cases: [string[], string][] = [
    [['reconcile', '--network', 'Safaricom', '--date', '2025-05-01'], "--file takes the operator's statement"],
    [['reconcile', '--network', 'Safaricom', '--file', noHeader], '--date is required'],
    [
      ['reconcile', '--network', 'Nowhere', '--date', '2025-05-01', '--file', noHeader],
      '--network: Select a valid choice',
    ],
    [
      ['reconcile', '--network', 'Airtel Uganda', '--date', '2025-05-01', '--file', noHeader],
      'no operator statement format is known for Airtel Uganda',
    ],
    [['reconcile', '--network', 'Safaricom', '--date', '2025-02-30', '--file', noHeader], '--date: Enter a valid date'],
    [
      ['reconcile', '--network', 'Safaricom', '--date', '2025-05-01', '--file', join(folder, 'missing.csv')],
      'cannot read --file',
    ],
    [
      ['reconcile', '--network', 'Safaricom', '--date', '2025-05-01', '--file', noHeader],
      'no header row names the column "receipt no"',
    ],
    [
      ['reconcile', '--network', 'Safaricom', '--date', '2025-05-01', '--file', noAmount],
      'lacks the column "withdrawn"',
    ],
    [
      ['reconcile', '--network', 'MTN Uganda', '--date', '2025-05-01', '--file', noAmount],
      'no header row names the column "external transaction id"',
    ],
    [['settlement', '--currency', 'EUR'], '--currency: Select a valid choice'],
  ];
  for (const [args, message] of cases) {
    const result = admin(...args);
    expect({ args, status: result.status }).toEqual({ args, status: 2 });
    expect(result.stderr).toContain(message);
    expect(result.stderr).toContain('usage: npm run admin');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  }
});
