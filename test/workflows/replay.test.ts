import { expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers';

const HISTORIES = join(ROOT, 'test/histories');

test('recorded histories of every workflow replay against the current code (on Node)', () => {
  const result = spawnSync('node', ['--import', 'tsx', 'scripts/replay-histories.ts', HISTORIES], { cwd: ROOT, env: process.env, encoding: 'utf8' });
  const files = readdirSync(HISTORIES).filter((file) => file.endsWith('.json'));
  expect(files.length).toBeGreaterThanOrEqual(2);
  expect(result.stdout).toContain(`${files.length} of ${files.length} histories replayed`);
  expect(result.status).toBe(0);
}, 120_000);
