import type { Queryable, Sql } from '../db';
import type { EventType } from '../domain/events';
import {
  SECRET_ROTATION_OVERLAP_HOURS, newSigningSecret, type AttemptOutcome, type AttemptRow, type DeliveryRow, type DeliveryStatus,
  type WebhookRow,
} from '../domain/webhooks';

export const WEBHOOK_COLUMNS = `id, organization_id as "organizationId", user_id as "userId", event, target, created, updated`;

export type NewWebhook = { organizationId: number; userId: number; event: EventType; target: string };

export async function createWebhook(sql: Queryable, input: NewWebhook): Promise<WebhookRow> {
  const [row] = await sql<WebhookRow[]>`
    insert into webhooks (organization_id, user_id, event, target)
    values (${input.organizationId}, ${input.userId}, ${input.event}, ${input.target})
    returning ${sql.unsafe(WEBHOOK_COLUMNS)}`;
  if (!row) throw new Error('insert into webhooks returned no row');
  return row;
}

/**
 * A webhook that has not been deleted (by its owner, or by a 410 from its target). A payment's
 * `callback_url` is a webhook row bound to that payment: never shown, changed or listed as one.
 */
export async function findWebhook(sql: Queryable, id: number): Promise<WebhookRow | undefined> {
  const [row] = await sql<WebhookRow[]>`
    select ${sql.unsafe(WEBHOOK_COLUMNS)} from webhooks where id = ${id} and deleted_at is null and payment_id is null`;
  return row;
}

/** Deleted ones too: their delivery log stays readable. */
export async function findWebhookEvenIfDeleted(sql: Queryable, id: number): Promise<WebhookRow | undefined> {
  const [row] = await sql<WebhookRow[]>`select ${sql.unsafe(WEBHOOK_COLUMNS)} from webhooks where id = ${id} and payment_id is null`;
  return row;
}

export async function updateWebhook(sql: Queryable, id: number, changes: { event?: EventType; target?: string }): Promise<WebhookRow | undefined> {
  const [row] = await sql<WebhookRow[]>`
    update webhooks set
      event = ${changes.event ?? sql`event`},
      target = ${changes.target ?? sql`target`},
      updated = now()
    where id = ${id} and deleted_at is null
    returning ${sql.unsafe(WEBHOOK_COLUMNS)}`;
  return row;
}

/** Soft delete: no further deliveries, the log stays. `gone` is a 410 from the target (api.md 6.2). */
export async function deleteWebhook(sql: Queryable, id: number, reason: 'deleted' | 'gone'): Promise<boolean> {
  const rows = await sql`
    update webhooks set deleted_at = now(), deleted_reason = ${reason}, updated = now()
    where id = ${id} and deleted_at is null returning id`;
  return rows.length > 0;
}

export type WebhookCredentials = { username: string; password: string };
export type DeliverySecrets = { signingSecrets: string[]; basic: WebhookCredentials | null };

type SettingsRow = {
  signingSecret: string;
  previousSigningSecret: string | null;
  previousSecretExpiresAt: Date | null;
  basicUsername: string | null;
  basicPassword: string | null;
};

async function readSettings(sql: Queryable, organizationId: number): Promise<SettingsRow | undefined> {
  const [row] = await sql<SettingsRow[]>`
    select signing_secret as "signingSecret", previous_signing_secret as "previousSigningSecret",
           previous_secret_expires_at as "previousSecretExpiresAt", basic_username as "basicUsername",
           basic_password as "basicPassword"
    from webhook_settings where organization_id = ${organizationId}`;
  return row;
}

