import { notFound, permissionDenied } from './errors';
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Sql } from '../db';
import type { EventDispatcher } from '../temporal/events';

/** What route modules need from the outside world, passed in by the process that serves them. */
export type AppDeps = {
  config: Config;
  sql: Sql;
  temporal: Client;
  dispatchEvents: EventDispatcher;
};

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
