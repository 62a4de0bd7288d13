/**
 * A network's availability as merchants see it (`GET /api/network-status`): for collections and
 * for payouts, whether its usual route takes traffic, only a fallback does, or none. Nothing of the
 * routes themselves (operators, hosts, faults) is shown.
 */
import * as v from 'valibot';
import type { Network } from './networks';
import { described } from './shapes';

/** `operational`: its first route takes traffic; `degraded`: only a later route does; `down`: none does. */
const NETWORK_AVAILABILITIES = ['operational', 'degraded', 'down'] as const;
type NetworkAvailability = (typeof NETWORK_AVAILABILITIES)[number];

const Availability = v.picklist(NETWORK_AVAILABILITIES);

export const NetworkStatusSchema = v.pipe(
  v.object({
    id: described(v.number(), "The network's id in `GET /api/networks`."),
    network: described(v.string(), "The network's name."),
    currencies: described(v.array(v.string()), "The currencies moved on it: its country's (BXC for the sandbox)."),
    collect: described(
      Availability,
      [
        'Collections (prompts):',
        '`operational` (its usual route), `degraded` (a fallback route only: slower or dearer),',
        '`down` (no route now: try later).',
      ].join(' '),
    ),
    payout: described(Availability, 'Payments and payouts: `operational`, `degraded` or `down`, as for `collect`.'),
  }),
  v.description(
    [
      'A mobile network this deployment moves money on or simulates,',
      'with its availability now for collections and for payouts.',
    ].join(' '),
  ),
  v.examples([{ id: 2, network: 'MTN Uganda', currencies: ['UGX'], collect: 'operational', payout: 'degraded' }]),
);
type NetworkStatusResource = v.InferOutput<typeof NetworkStatusSchema>;

/** A network's availability for each operation. */
export type NetworkStatus = {
  network: Network;
  currencies: readonly string[];
  collect: NetworkAvailability;
  payout: NetworkAvailability;
};

export const serializeNetworkStatus = (status: NetworkStatus): NetworkStatusResource => ({
  id: status.network.id,
  network: status.network.name,
  currencies: [...status.currencies],
  collect: status.collect,
  payout: status.payout,
});

/**
 * A route's recent success rate as people read it: a percentage with one decimal, or `—` with no outcome in the window.
 */
export const successRateText = (rate: number | null): string => (rate === null ? '—' : `${(rate * 100).toFixed(1)}%`);
