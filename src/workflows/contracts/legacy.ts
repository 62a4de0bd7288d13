/**
 * Contracts of workflows kept only for executions started before the lean core (workflows/legacy).
 * Safe to import from workflow code and from clients alike: no I/O, no Node built-ins.
 */

export const eventDispatchWorkflowId = (eventId: number): string => `event-${eventId}`;

export type EventDispatchInput = { eventId: number; organizationId: number; type: string };

export type EventDispatchStatus = 'dispatching' | 'dispatched';

export type SandboxPaymentInput = {
  requestId: number;
  phoneNumber: string;
  amount: string;
  currency: string;
  reference: string;
  /** The prompt this payment answers (absent in payments started before prompts carried one). */
  promptReference?: string;
  network: string;
  delaySeconds: number;
};
