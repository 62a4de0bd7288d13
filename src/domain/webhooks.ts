import { createHmac, randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { EVENT_TYPES, type EventType } from './events';
import { Id, NullableTimestamp, Timestamp, described } from './shapes';
import { formatNullableTimestamp, formatTimestamp } from '../formats/time';
import type { DeliveryId, EventId, OrganizationId, RecoveryId, UserId, WebhookId } from './ids';

/** docs/api.md#webhooks: a receiver has 5 seconds to answer. */
export const WEBHOOK_TIMEOUT_MS = 5000;
/** How much of a receiver's answer the attempt log keeps. */
export const RESPONSE_EXCERPT_BYTES = 1024;
/** After a rotation the previous secret keeps signing alongside the new one this long. */
export const SECRET_ROTATION_OVERLAP_HOURS = 24;

export type WebhookRow = {
  id: WebhookId;
  organizationId: OrganizationId;
  userId: UserId;
  event: EventType;
  target: string;
  created: Date;
  updated: Date;
  /** Set while the webhook is disabled: no deliveries are recorded for it (see migrations/014_webhook_recovery.sql). */
  disabledAt: Date | null;
  disabledReason: WebhookDisabledReason | null;
};

/**
 * Why a webhook is disabled: its target failed every delivery for the configured period, or the merchant disabled it.
 */
export type WebhookDisabledReason = 'failing' | 'manual';

/**
 * The webhook object (docs/api.md#webhooks; also the `hook` of every delivery): types `serializeWebhook` and documents
 * it.
 */
export const WebhookSchema = v.pipe(
  v.object({
    id: Id,
    user: described(v.number(), 'Id of the user who created it.'),
    event: described(v.picklist(EVENT_TYPES), 'The event type it receives.'),
    target: described(v.string(), 'The HTTPS URL that receives the notifications.'),
    created: Timestamp,
    updated: Timestamp,
    status: described(
      v.picklist(['enabled', 'disabled']),
      'A disabled webhook receives nothing until it is enabled again (POST .../enable).',
    ),
    disabled_at: described(NullableTimestamp, 'When it was disabled; null while enabled.'),
    disabled_reason: described(
      v.nullable(v.picklist(['failing', 'manual'])),
      [
        '`failing`: its target failed every delivery for the configured period (5 days unless set otherwise);',
        '`manual`: disabled with POST .../disable.',
      ].join(' '),
    ),
  }),
  v.description('An HTTPS URL that receives every future event of one type.'),
  v.examples([
    {
      id: 56,
      user: 5,
      event: 'contact.created' as const,
      target: 'https://acme.example/hooks',
      created: '2025-05-01T13:45:00Z',
      updated: '2025-05-01T13:45:00Z',
      status: 'enabled' as const,
      disabled_at: null,
      disabled_reason: null,
    },
  ]),
);
type WebhookResource = v.InferOutput<typeof WebhookSchema>;

export function serializeWebhook(webhook: WebhookRow): WebhookResource {
  return {
    id: webhook.id,
    user: webhook.userId,
    event: webhook.event,
    target: webhook.target,
    created: formatTimestamp(webhook.created),
    updated: formatTimestamp(webhook.updated),
    status: webhook.disabledAt === null ? 'enabled' : 'disabled',
    disabled_at: formatNullableTimestamp(webhook.disabledAt),
    disabled_reason: webhook.disabledReason,
  };
}

/** What a recovery redelivers: every event of the webhook's type in [since, until). */
export type RecoveryRow = {
  id: RecoveryId;
  webhookId: WebhookId;
  userId: UserId | null;
  since: Date;
  until: Date;
  events: number;
  created: Date;
  /** Its deliveries by status, as they stand now. */
  deliveries: Record<DeliveryStatus, number>;
};

/** A webhook's recovery and how far its deliveries got: types `serializeRecovery` and documents it. */
export const RecoverySchema = v.pipe(
  v.object({
    id: Id,
    webhook: described(v.number(), 'The webhook whose events are delivered again.'),
    user: described(v.nullable(v.number()), 'The user who asked for it; null when asked with an API key of no user.'),
    since: described(Timestamp, 'Events created at or after this time are delivered again…'),
    until: described(Timestamp, '…up to (not including) this time.'),
    events: described(
      v.number(),
      'How many events it delivers again: one fresh delivery each, with its own 10 attempts.',
    ),
    status: described(v.picklist(['delivering', 'finished']), '`finished` once none of its deliveries is pending.'),
    deliveries: described(
      v.object({
        pending: v.number(),
        delivered: v.number(),
        failed: v.number(),
        gone: v.number(),
        cancelled: v.number(),
      }),
      'Its deliveries by status.',
    ),
    created: Timestamp,
  }),
  v.description("Every event of a webhook's type in a period, delivered again."),
  v.examples([
    {
      id: 7,
      webhook: 56,
      user: 5,
      since: '2025-05-01T00:00:00Z',
      until: '2025-05-02T09:30:00Z',
      events: 120,
      status: 'delivering' as const,
      deliveries: { pending: 20, delivered: 100, failed: 0, gone: 0, cancelled: 0 },
      created: '2025-05-02T09:30:00Z',
    },
  ]),
);
type RecoveryResource = v.InferOutput<typeof RecoverySchema>;

export function serializeRecovery(recovery: RecoveryRow): RecoveryResource {
  return {
    id: recovery.id,
    webhook: recovery.webhookId,
    user: recovery.userId,
    since: formatTimestamp(recovery.since),
    until: formatTimestamp(recovery.until),
    events: recovery.events,
    status: recovery.deliveries.pending > 0 ? 'delivering' : 'finished',
    deliveries: recovery.deliveries,
    created: formatTimestamp(recovery.created),
  };
}

/** What one attempt came to: any 2xx is delivered (3xx is not), 410 means the hook is gone. */
export type AttemptOutcome = 'delivered' | 'failed' | 'gone';

export function attemptOutcome(statusCode: number | null): AttemptOutcome {
  if (statusCode === null) return 'failed';
  if (statusCode >= 200 && statusCode < 300) return 'delivered';
  if (statusCode === 410) return 'gone';
  return 'failed';
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'gone' | 'cancelled';

export type AttemptRow = {
  attempt: number;
  startedAt: Date;
  durationMs: number;
  outcome: AttemptOutcome;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
};

export type DeliveryRow = {
  id: DeliveryId;
  organizationId: OrganizationId;
  webhookId: WebhookId;
  eventId: EventId;
  eventType: EventType;
  redelivery: boolean;
  status: DeliveryStatus;
  created: Date;
  finishedAt: Date | null;
  /** When a pending delivery's next attempt is due (it may wait longer: see `probing`). */
  nextAttemptAt: Date | null;
  /**
   * A pending delivery's receiver while it is probed (docs/api.md#webhooks): why the delivery waits past its due time.
   */
  probing: ReceiverProbing | null;
  attempts: AttemptRow[];
};

/** A receiver that stopped answering: its origin, the faults in a row, since when it is probed, and the last fault. */
export type ReceiverProbing = { origin: string; faults: number; since: Date; lastFault: string | null };

/**
 * Why a pending delivery waits past its due time, in words for the attempt log and the console; null when it does not.
 */
export function waitingReason(probing: ReceiverProbing | null): string | null {
  if (probing === null) return null;
  const last = probing.lastFault === null ? '' : ` (last: ${probing.lastFault})`;
  return [
    `The receiver ${probing.origin} has not answered its last ${probing.faults} POSTs${last};`,
    `since ${formatTimestamp(probing.since)} it is probed with one POST at a time,`,
    'and its other deliveries wait, keeping their attempts, until it answers.',
  ].join(' ');
}

export const DELIVERY_STATUSES = [
  'pending',
  'delivered',
  'failed',
  'gone',
  'cancelled',
] as const satisfies readonly DeliveryStatus[];

/** One delivery of an event to a webhook with its attempt log: types `serializeDelivery` and documents it. */
export const DeliverySchema = v.pipe(
  v.object({
    id: Id,
    webhook: described(v.number(), 'The webhook delivered to.'),
    event: described(v.number(), 'The event delivered.'),
    event_type: v.picklist(EVENT_TYPES),
    redelivery: described(
      v.boolean(),
      'True for a delivery asked for with POST .../deliveries or by a recovery (POST .../recover).',
    ),
    status: described(
      v.picklist(DELIVERY_STATUSES),
      [
        '`gone`: the receiver answered 410 and the webhook was deleted;',
        '`cancelled`: the webhook was deleted or disabled meanwhile.',
      ].join(' '),
    ),
    created: Timestamp,
    finished: described(NullableTimestamp, 'When the outcome became final; null while pending.'),
    next_attempt_at: described(NullableTimestamp, 'While pending: when its next attempt is due. Null once final.'),
    waiting: described(
      v.nullable(v.string()),
      [
        'While pending and its receiver (the origin of the target) is probed after timeouts or refused connections:',
        'why the delivery waits past its due time.',
        'Null otherwise.',
      ].join(' '),
    ),
    attempts: v.array(
      v.object({
        attempt: described(v.number(), '1 to 10.'),
        time: Timestamp,
        duration_ms: v.number(),
        outcome: v.picklist(['delivered', 'failed', 'gone']),
        status_code: described(
          v.nullable(v.number()),
          "The receiver's HTTP status; null when none came (timeout, connection or TLS error).",
        ),
        error: v.nullable(v.string()),
        response: described(v.nullable(v.string()), "The first 1 KiB of the receiver's answer."),
      }),
    ),
  }),
  v.description('One delivery of an event to a webhook, with every attempt made so far (the attempt log).'),
  v.examples([
    {
      id: 88,
      webhook: 56,
      event: 1234,
      event_type: 'contact.created' as const,
      redelivery: false,
      status: 'delivered' as const,
      created: '2025-05-01T13:45:00Z',
      finished: '2025-05-01T13:45:01Z',
      next_attempt_at: null,
      waiting: null,
      attempts: [
        {
          attempt: 1,
          time: '2025-05-01T13:45:00Z',
          duration_ms: 182,
          outcome: 'delivered' as const,
          status_code: 200,
          error: null,
          response: 'ok',
        },
      ],
    },
  ]),
);
type DeliveryResource = v.InferOutput<typeof DeliverySchema>;

export function serializeDelivery(delivery: DeliveryRow): DeliveryResource {
  return {
    id: delivery.id,
    webhook: delivery.webhookId,
    event: delivery.eventId,
    event_type: delivery.eventType,
    redelivery: delivery.redelivery,
    status: delivery.status,
    created: formatTimestamp(delivery.created),
    finished: formatNullableTimestamp(delivery.finishedAt),
    next_attempt_at: formatNullableTimestamp(delivery.nextAttemptAt),
    waiting: waitingReason(delivery.probing),
    attempts: delivery.attempts.map((attempt) => ({
      attempt: attempt.attempt,
      time: formatTimestamp(attempt.startedAt),
      duration_ms: attempt.durationMs,
      outcome: attempt.outcome,
      status_code: attempt.statusCode,
      error: attempt.error,
      response: attempt.responseExcerpt,
    })),
  };
}

// Standard Webhooks (https://www.standardwebhooks.com): the secret is `whsec_` + base64 of
// random bytes; each signature is `v1,` + base64(HMAC-SHA256(key, "id.timestamp.body")).
const SECRET_PREFIX = 'whsec_';

export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

export function isSigningSecret(value: string): boolean {
  return value.startsWith(SECRET_PREFIX) && Buffer.from(value.slice(SECRET_PREFIX.length), 'base64').length >= 24;
}

function signPayload(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The `webhook-signature` header: one signature per active secret, space separated. */
export function signatureHeader(
  secrets: readonly string[],
  messageId: string,
  timestampSeconds: number,
  body: string,
): string {
  return secrets.map((secret) => signPayload(secret, messageId, timestampSeconds, body)).join(' ');
}

/**
 * The `webhook-id` of a message: the same for every attempt and redelivery of one event to one
 * hook, so a receiver can tell a repeat from a new event.
 */
export const webhookMessageId = (eventId: EventId, webhookId: WebhookId): string => `msg_${eventId}_${webhookId}`;

export function basicAuthorization(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}

/**
 * The headers of a delivery (and of the console's test event): JSON, Standard Webhooks id,
 * timestamp and signatures, and `Authorization: Basic` only when the organization gave credentials
 * (docs/api.md#webhooks: otherwise no Authorization header at all).
 */
export function deliveryHeaders(
  secrets: { signingSecrets: readonly string[]; basic: { username: string; password: string } | null },
  messageId: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'collections-webhooks/1.0',
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': signatureHeader(secrets.signingSecrets, messageId, timestampSeconds, body),
  };
  if (secrets.basic) headers.authorization = basicAuthorization(secrets.basic.username, secrets.basic.password);
  return headers;
}

/** The `skip-cert-verify` query parameter the provider honoured on targets (sandbox mode only here). */
export function asksToSkipCertificateCheck(target: URL): boolean {
  const value = target.searchParams.get('skip-cert-verify');
  return value !== null && ['', '1', 'true', 'yes'].includes(value.toLowerCase());
}
