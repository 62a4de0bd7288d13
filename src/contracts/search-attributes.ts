/**
 * The custom search attributes every workflow may carry, registered with the server at start (scripts/infra.mjs,
 * compose). Safe to import from workflow code and from clients alike: no I/O, no Node built-ins.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Custom search attributes, registered with the server at start (scripts/infra.mjs, compose). */
export const searchAttributes = {
  organizationId: defineSearchAttributeKey('OrganizationId', SearchAttributeType.KEYWORD),
  eventType: defineSearchAttributeKey('EventType', SearchAttributeType.KEYWORD),
  requestStatus: defineSearchAttributeKey('RequestStatus', SearchAttributeType.KEYWORD),
  phoneNumber: defineSearchAttributeKey('PhoneNumber', SearchAttributeType.KEYWORD),
  currency: defineSearchAttributeKey('Currency', SearchAttributeType.KEYWORD),
  eventId: defineSearchAttributeKey('EventId', SearchAttributeType.KEYWORD),
} as const;
