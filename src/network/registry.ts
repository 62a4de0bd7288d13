/**
 * The operators' connectors, each a unit in its own folder (./<operator>/index.ts). This list is
 * the one place that names them: the configuration reads their settings from it, the router their
 * connectors and the networks they serve (a network served by more than one takes the first route
 * listed: direct connectors before aggregators), the API mounts their callback routes, the API's
 * connected-networks rule follows their routes, and operators see each network's connection.
 */
import type { Connections } from '../domain/networks';
import type { Connector, ConnectorUnit, NetworkConnection, NetworkRecords, Route } from './adapter';
import { configureOperatorCalls } from './operator-http';
import { airtel } from './airtel';
import { daraja } from './daraja';
import { momo } from './momo';
import { pawapay } from './pawapay';
import { vodacom } from './vodacom';

export type { AirtelCountry, AirtelSettings } from './airtel/settings';
export type { MpesaSettings } from './daraja/settings';
export type { MomoProduct, MomoSettings } from './momo/settings';
export type { VodacomMarket, VodacomSettings } from './vodacom/settings';

const CONNECTOR_UNITS = [daraja, momo, airtel, vodacom, pawapay] as const;

type Unit = (typeof CONNECTOR_UNITS)[number];
// biome-ignore lint/suspicious/noExplicitAny: each connector's settings type is its own
type AnyUnit = ConnectorUnit<string, any>;

/** Each connector's settings, under its unit's `configKey` (`config.mpesa`, `config.momoMarkets`, ...). */
export type ConnectorSettings = { [U in Unit as U['configKey']]: ReturnType<U['readSettings']> };

const units: readonly AnyUnit[] = CONNECTOR_UNITS;
const settingsOf = (unit: AnyUnit, config: ConnectorSettings): unknown =>
  (config as Record<string, unknown>)[unit.configKey];

/** Every connector's environment variables, checked with the rest of the configuration. */
export const CONNECTOR_VARIABLES = Object.assign({}, ...units.map((unit) => unit.variables)) as Unit extends infer U
  ? U extends Unit
    ? U['variables']
    : never
  : never;

/** Each connector's settings from the checked environment; what is wrong goes to `problems`. */
export function readConnectorSettings(values: Record<string, unknown>, problems: string[]): ConnectorSettings {
  return Object.fromEntries(
    units.map((unit) => [unit.configKey, unit.readSettings(values, problems)]),
  ) as ConnectorSettings;
}

/**
 * Every connector's operator as people name it, in the registry's order, and whether it calls back: what the API's
 * documentation names.
 */
export const CONNECTOR_OPERATORS: readonly { name: string; operator: string; callsBack: boolean }[] = units.map(
  (unit) => ({ name: unit.name, operator: unit.operator, callsBack: unit.callsBack }),
);

/** The operators that are on and call back at PUBLIC_BASE_URL, as people name them. */
export const operatorsCallingBack = (config: ConnectorSettings): string[] =>
  units
    .filter((unit) => unit.callsBack && unit.routesOf(settingsOf(unit, config)).length > 0)
    .map((unit) => unit.operator);

/** Every route of every connector that is on, in the registry's order. */
const connectorRoutes = (config: ConnectorSettings): Route[] =>
  units.flatMap((unit) => unit.routesOf(settingsOf(unit, config)));

/** The networks a configured connector serves (their real currency goes to the operator, not the sandbox). */
export const connectedNetworks = (config: ConnectorSettings): ReadonlySet<string> =>
  new Set(connectorRoutes(config).map((route) => route.network));

/**
 * The connectors that are on, built with where their operators call back and the core's records (never the
 * database: a connector translates, the core keeps).
 */
export function createConnectors(
  config: ConnectorSettings & {
    publicBaseUrl: string | undefined;
    networkStatusPollSeconds: number;
    operators: { timeoutMs: number; inFlightWindowSeconds: number | null };
  },
  records: NetworkRecords,
): Connector[] {
  configureOperatorCalls({ timeoutMs: config.operators.timeoutMs });
  return units.flatMap((unit) => {
    const settings = settingsOf(unit, config);
    if (unit.routesOf(settings).length === 0) return [];
    const windowSeconds = config.operators.inFlightWindowSeconds ?? unit.inFlight.windowSeconds;
    const deps = {
      records,
      callbackBaseUrl: config.publicBaseUrl ?? '',
      statusPollSeconds: config.networkStatusPollSeconds,
      inFlightWindowSeconds: windowSeconds,
    };
    const { resends } = unit.inFlight;
    return [{ ...unit.create(settings, deps), name: unit.name, inFlight: { windowSeconds, resends } }];
  });
}

/** Each connector's in-flight window and where it comes from, for the docs and `network list`. */
export const IN_FLIGHT_WINDOWS: readonly {
  name: string;
  operator: string;
  windowSeconds: number;
  resends: boolean;
  source: string;
}[] = units.map((unit) => ({ name: unit.name, operator: unit.operator, ...unit.inFlight }));

/**
 * Every route of every network a connector that is on serves, for both operations, in the order
 * they are tried unless an operator reorders them: direct connectors before aggregators (the
 * registry's order). Reversals go back the way their collection came and are not routed.
 */
export const configuredRoutes = (
  config: ConnectorSettings,
): { network: string; route: string; operation: 'collect' | 'payout' }[] =>
  units.flatMap((unit) =>
    [...new Set(unit.routesOf(settingsOf(unit, config)).map((route) => route.network))].flatMap((network) =>
      (['collect', 'payout'] as const).map((operation) => ({ network, route: unit.name, operation })),
    ),
  );

/** The units whose operators call back, with their settings (null or empty when off), for the API to mount. */
export const callbackUnits = (
  config: ConnectorSettings,
): { unit: AnyUnit & Required<Pick<AnyUnit, 'callbacks'>>; settings: unknown }[] =>
  units.flatMap((unit) =>
    unit.callbacks
      ? [{ unit: unit as AnyUnit & Required<Pick<AnyUnit, 'callbacks'>>, settings: settingsOf(unit, config) }]
      : [],
  );

/**
 * How each network every connector knows is reached (the sandbox's row aside), one row per network:
 * the connector that serves it (the first, as the router chooses), or that none does.
 */
export function describeConnectorNetworks(config: ConnectorSettings, simulated: string): NetworkConnection[] {
  const rows = units.flatMap((unit) => unit.describe(settingsOf(unit, config), simulated));
  const chosen = new Map<string, NetworkConnection>();
  for (const row of rows) {
    const held = chosen.get(row.network);
    if (!held || (held.connector === 'none' && row.connector !== 'none')) chosen.set(row.network, row);
  }
  return [...chosen.values()];
}

/**
 * The API's view of the connectors: which networks have one, and the operator's amount rule on
 * each (the first route's connector, as the router chooses).
 */
export function connectionsOf(sandboxMode: boolean, connectors: readonly Connector[]): Connections {
  const byNetwork = new Map<string, Connector>();
  for (const connector of connectors)
    for (const route of connector.routes) if (!byNetwork.has(route.network)) byNetwork.set(route.network, connector);
  return {
    sandboxMode,
    connected: new Set(byNetwork.keys()),
    amountProblem: (network, currency, amount, operation) =>
      byNetwork.get(network.name)?.amountProblem(network, currency, amount, operation) ?? null,
  };
}
