import { formatTimestamp } from './time';

/** The event types of api.md 6.1. */
export const EVENT_TYPES = [
  'payment.status.changed',
  'collection.received',
  'contact.created',
  'collectionrequest.status.changed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export type EventRow = {
  id: number;
  organizationId: number;
  type: EventType;
  data: Record<string, unknown>;
  author: number | null;
  updatedBy: number | null;
  created: Date;
  modified: Date;
};

export function serializeEvent(event: EventRow) {
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
export type EventResource = ReturnType<typeof serializeEvent>;
