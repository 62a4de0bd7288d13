/**
 * The cluster's network: one Linux network namespace per node, each with one veth whose other end
 * is on a bridge in the machine's own namespace, on a private /24 that overlaps none of the
 * machine's routes. It is sealed: the namespaces get no default route and nothing forwards or
 * NATs their traffic, so a node reaches the other nodes, the bridge's own address (the machine,
 * where this program runs) and its own loopback, nothing else.
 *
 * A partition is made without the kernel's traffic-control modules (this kind of machine has no
 * sch_netem): each side of a cut pair is given a permanent neighbour entry for the other with a
 * MAC address nobody has, so the bridge floods the frames and every namespace drops them. Packets
 * vanish silently, as on a real network: a connection in flight hangs, a new one times out.
 */
import { spawnSync } from 'node:child_process';

export const NODES = ['db', 'temporal', 'app-a', 'app-b', 'operators', 'merchants', 'lb'] as const;
export type NodeName = (typeof NODES)[number];

const HOST_NUMBER: Record<NodeName, number> = {
  db: 10,
  temporal: 11,
  'app-a': 21,
  'app-b': 22,
  operators: 30,
  merchants: 40,
  lb: 50,
};
const PREFIX = 'mmc';
const BRIDGE = `${PREFIX}-br0`;
/** The MAC address a cut peer is pointed at: locally administered, on no interface. */
const NOWHERE_MAC = '02:00:5e:00:53:99';
/** The /24 networks tried in turn; the first that overlaps none of the machine's routes is used. */
const CANDIDATE_SUBNETS = ['10.213.7', '10.231.41', '172.30.213', '192.168.213'];

export type Network = {
  subnet: string;
  bridgeAddress: string;
  address: Record<NodeName, string>;
  namespace(node: NodeName): string;
};

function ip(args: string[], { allowFailure = false } = {}): string {
  const result = spawnSync('ip', args, { encoding: 'utf8' });
  if (result.status !== 0 && !allowFailure)
    throw new Error(`ip ${args.join(' ')} failed: ${result.stderr || result.error?.message}`);
  return result.stdout ?? '';
}

const namespaceOf = (node: NodeName) => `${PREFIX}-${node}`;
/** veth names are at most 15 characters. */
const vethOf = (node: NodeName) => `${PREFIX}v-${node}`.slice(0, 15);

function toNumber(address: string): number {
  return address.split('.').reduce((sum, part) => sum * 256 + Number(part), 0) >>> 0;
}

/** Whether 10.x.y.0/24 (`base`) overlaps a route or address the machine already has. */
export function overlapsHostRoutes(base: string, routes: string): boolean {
  const start = toNumber(`${base}.0`);
  const end = start + 255;
  for (const match of routes.matchAll(/(?:^|\s)(\d+\.\d+\.\d+\.\d+)(?:\/(\d+))?/g)) {
    const bits = Number(match[2] ?? 32);
    if (bits === 0) continue; // the default route is not a network the machine is on
    const size = 2 ** (32 - bits);
    const first = Math.floor(toNumber(match[1]!) / size) * size;
    const last = first + size - 1;
    if (first <= end && last >= start) return true;
  }
  return false;
}

/** Whether this process can make namespaces (root, with iproute2), or why not. */
export function namespacesUnavailable(): string | null {
  if (typeof process.getuid === 'function' && process.getuid() !== 0)
    return 'the cluster needs the machine’s root user (ip netns add)';
  const probe = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) return `ip netns does not work here: ${probe.stderr || probe.error?.message}`;
  return null;
}

export function planNetwork(): Network {
  const routes = `${ip(['-4', 'route', 'show', 'table', 'all'], { allowFailure: true })}\n${ip(['-4', 'addr'])}`;
  // Our own bridge, if a previous run left it, is not the machine's network.
  const foreign = routes
    .split('\n')
    .filter((line) => !line.includes(BRIDGE))
    .join('\n');
  const base = CANDIDATE_SUBNETS.find((candidate) => !overlapsHostRoutes(candidate, foreign));
  if (!base)
    throw new Error(`every candidate subnet (${CANDIDATE_SUBNETS.join(', ')}) overlaps a route of this machine`);
  const address = Object.fromEntries(NODES.map((node) => [node, `${base}.${HOST_NUMBER[node]}`])) as Record<
    NodeName,
    string
  >;
  return { subnet: `${base}.0/24`, bridgeAddress: `${base}.1`, address, namespace: namespaceOf };
}

/** Removes every namespace, veth and the bridge a cluster made (also those of an earlier run that did not end cleanly). */
export function teardownNetwork(): void {
  const listed = ip(['netns', 'list'], { allowFailure: true });
  for (const line of listed.split('\n')) {
    const name = line.split(' ')[0];
    if (name?.startsWith(`${PREFIX}-`)) ip(['netns', 'del', name], { allowFailure: true });
  }
  for (const node of NODES) ip(['link', 'del', vethOf(node)], { allowFailure: true });
  ip(['link', 'del', BRIDGE], { allowFailure: true });
}

export function createNetwork(network: Network): void {
  teardownNetwork();
  ip(['link', 'add', BRIDGE, 'type', 'bridge']);
  ip(['addr', 'add', `${network.bridgeAddress}/24`, 'dev', BRIDGE]);
  ip(['link', 'set', BRIDGE, 'up']);
  for (const node of NODES) {
    const namespace = namespaceOf(node);
    ip(['netns', 'add', namespace]);
    ip(['link', 'add', vethOf(node), 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace]);
    ip(['link', 'set', vethOf(node), 'master', BRIDGE]);
    ip(['link', 'set', vethOf(node), 'up']);
    ip(['-n', namespace, 'link', 'set', 'lo', 'up']);
    ip(['-n', namespace, 'addr', 'add', `${network.address[node]}/24`, 'dev', 'eth0']);
    ip(['-n', namespace, 'link', 'set', 'eth0', 'up']);
  }
  assertSealed(network);
}

/** No namespace has a route beyond the cluster's /24 (no default route, nothing else). */
export function assertSealed(network: Network): void {
  for (const node of NODES) {
    const routes = ip(['-n', namespaceOf(node), '-4', 'route', 'show'])
      .trim()
      .split('\n')
      .filter(Boolean);
    const outside = routes.filter((route) => !route.startsWith(network.subnet));
    if (outside.length > 0) throw new Error(`namespace ${namespaceOf(node)} has routes out of the cluster: ${outside}`);
  }
}

/** Cuts `a` and `b` from each other (both directions), silently. */
export function cut(network: Network, a: NodeName, b: NodeName): void {
  for (const [from, to] of [
    [a, b],
    [b, a],
  ] as const)
    ip([
      '-n',
      namespaceOf(from),
      'neigh',
      'replace',
      network.address[to],
      'lladdr',
      NOWHERE_MAC,
      'dev',
      'eth0',
      'nud',
      'permanent',
    ]);
}

export function heal(network: Network, a: NodeName, b: NodeName): void {
  for (const [from, to] of [
    [a, b],
    [b, a],
  ] as const)
    ip(['-n', namespaceOf(from), 'neigh', 'del', network.address[to], 'dev', 'eth0'], { allowFailure: true });
}

/** Heals every cut. */
export function healAll(): void {
  for (const node of NODES) ip(['-n', namespaceOf(node), 'neigh', 'flush', 'all'], { allowFailure: true });
}

/** The command line that runs `command` inside `node`'s namespace. */
export const inNamespace = (node: NodeName, command: string[]): string[] => [
  'ip',
  'netns',
  'exec',
  namespaceOf(node),
  ...command,
];
