/**
 * `Duplicate-Check-Key` claims (docs/api.md#throttling-duplicates-versions). A write that carries a key claims it in
 * the same database transaction that writes its object: a second claim of a live key fails, whichever API instance it
 * reaches and however close together the two arrive (the key is unique per organization in PostgreSQL, so the second
 * insert waits for the first transaction), and a request that wrote nothing (refused, or failed before its commit)
 * never keeps its key.
 */
import type { Queryable, Sql } from '../../db';
import type { OrganizationId } from '../../domain/ids';
import { markAuditedWrite } from '../merchants/audit';
import type { OrganizationActor } from '../platform/deps';
import { tenantScope } from '../platform/queries';
import { deleteInBatches, notSetAside } from '../platform/sweeps';

/** A key a write asked to claim: who, which key, for how long. */
export type DuplicateCheck = {
  organizationId: OrganizationId;
  key: string;
  method: string;
  path: string;
  ttlSeconds: number;
};
type DuplicateClaim = { id: number; organizationId: OrganizationId; key: string };
type ClaimedObject = { type: string; id: number };

/** A live claim of the key exists: the request repeats an earlier one (409). */
export class DuplicateRequestError extends Error {
  constructor(readonly key: string) {
    super('Duplicate Request Detected!');
    this.name = 'DuplicateRequestError';
  }
}

/**
 * Claims `check.key` for the organization for `ttlSeconds`, in the caller's transaction: a new key
 * is inserted; an expired one is taken over in place (same statement, so two requests cannot both
 * take it over); a live one throws DuplicateRequestError, which rolls the transaction back.
 */
export async function claimDuplicateCheckKey(tx: Queryable, check: DuplicateCheck): Promise<DuplicateClaim> {
  const [row] = await tx<{ id: number }[]>`
    insert into duplicate_check_keys as k (organization_id, key, method, path, expires_at)
    values (${check.organizationId}, ${check.key}, ${check.method}, ${check.path},
            now() + make_interval(secs => ${check.ttlSeconds}))
    on conflict (organization_id, key) do update set
      method = excluded.method, path = excluded.path, object_type = null, object_id = null,
      created = now(), expires_at = excluded.expires_at
    where k.expires_at <= now()
    returning id`;
  if (!row) throw new DuplicateRequestError(check.key);
  return { id: row.id, organizationId: check.organizationId, key: check.key };
}

/** Records which object a key created, so an operator can tell what a repeated request would have repeated. */
async function linkDuplicateCheckObject(tx: Queryable, claim: DuplicateClaim, object: ClaimedObject): Promise<void> {
  await tx`
    update duplicate_check_keys set object_type = ${object.type}, object_id = ${object.id}
    where id = ${claim.id}`;
}

/**
 * Runs `write` in one transaction, marked as `actor`'s write for the audit trail (audit.ts), that
 * first claims the request's key (when it sent one) and, when `objectOf` names what the write
 * created, links it to the key. Every route that writes goes through here, so a key is held
 * exactly when its write committed.
 */
export async function writeOnce<T>(
  sql: Sql,
  actor: OrganizationActor | null,
  check: DuplicateCheck | null,
  write: (tx: Queryable) => Promise<T>,
  objectOf?: (result: T) => ClaimedObject | null,
): Promise<T> {
  return (await sql.begin(async (tx) => {
    await markAuditedWrite(tx, actor);
    const claim = check === null ? null : await claimDuplicateCheckKey(tx, check);
    const result = await write(tx);
    const object = claim === null ? null : (objectOf?.(result) ?? null);
    if (claim !== null && object !== null) await linkDuplicateCheckObject(tx, claim, object);
    return result;
  })) as T;
}

/** The object a live key created, if its write linked one. */
export async function duplicateCheckObject(
  sql: Queryable,
  organizationId: OrganizationId,
  key: string,
): Promise<ClaimedObject | null> {
  const [row] = await sql<ClaimedObject[]>`
    select object_type as type, object_id as id from duplicate_check_keys
    where ${tenantScope(sql, organizationId).owned()} and key = ${key} and expires_at > now()
      and object_id is not null`;
  return row ?? null;
}

/**
 * Deletes claims past their lifetime (24 hours: docs/api.md#throttling-duplicates-versions), in batches; one that
 * cannot go is set aside (sweeps.ts).
 */
export async function deleteExpiredDuplicateCheckKeys(
  sql: Sql,
  batchSize: number,
  onProgress: (deleted: number) => void,
): Promise<{ deleted: number; setAside: number }> {
  return await deleteInBatches(
    sql,
    'retention-duplicate-key',
    batchSize,
    async (limit) =>
      (
        await sql<{ id: number }[]>`
      select id from duplicate_check_keys where expires_at <= now()
        ${notSetAside(sql, 'retention-duplicate-key', 'duplicate_check_keys.id')}
      order by expires_at limit ${limit}`
      ).map((row) => row.id),
    async (ids) =>
      (await sql`delete from duplicate_check_keys where id in ${sql(ids)} and expires_at <= now() returning id`).length,
    onProgress,
  );
}
