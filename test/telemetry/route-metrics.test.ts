/**
 * The routes' instruments on the worker's registry: each operation's outcome on its route
 * (`countRouteOutcome`) and each route's state read at scrape time from the routes' health
 * (`setRouteStateSource`, given `routeViews` as the worker gives it).
 */
import { afterAll, expect, test } from 'bun:test';
import { countRouteOutcome, metricsText, setRouteStateSource } from '../../src/telemetry/metrics';
import { pauseRoute, routeViews, type RouteKey } from '../../src/services/networks/route-health';
import { parseScrape } from '../metrics';
import { testSql } from '../helpers';

const NETWORK = 'Airtel Kenya';
const ROUTES: RouteKey[] = [
  { network: NETWORK, route: 'airtel', operation: 'collect' },
  { network: NETWORK, route: 'pawapay', operation: 'collect' },
  { network: NETWORK, route: 'airtel', operation: 'payout' },
  { network: NETWORK, route: 'pawapay', operation: 'payout' },
];

afterAll(async () => {
  setRouteStateSource(null);
  await testSql()`delete from network_routes where network = ${NETWORK}`;
});

test('network_route_operations_total counts each outcome by network, route and operation, on the worker only', async () => {
  const before = parseScrape(await metricsText('worker'));
  countRouteOutcome({ network: NETWORK, route: 'airtel', operation: 'collect' }, 'succeeded');
  countRouteOutcome({ network: NETWORK, route: 'airtel', operation: 'collect' }, 'succeeded');
  countRouteOutcome({ network: NETWORK, route: 'pawapay', operation: 'payout' }, 'faulted');
  const after = parseScrape(await metricsText('worker'));
  const delta = (labels: Record<string, string>) =>
    after.value('network_route_operations_total', labels) - before.value('network_route_operations_total', labels);
  expect(delta({ network: NETWORK, route: 'airtel', operation: 'collect', outcome: 'succeeded' })).toBe(2);
  expect(delta({ network: NETWORK, route: 'pawapay', operation: 'payout', outcome: 'faulted' })).toBe(1);
  expect(delta({ network: NETWORK, outcome: 'faulted', route: 'airtel' })).toBe(0);
  expect(after.text).toContain('# TYPE network_route_operations_total counter');
  expect(after.text).toContain(
    `network_route_operations_total{network="${NETWORK}",route="pawapay",operation="payout",outcome="faulted"}`,
  );
  expect(await metricsText('api')).not.toContain('network_route_operations_total');
});

test("network_route_state gives each route's state at each scrape: 0 up, 2 down, 3 paused; empty without a source or when it fails", async () => {
  expect(await metricsText('worker')).not.toContain(`network_route_state{network="${NETWORK}"`);
  setRouteStateSource(() => routeViews(testSql(), ROUTES));
  await pauseRoute(testSql(), NETWORK, 'pawapay', 'payout', true);
  await testSql()`
    insert into network_routes (network, route, operation, faults_in_row, left_count, left_until) values (${NETWORK}, 'airtel', 'collect', 3, 1, now() + interval '30 seconds')`;
  const scrape = parseScrape(await metricsText('worker'));
  expect(scrape.text).toContain('# TYPE network_route_state gauge');
  const state = (route: string, operation: string) =>
    scrape.value('network_route_state', { network: NETWORK, route, operation });
  expect([
    state('airtel', 'collect'),
    state('pawapay', 'collect'),
    state('airtel', 'payout'),
    state('pawapay', 'payout'),
  ]).toEqual([2, 0, 0, 3]);
  expect(scrape.text).toContain(`network_route_state{network="${NETWORK}",route="pawapay",operation="payout"} 3`);

  setRouteStateSource(() => Promise.reject(new Error('database away')));
  expect(await metricsText('worker')).not.toContain(`network_route_state{network="${NETWORK}"`);
  setRouteStateSource(null);
  expect(await metricsText('worker')).not.toContain(`network_route_state{network="${NETWORK}"`);
});
