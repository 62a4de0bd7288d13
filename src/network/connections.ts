/**
 * The network adapter of a process, built from configuration: the sandbox network, and the real
 * operators' connectors that are configured (./registry.ts), behind one router.
 */
import type { Sql } from '../db';
import { createRouteHealth, type RouteHealth } from '../services/networks/route-health';
import { createSandboxNetwork } from './sandbox';
import type { Connector, NetworkAdapter, NetworkConnection } from './adapter';
import { createNetworkRecords } from '../services/networks/records';
import {
  createConnectors as createUnitConnectors,
  describeConnectorNetworks,
  type ConnectorSettings,
} from './registry';
import { createNetworkRouter } from './router';
import { currenciesOfNetwork, knownNetworks } from '../domain/networks';

/** The connectors that are on, keeping their records through the core's port over the database (registry.ts). */
export const createConnectors = (config: NetworkSettings, sql: Sql): Connector[] =>
  createUnitConnectors(config, createNetworkRecords(sql));

/**
 * What the networks of a process are built from: the configuration's connectors, sandbox mode and the sandbox's delays.
 */
type NetworkSettings = ConnectorSettings & {
  sandbox: boolean;
  routesScope: string;
  publicBaseUrl: string | undefined;
  networkStatusPollSeconds: number;
  operators: { timeoutMs: number; inFlightWindowSeconds: number | null };
  collectionRequests: { sandboxPaymentDelaySeconds: number };
  payouts: { sandboxDelaySeconds: number };
};

/**
 * Every network the process can reach, as one adapter. `connectors`: those the process built already (the worker's);
 * `health`: the routes' health as the process keeps it (the worker's counts its outcomes for metrics).
 */
export function createNetworks(
  config: NetworkSettings,
  sql: Sql,
  connectors: readonly Connector[] = createConnectors(config, sql),
  health: RouteHealth = createRouteHealth(sql, { scope: config.routesScope }),
): NetworkAdapter {
  const sandbox = createSandboxNetwork({
    sql,
    paymentDelaySeconds: config.collectionRequests.sandboxPaymentDelaySeconds,
    payoutDelaySeconds: config.payouts.sandboxDelaySeconds,
  });
  // The processes that reach the operators (the worker; the API for name look-ups and the API's limits)
  // ask for what they need at their start, in the background (M-Pesa's sessions are first usable after a delay).
  for (const connector of connectors) connector.warmUp?.();
  return createNetworkRouter(sandbox, connectors, config.sandbox, { sql, health });
}

/** Why a network no connector knows is not connected. */
const NO_CONNECTOR = 'no connector exists: no public API and no documented aggregator route (docs/going-live.md)';

/** How each network that moves real money is reached, for operators and the console (never a secret). */
export function describeConnections(config: ConnectorSettings & { sandbox: boolean }): NetworkConnection[] {
  const simulated = config.sandbox
    ? 'simulated by the sandbox (sandbox mode)'
    : 'not connected: refused outside sandbox mode';
  const rows = describeConnectorNetworks(config, simulated);
  // A network no connector knows (Africell DRC: no public API, no documented aggregator route).
  const unreachable = knownNetworks()
    .filter((network) => network.name !== 'Sandbox' && !rows.some((row) => row.network === network.name))
    .map((network) => ({
      network: network.name,
      currency: currenciesOfNetwork(network)[0] ?? '',
      connector: 'none',
      detail: `${config.sandbox ? 'simulated by the sandbox (sandbox mode); ' : ''}${NO_CONNECTOR}`,
    }));
  return [
    {
      network: 'Sandbox',
      currency: 'BXC',
      connector: 'sandbox network',
      detail: config.sandbox ? 'on (sandbox mode)' : 'off outside sandbox mode',
    },
    ...rows,
    ...unreachable,
  ];
}
