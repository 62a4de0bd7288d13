/**
 * Debian's Chromium for the browser tests, driven by playwright-core (Playwright's own browser
 * download cannot be relied on), and where their screenshots go.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { ROOT } from './helpers';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A headless browser with a fresh profile under the test data directory. */
export async function launchBrowser(viewport: { width: number; height: number }): Promise<BrowserContext> {
  const profile = mkdtempSync(join(process.env.TEST_DATA_DIR ?? tmpdir(), 'chromium-profile-'));
  return await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    args: CHROMIUM_ARGS,
  });
}

/**
 * Where a screenshot named `name` goes: the test data directory, or the folder SCREENSHOTS_DIR
 * names (`npm run screenshots` sets docs/screenshots, the pictures README shows).
 */
export function screenshotPath(name: string): string {
  const directory = process.env.SCREENSHOTS_DIR
    ? join(ROOT, process.env.SCREENSHOTS_DIR)
    : join(process.env.TEST_DATA_DIR ?? join(ROOT, '.test-data'), 'screenshots');
  mkdirSync(directory, { recursive: true });
  return join(directory, name);
}
