/** MTN_MOMO_MARKETS_FILE checked at configuration load, beside the single-market MTN_MOMO_* variables. */
import { describe, expect, test } from 'bun:test';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import { connectedNetworks } from '../../src/network/registry';

const DIR = mkdtempSync(join(tmpdir(), 'momo-markets-config-'));
let files = 0;
const fileWith = (content: string): string => {
  const path = join(DIR, `markets-${++files}.json`);
  writeFileSync(path, content);
  return path;
};
const product = (name: string) => ({
  subscription_key: `${name}-key`,
  api_user: `${name}-user`,
  api_key: `${name}-secret`,
});
const market = (targetEnvironment: string, currency: string, extra: Record<string, unknown> = {}) => ({
  target_environment: targetEnvironment,
  currency,
  collection: product(`${targetEnvironment}-c`),
  disbursement: product(`${targetEnvironment}-d`),
  ...extra,
});
const BASE = { PUBLIC_BASE_URL: 'https://pay.example' };
const SINGLE = {
  MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: 'c-key',
  MTN_MOMO_COLLECTION_API_USER: 'c-user',
  MTN_MOMO_COLLECTION_API_KEY: 'c-api-key',
  MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: 'd-key',
  MTN_MOMO_DISBURSEMENT_API_USER: 'd-user',
  MTN_MOMO_DISBURSEMENT_API_KEY: 'd-api-key',
};
const load = (markets: unknown, env: Record<string, string> = {}) =>
  loadConfig({
    ...BASE,
    ...env,
    MTN_MOMO_MARKETS_FILE: fileWith(typeof markets === 'string' ? markets : JSON.stringify(markets)),
  });

describe('MTN_MOMO_MARKETS_FILE', () => {
  test('each market serves its own network in its own currency, beside the single-market variables', () => {
    const config = load(
      [market('mtnghana', 'GHS', { base_url: 'https://momo.example/' }), market('mtnrwanda', 'RWF')],
      SINGLE,
    );
    expect(config.momoMarkets).toEqual([
      expect.objectContaining({ network: 'MTN Uganda', currency: 'UGX', targetEnvironment: 'mtnuganda' }),
      {
        network: 'MTN Ghana',
        currency: 'GHS',
        targetEnvironment: 'mtnghana',
        baseUrl: 'https://momo.example',
        collection: { subscriptionKey: 'mtnghana-c-key', apiUser: 'mtnghana-c-user', apiKey: 'mtnghana-c-secret' },
        disbursement: { subscriptionKey: 'mtnghana-d-key', apiUser: 'mtnghana-d-user', apiKey: 'mtnghana-d-secret' },
      },
      expect.objectContaining({ network: 'MTN Rwanda', currency: 'RWF', baseUrl: 'https://proxy.momoapi.mtn.com' }),
    ]);
    expect([...connectedNetworks(config)]).toEqual(['MTN Uganda', 'MTN Ghana', 'MTN Rwanda']);
    expect(load([market('sandbox', 'GHS')]).momoMarkets).toMatchObject([
      { network: 'MTN Ghana', targetEnvironment: 'sandbox' },
    ]);
    expect(loadConfig({ ...BASE, ...SINGLE, MTN_MOMO_TARGET_ENVIRONMENT: 'mtnrwanda' }).momoMarkets).toMatchObject([
      { network: 'MTN Rwanda', currency: 'RWF' },
    ]);
    expect(loadConfig({}).momoMarkets).toEqual([]);
  });

  test.each([
    [
      'an unreadable file',
      () => loadConfig({ ...BASE, MTN_MOMO_MARKETS_FILE: join(DIR, 'missing.json') }),
      /MTN_MOMO_MARKETS_FILE: cannot read .*missing\.json \(ENOENT\)/,
    ],
    ['bad JSON', () => load('[{"target_environment": '), /MTN_MOMO_MARKETS_FILE: .* is not valid JSON/],
    ['not an array', () => load({ target_environment: 'mtnghana' }), /must hold a JSON array of markets/],
    [
      'an unknown pairing',
      () => load([market('mtnghana', 'UGX')]),
      /market 1: target environment mtnghana moves GHS, not UGX/,
    ],
    [
      'an unknown environment',
      () => load([market('mtnmars', 'GHS')]),
      /market 1: unknown target environment and currency pairing mtnmars with GHS/,
    ],
    [
      'a duplicate market',
      () => load([market('mtnghana', 'GHS'), market('mtnghana', 'GHS')]),
      /duplicate market: MTN Ghana \(GHS\) is configured by market 1 of MTN_MOMO_MARKETS_FILE and by market 2/,
    ],
    [
      'a duplicate of the single-market variables',
      () => load([market('mtnuganda', 'UGX')], SINGLE),
      /duplicate market: MTN Uganda \(UGX\) is configured by the MTN_MOMO_\* variables and by market 1/,
    ],
    [
      'a missing key',
      () => load([{ ...market('mtnrwanda', 'RWF'), disbursement: { subscription_key: 'k', api_user: 'u' } }]),
      /market 1: disbursement\.api_key: missing/,
    ],
    [
      'a missing product',
      () => load([{ target_environment: 'mtnrwanda', currency: 'RWF', collection: product('c') }]),
      /market 1: disbursement: missing/,
    ],
  ])('%s is refused with a clear message', (_name, loading, message) => {
    expect(loading).toThrow(message);
  });

  test('a markets file is a connector: it needs PUBLIC_BASE_URL', () => {
    expect(() => loadConfig({ MTN_MOMO_MARKETS_FILE: fileWith(JSON.stringify([market('mtnghana', 'GHS')])) })).toThrow(
      /PUBLIC_BASE_URL: required when a network connector/,
    );
  });
});
