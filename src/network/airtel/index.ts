/**
 * The Airtel Money connector as a unit: the Airtel networks of the countries it is configured for
 * (USSD push, disbursements, refunds, user enquiry), its settings and its callback route.
 */
import { currenciesOfNetwork, knownNetworks } from '../../domain/networks';
import type { ConnectorUnit } from '../adapter';
import { wholeAmounts } from '../amount-rules';
import { AIRTEL_CALLBACK_ROUTES } from './callbacks';
import { createAirtelConnector } from './client';
import { AIRTEL_CALLBACK_PATH, AIRTEL_NETWORKS, airtelNetworks } from './protocol';
import { AIRTEL_VARIABLES, readAirtelSettings, type AirtelSettings } from './settings';

export * from './client';
export * from './protocol';
export type { AirtelCountry, AirtelSettings } from './settings';

const amountRule = wholeAmounts('Airtel Money');

export const airtel: ConnectorUnit<'airtel', AirtelSettings | null> = {
  name: 'airtel',
  configKey: 'airtel',
  operator: 'Airtel Money',
  variables: AIRTEL_VARIABLES,
  readSettings: readAirtelSettings,
  routesOf: (settings) =>
    (settings?.countries ?? []).flatMap(({ country, currency }) => {
      const network = AIRTEL_NETWORKS[country];
      return network ? [{ network, currency }] : [];
    }),
  // Airtel calls back at the one URL registered in its portal (PUBLIC_BASE_URL + AIRTEL_CALLBACK_PATH), never per
  // request.
  callsBack: true,
  inFlight: {
    resends: true,
    windowSeconds: 120,
    source: [
      'Airtel publishes no bound on how long its gateway holds a request.',
      'Its USSD push times out on the phone within about a minute.',
      'So 120 s after the last send: six times our 20 s timeout.',
    ].join(' '),
  },
  create: (settings) => ({
    ...createAirtelConnector(settings!),
    routes: airtel.routesOf(settings),
    amountProblem: (_network, currency, amount) => amountRule(currency, amount),
  }),
  describe: (settings, simulated) =>
    knownNetworks()
      .filter((network) => airtelNetworks([network]).includes(network.name))
      .map((network) => {
        const country = settings?.countries.find((served) => served.country === network.country);
        if (!settings || !country)
          return {
            network: network.name,
            currency: currenciesOfNetwork(network)[0] ?? '',
            connector: 'none',
            detail: simulated,
          };
        return {
          network: network.name,
          currency: country.currency,
          connector: 'Airtel Money',
          detail: `${new URL(settings.baseUrl).host}: USSD push, disbursements, refunds, user enquiry`,
        };
      }),
  callbacks: {
    routes: AIRTEL_CALLBACK_ROUTES,
    metricName: 'Airtel',
    owns: (path) => path === AIRTEL_CALLBACK_PATH,
    account: (settings) => `Airtel:${settings?.clientId ?? '-'}`,
  },
};
