/**
 * The fault schedules (docs/operations.md, Several hosts): each one fault, made while the load
 * runs, then healed. Schedule 10 is a mix of the others drawn from a seed. Schedule 6 (latency and
 * loss between every pair) holds for the whole run: the cluster starts with slow links on every
 * node (slow-link.ts, in user space, as this kind of machine's kernel has no netem).
 */
import { prng } from '../money/schedule';
import { cut, heal } from './network';
import {
  type Cluster,
  launch,
  serverStates,
  setNodeState,
  signalTree,
  stopProcess,
  waitForTemporal,
  waitUntil,
  apiReady,
} from './nodes';

export type Schedule = { name: string; steps: (cluster: Cluster) => Promise<void> };

const pause = (ms: number) => Bun.sleep(ms);

async function partition(c: Cluster, a: Parameters<typeof cut>[1], b: Parameters<typeof cut>[2], ms: number) {
  cut(c.network, a, b);
  await pause(ms);
  heal(c.network, a, b);
}

async function freezePostgres(c: Cluster, ms: number) {
  const postgres = c.processes.get('postgres')!;
  signalTree(postgres, 'SIGSTOP');
  await pause(ms);
  signalTree(postgres, 'SIGCONT');
}

async function restartTemporal(c: Cluster) {
  const temporal = c.processes.get('temporal')!;
  await stopProcess(temporal, 'SIGKILL');
  launch(temporal);
  await waitForTemporal(c);
}

async function killApplication(c: Cluster, node: 'app-a' | 'app-b') {
  for (const name of [`api-${node}`, `worker-${node}`]) c.processes.get(name)!.child?.kill('SIGKILL');
  // The supervisor (main.ts) starts both again a second later, as a Deployment would.
  await waitUntil(`the API on ${node} again`, () => apiReady(c, node), 120_000);
}

/** Drains a node at the load balancer, stops its API and worker with SIGTERM, starts them again, readmits it. */
export async function rollingRestart(c: Cluster, node: 'app-a' | 'app-b') {
  await setNodeState(node, 'drain');
  await pause(2000);
  const api = c.processes.get(`api-${node}`)!;
  const worker = c.processes.get(`worker-${node}`)!;
  await Promise.all([stopProcess(api, 'SIGTERM', 30_000), stopProcess(worker, 'SIGTERM', 60_000)]);
  launch(worker);
  launch(api);
  await waitUntil(`the API on ${node} again`, () => apiReady(c, node), 120_000);
  await setNodeState(node, 'ready');
  await waitUntil(`${node} up behind HAProxy`, async () => (await serverStates())[node] === 'UP', 30_000);
}

export const SCHEDULES: Record<string, Schedule> = {
  '1': { name: '1 app-a cut from db 30 s', steps: (c) => partition(c, 'app-a', 'db', 30_000) },
  '2': { name: '2 app-b cut from temporal 30 s', steps: (c) => partition(c, 'app-b', 'temporal', 30_000) },
  '3': { name: '3 operators cut from app-a 30 s', steps: (c) => partition(c, 'app-a', 'operators', 30_000) },
  '4': { name: '4 PostgreSQL frozen 10 s', steps: (c) => freezePostgres(c, 10_000) },
  '5': { name: '5 Temporal server killed and started', steps: restartTemporal },
  '6': {
    name: '6 150 ms ± 50 ms each way and 2% loss on every link, 2 min',
    steps: () => pause(120_000),
  },
  '7': { name: '7 app-a killed (-9) and started', steps: (c) => killApplication(c, 'app-a') },
  '8': {
    name: "8 merchants' receivers cut 60 s",
    steps: async (c) => {
      cut(c.network, 'app-a', 'merchants');
      cut(c.network, 'app-b', 'merchants');
      await pause(60_000);
      heal(c.network, 'app-a', 'merchants');
      heal(c.network, 'app-b', 'merchants');
    },
  },
  '9': {
    name: '9 rolling restart, app-a then app-b (SIGTERM, drained)',
    steps: async (c) => {
      await rollingRestart(c, 'app-a');
      await rollingRestart(c, 'app-b');
    },
  },
};

/** Schedule 10: faults of 1–5 and 7–9 (6 is a whole run's) drawn from `seed`, one after another with a pause, for `ms`. */
export function drawMix(seed: number, ms: number): Schedule {
  const ids = Object.keys(SCHEDULES).filter((id) => id !== '6');
  return {
    name: `10 mix for ${Math.round(ms / 60_000)} min`,
    steps: async (c) => {
      const random = prng(seed);
      const until = Date.now() + ms;
      for (let step = 0; step < 500 && Date.now() < until; step += 1) {
        const id = ids[Math.floor(random() * ids.length)]!;
        process.stdout.write(`[cluster]   mix step ${step + 1}: ${SCHEDULES[id]!.name}\n`);
        await SCHEDULES[id]!.steps(c);
        await pause(5000 + Math.floor(random() * 10_000));
      }
    },
  };
}
