/**
 * The Kubernetes manifests (deploy/kubernetes) validated offline: the Go validator decodes each
 * document strictly into its Kubernetes type and checks the rules between them; here also that the
 * ConfigMap and Secret set only variables the service reads.
 */
import { expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import { ROOT } from '../helpers';

const MANIFESTS = join(ROOT, 'deploy/kubernetes');
const validate = (folder: string) =>
  spawnSync('go', ['run', '.', folder], {
    cwd: join(MANIFESTS, 'validate'),
    encoding: 'utf8',
    env: { ...process.env, GOFLAGS: '-mod=mod' },
  });

test("the manifests and Temporal's chart values pass the offline validator", () => {
  const result = validate(MANIFESTS);
  expect(result.stdout + result.stderr).toContain('valid');
  expect(result.status).toBe(0);
}, 180_000);

test("the validator refuses a misspelt field and a probe off the API's health routes", () => {
  const broken = mkdtempSync(join(tmpdir(), 'manifests-'));
  cpSync(MANIFESTS, broken, { recursive: true });
  const file = join(broken, 'collections.yaml');
  writeFileSync(
    file,
    readFileSync(file, 'utf8')
      .replace('terminationGracePeriodSeconds: 30', 'terminationGraceSeconds: 30')
      .replace('path: /readyz', 'path: /healthz'),
  );
  const result = validate(broken);
  expect(result.status).toBe(1);
  expect(result.stdout).toContain('unknown field "terminationGraceSeconds"');
  expect(result.stdout).toContain('readiness probe must GET /readyz');
}, 180_000);

/** The variables the ConfigMap and the Secret give every container. */
function manifestEnvironment(): Record<string, string> {
  const documents = readFileSync(join(MANIFESTS, 'collections.yaml'), 'utf8')
    .split(/^---\s*$/m)
    .map(
      (part) =>
        Bun.YAML.parse(part) as {
          kind?: string;
          data?: Record<string, string>;
          stringData?: Record<string, string>;
        },
    );
  return Object.assign(
    {},
    ...documents
      .filter((document) => document?.kind === 'ConfigMap' || document?.kind === 'Secret')
      .map((document) => ({ ...document.data, ...document.stringData })),
  );
}

test('the ConfigMap and the Secret set only variables the service reads', () => {
  const set = Object.keys(manifestEnvironment());
  const source = readFileSync(join(ROOT, 'src/config.ts'), 'utf8');
  const read = new Set([...source.matchAll(/^\s+([A-Z][A-Z_0-9]+): v\.optional/gm)].map((match) => match[1]));
  expect(set.length).toBeGreaterThan(3);
  expect(set.filter((name) => !read.has(name))).toEqual([]);
});

test('the ConfigMap and the Secret make a configuration the service starts with (outside sandbox mode: a metrics token)', () => {
  const environment = manifestEnvironment();
  expect(environment.SANDBOX).toBe('false');
  expect(loadConfig(environment).telemetry.metricsToken).toBe(environment.METRICS_TOKEN);
});
