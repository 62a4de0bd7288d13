/**
 * The MTN MoMo connector as a unit: one market per MTN network (MTN Uganda, Ghana, Rwanda), each
 * with its own credentials (request to pay, transfers, account holder look-ups), its settings and
 * its callback route.
 */
import type { Network } from '../../domain/networks';
import type { Connector, ConnectorUnit } from '../adapter';
import { minorUnits } from '../amount-rules';
import { MOMO_CALLBACK_ROUTES } from './callbacks';
import { MOMO_CALLBACK_PATH, createMomoConnector } from './client';
import { MOMO_MARKETS, MOMO_VARIABLES, readMomoSettings, type MomoSettings } from './settings';

export * from './client';
export { MOMO_MARKETS, MOMO_SANDBOX_ENVIRONMENT, type MomoSettings } from './settings';

const amountRule = minorUnits('MTN MoMo');

export const momo: ConnectorUnit<'momoMarkets', MomoSettings[]> = {
  name: 'momo',
  configKey: 'momoMarkets',
  operator: 'MTN MoMo',
  variables: MOMO_VARIABLES,
  readSettings: readMomoSettings,
  routesOf: (markets) => markets.map((market) => ({ network: market.network, currency: market.currency })),
  callsBack: true,
  inFlight: {
    resends: true,
    windowSeconds: 120,
    source: [
      'MTN publishes no bound on how long its gateway holds a request.',
      'A transfer held 25 s and then processed was seen.',
      'So 120 s after the last send: six times our 20 s timeout.',
    ].join(' '),
  },
  create: (markets, deps) => {
    const byNetwork = new Map(markets.map((market) => [market.network, createMomoConnector(market, deps)]));
    // The router hands a market only the networks it serves.
    const market = (network: Network) => byNetwork.get(network.name)!;
    return {
      routes: momo.routesOf(markets),
      operatorIdFor: (operation) => market(operation.network).operatorIdFor(operation),
      requestPayment: (prompt) => market(prompt.network).requestPayment(prompt),
      promptStatus: (prompt) => market(prompt.network).promptStatus(prompt),
      reportedPaymentStatus: () => [...byNetwork.values()][0]!.reportedPaymentStatus(),
      sendMoney: (payout) => market(payout.network).sendMoney(payout),
      payoutStatus: (payout) => market(payout.network).payoutStatus(payout),
      lookup: (operation) => market(operation.network).lookup(operation),
      lookupName: (phoneNumber, network) => market(network).lookupName(phoneNumber),
      amountProblem: (_network, currency, amount) => amountRule(currency, amount),
    } satisfies Omit<Connector, 'name' | 'inFlight'>;
  },
  describe: (markets, simulated) =>
    MOMO_MARKETS.map((known) => {
      const market = markets.find((candidate) => candidate.network === known.network);
      return market
        ? {
            network: known.network,
            currency: market.currency,
            connector: 'MTN MoMo',
            detail: [
              `${new URL(market.baseUrl).host}, environment ${market.targetEnvironment}:`,
              'request to pay, transfers, account holder look-ups',
            ].join(' '),
          }
        : { network: known.network, currency: known.currency, connector: 'none', detail: simulated };
    }),
  callbacks: {
    routes: MOMO_CALLBACK_ROUTES,
    metricName: 'MTN Uganda',
    owns: (path) => path.startsWith(`${MOMO_CALLBACK_PATH}/`),
    account: (markets) => `MTN Uganda:${markets.map((market) => market.targetEnvironment).join(',') || '-'}`,
  },
};
