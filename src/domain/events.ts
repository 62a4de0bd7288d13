import * as v from 'valibot';
import { Author, Id, OwningOrganization, Timestamp, UpdatedBy, described } from './shapes';
import { formatTimestamp } from '../formats/time';
import type { EventId, OrganizationId } from './ids';

/** The event types (docs/api.md#events). */
export const EVENT_TYPES = [
  'payment.status.changed',
  'collection.received',
  'contact.created',
  'collectionrequest.status.changed',
  // A webhook the service disabled (its target failed every delivery for the period) or the merchant did.
  'webhook.disabled',
  // A batch of payments whose every row is final (bulk payouts).
  'payment_batch.completed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export type EventRow = {
  id: EventId;
  organizationId: OrganizationId;
  type: EventType;
  data: Record<string, unknown>;
  author: number | null;
  updatedBy: number | null;
  created: Date;
  modified: Date;
};

/** The event object (docs/api.md#events): types `serializeEvent` and documents it. */
export const EventSchema = v.pipe(
  v.object({
    id: Id,
    organization: OwningOrganization,
    type: v.picklist(EVENT_TYPES),
    data: described(
      v.record(v.string(), v.unknown()),
      [
        'The object that triggered the event as it was when the event happened:',
        'a Contact (`contact.created`), a Collection (`collection.received`),',
        'a CollectionRequest (`collectionrequest.status.changed`), a payment (`payment.status.changed`),',
        'a webhook (`webhook.disabled`) or a payment batch (`payment_batch.completed`).',
      ].join(' '),
    ),
    created: Timestamp,
    modified: Timestamp,
    author: Author,
    updated_by: UpdatedBy,
  }),
  v.description('Something that happened in the organization; webhooks deliver the same `data`.'),
  v.examples([
    {
      id: 1234,
      organization: 3,
      type: 'contact.created' as const,
      data: { id: 17, first_name: 'Jane', last_name: 'Nakato', phone_number: '+256772123456' },
      created: '2025-05-01T13:45:00Z',
      modified: '2025-05-01T13:45:00Z',
      author: 5,
      updated_by: null,
    },
  ]),
);
export type EventResource = v.InferOutput<typeof EventSchema>;

export function serializeEvent(event: EventRow): EventResource {
  return {
    id: event.id,
    organization: event.organizationId,
    type: event.type,
    data: event.data,
    created: formatTimestamp(event.created),
    modified: formatTimestamp(event.modified),
    author: event.author,
    updated_by: event.updatedBy === null ? null : String(event.updatedBy),
  };
}
