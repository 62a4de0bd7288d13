/**
 * What the application layer's use cases need from the process that runs them (the API, the
 * console, the worker, the admin CLI), handed in by the composition (src/app.ts, src/worker.ts).
 */
import type { Config } from '../config';
import type { Sql } from '../db';
import type { NetworkAdapter } from '../network/adapter';
import type { Launcher } from '../temporal/launcher';

export type ServiceDeps = {
  config: Config;
  sql: Sql;
  /** Starts the workflows of what a use case committed (after the commit). */
  launcher: Launcher;
  /** The mobile networks (sandbox and connected operators). */
  networks: NetworkAdapter;
};

/** Who acts: an API key's or a console session's organization and user. */
export type Actor = { organizationId: number; userId: number };
