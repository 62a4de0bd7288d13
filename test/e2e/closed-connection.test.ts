/**
 * The API and the worker live through postgres.js's two faults on a lost connection: its write on a
 * connection PostgreSQL closed (it crashed the API during the fault test's outage) and its array-types
 * query lost with the connection (it crashed the API when a partition healed). The guard of src/db
 * keeps the process; any other uncaught exception or unhandled rejection still ends it.
 */
import { expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { isArrayTypesQueryFailure, isWriteOnClosedConnection } from '../../src/db';
import { ROOT, testConfig } from '../helpers';

const fixture = join(ROOT, 'test/fixtures/driver-faults.ts');
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

test("the guard keeps the process through the driver's array-types query lost with its connection, the tenant statement refused in time; it ends the process on any other unhandled rejection", () => {
  const types = run('types');
  expect(types.stdout).toBe('refused CONNECT_TIMEOUT\nalive\n');
  expect(types.status).toBe(0);
  expect(types.stderr).toContain('PostgreSQL connection lost while it asked for the array types');
  const other = run('rejection');
  expect(other.stdout).toBe('');
  expect(other.status).toBe(1);
  expect(other.stderr).toContain('Unhandled rejection: Error: nobody listens');
});

test('the guard recognises only those errors', () => {
  const lost = Object.assign(new Error('write CONNECTION_CLOSED 127.0.0.1:5432'), { code: 'CONNECTION_CLOSED' });
  Object.defineProperty(lost, 'query', {
    value: '\n      select b.oid, b.typarray\n      from pg_catalog.pg_type a\n      left join pg_catalog.pg_type b',
  });
  expect(isArrayTypesQueryFailure(lost)).toBe(true);
  const ourQuery = Object.assign(new Error('write CONNECTION_CLOSED 127.0.0.1:5432'), { query: 'select 1' });
  expect(isArrayTypesQueryFailure(ourQuery)).toBe(false);
  expect(isArrayTypesQueryFailure(new Error('typarray'))).toBe(false);
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
