/**
 * The reference page at `/openapi` renders in a real browser (Debian's Chromium, driven by
 * playwright-core) with no network beyond the API: every request to another host is aborted and
 * recorded, and the test fails on any. It saves the screenshot README shows
 * (`npm run screenshots` writes it into docs/screenshots).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import type { BrowserContext } from 'playwright-core';
import { DOCS_PATH } from '../../src/api/openapi';
import { launchBrowser, screenshotPath } from '../browser';
import { testApp } from '../helpers';

let server: ReturnType<typeof Bun.serve>;
let browser: BrowserContext;

beforeAll(async () => {
  const { app } = await testApp();
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => app.handle(request) });
  browser = await launchBrowser({ width: 1440, height: 900 });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  server?.stop(true);
});

test('GET /openapi renders the API reference with no request beyond the API and no console error', async () => {
  const apiHost = `127.0.0.1:${server.port}`;
  const blocked: string[] = [];
  const served: string[] = [];
  const consoleErrors: string[] = [];
  await browser.route('**/*', async (route) => {
    const url = new URL(route.request().url());
    if (url.host === apiHost) {
      served.push(url.pathname);
      await route.continue();
    } else {
      blocked.push(url.href);
      await route.abort('blockedbyclient');
    }
  });
  const page = browser.pages()[0] ?? (await browser.newPage());
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(error.message));

  const response = await page.goto(`http://${apiHost}${DOCS_PATH}`, { waitUntil: 'load' });
  expect(response?.status()).toBe(200);
  // The reference lists the document's operations; opening one shows its parameters and responses.
  const operation = page.getByText('List or claim collections').first();
  await operation.waitFor({ state: 'visible', timeout: 60_000 });
  await operation.click();
  await page.getByText('Query Parameters').first().waitFor({ state: 'visible', timeout: 30_000 });
  await page.getByText('remote_transaction_id').first().waitFor({ state: 'visible', timeout: 30_000 });
  await page.waitForLoadState('networkidle');

  await page.screenshot({ path: screenshotPath('openapi.png') });

  expect(served).toEqual(expect.arrayContaining([DOCS_PATH, '/openapi/assets/api-reference.js', '/openapi/json']));
  expect(blocked).toEqual([]);
  expect(consoleErrors).toEqual([]);
}, 120_000);
