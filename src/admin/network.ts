/**
 * The networks: how each is reached, the health of their routes (reordered, paused and resumed
 * here), the secret a network's payment callbacks carry, and the paybill's URLs registered with Daraja.
 */
import type { Config } from '../config';
import { networkByName } from '../domain/networks';
import { successRateText } from '../domain/network-status';
import { describeConnections } from '../network/connections';
import { createNetworkRecords } from '../services/networks/records';
import { DARAJA_CALLBACK_PATHS, createDarajaConnector, daraja as darajaUnit } from '../network/daraja';
import { CONNECTOR_OPERATORS, configuredRoutes } from '../network/registry';
import { issueNetworkSecret } from '../services/networks/network-credentials';
import { routeLines, type RouteLine } from '../services/networks/network-status';
import { orderRoutes, pauseRoute, type RouteOperation } from '../services/networks/route-health';
import { unsettledOperations, type UnsettledOperation } from '../services/networks/entries';
import { UsageError, print, type Command, type CommandContext } from './cli';

/**
 * `--network`: a network a connector that is on serves, with its routes in the registry's order; or the usage error
 * naming those networks.
 */
function routedNetwork(config: Config, raw: string | undefined): { network: string; routes: string[] } {
  const configured = configuredRoutes(config);
  const network = networkByName(raw ?? '')?.name;
  const routes = [...new Set(configured.filter((route) => route.network === network).map((route) => route.route))];
  if (network === undefined || routes.length === 0) {
    const served = [...new Set(configured.map((route) => route.network))];
    throw new UsageError(
      [
        '--network must name a network a connector that is on serves',
        `(${served.length > 0 ? served.join(', ') : 'no connector is on'})`,
      ].join(' '),
    );
  }
  return { network, routes };
}

/** `--operation`: collect or payout; both when left out. */
function routeOperation(raw: string | undefined): RouteOperation | null {
  if (raw === undefined) return null;
  if (raw === 'collect' || raw === 'payout') return raw;
  throw new UsageError('--operation takes collect or payout (both when left out)');
}

/** A route name as given (`momo`, `pawapay`), one of `routes`; or the usage error naming them. */
function namedRoute(raw: string, network: string, routes: readonly string[]): string {
  const route = routes.find((known) => known === raw.trim().toLowerCase());
  if (route === undefined)
    throw new UsageError(`${network} has no route ${JSON.stringify(raw.trim())}: its routes are ${routes.join(', ')}`);
  return route;
}

const operationsText = (operation: RouteOperation | null) => operation ?? 'collect and payout';

/** One line per route: network, operation, order, operator, state, recent success rate, last fault. */
const routeText = (line: RouteLine) =>
  [
    line.network.padEnd(18),
    line.operation.padEnd(7),
    String(line.order).padEnd(2),
    line.operator.padEnd(15),
    line.state.padEnd(8),
    `${successRateText(line.successRate).padStart(6)} of ${String(line.outcomes).padEnd(5)}`,
    line.lastFault === null ? 'no fault' : `last fault ${line.lastFaultAt?.toISOString() ?? ''}: ${line.lastFault}`,
  ].join(' ');

/** `network routes pause` and `resume`: an operator's switch on one route. */
const pauseCommand = (paused: boolean): Command => ({
  usage: [
    `network routes ${paused ? 'pause' : 'resume'} --network NAME --route ROUTE`,
    '[--operation collect|payout] [--json]',
  ].join(' '),
  async run({ sql, values, config }: CommandContext) {
    const { network, routes } = routedNetwork(config, values.network);
    if (values.route === undefined)
      throw new UsageError(`--route names one of the network's routes (${routes.join(', ')})`);
    const route = namedRoute(values.route, network, routes);
    const operation = routeOperation(values.operation);
    await pauseRoute(sql, network, route, operation, paused, config.routesScope);
    print(values.json, { network, route, operation, paused }, [
      `${network} route ${route} ${paused ? 'paused' : 'resumed'} for ${operationsText(operation)}`,
    ]);
  },
});

/** One line per unsettled operation: when it was last sent, where, what, its state and why. */
const unsettledText = (operation: UnsettledOperation) =>
  [
    operation.sentAt?.toISOString() ?? 'never sent'.padEnd(24),
    operation.network.padEnd(18),
    (operation.route ?? '-').padEnd(8),
    operation.kind.padEnd(8),
    operation.reference.padEnd(24),
    `${operation.state.padEnd(8)} sent ${operation.sends}x${operation.fault ? `: ${operation.fault}` : ''}`,
  ].join(' ');

