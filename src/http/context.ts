import { notFound } from './errors';
import type { Client } from '@temporalio/client';
import { asId, type Id, type IdKind } from '../domain/ids';
import type { ServiceDeps } from '../services/platform/deps';

/** What the API's and the console's routes need: the use cases' dependencies, and Temporal for health checks. */
export type AppDeps = ServiceDeps & {
  /** For health checks; workflows are started through the launcher. */
  temporal: Client;
};

/** A path id as the id of the route's resource (`kind`), or 404: anything else names no resource. */
export function pathId<Kind extends IdKind>(raw: string, kind: Kind): Id<Kind> {
  const id = parseId(raw);
  if (id === null) throw notFound();
  return asId(kind, id);
}

/** Path ids are positive integers; anything else cannot name a resource (404). */
export function parseId(raw: string): number | null {
  if (!/^\d{1,15}$/.test(raw)) return null;
  const id = Number(raw);
  return id > 0 ? id : null;
}
