/**
 * The exactly-once checker's schedules: what one operation does and how each operator times it,
 * drawn from a seed by a small PRNG, so that any schedule is replayed from its seed and index alone.
 */

/** mulberry32: 32 bits of state, enough to draw a schedule, and the same numbers on every runtime. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One stream per (seed, stream, index): a schedule's draws do not depend on how many came before it. */
export function random(seed: number, stream: string, index: number) {
  let hash = seed >>> 0;
  for (const char of `${stream}:${index}`) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193) >>> 0;
  const next = prng(hash);
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    chance: (p: number) => next() < p,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
  };
}

export type Route = 'daraja' | 'momo' | 'airtel' | 'vodacom' | 'pawapay';
export type Kind = 'collect' | 'payout' | 'reversal' | 'paybill';

export type Network = {
  name: string;
  currency: 'KES' | 'UGX' | 'TZS';
  /** The first digits of its numbers (test/helpers.ts uniqueNumber). */
  prefix: string;
  /** Its routes, first tried first (direct connectors before pawaPay: src/network/registry.ts). */
  routes: readonly Route[];
};

/** Every connector, and two networks with two roads (a direct connector, then pawaPay). */
export const NETWORKS: readonly Network[] = [
  { name: 'Safaricom', currency: 'KES', prefix: '+254711', routes: ['daraja'] },
  { name: 'MTN Uganda', currency: 'UGX', prefix: '+256776', routes: ['momo', 'pawapay'] },
  { name: 'Airtel Uganda', currency: 'UGX', prefix: '+256701', routes: ['airtel'] },
  { name: 'Airtel Tanzania', currency: 'TZS', prefix: '+255686', routes: ['airtel', 'pawapay'] },
  { name: 'Vodacom Tanzania', currency: 'TZS', prefix: '+255741', routes: ['vodacom'] },
  { name: 'Tigo Tanzania', currency: 'TZS', prefix: '+25565', routes: ['pawapay'] },
];

/**
 * How an operator times one call: it answers at once, after the client gave up, or never; it
 * processes the call before answering, after (a status query in between finds nothing), or never;
 * and its answer is its own or its system error (test/simulators/outage.ts `LateAnswer`).
 */
export type Timing = {
  answer: 'at-once' | 'after-timeout' | 'never';
  process: 'before' | 'after' | 'never';
  reply: 'real' | 'error';
};
export const ON_TIME: Timing = { answer: 'at-once', process: 'before', reply: 'real' };
export const isOnTime = (timing: Timing): boolean =>
  timing.answer === 'at-once' && timing.process === 'before' && timing.reply === 'real';

/** What the subscriber's operator says after the subscriber decided: once, never, twice, late, or the opposite. */
export type Callback = 'truthful' | 'none' | 'twice' | 'late' | 'lie';

export type Paybill = {
  /** Whose bill reference the subscriber's paybill payment names: another merchant's open request, none we know, or a forged confirmation. */
  reference: 'other-merchant' | 'unknown' | 'forged';
  /** When it comes: while the STK push is being settled, or once its request is final. */
  at: 'during' | 'after';
};

export type Schedule = {
  index: number;
  kind: Kind;
  network: Network;
  /** The route whose call is timed (the operation's first route; a reversal goes back the way its collection came). */
  route: Route;
  timing: Timing;
  /** How much longer than the client's timeout a late answer is held. */
  holdMs: number;
  /** The subscriber pays (or receives); otherwise declines (or the payout fails). */
  succeeds: boolean;
  callback: Callback;
  amount: number;
  /** Which of the batch's merchants asks, and which other one a paybill payment names. */
  merchant: number;
  otherMerchant: number;
  paybill: Paybill | null;
};

export type BatchEvents = {
  /** The worker killed (SIGKILL) this long after the batch starts, then started again. */
  killAtMs: number | null;
  outage: { route: Route; mode: 'refused' | 'error' | 'hang'; atMs: number; forMs: number } | null;
};

export const MERCHANTS = 3;
const ROUTES: readonly Route[] = ['daraja', 'momo', 'airtel', 'vodacom', 'pawapay'];

/**
 * The timings drawn: on time, or one of the shapes a slow operator takes (a 500 after or before
 * processing, an answer after the client gave up with the work done before or after it, none).
 */
const SHAPES: readonly Timing[] = [
  ON_TIME,
  { answer: 'at-once', process: 'before', reply: 'error' },
  { answer: 'at-once', process: 'never', reply: 'error' },
  { answer: 'after-timeout', process: 'before', reply: 'real' },
  { answer: 'after-timeout', process: 'after', reply: 'real' },
  { answer: 'after-timeout', process: 'after', reply: 'error' },
  { answer: 'never', process: 'before', reply: 'error' },
  { answer: 'never', process: 'never', reply: 'error' },
];

/** Every network with every kind of operation, and paybill look-alikes on Safaricom: schedule i takes the i-th, in turn. */
const COMBINATIONS: readonly { kind: Kind; network: Network }[] = [
  ...NETWORKS.flatMap((network) => (['collect', 'payout', 'reversal'] as const).map((kind) => ({ kind, network }))),
  { kind: 'paybill', network: NETWORKS[0]! },
  { kind: 'paybill', network: NETWORKS[0]! },
];

/** Schedule `index` of `seed`: the same on every run. */
export function scheduleOf(seed: number, index: number): Schedule {
  const rng = random(seed, 'schedule', index);
  const { kind, network } = COMBINATIONS[index % COMBINATIONS.length]!;
  const merchant = rng.int(0, MERCHANTS - 1);
  return {
    index,
    kind,
    network,
    route: network.routes[0]!,
    timing: rng.pick(SHAPES),
    holdMs: rng.int(200, 1700),
    succeeds: rng.chance(0.8),
    callback: rng.pick(['truthful', 'truthful', 'none', 'twice', 'late', 'lie'] as const),
    amount: rng.int(10, 90) * 100,
    merchant,
    otherMerchant: (merchant + rng.int(1, MERCHANTS - 1)) % MERCHANTS,
    paybill:
      kind === 'paybill'
        ? {
            reference: rng.pick(['other-merchant', 'other-merchant', 'unknown', 'forged'] as const),
            at: rng.pick(['during', 'after'] as const),
          }
        : null,
  };
}

/** What happens to a whole batch: in some, the worker is killed, or a route goes down mid-operation. */
export function batchEventsOf(seed: number, batch: number): BatchEvents {
  const rng = random(seed, 'batch', batch);
  return {
    killAtMs: rng.chance(0.25) ? rng.int(500, 6000) : null,
    outage: rng.chance(0.3)
      ? {
          route: rng.pick(ROUTES),
          mode: rng.pick(['refused', 'error', 'hang'] as const),
          atMs: rng.int(0, 4000),
          forMs: rng.int(500, 4000),
        }
      : null,
  };
}

export const describeTiming = (timing: Timing): string =>
  isOnTime(timing) ? 'on time' : `answers ${timing.answer}, processes ${timing.process}, replies ${timing.reply}`;

export function describeSchedule(schedule: Schedule): string {
  const parts = [
    `${schedule.kind} ${schedule.amount} ${schedule.network.currency} on ${schedule.network.name}`,
    `${schedule.route}: ${describeTiming(schedule.timing)}`,
  ];
  parts.push(`subscriber ${schedule.succeeds ? 'completes' : 'refuses'}, callback ${schedule.callback}`);
  if (schedule.paybill) parts.push(`paybill naming ${schedule.paybill.reference}, ${schedule.paybill.at} the push`);
  return parts.join('; ');
}
