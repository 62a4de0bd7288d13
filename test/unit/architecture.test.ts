import { expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { LAYERS, MAX_FILE_LINES, MAX_OWN_LINES, UPWARD, layerOf, readArchitecture } from '../../scripts/architecture';

const architecture = readArchitecture();
const ROOT = resolve(import.meta.dir, '../..');

test('no import (type-only ones included) goes up a layer but the two at most that UPWARD names, each still there', () => {
  expect(architecture.upward).toEqual([]);
  expect(UPWARD.length).toBeLessThanOrEqual(2);
  for (const allowed of UPWARD) expect(architecture.imports.get(allowed.from)).toContain(allowed.to);
});

test('nothing below src/temporal/ imports it: the application declares the launcher it needs (src/services/platform/ports.ts)', () => {
  const launcherLayer = LAYERS.findIndex((layer) => layer.members.includes('temporal/'));
  const below = [...architecture.imports].filter(([from]) => layerOf(from) < launcherLayer);
  expect(below.filter(([, targets]) => targets.some((to) => to.startsWith('temporal/'))).map(([from]) => from)).toEqual(
    [],
  );
});

test('the API and the web console do not import each other', () => {
  expect(architecture.interfacesCrossed).toEqual([]);
});

test('no import circle', () => {
  expect(architecture.cycles).toEqual([]);
});

test('SQL is written in services/ and db/ only', () => {
  expect(architecture.sqlOutside).toEqual([]);
});

test('no function has more than 80 lines of code of its own', () => {
  expect(architecture.longFunctions).toEqual([]);
});

test('nothing is exported that no other file names', () => {
  expect(architecture.deadExports).toEqual([]);
});

test('every file path the code cites is a file of the repository', () => {
  expect(architecture.unresolvedReferences).toEqual([]);
});

test('the contracts sit below their users: nothing in activities, services, network, the API or the console imports src/workflows/', () => {
  const users = ['activities/', 'services/', 'network/', 'api/', 'console/', 'outbound/', 'domain/', 'contracts/'];
  const breaches = [...architecture.imports].flatMap(([from, targets]) =>
    users.some((folder) => from.startsWith(folder))
      ? targets.filter((to) => to.startsWith('workflows/')).map((to) => `${from} → ${to}`)
      : [],
  );
  expect(breaches).toEqual([]);
});

test('no line of src is over 120 characters (biome.json: the formatter keeps code there; strings and comments are split by hand)', () => {
  const long: string[] = [];
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.(ts|js|css|mjs)$/.test(entry.name)) {
        readFileSync(path, 'utf8')
          .split('\n')
          .forEach((line, index) => {
            if (line.length > 120) long.push(`${relative(ROOT, path)}:${index + 1}`);
          });
      }
    }
  };
  walk(join(ROOT, 'src'));
  expect(long).toEqual([]);
});

test("connectors only translate: nothing in an operator's folder imports services/ or db/, or names the database", () => {
  expect(architecture.connectorBreaches).toEqual([]);
});

test("the core's journal is the one writer of network_operations", () => {
  expect(architecture.journalWriters).toEqual(['services/networks/journal.ts']);
});

test(`no function of src/network or src/services is over ${MAX_OWN_LINES} lines counting the functions nested in it`, () => {
  expect(architecture.longWholeFunctions).toEqual([]);
});

test(`no file of src/network or src/services is over ${MAX_FILE_LINES} lines`, () => {
  expect(architecture.longFiles).toEqual([]);
});
