import { expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, defaultWorkerRuntime, workerRuntimeCommand } from '../helpers';

const HISTORIES = join(ROOT, 'test/histories');

test(`recorded histories of every workflow replay against the current code (on ${defaultWorkerRuntime()})`, () => {
  const [command, ...args] = workerRuntimeCommand('scripts/replay-histories.ts');
  const result = spawnSync(command, [...args, HISTORIES], { cwd: ROOT, env: process.env, encoding: 'utf8' });
  const files = readdirSync(HISTORIES).filter((file) => file.endsWith('.json'));
  expect(files.length).toBeGreaterThanOrEqual(2);
  expect(result.stdout).toContain(`${files.length} of ${files.length} histories replayed`);
  expect(result.status).toBe(0);
}, 120_000);
