/**
 * The Vodacom M-Pesa connector as a unit: Vodacom Tanzania and Vodacom DRC through the M-Pesa
 * OpenAPI (C2B, B2C, reversals, transaction status, beneficiary names). The OpenAPI answers every
 * call itself: nothing calls back, so it has no callback routes.
 */
import type { ConnectorUnit } from '../adapter';
import { minorUnits } from '../amount-rules';
import { createVodacomConnector } from './client';
import { VODACOM_MARKETS, VODACOM_VARIABLES, readVodacomSettings, type VodacomSettings } from './settings';

export * from './client';
export * from './protocol';
export { VODACOM_MARKETS, type VodacomMarket, type VodacomSettings } from './settings';

const amountRule = minorUnits('M-Pesa');

export const vodacom: ConnectorUnit<'vodacom', VodacomSettings | null> = {
  name: 'vodacom',
  configKey: 'vodacom',
  operator: 'Vodacom M-Pesa',
  variables: VODACOM_VARIABLES,
  readSettings: readVodacomSettings,
  routesOf: (settings) =>
    (settings?.markets ?? []).map((market) => ({ network: market.network, currency: market.currency })),
  callsBack: false,
  inFlight: {
    resends: false,
    windowSeconds: 120,
    source: [
      'The M-Pesa OpenAPI holds a customer payment while the subscriber enters the PIN.',
      'That takes about a minute on the phone, and it publishes no other bound.',
      'So 120 s after the last send.',
    ].join(' '),
  },
  create: (settings) => ({
    ...createVodacomConnector(settings!),
    routes: vodacom.routesOf(settings),
    amountProblem: (_network, currency, amount) => amountRule(currency, amount),
  }),
  describe: (settings, simulated) =>
    VODACOM_MARKETS.map((known) => {
      const market = settings?.markets.find((served) => served.market === known.market);
      if (!settings || !market)
        return { network: known.network, currency: known.currencies[0], connector: 'none', detail: simulated };
      return {
        network: known.network,
        currency: market.currency,
        connector: 'Vodacom M-Pesa',
        detail: [
          `${new URL(settings.baseUrl).host}, ${market.context}, service provider ${settings.serviceProviderCode}:`,
          'C2B, B2C, reversals, beneficiary names',
        ].join(' '),
      };
    }),
};
