/**
 * Webhooks (docs/api.md#webhooks) and their deliveries: the organization's webhooks (create, list, read,
 * change, delete, all within its scope), the delivery log and redelivery, the signing and Basic
 * credentials of outgoing deliveries, and what the delivery workflow records.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import { NotFoundError, fieldErrors } from '../../domain/errors';
import { EVENT_TYPES, type EventType } from '../../domain/events';
import type { DeliveryId, EventId, OrganizationId, UserId, WebhookId } from '../../domain/ids';
import { REQUIRED, choiceMessage, text } from '../../domain/input';
import { checkCallbackUrl } from '../../formats/urls';
import { writeAs } from '../merchants/audit';
import type { Actor, OrganizationActor, ServiceDeps } from '../platform/deps';
import { writeOnce, type DuplicateCheck } from '../collections/duplicate-checks';
import { recordRedelivery } from './events';
import { PROBE_AFTER_FAULTS, PROBE_SPACING_MAX_SECONDS, cancelPending } from './webhook-queue';
import { tenantScope, type ListPage, type PageWindow } from '../platform/queries';
import {
  SECRET_ROTATION_OVERLAP_HOURS,
  newSigningSecret,
  type AttemptOutcome,
  type AttemptRow,
  type DeliveryRow,
  type DeliveryStatus,
  type ReceiverProbing,
  type WebhookRow,
} from '../../domain/webhooks';

export const WEBHOOK_COLUMNS = `id, organization_id as "organizationId", user_id as "userId", event, target, created,
  updated,
  disabled_at as "disabledAt", disabled_reason as "disabledReason"`;

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

type WebhookCredentials = { username: string; password: string };
export type DeliverySecrets = { signingSecrets: string[]; basic: WebhookCredentials | null };

type SettingsRow = {
  signingSecret: string;
  previousSigningSecret: string | null;
  previousSecretExpiresAt: Date | null;
  basicUsername: string | null;
  basicPassword: string | null;
};

async function readSettings(sql: Queryable, organizationId: OrganizationId): Promise<SettingsRow | undefined> {
  const [row] = await sql<SettingsRow[]>`
    select signing_secret as "signingSecret", previous_signing_secret as "previousSigningSecret",
           previous_secret_expires_at as "previousSecretExpiresAt", basic_username as "basicUsername",
           basic_password as "basicPassword"
    from webhook_settings where ${tenantScope(sql, organizationId).owned()}`;
  return row;
}

/** The organization's webhook settings, made (with a fresh signing secret) on first use. */
async function ensureSettings(sql: Queryable, organizationId: OrganizationId): Promise<SettingsRow> {
  const existing = await readSettings(sql, organizationId);
  if (existing) return existing;
  await sql`
    insert into webhook_settings (organization_id, signing_secret)
    select id, ${newSigningSecret()} from organizations where id = ${organizationId}
    on conflict (organization_id) do nothing`;
  const created = await readSettings(sql, organizationId);
  if (!created) throw new Error(`Organization ${organizationId} does not exist`);
  return created;
}

/**
 * What signs and authenticates an outgoing delivery now: the current secret, and the previous one while it overlaps.
 */
export async function deliverySecrets(
  sql: Queryable,
  organizationId: OrganizationId,
  now = new Date(),
): Promise<DeliverySecrets> {
  const row = await ensureSettings(sql, organizationId);
  const previousActive =
    row.previousSigningSecret !== null && row.previousSecretExpiresAt !== null && row.previousSecretExpiresAt > now;
  return {
    signingSecrets: previousActive ? [row.signingSecret, row.previousSigningSecret as string] : [row.signingSecret],
    basic:
      row.basicUsername !== null && row.basicPassword !== null
        ? { username: row.basicUsername, password: row.basicPassword }
        : null,
  };
}

export type SigningSecretView = {
  organizationId: OrganizationId;
  signingSecret: string;
  previousSecretExpiresAt: Date | null;
  basicAuth: boolean;
};

const secretView = (organizationId: OrganizationId, row: SettingsRow): SigningSecretView => {
  const overlap =
    row.previousSecretExpiresAt !== null && row.previousSecretExpiresAt > new Date()
      ? row.previousSecretExpiresAt
      : null;
  return {
    organizationId,
    signingSecret: row.signingSecret,
    previousSecretExpiresAt: overlap,
    basicAuth: row.basicUsername !== null,
  };
};

