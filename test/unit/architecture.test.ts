import { expect, test } from 'bun:test';
import { FLOORS, UPWARD, floorOf, readArchitecture } from '../../scripts/architecture';

const architecture = readArchitecture();

test('no import (type-only ones included) goes up a floor but the two at most that UPWARD names, each still there', () => {
  expect(architecture.upward).toEqual([]);
  expect(UPWARD.length).toBeLessThanOrEqual(2);
  for (const allowed of UPWARD) expect(architecture.imports.get(allowed.from)).toContain(allowed.to);
});

test('nothing below src/temporal/ imports it: the application declares the launcher it needs (src/services/ports.ts)', () => {
  const launcherFloor = FLOORS.findIndex((floor) => floor.members.includes('temporal/'));
  const below = [...architecture.imports].filter(([from]) => floorOf(from) < launcherFloor);
  expect(below.filter(([, targets]) => targets.some((to) => to.startsWith('temporal/'))).map(([from]) => from)).toEqual([]);
});

test('the API and the web console do not import each other', () => {
  expect(architecture.facesCrossed).toEqual([]);
});

test('no import circle', () => {
  expect(architecture.cycles).toEqual([]);
});

test('SQL is written in services/ and db/ only', () => {
  expect(architecture.sqlOutside).toEqual([]);
});

test('no function has more than 60 lines of code of its own', () => {
  expect(architecture.longFunctions).toEqual([]);
});

test('nothing is exported that no other file names', () => {
  expect(architecture.deadExports).toEqual([]);
});

test('every file path the code cites is a file of the repository', () => {
  expect(architecture.unresolvedReferences).toEqual([]);
});

test('legacy in its own folders: earlier workflow types take their activities from src/activities/legacy/ and no current workflow; nothing current imports legacy', () => {
  const legacy = (module: string) => module.startsWith('workflows/legacy/') || module.startsWith('activities/legacy/');
  const breaches: string[] = [];
  for (const [from, targets] of architecture.imports) {
    for (const to of targets) {
      if (from.startsWith('workflows/legacy/') && to.startsWith('activities/') && !to.startsWith('activities/legacy/')) breaches.push(`${from} → ${to}`);
      if (from.startsWith('workflows/legacy/') && to.startsWith('workflows/') && !legacy(to) && !to.startsWith('workflows/contracts/')) breaches.push(`${from} → ${to}`);
      // The gathering points (the worker's bundle and the activity factory) name the legacy folders; nothing else current does.
      if (!legacy(from) && legacy(to) && from !== 'workflows/index.ts' && from !== 'activities/index.ts') breaches.push(`${from} → ${to}`);
    }
  }
  expect(breaches).toEqual([]);
});
