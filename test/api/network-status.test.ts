/**
 * `GET /api/network-status`: each network's availability as merchants see it, from the routes'
 * health (src/services/networks/route-health.ts), and the same routes on the console's Settings page. The
 * routes' tables are the service's own (no organization's), read past the tenant boundary. One app
 * runs with the sandbox defaults; another with MTN MoMo and pawaPay on (pawaPay as MTN Uganda's
 * second route), pointed at an address where nothing listens: no operator is ever called.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { orderRoutes, pauseRoute } from '../../src/services/networks/route-health';
import { knownNetworks } from '../../src/domain/networks';
import { ConsoleClient, PASSWORD, consoleUser } from '../console-helpers';
import {
  createMerchant,
  requester,
  testApp,
  testSql,
  uniqueTaskQueue,
  type TestApp,
  type TestMerchant,
} from '../helpers';

const CONNECTED = {
  SANDBOX: 'true',
  PUBLIC_BASE_URL: 'https://collections.example',
  MTN_MOMO_BASE_URL: 'http://127.0.0.1:9',
  MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: 'c-key',
  MTN_MOMO_COLLECTION_API_USER: 'c-user',
  MTN_MOMO_COLLECTION_API_KEY: 'c-api-key',
  MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: 'd-key',
  MTN_MOMO_DISBURSEMENT_API_USER: 'd-user',
  MTN_MOMO_DISBURSEMENT_API_KEY: 'd-api-key',
  PAWAPAY_BASE_URL: 'http://127.0.0.1:9',
  PAWAPAY_API_TOKEN: 'status-token',
  PAWAPAY_PROVIDERS: 'MTN_MOMO_UGA,TIGO_TZA',
};
const MTN = 'MTN Uganda';
/** The connected app's task queue: the scope of its routes' health (the suite runs with NETWORK_ROUTES_SCOPE=task-queue). */
const queue = uniqueTaskQueue('network-status');

let sandbox: TestApp;
let connected: TestApp;
let sandboxMerchant: TestMerchant;
let merchant: TestMerchant;

type Status = { id: number; network: string; currencies: string[]; collect: string; payout: string };

beforeAll(async () => {
  sandbox = await testApp();
  connected = await testApp(queue, CONNECTED);
  sandboxMerchant = await createMerchant(sandbox.app);
  merchant = await createMerchant(connected.app);
});

async function forgetRoutes() {
  await testSql()`delete from network_routes where scope = ${queue}`;
}
afterEach(forgetRoutes);
afterAll(forgetRoutes);

async function statuses(who: TestMerchant = merchant): Promise<Status[]> {
  const response = await who.request('/api/network-status?limit=100');
  expect(response.status).toBe(200);
  return response.body.results as Status[];
}
const mtn = async () => (await statuses()).find((status) => status.network === MTN)!;

/** A route left after its faults: down until `left_until`, probed after it. */
async function leave(route: string, operation: 'collect' | 'payout', seconds: number, fault = 'no answer in 30 s') {
  await testSql()`
    insert into network_routes (scope, network, route, operation, faults_in_row, left_count, left_until, last_fault, last_fault_at)
    values (${queue}, ${MTN}, ${route}, ${operation}, 3, 1, now() + ${seconds} * interval '1 second', ${fault}, now())
    on conflict (scope, network, route, operation) do update set faults_in_row = 3, left_count = 1, left_until = excluded.left_until,
      last_fault = excluded.last_fault, last_fault_at = excluded.last_fault_at`;
}

describe('with the sandbox defaults', () => {
  test('every network the sandbox simulates, and the sandbox network, is operational for both operations', async () => {
    const all = await statuses(sandboxMerchant);
    expect(all.map((status) => status.network)).toEqual(knownNetworks().map((network) => network.name));
    expect(all[0]).toEqual({
      id: 1,
      network: 'Sandbox',
      currencies: ['BXC'],
      collect: 'operational',
      payout: 'operational',
    });
    expect(all.find((status) => status.network === 'Vodacom DRC')?.currencies).toEqual(['CDF', 'USD']);
    for (const status of all)
      expect({ network: status.network, collect: status.collect, payout: status.payout }).toEqual({
        network: status.network,
        collect: 'operational',
        payout: 'operational',
      });
  });

  test('is a list: limit and offset, the envelope from v2, the bare array in v1', async () => {
    const page = await sandboxMerchant.request('/api/network-status?limit=2&offset=1');
    expect(page.body.count).toBe(knownNetworks().length);
    expect(page.body.results.map((status: Status) => status.network)).toEqual(['MTN Uganda', 'Airtel Uganda']);
    expect(page.body.next).toContain('/api/network-status?limit=2&offset=3');
    const v1 = await sandboxMerchant.request('/api/v1/network-status');
    expect(Array.isArray(v1.body)).toBe(true);
    expect(v1.body).toHaveLength(10);
    expect((await sandboxMerchant.request('/api/network-status?limit=0')).status).toBe(400);
  });

  test('needs an API key', async () => {
    const response = await requester(sandbox.app, null)('/api/network-status');
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ detail: 'Invalid token.' });
  });
});

