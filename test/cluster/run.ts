/**
 * One fault schedule under load: the merchants node's process (merchants.ts) sends the steady flow
 * through the load balancer; the fault is made and healed; the flow stops; then what must hold is
 * checked (check.ts), waiting at most two minutes after the heal (and after the last operation's
 * own lifetime) for every operation to end.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { ROOT, binPath } from '../../scripts/infra.mjs';
import { testSql } from '../helpers';
import {
  type Row,
  failingWorkflows,
  merchantCounts,
  missingEvents,
  moneyAnomalies,
  operatorDoubts,
  requestsFollowingAPrompt,
  unfinished,
} from './check';
import type { LoadConfig, Operation } from './merchants';
import { inNamespace } from './network';
import { CLUSTER_DATA, type Cluster, bindAddress } from './nodes';
import type { Schedule } from './schedules';
import type { OperatorRecords } from '../simulators/run';
import { type Merchant, RECEIVER_PORT } from './main';

export type { Row };

const WARM_UP_MS = 10_000;
const AFTER_HEAL_MS = 15_000;
const SETTLE_MS = 120_000;

/** What the merchants node sends and where it listens (merchants.ts). */
export function loadOf(
  c: Cluster,
  merchants: Merchant[],
  options: { rate: number; numberPrefix: string; collectOnly?: boolean },
): LoadConfig {
  return {
    lbUrl: c.lbUrl,
    controlUrl: c.controlUrl,
    receiverHost: bindAddress(c, 'merchants'),
    receiverPort: RECEIVER_PORT,
    certFile: `${CLUSTER_DATA}/cert.pem`,
    keyFile: `${CLUSTER_DATA}/key.pem`,
    merchants,
    ...options,
  };
}

export function merchantsProcess(config: LoadConfig) {
  const [command, ...args] = inNamespace('merchants', [
    binPath('bun'),
    'test/cluster/merchants.ts',
    JSON.stringify(config),
  ]);
  const child: ChildProcess = spawn(command!, args, { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting: ((message: Record<string, unknown>) => boolean)[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const message = JSON.parse(line) as Record<string, unknown>;
    const index = waiting.findIndex((accept) => accept(message));
    if (index >= 0) waiting.splice(index, 1);
  });
  const ask = (cmd: string, key: string | null, timeoutMs = 300_000) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the merchants node did not answer ${cmd}`)), timeoutMs);
      if (key)
        waiting.push((message) => {
          if (!(key in message)) return false;
          clearTimeout(timer);
          resolve(message);
          return true;
        });
      if (cmd) child.stdin!.write(`${JSON.stringify({ cmd })}\n`);
      if (!key) {
        clearTimeout(timer);
        resolve({});
      }
    });
  return { child, ask };
}

/** Exits of the API and worker processes since `since` with an error code and no signal: each printed with its log. */
function crashesSince(c: Cluster, since: number): number {
  let crashes = 0;
  for (const process of c.processes.values())
    for (const exit of process.exits)
      if (exit.at >= since && exit.signal === null && exit.code !== 0) {
        crashes += 1;
        globalThis.process.stdout.write(
          `[cluster]   ${process.name} ended by itself (exit code ${exit.code}) at ${new Date(exit.at).toISOString()}: ${join(CLUSTER_DATA, `${process.name}.log`)}\n`,
        );
      }
  return crashes;
}

async function until(what: () => Promise<string[]>, deadline: number): Promise<string[]> {
  for (let round = 0; ; round += 1) {
    const left = await what().catch((error) => [`check failed: ${String(error)}`]);
    if (left.length === 0 || Date.now() > deadline || round > 400) return left;
    await Bun.sleep(2000);
  }
}

export async function runSchedule(
  c: Cluster,
  merchants: Merchant[],
  schedule: Schedule,
  options: { numberPrefix: string; rate: number },
): Promise<Row> {
  const config = loadOf(c, merchants, options);
  const since = (await testSql()<{ now: Date }[]>`select now()`)[0]!.now;
  const startedAt = Date.now();
  const load = merchantsProcess(config);
  await load.ask('', 'ready', 30_000);
  await load.ask('start', null);
  await Bun.sleep(WARM_UP_MS);
  await schedule.steps(c);
  const healedAt = Date.now();
  await Bun.sleep(AFTER_HEAL_MS);
  await load.ask('stop', 'stopped');
  const { report } = (await load.ask('report', 'report')) as {
    report: { operations: Operation[]; webhooks: Record<string, Record<string, number>> };
  };
  const phones = [...new Set(report.operations.map((operation) => operation.phone))];
  const left = await until(
    async () => [...(await unfinished(phones)), ...requestsFollowingAPrompt(c.temporalAddress)],
    Math.max(healedAt, Date.now()) + SETTLE_MS,
  );
  const recoverSeconds = Math.round((Date.now() - healedAt) / 1000);
  const organizations = merchants.map((merchant) => merchant.organizationId);
  // Webhook deliveries: the receivers' counts are read again until every event arrived (bounded).
  let webhooks = report.webhooks;
  const missing = await until(async () => {
    const again = (await load.ask('report', 'report')) as {
      report: { webhooks: Record<string, Record<string, number>> };
    };
    webhooks = again.report.webhooks;
    return missingEvents(organizations, since, webhooks);
  }, Date.now() + SETTLE_MS);
  const records = (await fetch(`${c.controlUrl}/records`).then((response) => response.json())) as OperatorRecords;
  const anomalies = (await moneyAnomalies(records, report.operations, organizations)).map((anomaly) => {
    const paybills = report.operations.filter((each) => each.paybill && anomaly.text.includes(each.paybill.transId));
    const delivery = paybills.map((each) => `${each.paybill!.transId}: ${each.paybill!.delivery}`).join('; ');
    return delivery ? { ...anomaly, text: `${anomaly.text} [M-Pesa's callbacks: ${delivery}]` } : anomaly;
  });
  for (const what of left)
    anomalies.push({ phone: null, rule: 'stuck', text: `not final 2 min after the heal: ${what}` });
  await load.ask('exit', null);
  const counts = merchantCounts(report.operations);
  const row: Row = {
    schedule: schedule.name,
    ...counts,
    unfinished: left.length,
    eventsMissing: missing.length,
    failingWorkflows: failingWorkflows(c.temporalAddress),
    crashes: crashesSince(c, startedAt),
    ...(await operatorDoubts(phones)),
    anomalies,
    recoverSeconds,
  };
  const notCreated = report.operations.filter((operation) => operation.outcome !== 'created');
  for (const operation of notCreated.slice(0, 10))
    process.stdout.write(`[cluster]   ${operation.kind} ${operation.phone}: ${operation.outcome}\n`);
  for (const text of missing.slice(0, 10)) process.stdout.write(`[cluster]   missing ${text}\n`);
  const odd = report.operations.filter((operation) =>
    operation.statuses.some((status) => status >= 500 && status !== 503),
  );
  for (const operation of odd.slice(0, 10))
    process.stdout.write(
      `[cluster]   ${operation.kind} ${operation.phone}: statuses ${operation.statuses.join(',')}\n`,
    );
  return row;
}
