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

/** Names the sandbox network holds for contact instant verification (api.md 4.4). */
export const SANDBOX_DIRECTORY: Readonly<Record<string, { name: string; nationalId: string }>> = {
  '+256772123456': { name: 'Jane Nakato', nationalId: 'CM90012345ABCD' },
  '+256701234567': { name: 'Moses Okello', nationalId: 'CM88054321WXYZ' },
  '+254712345678': { name: 'John Kamau', nationalId: '23456789' },
  '+255754123456': { name: 'Neema Mushi', nationalId: '19900101-12345-00001-23' },
  '+250788123456': { name: 'Aline Uwase', nationalId: '1199080012345678' },
  '+233241234567': { name: 'Kofi Mensah', nationalId: 'GHA-123456789-0' },
  '+243811234567': { name: 'Grace Mbuyi', nationalId: 'CD-0011223344' },
  '+80000000002': { name: 'Sandbox Tester', nationalId: 'SBX-0002' },
};

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
            promptReference: prompt.promptReference,
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

    async lookupName(phoneNumber: string, network: Network): Promise<NameLookup | null> {
      if (!network.nameLookup) return null;
      const entry = SANDBOX_DIRECTORY[phoneNumber];
      return entry
        ? { nameOnNetwork: entry.name, nationalId: entry.nationalId, nationalIdType: 'NATIONAL_ID', registered: true }
        : { nameOnNetwork: '', nationalId: null, nationalIdType: 'NATIONAL_ID', registered: false };
    },

    supportsVerification(network: Network): boolean {
      return network.verification;
    },

    async rejectPayment({ remoteTransactionId, reason }): Promise<void> {
      await sql`insert into sandbox_rejections (remote_transaction_id, reason) values (${remoteTransactionId}, ${reason})
                on conflict (remote_transaction_id) do nothing`;
    },
  };
}
