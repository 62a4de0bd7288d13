/**
 * The pawaPay connector as a unit (Merchant API v2): the networks of the providers the merchant's
 * pawaPay account is enabled for (PAWAPAY_PROVIDERS) that no direct connector serves: deposits,
 * payouts and refunds, with the providers' limits from `GET /v2/active-conf` as the API's validation rules.
 * pawaPay has no name look-up: instant verification says "not supported" on its networks.
 */
import { logger } from '../../log';
import type { ConnectorUnit, MoneyOperation } from '../adapter';
import { PAWAPAY_CALLBACK_PATHS, PAWAPAY_CALLBACK_ROUTES } from './callbacks';
import { createPawapayConnector } from './client';
import { readAvailability } from './availability';
import { createProviderLimits } from './conf';
import { PAWAPAY_PROVIDERS } from './limits';
import { PAWAPAY_VARIABLES, readPawapaySettings, type PawapaySettings } from './settings';

export { PAWAPAY_CALLBACK_PATHS } from './callbacks';
export type { PawapaySettings } from './settings';

const OPERATION_TYPES: Record<MoneyOperation, 'DEPOSIT' | 'PAYOUT' | 'REFUND'> = {
  collection: 'DEPOSIT',
  payment: 'PAYOUT',
  reversal: 'REFUND',
};
const CALLBACK_PATHS: ReadonlySet<string> = new Set(Object.values(PAWAPAY_CALLBACK_PATHS));
/** The networks pawaPay is this service's only route to (no direct connector exists for them). */
const AGGREGATED_ONLY = ['TIGO_TZA', 'HALOTEL_TZA', 'VODAFONE_GHA', 'AIRTELTIGO_GHA', 'ORANGE_COD'];

export const pawapay: ConnectorUnit<'pawapay', PawapaySettings | null> = {
  name: 'pawapay',
  configKey: 'pawapay',
  operator: 'pawaPay',
  variables: PAWAPAY_VARIABLES,
  readSettings: readPawapaySettings,
  routesOf: (settings) =>
    (settings?.providers ?? []).flatMap((provider) =>
      provider.currencies.map((currency) => ({ network: provider.network, currency })),
    ),
  callsBack: true,
  inFlight: {
    resends: true,
    windowSeconds: 120,
    source: [
      'pawaPay documents that a deposit, payout or refund sent again under the same id is ignored (DUPLICATE_IGNORED).',
      'It says processing takes seconds to minutes, and gives no bound on a held request.',
      'So 120 s after the last send: six times our 20 s timeout.',
    ].join(' '),
  },
  create: (settings) => {
    const limits = createProviderLimits(settings!, (message, fields) => logger.warn(message, fields));
    const providerOf = (network: string) => settings!.providers.find((provider) => provider.network === network)!;
    return {
      ...createPawapayConnector(settings!, { formatAmount: limits.formatAmount }),
      routes: pawapay.routesOf(settings),
      amountProblem: (network, currency, amount, operation) =>
        limits.amountProblem(providerOf(network.name).code, currency, amount, OPERATION_TYPES[operation]),
      warmUp: limits.keepFresh,
      availability: async () =>
        (await readAvailability(settings!)).flatMap((provider) => [
          { network: provider.network, operation: 'collect' as const, availability: provider.collect },
          { network: provider.network, operation: 'payout' as const, availability: provider.payout },
        ]),
    };
  },
  describe: (settings, simulated) => {
    const enabled = settings?.providers ?? [];
    const shown = [
      ...enabled.map((provider) => provider.code),
      ...AGGREGATED_ONLY.filter((code) => !enabled.some((provider) => provider.code === code)),
    ];
    return shown.map((code) => {
      const provider = PAWAPAY_PROVIDERS[code]!;
      if (!settings || !enabled.some((candidate) => candidate.code === code)) {
        return { network: provider.network, currency: provider.currencies[0]!, connector: 'none', detail: simulated };
      }
      return {
        network: provider.network,
        currency: provider.currencies.join(' or '),
        connector: 'pawaPay',
        detail: [
          `${new URL(settings.baseUrl).host}, provider ${code} (${provider.name}):`,
          'deposits, payouts, refunds; no name look-up',
        ].join(' '),
      };
    });
  },
  callbacks: {
    routes: PAWAPAY_CALLBACK_ROUTES,
    metricName: 'pawaPay',
    owns: (path) => CALLBACK_PATHS.has(path),
    account: () => 'pawaPay',
  },
};
