/**
 * The audit trail. A write through the API or the web console opens its transaction marked with
 * its actor's audit context (`writeAs` here, or `writeOnce` in duplicate-checks.ts, which every
 * write with a Duplicate-Check-Key goes through): one transaction-local setting, `app.audit`. The
 * row triggers of migration 017 then record every row the transaction inserts, updates or deletes
 * in an audited table, with its changed fields, in that same transaction: the entry exists exactly
 * when the change committed. Writes without the mark (workflows, sweeps, the admin CLI) are not
 * recorded. The search (API and console) and the retention are below.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import { AUDITED_OBJECT_TYPES, type AuditEventRow } from '../../domain/audit';
import type { OrganizationId } from '../../domain/ids';
import { choiceMessage, filterDate, filterId } from '../../domain/input';
import type { OrganizationActor } from '../platform/deps';
import { tenantScope, timeRange, type ListPage, type PageWindow } from '../platform/queries';
import { deleteInBatches, notSetAside } from '../platform/sweeps';

/** Marks the caller's transaction as `actor`'s write, when it came through the API or the console. */
export async function markAuditedWrite(tx: Queryable, actor: OrganizationActor | null): Promise<void> {
  const audit = actor?.audit;
  if (actor === null || audit === undefined) return;
  const source = {
    organization: actor.organizationId,
    user: audit.userId,
    api_key: audit.apiKeyId,
    channel: audit.channel,
    address: audit.clientAddress,
    action: audit.action,
  };
  await tx`select set_config('app.audit', ${JSON.stringify(source)}, true)`;
}

/** Runs `write` in one transaction marked as `actor`'s write (recorded when it came through the API or the console). */
export async function writeAs<T>(sql: Sql, actor: OrganizationActor, write: (tx: Queryable) => Promise<T>): Promise<T> {
  return (await sql.begin(async (tx) => {
    await markAuditedWrite(tx, actor);
    return await write(tx);
  })) as T;
}

/** The search of the API (`GET /api/audit-events`) and of the console's audit page. */
export const AuditFilters = v.object({
  object_type: v.optional(
    v.pipe(v.picklist(AUDITED_OBJECT_TYPES, choiceMessage), v.description('The kind of object changed.')),
  ),
  object_id: filterId("The changed object's id."),
  user: filterId("The acting user's id."),
  action: v.optional(
    v.pipe(v.string(), v.description('Exact match: a method and route, such as `POST /api/payments`.')),
  ),
  created_after: filterDate,
  created_before: filterDate,
});
type AuditFilterValues = v.InferOutput<typeof AuditFilters>;

const AUDIT_COLUMNS = `a.id, a.organization_id as "organizationId", a.created, a.user_id as "userId",
  u.name as "userName", a.api_key_id as "apiKeyId", k.prefix as "apiKeyPrefix", a.channel,
  a.client_address as "clientAddress", a.action, a.object_type as "objectType", a.object_id as "objectId", a.change`;

/** One page of the organization's audit entries matching the filters, newest first, with the total count. */
export async function listAuditEvents(
  sql: Sql,
  organizationId: OrganizationId,
  f: AuditFilterValues,
  page: PageWindow,
): Promise<ListPage<AuditEventRow>> {
  return await tenantScope(sql, organizationId).listPage<AuditEventRow>(
    {
      columns: sql.unsafe(AUDIT_COLUMNS),
      from: sql`audit_events a left join users u on u.id = a.user_id left join api_keys k on k.id = a.api_key_id`,
      alias: 'a',
      filters: sql`
      ${f.object_type !== undefined ? sql`and a.object_type = ${f.object_type}` : sql``}
      ${f.object_id !== undefined ? sql`and a.object_id = ${f.object_id}` : sql``}
      ${f.user !== undefined ? sql`and a.user_id = ${f.user}` : sql``}
      ${f.action !== undefined ? sql`and a.action = ${f.action}` : sql``}
      ${timeRange(sql, 'a.created', f.created_after, f.created_before)}`,
      orderBy: sql`order by a.created desc, a.id desc`,
    },
    page,
  );
}

/**
 * Deletes audit entries older than `retentionDays` (at least the events' retention), in batches; one that cannot go is
 * set aside (sweeps.ts).
 */
export async function deleteExpiredAuditEvents(
  sql: Sql,
  { retentionDays, batchSize }: { retentionDays: number; batchSize: number },
  onProgress: (deleted: number) => void,
): Promise<{ deleted: number; setAside: number }> {
  return await deleteInBatches(
    sql,
    'retention-audit-event',
    batchSize,
    async (limit) =>
      (
        await sql<{ id: number }[]>`
      select id from audit_events where created < now() - ${retentionDays}::int * interval '1 day'
        ${notSetAside(sql, 'retention-audit-event', 'audit_events.id')}
      order by created limit ${limit}`
      ).map((row) => row.id),
    async (ids) => (await sql`delete from audit_events where id in ${sql(ids)} returning id`).length,
    onProgress,
  );
}