export const networkCommands: Record<string, Command> = {
  'network in-doubt': {
    usage: 'network in-doubt [--json]',
    async run({ sql, values }) {
      // In doubt, or recorded and unanswered for a minute: each stays on its route until its operator's evidence
      // settles it (docs/going-live.md#in-doubt-is-not-refused).
      const operations = await unsettledOperations(sql, 60);
      print(
        values.json,
        { operations },
        operations.length > 0 ? operations.map(unsettledText) : ['no operation is in doubt on any route'],
      );
    },
  },
  'network list': {
    usage: 'network list [--json]',
    async run({ values, config }) {
      // Every connector of the registry with this configuration (no operator is called; no secret is shown).
      const connections = describeConnections(config);
      print(
        values.json,
        { connections },
        connections.map(
          (row) => `${row.network.padEnd(18)} ${row.currency.padEnd(10)} ${row.connector.padEnd(16)} ${row.detail}`,
        ),
      );
    },
  },
  'network routes': {
    usage: 'network routes [--json]',
    async run({ sql, values, config }) {
      // Every route of every connector that is on, in the order each network's operations try them.
      const lines = await routeLines(sql, configuredRoutes(config), CONNECTOR_OPERATORS, config.routesScope);
      print(
        values.json,
        { routes: lines },
        lines.length > 0
          ? lines.map(routeText)
          : ['no routes: no operator connector is on, so the sandbox serves every network'],
      );
    },
  },
  'network routes order': {
    usage: 'network routes order --network NAME --routes ROUTE,ROUTE [--operation collect|payout] [--json]',
    async run({ sql, values, config }) {
      const { network, routes } = routedNetwork(config, values.network);
      const ordered = (values.routes ?? '')
        .split(',')
        .filter((raw) => raw.trim() !== '')
        .map((raw) => namedRoute(raw, network, routes));
      // Every route named once: a route left out would fall back among the others by the registry's order.
      if (ordered.length !== routes.length || new Set(ordered).size !== routes.length) {
        throw new UsageError(`--routes names each route of ${network} once, first to last (${routes.join(',')})`);
      }
      const operation = routeOperation(values.operation);
      await orderRoutes(sql, network, operation, ordered, config.routesScope);
      print(values.json, { network, operation, routes: ordered }, [
        `${network} routes for ${operationsText(operation)}, first to last: ${ordered.join(', ')}`,
      ]);
    },
  },
  'network routes pause': pauseCommand(true),
  'network routes resume': pauseCommand(false),
  'network secret create': {
    usage: 'network secret create --network NAME [--json]',
    async run({ sql, values }) {
      const network = networkByName(values.network ?? '');
      if (!network) throw new UsageError('--network must name a known network, such as "MTN Uganda" or "Sandbox"');
      const secret = await issueNetworkSecret(sql, network.name);
      print(values.json, { network: network.name, secret }, [
        `${network.name} callbacks: Authorization: Bearer ${secret}  (shown once; replaces any earlier secret)`,
      ]);
    },
  },
  'network register-urls': {
    usage: 'network register-urls [--json]',
    async run({ sql, values, config }) {
      const daraja = config.mpesa
        ? createDarajaConnector(
            config.mpesa,
            {
              records: createNetworkRecords(sql),
              callbackBaseUrl: config.publicBaseUrl ?? '',
              inFlightWindowSeconds: config.operators.inFlightWindowSeconds ?? darajaUnit.inFlight.windowSeconds,
            },
            config.networkStatusPollSeconds,
          )
        : null;
      if (!daraja)
        throw new UsageError('the M-Pesa connector is off: set MPESA_CONSUMER_KEY and the other MPESA_* variables');
      const outcome = await daraja.registerUrls();
      const validationUrl = `${config.publicBaseUrl}${DARAJA_CALLBACK_PATHS.validation}`;
      const confirmationUrl = `${config.publicBaseUrl}${DARAJA_CALLBACK_PATHS.confirmation}`;
      print(values.json, { ...outcome, validationUrl, confirmationUrl }, [
        outcome.registered
          ? [
              `Daraja registered ${validationUrl} and ${DARAJA_CALLBACK_PATHS.confirmation}`,
              `for shortcode ${config.mpesa!.shortcode}`,
            ].join(' ')
          : `Daraja refused the registration: ${outcome.detail}`,
      ]);
      if (!outcome.registered) process.exitCode = 1;
    },
  },
};
