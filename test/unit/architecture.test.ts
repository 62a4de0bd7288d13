import { expect, test } from 'bun:test';
import { readArchitecture } from '../../scripts/architecture';

const architecture = readArchitecture();

test('no run-time import goes up a floor', () => {
  expect(architecture.upward).toEqual([]);
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
