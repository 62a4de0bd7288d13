/**
 * Whether pawaPay is taking payments through each provider of the account right now, from
 * `GET /v2/availability` (https://docs.pawapay.io/v2/api-reference/toolkit/availability): pawaPay's
 * operations team marks a provider per operation type OPERATIONAL, DELAYED (payouts are held in
 * ENQUEUED until the provider recovers) or CLOSED (every new payment of that type is rejected with
 * PROVIDER_TEMPORARILY_UNAVAILABLE). The answer lists countries, each with its providers:
 *
 *   [{ country: "GHA", providers: [{ provider: "MTN_MOMO_GHA",
 *        operationTypes: [{ operationType: "DEPOSIT", status: "OPERATIONAL" },
 *                         { operationType: "PAYOUT", status: "DELAYED" }, …] }] }]
 *
 * Operation types other than deposits and payouts (refunds, remittances) are not read here: a
 * route is chosen for collecting and for paying out.
 */
import { callOperator } from '../operator-http';
import { PAWAPAY_PROVIDERS } from './limits';
import type { PawapaySettings } from './settings';

type AvailabilityStatus = 'operational' | 'delayed' | 'closed';

/**
 * One provider of the account: the service's network it reaches, and pawaPay's status for deposits (collect) and
 * payouts.
 */
export type ProviderAvailability = {
  network: string;
  provider: string;
  collect: AvailabilityStatus;
  payout: AvailabilityStatus;
};

const STATUSES: Readonly<Record<string, AvailabilityStatus>> = {
  OPERATIONAL: 'operational',
  DELAYED: 'delayed',
  CLOSED: 'closed',
};

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const listOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** Each provider's statuses by operation type, from the answer's countries. */
function statusesByProvider(body: unknown[]): Map<string, Map<string, string>> {
  const found = new Map<string, Map<string, string>>();
  for (const country of body.filter(isRecord)) {
    for (const provider of listOf(country.providers).filter(isRecord)) {
      if (typeof provider.provider !== 'string') continue;
      const statuses = new Map<string, string>();
      for (const entry of listOf(provider.operationTypes).filter(isRecord)) {
        if (typeof entry.operationType === 'string' && typeof entry.status === 'string')
          statuses.set(entry.operationType, entry.status);
      }
      found.set(provider.provider, statuses);
    }
  }
  return found;
}

/**
 * A status as the router takes it. A provider or operation the answer leaves out, or a status
 * pawaPay has not documented, counts as closed: only what pawaPay says it takes is sent to it.
 */
const statusOf = (statuses: Map<string, string> | undefined, operation: 'DEPOSIT' | 'PAYOUT'): AvailabilityStatus =>
  STATUSES[statuses?.get(operation) ?? ''] ?? 'closed';

/**
 * The availability of every provider in `settings.providers`, in their order. Throws when pawaPay
 * cannot be reached in time, answers anything but 200, or answers what is not a list of countries:
 * the caller keeps what it knew before rather than take an unreadable answer for an outage.
 */
export async function readAvailability(settings: PawapaySettings): Promise<ProviderAvailability[]> {
  const answer = await callOperator({
    method: 'GET',
    url: `${settings.baseUrl}/v2/availability`,
    headers: { Authorization: `Bearer ${settings.apiToken}` },
    timeoutMs: 10_000,
  });
  if (answer.status !== 200) throw new Error(`pawaPay availability answered HTTP ${answer.status}`);
  if (!Array.isArray(answer.body))
    throw new Error('pawaPay availability answered something other than a list of countries');
  const statuses = statusesByProvider(answer.body);
  return settings.providers.map((provider) => ({
    network: PAWAPAY_PROVIDERS[provider.code]?.network ?? provider.network,
    provider: provider.code,
    collect: statusOf(statuses.get(provider.code), 'DEPOSIT'),
    payout: statusOf(statuses.get(provider.code), 'PAYOUT'),
  }));
}
