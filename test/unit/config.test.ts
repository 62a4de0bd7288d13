import { expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import { searchAttributes } from '../../src/contracts/search-attributes';
import { SEARCH_ATTRIBUTES } from '../../scripts/infra.mjs';

test('defaults are the sandbox defaults of the README', () => {
  const config = loadConfig({});
  expect(config.port).toBe(8000);
  expect(config.temporal).toEqual({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'collections' });
  expect(config.sandbox).toBe(true);
  expect(config.pageSizeMax).toBe(100);
  // Bun's development error page only when asked for, whatever NODE_ENV says.
  expect(config.developmentMode).toBe(false);
  expect(loadConfig({ NODE_ENV: 'development' }).developmentMode).toBe(false);
  expect(loadConfig({ API_DEVELOPMENT_MODE: 'true' }).developmentMode).toBe(true);
});

test('invalid settings fail loudly, naming the variable', () => {
  expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
  expect(() => loadConfig({ SANDBOX: 'maybe' })).toThrow(/SANDBOX/);
  expect(() => loadConfig({ DATABASE_URL: 'not a url' })).toThrow(/DATABASE_URL/);
});

test('every search attribute the workflows set is registered by the bootstrap and the compose file', () => {
  const used = Object.fromEntries(Object.values(searchAttributes).map((key) => [key.name, 'Keyword']));
  expect({ ...SEARCH_ATTRIBUTES } as Record<string, string>).toEqual(used);
  const compose = readFileSync(join(import.meta.dir, '../../temporal-compose.yml'), 'utf8');
  for (const name of Object.keys(used)) expect(compose).toContain(`--name ${name}`);
});

test('operator callbacks: 600 a minute per address and 6,000 per operator by default, each settable', () => {
  expect(loadConfig({}).operatorCallbacks).toEqual({ perAddress: 600, perOperator: 6000, windowSeconds: 60 });
  expect(
    loadConfig({ OPERATOR_CALLBACK_LIMIT_PER_ADDRESS: '5', OPERATOR_CALLBACK_LIMIT_PER_OPERATOR: '50' })
      .operatorCallbacks,
  ).toEqual({ perAddress: 5, perOperator: 50, windowSeconds: 60 });
  expect(() => loadConfig({ OPERATOR_CALLBACK_LIMIT_PER_ADDRESS: '0' })).toThrow(/OPERATOR_CALLBACK_LIMIT_PER_ADDRESS/);
  expect(() => loadConfig({ OPERATOR_CALLBACK_LIMIT_PER_OPERATOR: 'many' })).toThrow(
    /OPERATOR_CALLBACK_LIMIT_PER_OPERATOR/,
  );
});

test('every variable the config reads is documented in docs/configuration.md', () => {
  const guide = readFileSync(join(import.meta.dir, '../../docs/configuration.md'), 'utf8');
  const source = readFileSync(join(import.meta.dir, '../../src/config.ts'), 'utf8');
  const variables = [...source.matchAll(/^\s+([A-Z][A-Z_]+): v\.optional/gm)].map((match) => match[1]);
  expect(variables.length).toBeGreaterThan(5);
  expect(variables.filter((variable) => !guide.includes(`\`${variable}\``))).toEqual([]);
});

test('webhook and retention settings: the documented defaults, short schedules for tests, and what is refused', () => {
  const defaults = loadConfig({});
  expect(defaults.webhooks).toEqual({
    retryDelaysMs: [10_000, 60_000, 300_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000, 28_800_000],
    jitter: 0.2,
    caFile: undefined,
    disableAfterHours: 120,
    concurrency: 16,
    senders: 200,
    dispatchers: 2,
    dispatchWindow: 128,
    receiverConcurrency: 32,
    organizationConcurrency: 64,
    dispatchQueue: null,
  });
  expect(defaults.retention).toEqual({ days: 30, auditDays: 365, sweepEnabled: true, sweepIntervalSeconds: 3600 });
  expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '100ms, 1s,2s,3s,4s,5s,6s,7s,8s' }).webhooks.retryDelaysMs[0]).toBe(100);
  expect(loadConfig({ EVENT_RETENTION_DAYS: '90' }).retention.days).toBe(90);
  // Events are kept at least 30 days (docs/api.md#events).
  expect(() => loadConfig({ EVENT_RETENTION_DAYS: '29' })).toThrow(/EVENT_RETENTION_DAYS/);
  // The audit trail outlives the events: at least their retention, by default a year or theirs when longer.
  expect(loadConfig({ AUDIT_RETENTION_DAYS: '30' }).retention.auditDays).toBe(30);
  expect(loadConfig({ EVENT_RETENTION_DAYS: '400' }).retention.auditDays).toBe(400);
  expect(() => loadConfig({ EVENT_RETENTION_DAYS: '90', AUDIT_RETENTION_DAYS: '60' })).toThrow(
    /AUDIT_RETENTION_DAYS: must be at least EVENT_RETENTION_DAYS \(90\)/,
  );
  // 10 attempts in total: exactly 9 waits.
  expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '1s,2s' })).toThrow(
    /WEBHOOK_RETRY_SCHEDULE: must list exactly 9 waits/,
  );
  expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '1s,2s,3s,4s,5s,6s,7s,8s,soon' })).toThrow(
    /WEBHOOK_RETRY_SCHEDULE/,
  );
  expect(() => loadConfig({ WEBHOOK_RETRY_JITTER: '1.5' })).toThrow(/WEBHOOK_RETRY_JITTER/);
  expect(loadConfig({ WEBHOOK_CA_FILE: '/tmp/ca.pem' }).webhooks.caFile).toBe('/tmp/ca.pem');
  expect(() => loadConfig({ WEBHOOK_CA_FILE: '/tmp/ca.pem', SANDBOX: 'false' })).toThrow(
    /WEBHOOK_CA_FILE: only allowed when SANDBOX=true/,
  );
});

