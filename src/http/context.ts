import { notFound, permissionDenied } from './errors';
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import { createSql, type Sql } from '../db';
import { logger } from '../log';
import { startApiTelemetry, type ApiTelemetry } from '../telemetry/api';
import { createLazyClient } from '../temporal/connection';
import { launcherFromConfig } from '../temporal/launcher';
import type { NetworkAdapter } from '../network/adapter';
import type { ServiceDeps } from '../services/deps';

/** What the API's and the console's routes need: the use cases' dependencies, and Temporal for health checks. */
export type AppDeps = ServiceDeps & {
  /** For health checks; workflows are started through the launcher. */
  temporal: Client;
};

/** What a process hands `createApp`: the networks are built from the configuration when not given. */
export type AppInputs = Omit<AppDeps, 'networks'> & { networks?: NetworkAdapter };

/**
 * The dependencies of an API process (Bun or Deno): a database pool, its telemetry (traced queries
 * and Temporal calls when tracing is on), a lazily connected Temporal client, the launcher.
 */
export function createAppDeps(config: Config): AppInputs & { telemetry: ApiTelemetry } {
  const sql = createSql(config.databaseUrl, config.databasePoolSize);
  const telemetry = startApiTelemetry(config.telemetry, sql);
  const temporal = createLazyClient(config.temporal, telemetry.clientInterceptors);
  return {
    config,
    sql,
    temporal,
    launcher: launcherFromConfig(temporal, config, (message, fields) => logger.warn(message, fields)),
    telemetry,
  };
}

/** A path id, or 404: anything else names no resource. */
export function pathId(raw: string): number {
  const id = parseId(raw);
  if (id === null) throw notFound();
  return id;
}

/** Path ids are positive integers; anything else cannot name a resource (404). */
export function parseId(raw: string): number | null {
  if (!/^\d{1,15}$/.test(raw)) return null;
  const id = Number(raw);
  return id > 0 ? id : null;
}

/** A row the caller may see: 404 when it does not exist, 403 when another organization owns it. */
export function ownedBy<T extends { organizationId: number }>(row: T | undefined, organizationId: number): T {
  if (row === undefined) throw notFound();
  if (row.organizationId !== organizationId) throw permissionDenied();
  return row;
}
