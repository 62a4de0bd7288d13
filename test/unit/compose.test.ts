import { expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dir, '../..');
// The docker CLI alone is not enough: `docker compose` needs its plugin.
const dockerAvailable = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' }).status === 0;

test.if(dockerAvailable)('temporal-compose.yml passes `docker compose config -q`', () => {
  const result = spawnSync('docker', ['compose', '-f', 'temporal-compose.yml', 'config', '-q'], { cwd: ROOT, encoding: 'utf8' });
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
});

test('the compose file names the files it mounts and builds from', () => {
  for (const file of ['deploy/temporal/dynamicconfig/docker.yaml', 'deploy/postgres/init.sql', 'deploy/api.Dockerfile', 'deploy/worker.Dockerfile']) {
    expect(existsSync(join(ROOT, file))).toBe(true);
  }
});
