/**
 * The routes' health (src/services/networks/route-health.ts) as each interface shows it: merchants see each
 * network's availability (`GET /api/network-status`), the organization's admins and operators see
 * every route (the console's Settings page, `npm run admin -- network routes`). The routes are the
 * configured ones, handed in by the caller (`configuredRoutes` of src/network/registry.ts).
 */
import type { Queryable } from '../../db';
import { acrossOrganizations } from '../../db/tenancy';
import { SANDBOX_NETWORK, currenciesOfNetwork, knownNetworks, sandboxMoneyProblem } from '../../domain/networks';
import type { NetworkStatus } from '../../domain/network-status';
import { availabilityOf, routeViews, type RouteKey, type RouteOperation, type RouteView } from './route-health';

/** A route with its operator as people name it. */
export type RouteLine = RouteView & { operator: string };

function viewsOf(sql: Queryable, routes: readonly RouteKey[], scope: string): Promise<RouteView[]> {
  // The routes' tables are the service's own, no organization's (migration 029 keeps them from the
  // tenant role): a request reads them outside its organization's boundary.
  return acrossOrganizations(sql, (outside) => routeViews(outside, routes, scope));
}

/**
 * Every configured route with its health (`scope`: the configuration's `routesScope`), each network's routes for an
 * operation in the order they are tried.
 */
export async function routeLines(
  sql: Queryable,
  routes: readonly RouteKey[],
  operators: readonly { name: string; operator: string }[],
  scope: string,
): Promise<RouteLine[]> {
  const views = await viewsOf(sql, routes, scope);
  return views.map((view) => ({
    ...view,
    operator: operators.find((known) => known.name === view.route)?.operator ?? view.route,
  }));
}

/**
 * Each network the deployment moves money on or simulates, with its availability for collections
 * and payouts: a network with a connector by its routes' health; the sandbox network (in sandbox
 * mode) and the networks the sandbox simulates (in sandbox mode, while no connector is on) are
 * always operational.
 */
export async function networkStatus(
  sql: Queryable,
  routes: readonly RouteKey[],
  sandboxMode: boolean,
  scope: string,
): Promise<NetworkStatus[]> {
  const connected = new Set(routes.map((route) => route.network));
  const views = connected.size > 0 ? await viewsOf(sql, routes, scope) : [];
  const availability = (network: string, operation: RouteOperation) =>
    availabilityOf(views.filter((view) => view.network === network && view.operation === operation));
  return knownNetworks().flatMap((network): NetworkStatus[] => {
    const currencies = currenciesOfNetwork(network);
    if (connected.has(network.name))
      return [
        {
          network,
          currencies,
          collect: availability(network.name, 'collect'),
          payout: availability(network.name, 'payout'),
        },
      ];
    const simulated =
      network.id === SANDBOX_NETWORK.id
        ? sandboxMode
        : currencies.some((currency) => sandboxMoneyProblem(network, currency, { sandboxMode, connected }) === null);
    return simulated ? [{ network, currencies, collect: 'operational', payout: 'operational' }] : [];
  });
}
