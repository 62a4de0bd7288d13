/**
 * Throughput with two application nodes against one, on the same Temporal server and PostgreSQL
 * (docs/capacity.md): open-loop collection-request lifecycles through the load balancer at each
 * rate for a fixed time, first with both nodes, then with app-b drained and stopped. For each run:
 * lifecycles completed per second, the create's latency, and the CPU each process spent per
 * lifecycle (from /proc), so that what limits it can be read off.
 */
import { readFileSync } from 'node:fs';
import { testSql } from '../helpers';
import type { Merchant } from './main';
import type { Operation } from './merchants';
import { type Cluster, setNodeState, launch, processTree, stopProcess, waitUntil, apiReady } from './nodes';
import { loadOf, merchantsProcess } from './run';

const TICKS_PER_SECOND = 100;

/** CPU seconds a process and its descendants have used so far. */
function cpuSeconds(pid: number | undefined): number {
  if (!pid) return 0;
  let ticks = 0;
  for (const each of processTree(pid)) {
    try {
      const fields = readFileSync(`/proc/${each}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {}
  }
  return ticks / TICKS_PER_SECOND;
}

function cpuByProcess(c: Cluster): Record<string, number> {
  return Object.fromEntries([...c.processes.values()].map((process) => [process.name, cpuSeconds(process.child?.pid)]));
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
};

export type ThroughputResult = {
  nodes: number;
  rate: number;
  seconds: number;
  created: number;
  successful: number;
  lifecyclesPerSecond: number;
  createP50Ms: number;
  createP99Ms: number;
  not201: number;
  cpuMsPerLifecycle: Record<string, number>;
};

async function run(c: Cluster, merchants: Merchant[], nodes: number, rate: number, seconds: number, prefix: string) {
  const load = merchantsProcess(loadOf(c, merchants, { rate, numberPrefix: prefix, collectOnly: true }));
  await load.ask('', 'ready', 30_000);
  const before = cpuByProcess(c);
  const started = Date.now();
  await load.ask('start', null);
  await Bun.sleep(seconds * 1000);
  await load.ask('stop', 'stopped');
  const { report } = (await load.ask('report', 'report')) as { report: { operations: Operation[] } };
  await load.ask('exit', null);
  const phones = report.operations.map((operation) => operation.phone);
  // Every lifecycle ends (the subscriber pays 1.5 s after the prompt): wait for them, bounded.
  let successful = 0;
  await waitUntil(
    'the lifecycles to end',
    async () => {
      const [row] = await testSql()<{ done: number; paid: number }[]>`
        select count(*) filter (where status in ('successful', 'failed', 'expired')) as done,
          count(*) filter (where status = 'successful') as paid
        from collection_requests where phone_number = any(${phones})`;
      successful = row!.paid;
      return row!.done >= report.operations.filter((operation) => operation.outcome === 'created').length;
    },
    300_000,
  ).catch(() => {});
  const elapsed = (Date.now() - started) / 1000;
  const after = cpuByProcess(c);
  const cpuMsPerLifecycle = Object.fromEntries(
    Object.keys(after)
      .map((name) => [name, Math.round(((after[name]! - (before[name] ?? 0)) * 1000) / Math.max(1, successful))])
      .filter(([, ms]) => Number(ms) > 0),
  );
  const latencies = report.operations.map((operation) => operation.slowestMs);
  return {
    nodes,
    rate,
    seconds,
    created: report.operations.filter((operation) => operation.outcome === 'created').length,
    successful,
    // Completed lifecycles over the whole time it took them to complete, load and drain included.
    lifecyclesPerSecond: Math.round((successful / elapsed) * 10) / 10,
    createP50Ms: percentile(latencies, 50),
    createP99Ms: percentile(latencies, 99),
    not201: report.operations.filter((operation) => operation.outcome !== 'created').length,
    cpuMsPerLifecycle,
  };
}

async function oneNode(c: Cluster, on: boolean) {
  const api = c.processes.get('api-app-b')!;
  const worker = c.processes.get('worker-app-b')!;
  if (!on) {
    await setNodeState('app-b', 'maint');
    await Promise.all([stopProcess(api), stopProcess(worker)]);
    return;
  }
  launch(worker);
  launch(api);
  await waitUntil('the API on app-b again', () => apiReady(c, 'app-b'), 120_000);
  await setNodeState('app-b', 'ready');
}

export async function measureThroughput(
  c: Cluster,
  merchants: Merchant[],
  options: { rates: number[]; seconds: number },
): Promise<ThroughputResult[]> {
  const results: ThroughputResult[] = [];
  let prefix = 1;
  for (const nodes of [2, 1]) {
    if (nodes === 1) await oneNode(c, false);
    for (const rate of options.rates) {
      const result = await run(c, merchants, nodes, rate, options.seconds, String(prefix++));
      process.stdout.write(`[cluster] ${JSON.stringify(result)}\n`);
      results.push(result);
    }
  }
  await oneNode(c, true);
  return results;
}
