// The production Temporal server, run the way temporal-compose.yml runs it but without Docker: the
// `server` and `sql` binaries of the version the compose file's image names are built once from
// go.temporal.io/server (docs/testing.md, Production parity) into the tools folder, and they get the environment variables
// and the dynamic-config file that the compose file's `temporal-schema`, `temporal` and
// `temporal-setup` services use, read from the compose file itself. Only what must differ on this
// machine is overridden: where PostgreSQL is, the database names, and free ports instead of 7233
// and its neighbours.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import {
  ROOT,
  SEARCH_ATTRIBUTES,
  TOOLS,
  binPath,
  freePorts,
  say,
  startChild,
  temporalHealthy,
  waitFor,
} from './infra.mjs';
import { databaseName, dropDatabase } from './postgres.mjs';

export const TEMPORAL_SERVER_DIR = join(TOOLS, 'temporal-server');
const SERVER = join(TEMPORAL_SERVER_DIR, 'server');
const SQL_TOOL = join(TEMPORAL_SERVER_DIR, 'sql');
/** Where the admin-tools image keeps the schema (`/etc/temporal/schema/postgresql/v12`), here. */
const SCHEMA = join(TEMPORAL_SERVER_DIR, 'schema', 'postgresql', 'v12');
const STAMP = join(TEMPORAL_SERVER_DIR, 'VERSION');
/** The image's working directory: relative paths in the compose environment are relative to it. */
const IMAGE_WORKDIR = '/etc/temporal';
const NAMESPACE = 'default';
/** Every port the server's embedded config template listens on, as the variables that move them. */
const PORT_VARIABLES = [
  'FRONTEND_GRPC_PORT',
  'FRONTEND_HTTP_PORT',
  'FRONTEND_MEMBERSHIP_PORT',
  'HISTORY_GRPC_PORT',
  'HISTORY_MEMBERSHIP_PORT',
  'MATCHING_GRPC_PORT',
  'MATCHING_MEMBERSHIP_PORT',
  'WORKER_GRPC_PORT',
  'WORKER_MEMBERSHIP_PORT',
];

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: ROOT, encoding: 'utf8', ...options });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} exited with ${result.status}\n${result.stderr ?? ''}${result.stdout ?? ''}`,
    );
  }
  return result;
}

/** The server version the compose file runs (`temporalio/server:1.31.2` → `v1.31.2`): the lane builds that one. */
export function composeServerVersion(compose) {
  const image = String(compose.services.temporal.image ?? '');
  const tag = /^temporalio\/server:(\d+\.\d+\.\d+)$/.exec(image)?.[1];
  if (!tag) throw new Error(`temporal-compose.yml: cannot tell the server version from the temporal image "${image}"`);
  return `v${tag}`;
}

/**
 * Builds `server` and `sql` of `version` from go.temporal.io/server once (see README, Tests, for how
 * long) and copies the PostgreSQL schema beside them; later runs reuse them.
 */
export function ensureTemporalServer(version) {
  const built = existsSync(SERVER) && existsSync(SQL_TOOL) && existsSync(SCHEMA) && existsSync(STAMP);
  if (built && readFileSync(STAMP, 'utf8').trim() === version) return;
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) {
    throw new Error(
      `The production-parity lane builds the Temporal server ${version} from source and needs Go on PATH.`,
    );
  }
  rmSync(TEMPORAL_SERVER_DIR, { recursive: true, force: true });
  mkdirSync(TEMPORAL_SERVER_DIR, { recursive: true });
  say(
    `building the Temporal server ${version} into ${relative(ROOT, TEMPORAL_SERVER_DIR)} (once; this takes 10 minutes or more)`,
  );
  const started = Date.now();
  const module = 'go.temporal.io/server';
  run(
    'go',
    [
      'install',
      '-tags',
      'disable_grpc_modules',
      `${module}/cmd/server@${version}`,
      `${module}/cmd/tools/sql@${version}`,
    ],
    {
      env: { ...process.env, GOBIN: TEMPORAL_SERVER_DIR, CGO_ENABLED: '0' },
      stdio: 'inherit',
    },
  );
  const { Dir: source } = JSON.parse(run('go', ['mod', 'download', '-json', `${module}@${version}`]).stdout);
  mkdirSync(dirname(SCHEMA), { recursive: true });
  // The module cache is read-only; the copy must not be, or the next rebuild could not remove it.
  run('cp', ['-R', '--no-preserve=mode', join(source, 'schema', 'postgresql', 'v12'), SCHEMA]);
  writeFileSync(STAMP, `${version}\n`);
  say(`built the Temporal server in ${Math.round((Date.now() - started) / 1000)} s`);
}

/** temporal-compose.yml as data (Bun parses YAML with anchors and merge keys; this script runs on Node). */
export function composeFile() {
  const script = "process.stdout.write(JSON.stringify(Bun.YAML.parse(await Bun.file('temporal-compose.yml').text())))";
  return JSON.parse(run(binPath('bun'), ['-e', script]).stdout);
}

const stringValues = (environment) =>
  Object.fromEntries(Object.entries(environment ?? {}).map(([name, value]) => [name, String(value)]));

/** The PostgreSQL the lane uses, as the compose variables name it (the compose host is a container). */
function postgresOf(databaseUrl) {
  const url = new URL(databaseUrl);
  return {
    host: url.hostname,
    port: url.port || '5432',
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
  };
}

/**
 * Recreates the two Temporal databases and their schema with the `sql` tool, the same steps as the
 * compose file's `temporal-schema` service, with its SQL_* variables.
 */
export async function createTemporalSchema(compose, { databaseUrl, database, visibilityDatabase }) {
  const postgres = postgresOf(databaseUrl);
  const env = {
    PATH: process.env.PATH,
    ...stringValues(compose.services['temporal-schema'].environment),
    SQL_HOST: postgres.host,
    SQL_PORT: postgres.port,
    SQL_USER: postgres.user,
    SQL_PASSWORD: postgres.password,
  };
  for (const [name, schema] of [
    [database, 'temporal'],
    [visibilityDatabase, 'visibility'],
  ]) {
    await dropDatabase(databaseUrl, name);
    run(SQL_TOOL, ['--db', name, 'create-database'], { env });
    run(SQL_TOOL, ['--db', name, 'setup-schema', '-v', '0.0'], { env });
    run(SQL_TOOL, ['--db', name, 'update-schema', '-d', join(SCHEMA, schema, 'versioned')], { env });
  }
}

/**
 * A folder that stands for the image's /etc/temporal: the compose file's volumes under it become
 * symbolic links to the project's files, so DYNAMIC_CONFIG_FILE_PATH is used exactly as written.
 */
export function imageWorkdir(service, folder) {
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  for (const volume of service.volumes ?? []) {
    const [source = '', target = ''] = String(volume).split(':');
    if (!source.startsWith('.') || !target.startsWith(`${IMAGE_WORKDIR}/`)) continue;
    const link = join(folder, posix.relative(IMAGE_WORKDIR, target));
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(join(ROOT, source), link);
  }
  return folder;
}

/** The `temporal` service's environment with this machine's PostgreSQL, database names and free ports. */
export async function temporalServerEnvironment(compose, { databaseUrl, database, visibilityDatabase }) {
  const postgres = postgresOf(databaseUrl);
  const composeEnvironment = stringValues(compose.services.temporal.environment);
  // Below 32768: the server keeps membership ports in a smallint column, and Linux hands out
  // ephemeral ports from 32768 up ("value 42349 is out of range for type smallint").
  const ports = await freePorts(PORT_VARIABLES.length, [20000, 32767]);
  const local = {
    POSTGRES_SEEDS: postgres.host,
    DB_PORT: postgres.port,
    POSTGRES_USER: postgres.user,
    POSTGRES_PWD: postgres.password,
    DBNAME: database,
    VISIBILITY_DBNAME: visibilityDatabase,
    ...Object.fromEntries(PORT_VARIABLES.map((name, index) => [name, String(ports[index])])),
  };
  return { composeEnvironment, local, address: `127.0.0.1:${local.FRONTEND_GRPC_PORT}` };
}

/**
 * Starts `server start` (what the image's entrypoint runs) in a stand-in for the image's working
 * directory with the compose environment, waits until it answers, then does what the compose
 * file's `temporal-setup` service does: namespace `default` (30 days) and the search attributes.
 */
export async function startTemporalServer(children, cli, compose, { databaseUrl, dataDir }) {
  const database = `${databaseName(databaseUrl)}_temporal`;
  const visibilityDatabase = `${database}_visibility`;
  await createTemporalSchema(compose, { databaseUrl, database, visibilityDatabase });
  const { composeEnvironment, local, address } = await temporalServerEnvironment(compose, {
    databaseUrl,
    database,
    visibilityDatabase,
  });
  const logFile = join(dataDir, 'temporal-server.log');
  const workdir = imageWorkdir(compose.services.temporal, join(dataDir, 'etc-temporal'));
  // Only these variables: the server's config template reads many (DB, LOG_LEVEL, ENABLE_ES, ...),
  // so nothing from this shell may leak in.
  const env = { PATH: process.env.PATH, HOME: process.env.HOME ?? '/tmp', ...composeEnvironment, ...local };
  say(`starting the Temporal server ${composeServerVersion(compose)} on PostgreSQL (${database}) at ${address}`);
  const child = startChild(children, 'temporal-server', SERVER, ['start'], { env, logFile, cwd: workdir });
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  await waitFor(
    'the Temporal server',
    () => {
      if (exited) throw new Error(`the Temporal server exited; see ${logFile}`);
      return temporalHealthy(cli, address);
    },
    180_000,
  );
  setUpNamespace(cli, address);
  return { child, address, env, logFile };
}

/** Runs `attempt` until it returns true; a new namespace takes a few seconds to reach every cache. */
function retryFor(what, ms, attempt) {
  const deadline = Date.now() + ms;
  let lastError = '';
  for (;;) {
    const result = attempt();
    if (result === true) return;
    lastError = result;
    if (Date.now() > deadline) throw new Error(`${what}: ${lastError}`);
    spawnSync('sleep', ['1']);
  }
}

export function setUpNamespace(cli, address) {
  const temporal = (args) =>
    spawnSync(cli, [...args, '--address', address, '--namespace', NAMESPACE], { encoding: 'utf8' });
  retryFor(`could not create namespace ${NAMESPACE}`, 60_000, () => {
    if (temporal(['operator', 'namespace', 'describe']).status === 0) return true;
    const created = temporal(['operator', 'namespace', 'create', '--retention', '30d']);
    return created.status === 0 || created.stderr;
  });
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
    retryFor(`could not create search attribute ${name}`, 60_000, () => {
      const created = temporal(['operator', 'search-attribute', 'create', '--name', name, '--type', type]);
      return created.status === 0 || /already exists/i.test(created.stderr) || created.stderr;
    });
  }
  const listed = temporal(['operator', 'search-attribute', 'list', '--output', 'json']);
  const missing = Object.keys(SEARCH_ATTRIBUTES).filter((name) => !listed.stdout.includes(`"${name}"`));
  if (listed.status !== 0 || missing.length > 0)
    throw new Error(`search attributes missing after setup: ${missing.join(', ')}\n${listed.stderr}`);
}
