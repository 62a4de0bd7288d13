/**
 * The operators' reconciliation, run as finance runs it: a debit no protocol lets the service learn
 * of (an STK push whose answer and result callback M-Pesa both never delivered; Daraja's status
 * queries need the CheckoutRequestID the service never got, or a receipt) is found only by comparing
 * M-Pesa's statement with the service's settlement report (docs/operations.md). The checker writes
 * the statement the Daraja simulator exports and runs the admin CLI's `reconcile` on it
 * (src/admin/settlements.ts) for each day those debits fell on.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readOperatorStatement } from '../../src/domain/operator-statements';
import { ROOT, testSql } from '../helpers';

/** How long one `reconcile` may take (a Bun process reading two days of settlement reports). */
const RECONCILE_DEADLINE_MS = 30_000;

/** The ids among `ids` the service holds anywhere: a collection, a request's receipt, a journal entry's ids. */
export async function idsOnRecord(ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await testSql()<{ id: string }[]>`
    select remote_transaction_id as id from collections where remote_transaction_id = any(${ids})
    union
    select remote_transaction_id from collection_requests where remote_transaction_id = any(${ids})
    union
    select remote_transaction_id from network_operations where remote_transaction_id = any(${ids})
    union
    select operator_reference from network_operations where operator_reference = any(${ids})`;
  return new Set(rows.map((row) => row.id));
}

export type Reconciled = {
  /** The receipts `reconcile` listed as missing on our side. */
  listed: Set<string>;
  /** What kept the reconciliation from answering (a failed run, a receipt not on the statement), in words. */
  problems: string[];
};

async function reconcileDay(file: string, day: string): Promise<{ missing: string[]; problem: string | null }> {
  const child = Bun.spawn(
    [process.execPath, 'src/admin.ts', 'reconcile', '--network', 'Safaricom', '--date', day, '--file', file, '--json'],
    { cwd: ROOT, env: process.env, stdout: 'pipe', stderr: 'pipe' },
  );
  const timer = setTimeout(() => child.kill(), RECONCILE_DEADLINE_MS);
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]).finally(() => clearTimeout(timer));
  // Exit 1 is the answer "the statement differs"; anything else is a run that did not answer.
  if (code !== 0 && code !== 1)
    return { missing: [], problem: `reconcile of ${day} exited ${code}: ${stderr.trim() || stdout.trim()}` };
  const found = JSON.parse(stdout) as { missingOnOurSide: { operatorId: string }[] };
  return { missing: found.missingOnOurSide.map((line) => line.operatorId), problem: null };
}

/** Runs `reconcile` on `statement` (M-PESA's CSV) for every day `receipts` completed on: which of them it lists. */
export async function reconcileReceipts(statement: string, receipts: string[]): Promise<Reconciled> {
  const problems: string[] = [];
  const lines = readOperatorStatement('mpesa', statement);
  const days = new Set<string>();
  for (const receipt of receipts) {
    const line = lines.find((each) => each.operatorId === receipt);
    if (line?.time) days.add(line.time.toISOString().slice(0, 10));
    else problems.push(`${receipt} is not on M-Pesa's statement with a completion time`);
  }
  const folder = mkdtempSync(join(tmpdir(), 'money-statement-'));
  const listed = new Set<string>();
  try {
    const file = join(folder, 'mpesa-statement.csv');
    writeFileSync(file, statement);
    for (const day of days) {
      const { missing, problem } = await reconcileDay(file, day);
      if (problem) problems.push(problem);
      for (const receipt of missing) if (receipts.includes(receipt)) listed.add(receipt);
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
  return { listed, problems };
}
