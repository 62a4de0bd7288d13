import { describe, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { metricsText } from '../../src/telemetry/metrics';

const ROOT = join(import.meta.dir, '../..');
// The docker CLI alone is not enough: `docker compose` needs its plugin.
const dockerAvailable = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' }).status === 0;

type Service = {
  image?: string;
  build?: { dockerfile: string };
  environment?: Record<string, string>;
  volumes?: string[];
  expose?: string[];
  ports?: string[];
};
const compose = Bun.YAML.parse(readFileSync(join(ROOT, 'temporal-compose.yml'), 'utf8')) as {
  services: Record<string, Service>;
};
const services = compose.services;

// Without `docker compose` the check cannot run: its skip says why (npm test builds the compose
// plugin from source when the docker CLI is installed; the engine is not needed).
const withCompose = dockerAvailable ? test : test.skip;
const whySkipped = dockerAvailable
  ? ''
  : ' (skipped: no `docker compose` here; install the docker CLI and npm test builds its compose plugin)';
withCompose(`temporal-compose.yml passes \`docker compose config -q\`${whySkipped}`, () => {
  const result = spawnSync('docker', ['compose', '-f', 'temporal-compose.yml', 'config', '-q'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
});

test('the compose file names the files it mounts and builds from', () => {
  for (const file of [
    'deploy/temporal/dynamicconfig/docker.yaml',
    'deploy/postgres/init.sql',
    'deploy/api.Dockerfile',
    'deploy/worker.Dockerfile',
  ]) {
    expect(existsSync(join(ROOT, file))).toBe(true);
  }
  const mounted = Object.values(services).flatMap((service) =>
    (service.volumes ?? []).filter((volume) => volume.startsWith('./')),
  );
  expect(mounted.length).toBeGreaterThanOrEqual(5);
  for (const volume of mounted)
    expect({ volume, exists: existsSync(join(ROOT, volume.split(':')[0]!)) }).toEqual({ volume, exists: true });
  for (const service of Object.values(services))
    if (service.build) expect(existsSync(join(ROOT, service.build.dockerfile))).toBe(true);
});

describe('the telemetry stack of the compose file', () => {
  test('Prometheus scrapes the API, the worker on its metrics port, and the Temporal server', () => {
    expect(services.prometheus?.volumes).toContain(
      './deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro',
    );
    const config = Bun.YAML.parse(readFileSync(join(ROOT, 'deploy/prometheus/prometheus.yml'), 'utf8')) as {
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
    };
    const targets = Object.fromEntries(
      config.scrape_configs.map((job) => [job.job_name, job.static_configs.flatMap((entry) => entry.targets)]),
    );
    const workerPort = services.worker?.environment?.WORKER_METRICS_PORT;
    const serverPort = services.temporal?.environment?.PROMETHEUS_ENDPOINT?.split(':')[1];
    expect(targets).toEqual({
      'collections-api': [`api:${services.api?.environment?.PORT}`],
      'collections-worker': [`worker:${workerPort}`],
      'temporal-server': [`temporal:${serverPort}`],
    });
    expect(services.worker?.expose).toContain(String(workerPort));
  });

  test('the API and the worker send traces to Jaeger over OTLP/HTTP, each under its own service name', () => {
    expect(services.jaeger?.image).toStartWith('jaegertracing/');
    expect(services.jaeger?.expose).toContain('4318');
    for (const name of ['api', 'worker']) {
      expect(services[name]?.environment).toMatchObject({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318',
        OTEL_SERVICE_NAME: `collections-${name}`,
      });
    }
  });

  test('Grafana is provisioned with Prometheus and Jaeger, and its dashboard shows every metric the service defines', async () => {
    const datasources = Bun.YAML.parse(
      readFileSync(join(ROOT, 'deploy/grafana/provisioning/datasources/datasources.yml'), 'utf8'),
    ) as {
      datasources: { uid: string; type: string; url: string }[];
    };
    expect(datasources.datasources.map((source) => [source.uid, source.type, source.url])).toEqual([
      ['prometheus', 'prometheus', 'http://prometheus:9090'],
      ['jaeger', 'jaeger', 'http://jaeger:16686'],
    ]);
    type Panel = { type: string; datasource?: { uid: string }; targets?: { expr: string }[] };
    const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/dashboards/collections.json'), 'utf8')) as {
      uid: string;
      panels: Panel[];
    };
    const queried = dashboard.panels.filter((panel) => panel.type !== 'row');
    for (const panel of queried) expect(panel.datasource?.uid).toBe('prometheus');
    const expressions = queried.flatMap((panel) => panel.targets ?? []).map((target) => target.expr);
    // Metric names the expressions select: identifiers left once `by (...)`, label matchers and ranges
    // are removed, other than function names (followed by `(`), without histogram suffixes.
    const metricNames = (expr: string) =>
      [
        ...expr
          .replace(/\b(by|without)\s*\([^)]*\)/g, '')
          .replace(/\{[^}]*\}|\[[^\]]*\]/g, '')
          .matchAll(/\b([a-z_][a-z0-9_]*)\b(?!\s*\()/g),
      ].map((match) => match[1]!.replace(/_(bucket|count|sum)$/, ''));
    const selected = new Set(expressions.flatMap(metricNames));
    // The service's own instruments (prom-client's process_* and nodejs_* are there once a process collects them).
    const defined = new Set(
      [
        ...(await metricsText('api')).matchAll(/^# TYPE (\S+)/gm),
        ...(await metricsText('worker')).matchAll(/^# TYPE (\S+)/gm),
      ]
        .map((match) => match[1]!)
        .filter((name) => !/^(process|nodejs)_/.test(name)),
    );
    expect(defined.size).toBeGreaterThanOrEqual(15);
    expect([...defined].filter((name) => !selected.has(name))).toEqual([]);
    // Every other name is the Temporal SDK's (temporal_*) or the Temporal server's (service_*).
    expect([...selected].filter((name) => !defined.has(name) && !/^(temporal|service)_/.test(name))).toEqual([]);
  });
});
