import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import type { Sql } from '../db';
import type { Network } from '../domain/networks';
import type { sandboxPayment } from '../workflows/sandbox-payment';
import { sandboxPaymentWorkflowId } from '../workflows/shared';
import type { NameLookup, NetworkAdapter, PaymentPrompt, PromptResult, TextMessage } from './adapter';

/** Test numbers of the sandbox network (facts.md). */
export const SANDBOX_CANCELLED_NUMBER = '+80000000001';
export const SANDBOX_NEVER_PAYS_NUMBER = '+80000000009';
export const SANDBOX_CANCELLED_ERROR = 'Cancelled By User';

export type SandboxSettings = { sql: Sql; client: Client; taskQueue: string; paymentDelaySeconds: number };

/**
 * The sandbox network: every prompt is accepted except the cancelling test number; the subscriber
 * "pays" once per request after a configurable delay (a durable workflow), except the never-paying
 * test number. Text messages are recorded instead of sent.
 */
export function createSandboxNetwork({ sql, client, taskQueue, paymentDelaySeconds }: SandboxSettings): NetworkAdapter {
  return {
    async requestPayment(prompt: PaymentPrompt): Promise<PromptResult> {
      if (prompt.phoneNumber === SANDBOX_CANCELLED_NUMBER) return { accepted: false, error: SANDBOX_CANCELLED_ERROR };
      if (prompt.phoneNumber === SANDBOX_NEVER_PAYS_NUMBER) return { accepted: true };
      try {
        await client.workflow.start<typeof sandboxPayment>('sandboxPayment', {
          workflowId: sandboxPaymentWorkflowId(prompt.requestId),
          // The sandbox subscriber pays a request once, however many prompts it gets.
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          taskQueue,
          args: [{
            requestId: prompt.requestId,
            phoneNumber: prompt.phoneNumber,
            amount: prompt.amount,
            currency: prompt.currency,
            reference: prompt.reference,
            network: prompt.network.name,
            delaySeconds: paymentDelaySeconds,
          }],
        });
      } catch (error) {
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      }
      return { accepted: true };
    },

    async sendSms(message: TextMessage): Promise<void> {
      await sql`
        insert into sandbox_messages (request_id, kind, attempt, phone_number, text)
        values (${message.requestId}, ${message.kind}, ${message.attempt}, ${message.phoneNumber}, ${message.text})
        on conflict (request_id, kind, attempt) do nothing`;
    },

    async lookupName(): Promise<NameLookup | null> {
      return null;
    },

    supportsVerification(network: Network): boolean {
      return network.verification;
    },
  };
}
