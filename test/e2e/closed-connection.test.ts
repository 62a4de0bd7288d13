/**
 * The API and the worker live through postgres.js's write on a connection PostgreSQL closed (it
 * crashed the API during the fault test's outage): the guard of src/db keeps the process, any
 * other uncaught exception still ends it.
 */
import { expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { isWriteOnClosedConnection } from '../../src/db';
import { ROOT, testConfig } from '../helpers';

const fixture = join(ROOT, 'test/fixtures/write-on-closed-connection.ts');
const run = (mode: string) =>
  spawnSync(process.execPath, [fixture, testConfig().databaseUrl, mode], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 20_000,
  });

test("the guard keeps the process through the driver's write on a closed connection, and ends it on any other uncaught error", () => {
  const driver = run('driver');
  expect(driver.stdout).toBe('alive\n');
  expect(driver.status).toBe(0);
  expect(driver.stderr).toContain('PostgreSQL connection closed under a pending write');
  const other = run('other');
  expect(other.stdout).toBe('');
  expect(other.status).toBe(1);
  expect(other.stderr).toContain('Uncaught exception: TypeError');
});

test('the guard recognises only that error', () => {
  const driverError = new TypeError("null is not an object (evaluating 'socket.write')");
  driverError.stack = `${driverError.message}\n    at nextWrite (/app/node_modules/postgres/src/connection.js:255:15)`;
  expect(isWriteOnClosedConnection(driverError)).toBe(true);
  const nodeError = new TypeError("Cannot read properties of null (reading 'write')");
  nodeError.stack = `${nodeError.message}\n    at Immediate.nextWrite (/app/node_modules/postgres/cjs/src/connection.js:255:22)`;
  expect(isWriteOnClosedConnection(nodeError)).toBe(true);
  const ours = new TypeError("Cannot read properties of null (reading 'write')");
  ours.stack = `${ours.message}\n    at send (/app/src/activities/webhooks.ts:10:1)`;
  expect(isWriteOnClosedConnection(ours)).toBe(false);
  expect(isWriteOnClosedConnection(new Error('socket.write'))).toBe(false);
});