describe('with connectors on', () => {
  test('lists the sandbox network and the connected networks only, operational while their first routes are up', async () => {
    const all = await statuses();
    expect(all.map((status) => status.network)).toEqual(['Sandbox', MTN, 'Tigo Tanzania']);
    for (const status of all) expect([status.collect, status.payout]).toEqual(['operational', 'operational']);
  });

  test('a paused first route leaves the operation degraded; both routes out, down; each operation apart', async () => {
    await pauseRoute(testSql(), MTN, 'momo', 'payout', true, queue);
    expect(await mtn()).toMatchObject({ collect: 'operational', payout: 'degraded' });
    // The network's own resource says the same.
    const listed = await merchant.request('/api/networks/2');
    expect(listed.body).toMatchObject({ name: MTN, availability: { collect: 'operational', payout: 'degraded' } });
    await leave('pawapay', 'payout', 30);
    expect(await mtn()).toMatchObject({ collect: 'operational', payout: 'down' });
    await pauseRoute(testSql(), MTN, 'momo', 'payout', false, queue);
    expect(await mtn()).toMatchObject({ collect: 'operational', payout: 'operational' });
  });

  test('a first route left after its faults is degraded, and still degraded while it is probed; a closed aggregator route is out', async () => {
    await leave('momo', 'collect', 30);
    expect(await mtn()).toMatchObject({ collect: 'degraded', payout: 'operational' });
    await leave('momo', 'collect', -1);
    expect(await mtn()).toMatchObject({ collect: 'degraded' });
    await testSql()`
      insert into network_routes (scope, network, route, operation, availability, availability_at) values (${queue}, ${MTN}, 'pawapay', 'collect', 'closed', now())`;
    // The direct route is probed (one operation at a time takes it): it still takes traffic.
    expect(await mtn()).toMatchObject({ collect: 'degraded' });
    await leave('momo', 'collect', 30);
    expect(await mtn()).toMatchObject({ collect: 'down' });
  });

  test('the order an operator sets decides which route is first', async () => {
    await orderRoutes(testSql(), MTN, 'collect', ['pawapay', 'momo'], queue);
    await leave('momo', 'collect', 30);
    expect(await mtn()).toMatchObject({ collect: 'operational', payout: 'operational' });
    // The direct route back (a success), the aggregator now first and left: only the later route takes traffic.
    await testSql()`update network_routes set faults_in_row = 0, left_count = 0, left_until = null where network = ${MTN} and route = 'momo'`;
    await leave('pawapay', 'collect', 30);
    expect(await mtn()).toMatchObject({ collect: 'degraded', payout: 'operational' });
  });

  test('shows merchants nothing of the routes: no operator, route name, fault or host', async () => {
    await leave('momo', 'collect', 30, 'connect ECONNREFUSED 127.0.0.1:9');
    const response = await merchant.request('/api/network-status?limit=100');
    const text = JSON.stringify(response.body);
    for (const hidden of ['momo', 'pawapay', 'MoMo', 'ECONNREFUSED', '127.0.0.1', 'route'])
      expect({ hidden, shown: text.includes(hidden) }).toEqual({ hidden, shown: false });
  });
});

describe("the console's Settings page", () => {
  async function settingsPage(app: TestApp, organization: TestMerchant) {
    const user = await consoleUser(organization.organization.id);
    const browser = new ConsoleClient(app.app);
    expect((await browser.signIn(user.email, PASSWORD)).status).toBe(303);
    const page = await browser.get('/console/settings');
    expect(page.status).toBe(200);
    return page.text.slice(page.text.indexOf('id="network-routes"'));
  }

  test('lists each route in order with its operator, state, recent success rate and last fault (escaped)', async () => {
    await pauseRoute(testSql(), MTN, 'pawapay', 'payout', true, queue);
    await leave('momo', 'collect', 30, '<b>503</b> from the operator');
    await testSql()`
      insert into network_route_outcomes (scope, network, route, operation, minute, succeeded, faulted)
      values (${queue}, ${MTN}, 'momo', 'collect', date_trunc('minute', now()), 3, 1)
      on conflict (scope, network, route, operation, minute) do update set succeeded = 3, faulted = 1`;
    const section = await settingsPage(connected, merchant);
    expect(section).toContain('<h2>Network routes</h2>');
    const rows = [
      ...section.matchAll(
        /<tr><td>([^<]*)<\/td><td>([^<]*)<\/td><td>(\d)<\/td><td>([^<]*)<\/td><td><span class="badge status-(\w+)">/g,
      ),
    ].map((match) => match.slice(1).join(' | '));
    expect(rows).toEqual([
      'MTN Uganda | collect | 1 | MTN MoMo | down',
      'MTN Uganda | collect | 2 | pawaPay | up',
      'MTN Uganda | payout | 1 | MTN MoMo | up',
      'MTN Uganda | payout | 2 | pawaPay | paused',
      'Tigo Tanzania | collect | 1 | pawaPay | up',
      'Tigo Tanzania | payout | 1 | pawaPay | up',
    ]);
    expect(section).toContain('75.0% <span class="muted">of 4</span>');
    expect(section).toContain('&lt;b&gt;503&lt;/b&gt; from the operator');
    expect(section).not.toContain('<b>503</b>');
    await testSql()`delete from network_route_outcomes where network = ${MTN}`;
  });

  test('with no connector on, says the sandbox serves every network', async () => {
    const section = await settingsPage(sandbox, sandboxMerchant);
    expect(section).toContain('No routes: no operator connector is on, so the sandbox serves every network.');
  });
});
