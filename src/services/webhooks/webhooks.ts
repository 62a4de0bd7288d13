/**
 * Webhooks (docs/api.md#webhooks): the organization's webhooks, created, listed, read, changed and deleted within its
 * scope, and a webhook as a delivery reads it before sending. Their deliveries are in webhook-deliveries.ts, and what
 * signs and authenticates them in webhook-secrets.ts.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import { NotFoundError } from '../../domain/errors';
import { EVENT_TYPES, type EventType } from '../../domain/events';
import type { OrganizationId, UserId, WebhookId } from '../../domain/ids';
import { REQUIRED, choiceMessage, text } from '../../domain/input';
import { checkCallbackUrl } from '../../formats/urls';
import type { Actor, OrganizationActor, ServiceDeps } from '../platform/deps';
import { writeOnce, type DuplicateCheck } from '../collections/duplicate-checks';
import { cancelPending } from './webhook-queue';
import { tenantScope, type ListPage, type PageWindow } from '../platform/queries';
import type { WebhookRow } from '../../domain/webhooks';

export const WEBHOOK_COLUMNS = `id, organization_id as "organizationId", user_id as "userId", event, target,
  created, updated, disabled_at as "disabledAt", disabled_reason as "disabledReason"`;

type NewWebhook = { organizationId: OrganizationId; userId: UserId; event: EventType; target: string };

export async function createWebhook(sql: Queryable, input: NewWebhook): Promise<WebhookRow> {
  const [row] = await sql<WebhookRow[]>`
    insert into webhooks (organization_id, user_id, event, target)
    values (${input.organizationId}, ${input.userId}, ${input.event}, ${input.target})
    returning ${sql.unsafe(WEBHOOK_COLUMNS)}`;
  if (!row) throw new Error('insert into webhooks returned no row');
  return row;
}

export async function updateWebhook(
  sql: Queryable,
  id: WebhookId,
  changes: { event?: EventType; target?: string },
): Promise<WebhookRow | undefined> {
  const [row] = await sql<WebhookRow[]>`
    update webhooks set
      event = ${changes.event ?? sql`event`},
      target = ${changes.target ?? sql`target`},
      updated = now()
    where id = ${id} and deleted_at is null
    returning ${sql.unsafe(WEBHOOK_COLUMNS)}`;
  return row;
}

/**
 * Soft delete: no further deliveries (what is pending is cancelled in the same transaction), the
 * log stays. `gone` is a 410 from the target (docs/api.md#webhooks).
 */
export async function deleteWebhook(sql: Queryable, id: WebhookId, reason: 'deleted' | 'gone'): Promise<boolean> {
  const rows = await sql`
    update webhooks set deleted_at = now(), deleted_reason = ${reason}, updated = now()
    where id = ${id} and deleted_at is null returning id`;
  if (rows.length > 0) await cancelPending(sql, id);
  return rows.length > 0;
}

/** A webhook with when it was deleted (null while it lives). */
export type LiveWebhook = WebhookRow & { deletedAt: Date | null };

/**
 * The webhook as a delivery reads it before sending: an updated target counts at once, a deleted or disabled one sends
 * nothing.
 */
export async function readWebhook(sql: Queryable, webhookId: WebhookId): Promise<LiveWebhook | null> {
  const [row] = await sql<LiveWebhook[]>`
    select ${sql.unsafe(WEBHOOK_COLUMNS)}, deleted_at as "deletedAt" from webhooks where id = ${webhookId}`;
  return row ?? null;
}

/**
 * A webhook target: an HTTPS URL (always, sandbox included), stored normalised. Outside sandbox
 * mode a target naming a loopback or private address is refused here; names are checked again on
 * every delivery, after DNS.
 */
const target = (sandbox: boolean) =>
  v.pipe(
    text(2000),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const checked = checkCallbackUrl(dataset.value, { sandbox, allowHttp: false, subject: 'Webhook targets' });
      if (checked.problem === undefined) return checked.url;
      addIssue({ message: checked.problem });
      return NEVER;
    }),
  );
const eventChoice = v.picklist(EVENT_TYPES, choiceMessage);
const INTEGER = 'A valid integer is required.';
export const integerId = v.pipe(
  v.union([v.string(), v.number()], INTEGER),
  v.transform(String),
  v.regex(/^\d{1,15}$/, INTEGER),
  v.transform(Number),
);