/** The organization's signing secret (made on first use, a change recorded as `owner`'s). */
export async function showSigningSecret(sql: Sql, owner: OrganizationActor): Promise<SigningSecretView> {
  return secretView(owner.organizationId, await writeAs(sql, owner, (tx) => ensureSettings(tx, owner.organizationId)));
}

/** A new secret signs from now on; the old one keeps signing alongside for the overlap, then stops. */
export async function rotateSigningSecret(sql: Sql, owner: OrganizationActor): Promise<SigningSecretView> {
  const organizationId = owner.organizationId;
  const rotated = await writeAs(sql, owner, async (tx) => {
    await ensureSettings(tx, organizationId);
    await tx`
      update webhook_settings set
        previous_signing_secret = signing_secret,
        previous_secret_expires_at = now() + ${SECRET_ROTATION_OVERLAP_HOURS}::int * interval '1 hour',
        signing_secret = ${newSigningSecret()},
        modified = now()
      where ${tenantScope(tx, organizationId).owned()}`;
    return await ensureSettings(tx, organizationId);
  });
  return secretView(organizationId, rotated);
}

export async function setBasicCredentials(
  sql: Sql,
  owner: OrganizationActor,
  credentials: WebhookCredentials | null,
): Promise<void> {
  await writeAs(sql, owner, async (tx) => {
    await ensureSettings(tx, owner.organizationId);
    await tx`
      update webhook_settings set
        basic_username = ${credentials?.username ?? null}, basic_password = ${credentials?.password ?? null}, modified =
          now()
      where ${tenantScope(tx, owner.organizationId).owned()}`;
  });
}

// The delivery log.

const ATTEMPT_COLUMNS = `attempt, started_at as "startedAt", duration_ms as "durationMs", outcome, status_code as
  "statusCode",
  error, response_excerpt as "responseExcerpt"`;

/**
 * What an attempt says of its receiver: it answered (any HTTP status), or a fault (a timeout, a
 * refused or broken connection: no status at all).
 */
type ReceiverNote = 'answered' | 'fault';

type NewAttempt = Omit<AttemptRow, 'outcome'> & {
  deliveryId: DeliveryId;
  outcome: AttemptOutcome;
  webhookId: WebhookId;
};

/** A webhook with when it was deleted (null while it lives). */
export type LiveWebhook = WebhookRow & { deletedAt: Date | null };

/**
 * The webhook as a delivery reads it before sending: an updated target counts at once, a deleted or disabled one sends
 * nothing.
 */
export async function readWebhook(sql: Queryable, webhookId: WebhookId): Promise<LiveWebhook | null> {
  const [row] = await sql<
    LiveWebhook[]
  >`select ${sql.unsafe(WEBHOOK_COLUMNS)}, deleted_at as "deletedAt" from webhooks where id = ${webhookId}`;
  return row ?? null;
}

/**
 * Logs an attempt once per (delivery, attempt number), in one statement: when it is final (any
 * outcome but a failure with attempts left) the delivery is closed with it, otherwise its row is
 * due again at `nextAttemptAt` for the next attempt (the queue, services/webhooks/webhook-queue.ts); a 410
 * retires the webhook. Returns the attempt as logged: when another run of the activity logged it
 * first, that record wins and nothing else changes.
 */
