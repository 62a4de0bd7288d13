import { createHmac, randomBytes } from 'node:crypto';
import type { EventType } from './events';
import { formatNullableTimestamp, formatTimestamp } from './time';

/** api.md 6.2: a receiver has 5 seconds to answer. */
export const WEBHOOK_TIMEOUT_MS = 5000;
/** How much of a receiver's answer the attempt log keeps. */
export const RESPONSE_EXCERPT_BYTES = 1024;
/** After a rotation the previous secret keeps signing alongside the new one this long. */
export const SECRET_ROTATION_OVERLAP_HOURS = 24;

export type WebhookRow = {
  id: number;
  organizationId: number;
  userId: number;
  event: EventType;
  target: string;
  created: Date;
  updated: Date;
};

/** The webhook object of api.md 2.5; also the `hook` of every delivery. */
export function serializeWebhook(webhook: WebhookRow) {
  return {
    id: webhook.id,
    user: webhook.userId,
    event: webhook.event,
    target: webhook.target,
    created: formatTimestamp(webhook.created),
    updated: formatTimestamp(webhook.updated),
  };
}
export type WebhookResource = ReturnType<typeof serializeWebhook>;

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
  id: number;
  organizationId: number;
  webhookId: number;
  eventId: number;
  eventType: EventType;
  redelivery: boolean;
  status: DeliveryStatus;
  created: Date;
  finishedAt: Date | null;
  attempts: AttemptRow[];
};

/** One delivery of an event to a webhook, with every attempt made so far (the attempt log). */
export function serializeDelivery(delivery: DeliveryRow) {
  return {
    id: delivery.id,
    webhook: delivery.webhookId,
    event: delivery.eventId,
    event_type: delivery.eventType,
    redelivery: delivery.redelivery,
    status: delivery.status,
    created: formatTimestamp(delivery.created),
    finished: formatNullableTimestamp(delivery.finishedAt),
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

export function signPayload(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The `webhook-signature` header: one signature per active secret, space separated. */
export function signatureHeader(secrets: readonly string[], messageId: string, timestampSeconds: number, body: string): string {
  return secrets.map((secret) => signPayload(secret, messageId, timestampSeconds, body)).join(' ');
}

/**
 * The `webhook-id` of a message: the same for every attempt and redelivery of one event to one
 * hook, so a receiver can tell a repeat from a new event.
 */
export const webhookMessageId = (eventId: number, webhookId: number): string => `msg_${eventId}_${webhookId}`;

export function basicAuthorization(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}

/**
 * The headers of a delivery (and of the console's test event): JSON, Standard Webhooks id,
 * timestamp and signatures, and `Authorization: Basic` only when the organization gave credentials
 * (api.md 5.5: otherwise no Authorization header at all).
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
