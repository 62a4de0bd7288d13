/**
 * `Duplicate-Check-Key` claims (api.md 7). A write that carries a key claims it before the route
 * runs; a second claim of a live key fails, whichever API instance it reaches and however close
 * together the two arrive, because the key is unique per organization in PostgreSQL.
 */
import type { Queryable, Sql } from '../db';

export type DuplicateClaim = { id: number; organizationId: number; key: string };

/**
 * Claims `key` for the organization for `ttlSeconds`: a new key is inserted; an expired one is
 * taken over in place (same statement, so two requests cannot both take it over); a live one is
 * not touched and the result is null.
 */
export async function claimDuplicateCheckKey(
  sql: Sql,
  input: { organizationId: number; key: string; method: string; path: string; ttlSeconds: number },
): Promise<DuplicateClaim | null> {
  const [row] = await sql<{ id: number }[]>`
    insert into duplicate_check_keys as k (organization_id, key, method, path, expires_at)
    values (${input.organizationId}, ${input.key}, ${input.method}, ${input.path}, now() + make_interval(secs => ${input.ttlSeconds}))
    on conflict (organization_id, key) do update set
      method = excluded.method, path = excluded.path, object_type = null, object_id = null,
      created = now(), expires_at = excluded.expires_at
    where k.expires_at <= now()
    returning id`;
  return row ? { id: row.id, organizationId: input.organizationId, key: input.key } : null;
}

/** Gives a claimed key back (the request was refused, so the merchant may retry with a fix). */
export async function releaseDuplicateCheckKey(sql: Sql, claim: DuplicateClaim): Promise<void> {
  await sql`delete from duplicate_check_keys where id = ${claim.id} and object_id is null`;
}

/**
 * Records, in the transaction that creates an object, which object a key created. Once linked the
 * key is never released, and a route that starts a workflow for the object (whose id derives from
 * the object's id) starts it with IDEMPOTENT_WORKFLOW_START, so no retry path starts a second one.
 */
export async function linkDuplicateCheckObject(
  tx: Queryable,
  claim: DuplicateClaim | null,
  object: { type: string; id: number },
): Promise<void> {
  if (claim === null) return;
  await tx`update duplicate_check_keys set object_type = ${object.type}, object_id = ${object.id} where id = ${claim.id}`;
}

/** The object a live key created, if a route linked one. */
export async function duplicateCheckObject(
  sql: Queryable,
  organizationId: number,
  key: string,
): Promise<{ type: string; id: number } | null> {
  const [row] = await sql<{ type: string; id: number }[]>`
    select object_type as type, object_id as id from duplicate_check_keys
    where organization_id = ${organizationId} and key = ${key} and expires_at > now() and object_id is not null`;
  return row ?? null;
}

/** Workflow start options under which a repeated start of the same workflow id returns the running one. */
export const IDEMPOTENT_WORKFLOW_START = {
  workflowIdConflictPolicy: 'USE_EXISTING',
  workflowIdReusePolicy: 'REJECT_DUPLICATE',
} as const;