/** The organization's webhook settings, made (with a fresh signing secret) on first use. */
async function ensureSettings(sql: Queryable, organizationId: number): Promise<SettingsRow> {
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

/** What signs and authenticates an outgoing delivery now: the current secret, and the previous one while it overlaps. */
export async function deliverySecrets(sql: Queryable, organizationId: number, now = new Date()): Promise<DeliverySecrets> {
  const row = await ensureSettings(sql, organizationId);
  const previousActive = row.previousSigningSecret !== null && row.previousSecretExpiresAt !== null && row.previousSecretExpiresAt > now;
  return {
    signingSecrets: previousActive ? [row.signingSecret, row.previousSigningSecret as string] : [row.signingSecret],
    basic: row.basicUsername !== null && row.basicPassword !== null ? { username: row.basicUsername, password: row.basicPassword } : null,
  };
}

export type SigningSecretView = { organizationId: number; signingSecret: string; previousSecretExpiresAt: Date | null; basicAuth: boolean };

export async function showSigningSecret(sql: Sql, organizationId: number): Promise<SigningSecretView> {
  const row = await ensureSettings(sql, organizationId);
  const overlap = row.previousSecretExpiresAt !== null && row.previousSecretExpiresAt > new Date() ? row.previousSecretExpiresAt : null;
  return { organizationId, signingSecret: row.signingSecret, previousSecretExpiresAt: overlap, basicAuth: row.basicUsername !== null };
}

/** A new secret signs from now on; the old one keeps signing alongside for the overlap, then stops. */
export async function rotateSigningSecret(sql: Sql, organizationId: number): Promise<SigningSecretView> {
  await ensureSettings(sql, organizationId);
  await sql`
    update webhook_settings set
      previous_signing_secret = signing_secret,
      previous_secret_expires_at = now() + ${SECRET_ROTATION_OVERLAP_HOURS}::int * interval '1 hour',
      signing_secret = ${newSigningSecret()},
      modified = now()
    where organization_id = ${organizationId}`;
  return await showSigningSecret(sql, organizationId);
}

export async function setBasicCredentials(sql: Sql, organizationId: number, credentials: WebhookCredentials | null): Promise<void> {
  await ensureSettings(sql, organizationId);
  await sql`
    update webhook_settings set
      basic_username = ${credentials?.username ?? null}, basic_password = ${credentials?.password ?? null}, modified = now()
    where organization_id = ${organizationId}`;
}

// The delivery log.

export type OpenDelivery = {
  workflowId: string;
  /** Given for a redelivery, whose workflow id is made from it; the first delivery takes the next id. */
  deliveryId: number | null;
  organizationId: number;
  webhookId: number;
  eventId: number;
  redelivery: boolean;
};

/**
 * The delivery row of a workflow, made once whoever asks first (the transaction that recorded the
 * event, the API for a redelivery, the workflow itself), and marked as having its workflow: the
 * outbox sweep leaves it alone from then on. Null when the event or the webhook no longer exists.
 */
export async function openDelivery(sql: Queryable, input: OpenDelivery): Promise<number | null> {
  const [row] = await sql<{ id: number }[]>`
    insert into webhook_deliveries (id, workflow_id, organization_id, webhook_id, event_id, redelivery, workflow_started_at)
    select coalesce(${input.deliveryId}::bigint, nextval(pg_get_serial_sequence('webhook_deliveries', 'id'))),
           ${input.workflowId}, ${input.organizationId}, w.id, e.id, ${input.redelivery}, now()
    from events e, webhooks w
    where e.id = ${input.eventId} and w.id = ${input.webhookId}
    on conflict (workflow_id) do update set workflow_started_at = coalesce(webhook_deliveries.workflow_started_at, now())
    returning id`;
  return row?.id ?? null;
}

const ATTEMPT_COLUMNS = `attempt, started_at as "startedAt", duration_ms as "durationMs", outcome, status_code as "statusCode",
  error, response_excerpt as "responseExcerpt"`;

export async function findAttempt(sql: Queryable, deliveryId: number, attempt: number): Promise<AttemptRow | undefined> {
  const [row] = await sql<AttemptRow[]>`
    select ${sql.unsafe(ATTEMPT_COLUMNS)} from webhook_delivery_attempts where delivery_id = ${deliveryId} and attempt = ${attempt}`;
  return row;
}

export type DeliveryContext = {
  delivery: { id: number; organizationId: number; redelivery: boolean };
  webhook: WebhookRow & { deletedAt: Date | null };
  event: { id: number; type: EventType; data: Record<string, unknown>; created: Date };
};

/** Everything one attempt sends, read fresh so an updated target or a deleted hook counts at once. */
export async function deliveryContext(sql: Queryable, deliveryId: number): Promise<DeliveryContext | undefined> {
  const [row] = await sql<(WebhookRow & {
    deletedAt: Date | null; eventId: number; eventType: EventType; data: Record<string, unknown>; eventCreated: Date; redelivery: boolean;
  })[]>`
    select w.id, w.organization_id as "organizationId", w.user_id as "userId", w.event, w.target, w.created, w.updated,
           w.deleted_at as "deletedAt", e.id as "eventId", e.type as "eventType", e.data, e.created as "eventCreated", d.redelivery
    from webhook_deliveries d join events e on e.id = d.event_id join webhooks w on w.id = d.webhook_id
    where d.id = ${deliveryId}`;
  if (!row) return undefined;
  const { eventId, eventType, data, eventCreated, redelivery, ...webhook } = row;
  return {
    delivery: { id: deliveryId, organizationId: row.organizationId, redelivery },
    webhook,
    event: { id: eventId, type: eventType, data, created: eventCreated },
  };
}

export type NewAttempt = Omit<AttemptRow, 'outcome'> & { deliveryId: number; outcome: AttemptOutcome; webhookId: number };

/**
 * Logs an attempt once per (delivery, attempt number), and retires the webhook in the same
 * transaction when its target answered 410. Returns the attempt as logged: when another run of
 * the activity logged it first, that record wins.
 */
export async function recordAttempt(sql: Sql, attempt: NewAttempt): Promise<AttemptRow> {
  return await sql.begin(async (tx) => {
    const [inserted] = await tx<AttemptRow[]>`
      insert into webhook_delivery_attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_excerpt)
      values (${attempt.deliveryId}, ${attempt.attempt}, ${attempt.startedAt}, ${attempt.durationMs}, ${attempt.outcome},
              ${attempt.statusCode}, ${attempt.error}, ${attempt.responseExcerpt})
      on conflict (delivery_id, attempt) do nothing
      returning ${tx.unsafe(ATTEMPT_COLUMNS)}`;
    if (!inserted) {
      const existing = await findAttempt(tx, attempt.deliveryId, attempt.attempt);
      if (!existing) throw new Error(`attempt ${attempt.attempt} of delivery ${attempt.deliveryId} vanished`);
      return existing;
    }
    if (inserted.outcome === 'gone') await deleteWebhook(tx, attempt.webhookId, 'gone');
    return inserted;
  });
}

export async function finishDelivery(sql: Queryable, deliveryId: number, status: Exclude<DeliveryStatus, 'pending'>): Promise<void> {
  await sql`
    update webhook_deliveries set status = ${status}, finished_at = coalesce(finished_at, now())
    where id = ${deliveryId}`;
}

const DELIVERY_SELECT = `
  select d.id, d.organization_id as "organizationId", d.webhook_id as "webhookId", d.event_id as "eventId",
         e.type as "eventType", d.redelivery, d.status, d.created, d.finished_at as "finishedAt",
         coalesce((select json_agg(json_build_object(
                     'attempt', a.attempt, 'startedAt', a.started_at, 'durationMs', a.duration_ms, 'outcome', a.outcome,
                     'statusCode', a.status_code, 'error', a.error, 'responseExcerpt', a.response_excerpt) order by a.attempt)
                   from webhook_delivery_attempts a where a.delivery_id = d.id), '[]') as attempts
  from webhook_deliveries d join events e on e.id = d.event_id`;

type RawDeliveryRow = Omit<DeliveryRow, 'attempts'> & { attempts: (Omit<AttemptRow, 'startedAt'> & { startedAt: string })[] };

function toDeliveryRow(row: RawDeliveryRow): DeliveryRow {
  return { ...row, attempts: row.attempts.map((attempt) => ({ ...attempt, startedAt: new Date(attempt.startedAt) })) };
}

export async function listDeliveries(
  sql: Sql,
  webhookId: number,
  filters: { eventId?: number },
  page: { limit: number; offset: number },
): Promise<{ count: number; deliveries: DeliveryRow[] }> {
  const where = sql`where d.webhook_id = ${webhookId} ${filters.eventId !== undefined ? sql`and d.event_id = ${filters.eventId}` : sql``}`;
  const [[total], rows] = await Promise.all([
    sql<{ count: number }[]>`select count(*)::int as count from webhook_deliveries d ${where}`,
    sql<RawDeliveryRow[]>`${sql.unsafe(DELIVERY_SELECT)} ${where} order by d.id desc limit ${page.limit} offset ${page.offset}`,
  ]);
  return { count: total?.count ?? 0, deliveries: rows.map(toDeliveryRow) };
}

export async function findDelivery(sql: Sql, deliveryId: number): Promise<DeliveryRow | undefined> {
  const [row] = await sql<RawDeliveryRow[]>`${sql.unsafe(DELIVERY_SELECT)} where d.id = ${deliveryId}`;
  return row === undefined ? undefined : toDeliveryRow(row);
}