test("outside sandbox mode PUBLIC_BASE_URL is required: links are never built from a request's Host header", () => {
  expect(() => loadConfig({ SANDBOX: 'false' })).toThrow(/PUBLIC_BASE_URL: required when SANDBOX=false/);
  expect(
    loadConfig({
      SANDBOX: 'false',
      PUBLIC_BASE_URL: 'https://pay.example/',
      METRICS_TOKEN: 'a-long-scrape-token',
      CONSOLE_SECRET: 'k'.repeat(32),
    }).publicBaseUrl,
  ).toBe('https://pay.example');
  expect(loadConfig({}).publicBaseUrl).toBeUndefined();
});

test('outside sandbox mode METRICS_TOKEN is required: both /metrics endpoints show business totals', () => {
  const live = { SANDBOX: 'false', PUBLIC_BASE_URL: 'https://pay.example', CONSOLE_SECRET: 'k'.repeat(32) };
  expect(() => loadConfig(live)).toThrow(/METRICS_TOKEN: required when SANDBOX=false and METRICS=true/);
  expect(loadConfig({ ...live, METRICS_TOKEN: 'a-long-scrape-token' }).telemetry.metricsToken).toBe(
    'a-long-scrape-token',
  );
  // Without the endpoints there is nothing to protect; in sandbox mode they may stay open.
  expect(loadConfig({ ...live, METRICS: 'false' }).telemetry.metrics).toBe(false);
  expect(loadConfig({}).telemetry.metricsToken).toBeUndefined();
});

test("the console's signing key: required outside sandbox mode, at least 32 characters, never a fixed default", () => {
  const live = { SANDBOX: 'false', PUBLIC_BASE_URL: 'https://pay.example', METRICS_TOKEN: 'a-long-scrape-token' };
  expect(() => loadConfig(live)).toThrow(/CONSOLE_SECRET: required when SANDBOX=false/);
  expect(() => loadConfig({ ...live, CONSOLE_SECRET: 'too short' })).toThrow(
    /CONSOLE_SECRET: must be at least 32 characters/,
  );
  expect(loadConfig({ ...live, CONSOLE_SECRET: 's'.repeat(40) }).console.secret).toBe('s'.repeat(40));
  // Sandbox mode without one: a random key of the process, so no two loads share it.
  const first = loadConfig({}).console.secret;
  expect(first.length).toBeGreaterThanOrEqual(32);
  expect(loadConfig({}).console.secret).not.toBe(first);
});
