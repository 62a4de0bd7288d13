import { expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers';

test('without Go and without a temporal binary, the bootstrap names both ways out', () => {
  const env: Record<string, string> = {
    PATH: '/usr/bin:/bin',
    HOME: tmpdir(),
    TOOLS_DIR: mkdtempSync(join(tmpdir(), 'tools-')),
  };
  const script =
    "import('./scripts/infra.mjs').then((m) => m.ensureTemporalCli()).catch((e) => { console.error(e.message); process.exit(3); })";
  const result = spawnSync('/usr/bin/node', ['-e', script], { cwd: ROOT, env, encoding: 'utf8' });
  expect(result.status).toBe(3);
  expect(result.stderr).toContain('install the Temporal CLI');
  expect(result.stderr).toContain('docker compose -f temporal-compose.yml up');
});