export async function logAttempt(
  sql: Queryable,
  attempt: NewAttempt & { final: boolean; nextAttemptAt: Date | null; receiver?: ReceiverNote },
): Promise<AttemptRow> {
  const note = attempt.receiver ?? null;
  const [logged] = await sql<AttemptRow[]>`
    with inserted as (
      insert into webhook_delivery_attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error,
        response_excerpt)
      values
        (${attempt.deliveryId}, ${attempt.attempt}, ${attempt.startedAt}, ${attempt.durationMs}, ${attempt.outcome},
              ${attempt.statusCode}, ${attempt.error}, ${attempt.responseExcerpt})
      on conflict (delivery_id, attempt) do nothing
      returning ${sql.unsafe(ATTEMPT_COLUMNS)}),
    -- The delivery's row moves with it: closed by a final attempt, else due again at its next one.
    queued as (
      update webhook_deliveries set
        status = case when ${attempt.final}::boolean then ${attempt.outcome} else status end,
        finished_at = case when ${attempt.final}::boolean then coalesce(finished_at, now()) else finished_at end,
        next_attempt = case when ${attempt.final}::boolean then next_attempt else ${attempt.attempt + 1} end,
        next_attempt_at = case when ${attempt.final}::boolean then null else ${attempt.nextAttemptAt}::timestamptz end,
        leased_until = null
      where id = ${attempt.deliveryId} and exists (select 1 from inserted)),
    gone as (
      update webhooks set deleted_at = now(), deleted_reason = 'gone', updated = now()
      where id = ${attempt.webhookId} and ${attempt.outcome} = 'gone' and deleted_at is null and exists (select 1 from
        inserted)),
    -- The failing streak (webhook-recovery.ts): begun by a failure, ended by a delivery; written only when it changes.
    streak as (
      update webhooks set failing_since = case when ${attempt.outcome} = 'delivered' then null
        else ${attempt.startedAt}::timestamptz end
      where id = ${attempt.webhookId} and exists (select 1 from inserted)
        and ((${attempt.outcome} = 'delivered' and failing_since is not null) or (${attempt.outcome} = 'failed' and
          failing_since is null))),
    -- The receiver's health (webhook-queue.ts, PROBE_AFTER_FAULTS): a fault counts towards probing it, any answer ends
    -- that; written only when it changes, so a healthy receiver's attempts write nothing here.
    receiver as (
      update webhook_receivers r set
        failures = case when ${note} = 'answered' then 0 else r.failures + 1 end,
        probing_since = case when ${note} = 'answered' then null
                             when r.failures + 1 >= ${PROBE_AFTER_FAULTS}::int then coalesce(r.probing_since, now())
                               else r.probing_since end,
        probe_after = case when ${note} = 'answered' or r.failures + 1 < ${PROBE_AFTER_FAULTS}::int then null
                           else now() + least(greatest(extract(epoch from now() - coalesce(r.probing_since, now())), 1),
                                              ${PROBE_SPACING_MAX_SECONDS}::int) * interval '1 second' end,
        last_fault = case when ${note} = 'answered' then r.last_fault else ${attempt.error} end,
        last_fault_at = case when ${note} = 'answered' then r.last_fault_at else now() end
      from webhooks w
      where w.id = ${attempt.webhookId} and r.origin = w.receiver and ${note}::text is not null and exists (select 1
        from inserted)
        and (${note} = 'fault' or r.failures > 0 or r.probing_since is not null))
    select * from inserted
    union all
    select ${sql.unsafe(ATTEMPT_COLUMNS)} from webhook_delivery_attempts
    where delivery_id = ${attempt.deliveryId} and attempt = ${attempt.attempt} and not exists (select 1 from inserted)`;
  if (!logged) throw new Error(`attempt ${attempt.attempt} of delivery ${attempt.deliveryId} vanished`);
  return logged;
}

export async function finishDelivery(
  sql: Queryable,
  deliveryId: DeliveryId,
  status: Exclude<DeliveryStatus, 'pending'>,
): Promise<void> {
  await sql`
    update webhook_deliveries set status = ${status}, finished_at = coalesce(finished_at, now()), next_attempt_at =
      null, leased_until = null
    where id = ${deliveryId}`;
}

const DELIVERY_COLUMNS = `
  d.id, d.organization_id as "organizationId", d.webhook_id as "webhookId", d.event_id as "eventId",
         e.type as "eventType", d.redelivery, d.status, d.created, d.finished_at as "finishedAt", d.next_attempt_at as
           "nextAttemptAt",
         (select json_build_object('origin', r.origin, 'faults', r.failures, 'since', r.probing_since, 'lastFault',
           r.last_fault)
            from webhooks w join webhook_receivers r on r.origin = w.receiver
            where w.id = d.webhook_id and d.status = 'pending' and r.probing_since is not null) as probing,
         coalesce((select json_agg(json_build_object(
                     'attempt', a.attempt, 'startedAt', a.started_at, 'durationMs', a.duration_ms, 'outcome', a.outcome,
                     'statusCode', a.status_code, 'error', a.error, 'responseExcerpt', a.response_excerpt) order by
                       a.attempt)
                   from webhook_delivery_attempts a where a.delivery_id = d.id), '[]') as attempts`;