/** What creating (and replacing) or changing a webhook takes. */
export const webhookSchemas = (sandbox: boolean) => ({
  create: v.object({ event: eventChoice, target: target(sandbox) }, REQUIRED),
  update: v.object({ event: v.optional(eventChoice), target: v.optional(target(sandbox)) }),
});
type WebhookChanges = { event?: EventType; target?: string };
export const WebhookFilters = v.object({ user: v.optional(integerId), event: v.optional(eventChoice) });

/** A webhook the organization sees: not a payment's callback row; `live` leaves out deleted ones. */
const visible = (sql: Queryable, live: boolean) =>
  sql`and payment_id is null ${live ? sql`and deleted_at is null` : sql``}`;

/**
 * The organization's webhook `id` (403 when another organization's, 404 when none); deleted ones only with
 * `evenIfDeleted` (their log stays readable).
 */
export async function findOwnWebhook(
  sql: Queryable,
  organizationId: OrganizationId,
  id: WebhookId,
  evenIfDeleted = false,
): Promise<WebhookRow> {
  return await tenantScope(sql, organizationId).ownRow<WebhookRow>({
    table: 'webhooks',
    id,
    columns: sql.unsafe(WEBHOOK_COLUMNS),
    visible: visible(sql, !evenIfDeleted),
  });
}

/** A new webhook of the organization (claiming the Duplicate-Check-Key in its transaction). */
export async function createOwnWebhook(
  sql: Sql,
  actor: Actor,
  input: { event: EventType; target: string },
  duplicateCheck: DuplicateCheck | null,
): Promise<WebhookRow> {
  return await writeOnce(
    sql,
    actor,
    duplicateCheck,
    (tx) => createWebhook(tx, { organizationId: actor.organizationId, userId: actor.userId, ...input }),
    (created) => ({ type: 'webhook', id: created.id }),
  );
}

/** One page of the organization's live webhooks (newest first). */
export async function listWebhooks(
  sql: Sql,
  organizationId: OrganizationId,
  filters: v.InferOutput<typeof WebhookFilters>,
  page: PageWindow,
): Promise<ListPage<WebhookRow>> {
  return await tenantScope(sql, organizationId).listPage<WebhookRow>(
    {
      columns: sql.unsafe(WEBHOOK_COLUMNS),
      from: sql`webhooks`,
      filters: sql`${visible(sql, true)}
      ${filters.user !== undefined ? sql`and user_id = ${filters.user}` : sql``}
      ${filters.event !== undefined ? sql`and event = ${filters.event}` : sql``}`,
      orderBy: sql`order by id desc`,
    },
    page,
  );
}

/**
 * Changes (or replaces) the organization's webhook; unchanged when nothing is given. 404 when it was deleted meanwhile.
 */
export async function changeOwnWebhook(
  sql: Sql,
  actor: OrganizationActor,
  id: WebhookId,
  changes: WebhookChanges,
  duplicateCheck: DuplicateCheck | null,
): Promise<WebhookRow> {
  const webhook = await findOwnWebhook(sql, actor.organizationId, id);
  const updated = await writeOnce(sql, actor, duplicateCheck, async (tx) =>
    changes.event === undefined && changes.target === undefined
      ? webhook
      : await updateWebhook(tx, webhook.id, changes),
  );
  if (!updated) throw new NotFoundError();
  return updated;
}

/**
 * Deletes the organization's webhook: no further deliveries, its log stays. What it had pending is
 * cancelled in the same transaction; an attempt already under way finishes, and nothing more is sent.
 */
export async function deleteOwnWebhook(
  { sql }: Pick<ServiceDeps, 'sql'>,
  actor: OrganizationActor,
  id: WebhookId,
  duplicateCheck: DuplicateCheck | null,
): Promise<void> {
  const webhook = await findOwnWebhook(sql, actor.organizationId, id);
  await writeOnce(sql, actor, duplicateCheck, (tx) => deleteWebhook(tx, webhook.id, 'deleted'));
}

/** When and why a webhook was deleted (null when it lives). */
export async function webhookDeletion(
  sql: Queryable,
  webhookId: WebhookId,
): Promise<{ deletedAt: Date; reason: string | null } | null> {
  const [row] = await sql<{ deletedAt: Date | null; reason: string | null }[]>`
    select deleted_at as "deletedAt", deleted_reason as reason from webhooks where id = ${webhookId}`;
  return row?.deletedAt ? { deletedAt: row.deletedAt, reason: row.reason } : null;
}
