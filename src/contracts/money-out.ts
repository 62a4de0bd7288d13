/**
 * The payment and reversal workflows' contract (`payment-<id>`, `reversal-<id>`): ids, inputs, signal and query.
 * Safe to import from workflow code and from clients alike: no I/O, no Node built-ins.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { OrganizationId, PaymentId, ReversalId } from '../domain/ids';

export const paymentWorkflowId = (paymentId: PaymentId): string => `payment-${paymentId}`;

export const reversalWorkflowId = (reversalId: ReversalId): string => `reversal-${reversalId}`;

/** Everything a payment's workflow needs; durations are data so tests can use seconds. */
export type PaymentInput = {
  paymentId: PaymentId;
  organizationId: OrganizationId;
  /** ISO instant of `start_date`, or null to send at once. */
  startAt: string | null;
  statusPollSeconds: number;
  statusTimeoutSeconds: number;
};

export type ReversalInput = {
  reversalId: ReversalId;
  organizationId: OrganizationId;
  statusPollSeconds: number;
  statusTimeoutSeconds: number;
};

export type MoneyOutState = { state: string; attempts: number; lastError: string | null };

/** Sent when a payment was cancelled, so a workflow waiting for its start date ends at once. */
export const paymentCancelledSignal = defineSignal('paymentCancelled');

export const moneyOutStateQuery = defineQuery<MoneyOutState>('status');