const DELIVERY_FROM = 'webhook_deliveries d join events e on e.id = d.event_id';

type RawDeliveryRow = Omit<DeliveryRow, 'attempts' | 'probing'> & {
  attempts: (Omit<AttemptRow, 'startedAt'> & { startedAt: string })[];
  probing: (Omit<ReceiverProbing, 'since'> & { since: string }) | null;
};

function toDeliveryRow({ probing, ...row }: RawDeliveryRow): DeliveryRow {
  return {
    ...row,
    attempts: row.attempts.map((attempt) => ({ ...attempt, startedAt: new Date(attempt.startedAt) })),
    probing: probing === null ? null : { ...probing, since: new Date(probing.since) },
  };
}

/** One page of an organization's webhook's deliveries (newest first), each with its attempts. */
export async function listDeliveries(
  sql: Sql,
  webhook: Pick<WebhookRow, 'id' | 'organizationId'>,
  filters: { eventId?: EventId },
  page: PageWindow,
): Promise<ListPage<DeliveryRow>> {
  const { count, rows } = await tenantScope(sql, webhook.organizationId).listPage<RawDeliveryRow>(
    {
      columns: sql.unsafe(DELIVERY_COLUMNS),
      from: sql.unsafe(DELIVERY_FROM),
      alias: 'd',
      filters: sql`and d.webhook_id
        = ${webhook.id} ${
          filters.eventId !== undefined
            ? sql`and d.event_id
        = ${filters.eventId}`
            : sql``
        }`,
      orderBy: sql`order by d.id desc`,
    },
    page,
  );
  return { count, rows: rows.map(toDeliveryRow) };
}

async function findDelivery(sql: Sql, deliveryId: DeliveryId): Promise<DeliveryRow | undefined> {
  const [row] = await sql<
    RawDeliveryRow[]
  >`select ${sql.unsafe(DELIVERY_COLUMNS)} from ${sql.unsafe(DELIVERY_FROM)} where d.id = ${deliveryId}`;
  return row === undefined ? undefined : toDeliveryRow(row);
}

// ---------------------------------------------------------------------------------------------
// The organization's webhooks, as the API and the console both change them

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
const integerId = v.pipe(
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
/** An event's id as a caller names it (one that names no event of the webhook's finds nothing). */
const eventId = v.pipe(
  integerId,
  v.transform((value) => value as EventId),
);
export const DeliveryFilters = v.object({ event: v.optional(v.pipe(eventId, v.description('An event id.'))) });
export const Redelivery = v.object(
  { event: v.pipe(eventId, v.description("The event to deliver again: an event of the webhook's type.")) },
  REQUIRED,
);

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

/**
 * A fresh delivery of one of the organization's events to one of its webhooks (manual redelivery,
 * docs/api.md#webhooks): 400 when the event does not exist in the organization or is of another type. The
 * delivery row (claiming the Duplicate-Check-Key) is sent by the dispatch pool once committed
 * (woken by the commit's notification).
 */
export async function redeliverEvent(
  { sql }: Pick<ServiceDeps, 'sql'>,
  actor: OrganizationActor,
  webhook: WebhookRow,
  eventId: EventId,
  duplicateCheck: DuplicateCheck | null,
): Promise<DeliveryRow> {
  const organizationId = webhook.organizationId;
  const [event] = await sql<
    { type: EventType }[]
  >`select type from events where id = ${eventId} and ${tenantScope(sql, organizationId).owned()}`;
  if (!event) throw fieldErrors({ event: [`Invalid pk "${eventId}" - object does not exist.`] });
  if (event.type !== webhook.event) {
    throw fieldErrors({
      event: [`Event ${eventId} is a ${event.type} event; this webhook receives ${webhook.event} events.`],
    });
  }
  const pending = await writeOnce(
    sql,
    actor,
    duplicateCheck,
    (tx) => recordRedelivery(tx, { organizationId, webhookId: webhook.id, eventId }),
    (row) => ({ type: 'webhook_delivery', id: row.id }),
  );
  const delivery = await findDelivery(sql, pending.id);
  if (!delivery) throw new Error(`delivery ${pending.id} vanished after it was opened`);
  return delivery;
}
