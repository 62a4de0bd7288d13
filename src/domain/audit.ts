/**
 * The audit trail's entries: one per row a write through the API or the web console changed
 * (migrations/017_audit_trail.sql records them), as the API and the console show them.
 */
import * as v from 'valibot';
import { Id, OwningOrganization, Timestamp, described } from './shapes';
import { formatTimestamp } from '../formats/time';
import type { ApiKeyId, OrganizationId, UserId } from './ids';
import { AUDITED_MOVEMENTS } from './money-movements';

/**
 * The kinds of object the audit trail records changes of (the audited tables, one name each; the money movements' from
 * their list).
 */
export const AUDITED_OBJECT_TYPES = [
  'organization',
  'user',
  'api_key',
  'contact',
  'collection_request',
  ...AUDITED_MOVEMENTS,
  'webhook',
  'webhook_settings',
  'webhook_recovery',
  'webhook_delivery',
] as const;

const AUDIT_CHANNELS = ['api', 'console'] as const;

/** The value a secret column shows in an entry's change: that it changed, never what it is. */
export const REDACTED = '[redacted]';

export type AuditChange = { before: Record<string, unknown> | null; after: Record<string, unknown> | null };

export type AuditEventRow = {
  id: number;
  organizationId: OrganizationId;
  created: Date;
  userId: UserId | null;
  /** The acting user's name and the key's public prefix, for the console. */
  userName: string | null;
  apiKeyId: ApiKeyId | null;
  apiKeyPrefix: string | null;
  channel: (typeof AUDIT_CHANNELS)[number];
  clientAddress: string | null;
  action: string;
  objectType: (typeof AUDITED_OBJECT_TYPES)[number];
  objectId: number;
  change: AuditChange;
};

const Fields = described(
  v.nullable(v.record(v.string(), v.unknown())),
  'Field names and their values (as PostgreSQL stores them); secrets show as `"[redacted]"`.',
);

/** An audit entry as the API answers it: types `serializeAuditEvent` and documents it. */
export const AuditEventSchema = v.pipe(
  v.object({
    id: Id,
    organization: OwningOrganization,
    created: Timestamp,
    user: described(
      v.nullable(v.pipe(v.number(), v.integer())),
      "Id of the user who made the change (the API key's user, or the console's signed-in user).",
    ),
    api_key: described(
      v.nullable(v.pipe(v.number(), v.integer())),
      'Id of the API key the change came with; null in the console.',
    ),
    channel: described(v.picklist(AUDIT_CHANNELS), 'Through what the change came: the API or the web console.'),
    client_address: described(
      v.nullable(v.string()),
      "The client's address, as the service determines it (`TRUST_PROXY`); null when unknown.",
    ),
    action: described(v.string(), 'The method and route the change came through, such as `POST /api/payments`.'),
    object_type: described(v.picklist(AUDITED_OBJECT_TYPES), 'The kind of object changed.'),
    object_id: described(
      v.pipe(v.number(), v.integer()),
      "The changed object's id (an organization's id for `webhook_settings`).",
    ),
    change: described(
      v.object({ before: Fields, after: Fields }),
      [
        'The changed fields before and after;',
        'every field after a creation (`before` null) and before a deletion (`after` null).',
      ].join(' '),
    ),
  }),
  v.description(
    'One change a write through the API or the web console made, recorded in the transaction of that write.',
  ),
  v.examples([
    {
      id: 981,
      organization: 3,
      created: '2025-05-01T13:45:00Z',
      user: 5,
      api_key: 12,
      channel: 'api' as const,
      client_address: '203.0.113.7',
      action: 'PATCH /api/webhooks/:id',
      object_type: 'webhook' as const,
      object_id: 56,
      change: { before: { target: 'https://acme.example/old' }, after: { target: 'https://acme.example/hooks' } },
    },
  ]),
);
type AuditEventResource = v.InferOutput<typeof AuditEventSchema>;

export function serializeAuditEvent(row: AuditEventRow): AuditEventResource {
  return {
    id: row.id,
    organization: row.organizationId,
    created: formatTimestamp(row.created),
    user: row.userId,
    api_key: row.apiKeyId,
    channel: row.channel,
    client_address: row.clientAddress,
    action: row.action,
    object_type: row.objectType,
    object_id: row.objectId,
    change: row.change,
  };
}
