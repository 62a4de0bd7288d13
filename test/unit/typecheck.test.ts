import { expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(import.meta.dir, '../..');

test('the project type-checks under strict settings', () => {
  const result = spawnSync(join(ROOT, 'node_modules/.bin/tsc'), ['--noEmit', '-p', ROOT], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  expect(result.stdout + result.stderr).toBe('');
  expect(result.status).toBe(0);
}, 120_000);
