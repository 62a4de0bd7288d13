/**
 * The network adapter of a process, built from configuration: the sandbox network, and the real
 * operators' connectors that are configured (M-Pesa Daraja, MTN MoMo once per market, Airtel Money, Vodacom M-Pesa), behind one router.
 */
import type { Config } from '../config';
import type { Sql } from '../db';
import type { Launcher } from '../temporal/launcher';
import type { NetworkAdapter } from './adapter';
import { createAirtelConnector } from './airtel';
import { createDarajaConnector } from './daraja';
import { createMomoConnector } from './momo';
import { createNetworkRouter, type Connectors } from './router';
import { CONNECTED_NETWORK, MOMO_MARKETS, VODACOM_MARKETS, airtelNetworks, currenciesOfNetwork, knownNetworks } from '../domain/networks';
import { createSandboxNetwork } from './sandbox';
import { createVodacomConnector } from './vodacom';

/** The configured connectors, calling back at PUBLIC_BASE_URL. */
export function createConnectors(config: Config, sql: Sql): Connectors {
  const callbackBaseUrl = config.publicBaseUrl ?? '';
  return {
    daraja: config.mpesa ? createDarajaConnector(config.mpesa, { sql, callbackBaseUrl }, config.networkStatusPollSeconds) : null,
    momo: new Map(config.momoMarkets.map((market) => [market.network, createMomoConnector(market, { sql, callbackBaseUrl })])),
    // Airtel calls back at the one URL registered in its portal (PUBLIC_BASE_URL + AIRTEL_CALLBACK_PATH), never per request.
    airtel: config.airtel ? createAirtelConnector(config.airtel, { sql }) : null,
    // The M-Pesa OpenAPI answers every call itself: nothing calls back.
    vodacom: config.vodacom ? createVodacomConnector(config.vodacom, { sql }) : null,
  };
}

/** Every network the process can reach, as one adapter. `launcher` lets the sandbox pay (a worker's); null for name look-ups only. */
export function createNetworks(config: Config, sql: Sql, launcher: Launcher | null): NetworkAdapter {
  const sandbox = createSandboxNetwork({
    sql, launcher, paymentDelaySeconds: config.collectionRequests.sandboxPaymentDelaySeconds, payoutDelaySeconds: config.payouts.sandboxDelaySeconds,
  });
  return createNetworkRouter(sandbox, createConnectors(config, sql), config.sandbox);
}

/** How each network that moves real money is reached, for operators and the console (never a secret). */
type NetworkConnection = { network: string; currency: string; connector: string; detail: string };

export function describeConnections(config: Config): NetworkConnection[] {
  const momo = (network: string, currency: string): NetworkConnection => {
    const market = config.momoMarkets.find((candidate) => candidate.network === network);
    return market
      ? {
        network, currency: market.currency, connector: 'MTN MoMo',
        detail: `${host(market.baseUrl)}, environment ${market.targetEnvironment}: request to pay, transfers, account holder look-ups`,
      }
      : { network, currency, connector: 'none', detail: simulated };
  };
  const simulated = config.sandbox ? 'simulated by the sandbox (sandbox mode)' : 'not connected: refused outside sandbox mode';
  const host = (url: string) => new URL(url).host;
  return [
    { network: 'Sandbox', currency: 'BXC', connector: 'sandbox network', detail: config.sandbox ? 'on (sandbox mode)' : 'off outside sandbox mode' },
    config.mpesa
      ? {
        network: CONNECTED_NETWORK.daraja, currency: 'KES', connector: 'M-Pesa Daraja',
        detail: `${host(config.mpesa.baseUrl)}, paybill ${config.mpesa.shortcode}: STK push, paybill validation and confirmation, B2C, reversals`,
      }
      : { network: CONNECTED_NETWORK.daraja, currency: 'KES', connector: 'none', detail: simulated },
    ...MOMO_MARKETS.map((market) => momo(market.network, market.currency)),
    ...airtelConnections(config, simulated),
    ...VODACOM_MARKETS.map((known): NetworkConnection => {
      const market = config.vodacom?.markets.find((served) => served.market === known.market);
      if (!config.vodacom || !market) return { network: known.network, currency: known.currencies[0], connector: 'none', detail: simulated };
      return {
        network: known.network, currency: market.currency, connector: 'Vodacom M-Pesa',
        detail: `${host(config.vodacom.baseUrl)}, ${market.context}, service provider ${config.vodacom.serviceProviderCode}: C2B, B2C, reversals, beneficiary names`,
      };
    }),
  ];
}

/** The Airtel networks: those of AIRTEL_COUNTRIES through the Airtel connector, the others not connected. */
function airtelConnections(config: Config, simulated: string): NetworkConnection[] {
  return knownNetworks().filter((network) => airtelNetworks([network]).includes(network.name)).map((network) => {
    const country = config.airtel?.countries.find((served) => served.country === network.country);
    if (!config.airtel || !country) return { network: network.name, currency: currenciesOfNetwork(network)[0] ?? '', connector: 'none', detail: simulated };
    return {
      network: network.name, currency: country.currency, connector: 'Airtel Money',
      detail: `${new URL(config.airtel.baseUrl).host}: USSD push, disbursements, refunds, user enquiry`,
    };
  });
}
