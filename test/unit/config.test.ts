import { expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import { searchAttributes } from '../../src/workflows/shared';
import { SEARCH_ATTRIBUTES } from '../../scripts/infra.mjs';

test('defaults are the sandbox defaults of the README', () => {
  const config = loadConfig({});
  expect(config.port).toBe(8000);
  expect(config.temporal).toEqual({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'collections' });
  expect(config.sandbox).toBe(true);
  expect(config.pageSizeMax).toBe(100);
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

test('every variable the config reads is documented in the README', () => {
  const readme = readFileSync(join(import.meta.dir, '../../README.md'), 'utf8');
  const source = readFileSync(join(import.meta.dir, '../../src/config.ts'), 'utf8');
  const variables = [...source.matchAll(/^\s+([A-Z][A-Z_]+): v\.optional/gm)].map((match) => match[1]);
  expect(variables.length).toBeGreaterThan(5);
  expect(variables.filter((variable) => !readme.includes(`\`${variable}\``))).toEqual([]);
});
