/**
 * The subscription workflow's contract (`subscription-<request id>`): its id, input and query.
 * Safe to import from workflow code and from clients alike: no I/O, no Node built-ins.
 */
import { defineQuery } from '@temporalio/workflow';
import type { CollectionRequestId, OrganizationId } from '../domain/ids';

export const subscriptionWorkflowId = (requestId: CollectionRequestId): string => `subscription-${requestId}`;

export type SubscriptionInput = {
  requestId: CollectionRequestId;
  organizationId: OrganizationId;
  /** ISO instants and the rule of domain/subscriptions.ts. */
  startDate: string;
  endDate: string;
  frequency: string;
  weekdays?: number[];
  months?: number[];
};

export type SubscriptionState = { created: number; lastOccurrence: string | null; nextOccurrence: string | null };

export const subscriptionStateQuery = defineQuery<SubscriptionState>('status');
