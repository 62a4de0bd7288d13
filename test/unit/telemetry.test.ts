import { describe, expect, test } from 'bun:test';
import { trace } from '@opentelemetry/api';
import { UNMATCHED_ROUTE, createRouteTemplates } from '../../src/http/request-telemetry';
import { loadConfig } from '../../src/config';
import { measuredVerification, metricsText, recordWebhookAttempt } from '../../src/telemetry/metrics';
import { currentTraceIds, tracingActive } from '../../src/telemetry/trace-context';
import { startTracing } from '../../src/telemetry/tracing';
import { parseScrape } from '../metrics';

describe('telemetry settings', () => {
  test('defaults: no tracing, metrics on, the worker on 9464 of loopback, no token', () => {
    expect(loadConfig({}).telemetry).toEqual({
      otlpEndpoint: undefined,
      serviceName: undefined,
      metrics: true,
      workerMetricsPort: 9464,
      workerMetricsHost: '127.0.0.1',
      metricsToken: undefined,
    });
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318/',
        OTEL_SERVICE_NAME: 'api-eu',
        METRICS: 'false',
        WORKER_METRICS_PORT: '0',
        WORKER_METRICS_HOST: '0.0.0.0',
        METRICS_TOKEN: 'a-long-scrape-token',
      }).telemetry,
    ).toEqual({
      otlpEndpoint: 'http://jaeger:4318',
      serviceName: 'api-eu',
      metrics: false,
      workerMetricsPort: 0,
      workerMetricsHost: '0.0.0.0',
      metricsToken: 'a-long-scrape-token',
    });
  });

  test('bad values stop the process naming the variable', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'jaeger:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(() => loadConfig({ WORKER_METRICS_PORT: '70000' })).toThrow(/WORKER_METRICS_PORT/);
    expect(() => loadConfig({ METRICS: 'sometimes' })).toThrow(/METRICS/);
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN: must be at least 16 characters/);
  });

  test('without an endpoint, tracing registers nothing and makes no span', () => {
    expect(startTracing({ otlpEndpoint: undefined, serviceName: undefined }, 'collections-api')).toBeNull();
    expect(tracingActive()).toBe(false);
    trace.getTracer('check').startActiveSpan('not recorded', (span) => {
      expect(span.isRecording()).toBe(false);
      expect(currentTraceIds()).toBeNull();
      span.end();
    });
  });
});

describe('route templates', () => {
  const routes = [
    { method: 'GET', path: '/api/contacts' },
    { method: 'POST', path: '/api/contacts' },
    { method: 'GET', path: '/api/contacts/:id' },
    { method: 'GET', path: '/api/bills/billers/services/list' },
    { method: 'GET', path: '/api/bills/services/:service/billers' },
    { method: 'GET', path: '/healthz' },
  ];
  const templateOf = createRouteTemplates(() => routes);

  test.each([
    ['GET', '/api/contacts', '/api/contacts'],
    ['GET', '/api/contacts/', '/api/contacts'],
    ['POST', '/api/contacts', '/api/contacts'],
    ['GET', '/api/contacts/42', '/api/contacts/:id'],
    ['GET', '/api/v3/contacts/42', '/api/contacts/:id'],
    ['HEAD', '/api/contacts', '/api/contacts'],
    // A method the path does not serve (405) still names the path's route.
    ['DELETE', '/api/contacts', '/api/contacts'],
    ['GET', '/api/bills/billers/services/list', '/api/bills/billers/services/list'],
    ['GET', '/api/bills/services/electricity/billers', '/api/bills/services/:service/billers'],
    ['GET', '/api/contacts/42/extra', UNMATCHED_ROUTE],
    ['GET', '/wp-admin.php', UNMATCHED_ROUTE],
  ])('%s %s is %s', (method, path, template) => {
    expect(templateOf(method, path)).toBe(template);
  });
});

describe('instruments', () => {
  const worker = async () => parseScrape(await metricsText('worker'));

  test('a webhook delivery is counted once, when its outcome is final', async () => {
    const before = await worker();
    const eventCreatedAt = new Date(Date.now() - 2000);
    recordWebhookAttempt({ outcome: 'failed', attempt: 3, eventCreatedAt, redelivery: false });
    recordWebhookAttempt({ outcome: 'failed', attempt: 10, eventCreatedAt, redelivery: false });
    recordWebhookAttempt({ outcome: 'gone', attempt: 1, eventCreatedAt, redelivery: false });
    recordWebhookAttempt({ outcome: 'delivered', attempt: 4, eventCreatedAt, redelivery: false });
    recordWebhookAttempt({ outcome: 'delivered', attempt: 1, eventCreatedAt: new Date(0), redelivery: true });
    const after = await worker();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      after.value(name, labels) - before.value(name, labels);
    expect(delta('webhook_deliveries_total', { outcome: 'failed' })).toBe(1);
    expect(delta('webhook_deliveries_total', { outcome: 'gone' })).toBe(1);
    expect(delta('webhook_deliveries_total', { outcome: 'delivered' })).toBe(2);
    expect(delta('webhook_delivery_attempts_sum', { outcome: 'delivered' })).toBe(5);
    expect(delta('webhook_delivery_attempts_sum', { outcome: 'failed' })).toBe(10);
    // Time to delivery: first deliveries only (the redelivery of an old event would say nothing about the pipeline).
    expect(delta('webhook_time_to_delivery_seconds_count')).toBe(1);
    expect(delta('webhook_time_to_delivery_seconds_sum')).toBeGreaterThanOrEqual(2);
    expect(delta('webhook_time_to_delivery_seconds_sum')).toBeLessThan(10);
  });

  test('verification: counted by outcome when the merchant was asked, not otherwise', async () => {
    const before = await worker();
    const verify = measuredVerification(async (decision: { decision: 'accept' | 'reject'; decidedBy: string }) => {
      await Bun.sleep(20);
      return decision;
    });
    await verify({ decision: 'accept', decidedBy: 'not-asked' });
    await verify({ decision: 'reject', decidedBy: 'merchant' });
    await verify({ decision: 'accept', decidedBy: 'default' });
    const after = await worker();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      after.value(name, labels) - before.value(name, labels);
    expect(delta('verification_answers_total')).toBe(2);
    expect(delta('verification_answers_total', { outcome: 'reject' })).toBe(1);
    expect(delta('verification_answers_total', { outcome: 'default' })).toBe(1);
    expect(delta('verification_duration_seconds_count', { outcome: 'reject' })).toBe(1);
    expect(delta('verification_duration_seconds_sum', { outcome: 'reject' })).toBeGreaterThanOrEqual(0.015);
  });
});
