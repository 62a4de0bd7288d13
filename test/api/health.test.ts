/**
 * Liveness and readiness: `/livez` answers while the process serves, whatever its dependencies
 * do; `/readyz` (and `/healthz`, kept as it was) answers 503 naming the dependency that does not
 * answer. The unreachable PostgreSQL and Temporal are real closed ports, not mocks.
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { createApp } from '../../src/app';
import { createSql } from '../../src/db';
import { createLazyClient } from '../../src/temporal/connection';
import { launcherFromConfig } from '../../src/temporal/launcher';
import { freePort } from '../../scripts/infra.mjs';
import { requester, testApp, testConfig, testSql } from '../helpers';

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  await Promise.allSettled(cleanups.map((cleanup) => cleanup()));
});

/** An app whose PostgreSQL and/or Temporal is a port nothing listens on. */
async function appWithout(dependency: 'postgres' | 'temporal') {
  const closedPort = (await freePort()) as number;
  const config = testConfig();
  const sql =
    dependency === 'postgres' ? createSql(`postgres://postgres@127.0.0.1:${closedPort}/nothing`, 1) : testSql();
  const temporal = createLazyClient(
    dependency === 'temporal' ? { ...config.temporal, address: `127.0.0.1:${closedPort}` } : config.temporal,
  );
  // The client to nowhere is left to give up by itself: closing it under its pending retries throws.
  if (dependency === 'postgres')
    cleanups.push(
      () => sql.end({ timeout: 1 }),
      () => temporal.connection.close(),
    );
  return createApp({ config, sql, temporal, launcher: launcherFromConfig(temporal, config, () => {}) });
}

describe('health', () => {
  test('with everything up: /livez, /readyz and /healthz are 200, without a key', async () => {
    const { app } = await testApp();
    const anonymous = requester(app, null);
    expect(await anonymous('/livez')).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await anonymous('/readyz')).toMatchObject({
      status: 200,
      body: { status: 'ok', postgres: 'ok', temporal: 'ok' },
    });
    expect(await anonymous('/healthz')).toMatchObject({
      status: 200,
      body: { status: 'ok', postgres: 'ok', temporal: 'ok' },
    });
  });

  test.each(['postgres', 'temporal'] as const)(
    'with %s unreachable: /livez stays 200, /readyz and /healthz are 503 naming it',
    async (dependency) => {
      const anonymous = requester(await appWithout(dependency), null);
      const other = dependency === 'postgres' ? 'temporal' : 'postgres';
      expect(await anonymous('/livez')).toMatchObject({ status: 200, body: { status: 'ok' } });
      for (const path of ['/readyz', '/healthz']) {
        expect(await anonymous(path)).toMatchObject({
          status: 503,
          body: { status: 'unavailable', [dependency]: 'unreachable', [other]: 'ok' },
        });
      }
    },
    20_000,
  );
});
