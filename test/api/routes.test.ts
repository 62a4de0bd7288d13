/**
 * Checks that walk every route the app serves (`app.routes`), so a route added later is covered
 * without being listed here: content negotiation, version prefixes and the OpenAPI document.
 */
import { beforeAll, describe, expect, test } from 'bun:test';
import { createMerchant, testApp, testSql, type TestApp, type TestMerchant } from '../helpers';
import { issueNetworkSecret } from '../../src/services/networks/network-credentials';
import { METRICS_PATH } from '../../src/api/metrics';
import { DOCS_PATH, OPENAPI_DOCUMENT_PATH, isUndocumentedPath } from '../../src/api/openapi';
import { isConsolePath } from '../../src/console';
import { DARAJA_CALLBACK_PATHS } from '../../src/network/daraja';

let ctx: TestApp;
let merchant: TestMerchant;

let sandboxSecret: string;

beforeAll(async () => {
  ctx = await testApp();
  merchant = await createMerchant(ctx.app);
  sandboxSecret = await issueNetworkSecret(testSql(), 'Sandbox');
});

const BODY_METHODS = ['POST', 'PUT', 'PATCH'];
/** Headers some routes require before they read a body; harmless elsewhere. */
const ROUTE_HEADERS = { 'Bills-date': new Date().toUTCString() };

/** The API's routes; the web console's HTML pages (test/api/console.test.ts) follow none of these rules. */
const routes = () =>
  ctx.app.routes
    .filter((route) => !isConsolePath(route.path))
    .map((route) => ({ method: route.method.toUpperCase(), path: route.path }));
const concrete = (path: string) => path.replace(/:[^/]+/g, '1');
const label = (route: { method: string; path: string }) => `${route.method} ${route.path}`;

describe('content negotiation on every route', () => {
  test('the app has the routes this suite expects to walk', () => {
    expect(routes().map(label)).toEqual(
      expect.arrayContaining([
        'POST /api/contacts',
        'GET /api/events/:id',
        'POST /api/bills/services/epin/bundles',
        'GET /healthz',
        'GET /metrics',
      ]),
    );
  });

  test('an Accept header without JSON is 406 on every route but the HTML docs page, the Prometheus text of /metrics and the CSV downloads', async () => {
    const checked: string[] = [];
    for (const route of routes()) {
      const body = BODY_METHODS.includes(route.method) ? { form: { x: '1' } } : {};
      const response = await merchant.request(concrete(route.path), {
        method: route.method,
        headers: { ...ROUTE_HEADERS, Accept: 'text/html' },
        ...body,
      });
      if (route.path === DOCS_PATH || route.path === METRICS_PATH) {
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toStartWith(route.path === DOCS_PATH ? 'text/html' : 'text/plain');
        continue;
      }
      // A CSV download (a batch's results, a statement): no JSON to refuse.
      if (route.path.endsWith('.csv')) continue;
      expect({ route: label(route), status: response.status }).toEqual({ route: label(route), status: 406 });
      checked.push(label(route));
    }
    expect(checked.length).toBe(routes().length - 2 - routes().filter((route) => route.path.endsWith('.csv')).length);
  });

  test("an unsupported request media type is 415 on every route that takes a body (a paybill validation: Daraja's rejection)", async () => {
    const bodyRoutes = routes().filter((route) => BODY_METHODS.includes(route.method));
    expect(bodyRoutes.length).toBeGreaterThanOrEqual(2);
    for (const route of bodyRoutes) {
      // The network's report route judges its secret before the body (a merchant's key is a 401 there).
      const credentials: Record<string, string> =
        route.path === '/network/payments' ? { Authorization: `Bearer ${sandboxSecret}` } : {};
      const response = await merchant.request(concrete(route.path), {
        method: route.method,
        body: '<x/>',
        headers: { ...ROUTE_HEADERS, ...credentials, 'Content-Type': 'application/xml' },
      });
      // A paybill validation wants a decision whatever arrives: Daraja's rejection, never a 4xx.
      if (route.path === DARAJA_CALLBACK_PATHS.validation) {
        expect({ route: label(route), status: response.status, body: response.body }).toEqual({
          route: label(route),
          status: 200,
          body: { ResultCode: 'C2B00016', ResultDesc: 'Rejected' },
        });
        continue;
      }
      expect({ route: label(route), status: response.status }).toEqual({ route: label(route), status: 415 });
    }
  });
});

describe('version prefixes on every route', () => {
  test('every /api GET route answers the same status under /api/v1/ … /api/v4/ as without', async () => {
    const apiReads = routes().filter((route) => route.method === 'GET' && route.path.startsWith('/api/'));
    expect(apiReads.length).toBeGreaterThanOrEqual(4);
    for (const route of apiReads) {
      const path = concrete(route.path);
      const plain = (await merchant.request(path)).status;
      for (const version of ['v1', 'v2', 'v3', 'v4']) {
        const prefixed = await merchant.request(path.replace(/^\/api\//, `/api/${version}/`));
        expect({ route: label(route), version, status: prefixed.status }).toEqual({
          route: label(route),
          version,
          status: plain,
        });
        expect(prefixed.headers.get('api-version') ?? version).toBe(version);
      }
    }
  });
});

describe('OpenAPI', () => {
  test('the generated document lists every route the app serves', async () => {
    const response = await merchant.request(OPENAPI_DOCUMENT_PATH);
    expect(response.status).toBe(200);
    const document = response.body as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(document.openapi).toStartWith('3.');
    // Everything but the documentation itself, the web console's pages and /metrics, which are not API operations.
    const served = routes().filter((route) => !isUndocumentedPath(route.path));
    expect(served.length).toBeGreaterThanOrEqual(9);
    for (const route of served) {
      const openApiPath = route.path.replace(/:([^/]+)/g, '{$1}');
      expect({
        route: label(route),
        documented: document.paths[openApiPath]?.[route.method.toLowerCase()] !== undefined,
      }).toEqual({
        route: label(route),
        documented: true,
      });
    }
    const documented = Object.values(document.paths).flatMap((item) => Object.keys(item));
    expect(documented).toHaveLength(served.length);
  });

  test('the docs page is HTML that loads the document, without a key', async () => {
    const response = await ctx.app.handle(
      new Request(`http://localhost${DOCS_PATH}`, { headers: { Accept: 'text/html' } }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toStartWith('text/html');
    // The page runs no inline script: its start-up script, a file of its own, names the document.
    expect(await response.text()).toContain('/openapi/assets/init.js');
    const init = await ctx.app.handle(
      new Request('http://localhost/openapi/assets/init.js', { headers: { Accept: '*/*' } }),
    );
    expect(init.headers.get('content-type')).toStartWith('text/javascript');
    expect(await init.text()).toContain('openapi/json');
  });

  test('bill-payment operations name {bills_url} when BILLS_BASE_URL is set', async () => {
    const { app } = await testApp(undefined, { BILLS_BASE_URL: 'https://bills.example.com/' });
    const document = (await (await app.handle(new Request(`http://localhost${OPENAPI_DOCUMENT_PATH}`))).json()) as {
      paths: Record<string, Record<string, { servers?: unknown }>>;
    };
    expect(document.paths['/api/bills/services/epin/bundles']?.post?.servers).toEqual([
      { url: 'https://bills.example.com' },
    ]);
    expect(document.paths['/api/contacts']?.post?.servers).toBeUndefined();
  });
});
