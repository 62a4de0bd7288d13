import type { Sql } from '../db';
import type { Network } from '../domain/networks';
import {
  findSandboxPayment,
  findSandboxPayout,
  recordSandboxMessage,
  recordSandboxPayment,
  recordSandboxPayout,
  recordSandboxRejection,
  type SandboxPayout,
} from '../services/networks/sandbox-network';
import type {
  NameLookup,
  SandboxNetwork,
  PaymentPrompt,
  Payout,
  PayoutResult,
  PromptResult,
  PromptStatus,
  ReportedPayment,
  ReportedPaymentStatus,
  TakenPrompt,
  TextMessage,
} from './adapter';

/** Test numbers of the sandbox network (docs/api.md#collection-requests). */
const SANDBOX_CANCELLED_NUMBER = '+80000000001';
const SANDBOX_NEVER_PAYS_NUMBER = '+80000000009';
const SANDBOX_CANCELLED_ERROR = 'Cancelled By User';

/** Payout (money out) test numbers of the sandbox network: refused, silent until asked, failed when asked. */
export const SANDBOX_PAYOUT_REJECTED_NUMBER = '+80000000021';
export const SANDBOX_PAYOUT_REJECTED_ERROR = 'Recipient not registered';
export const SANDBOX_PAYOUT_SILENT_NUMBER = '+80000000022';
export const SANDBOX_PAYOUT_FAILING_NUMBER = '+80000000023';
export const SANDBOX_PAYOUT_FAILED_ERROR = 'The network could not complete the transfer.';

/** Names the sandbox network holds for contact instant verification (docs/api.md#contacts). */
const SANDBOX_DIRECTORY: Readonly<Record<string, { name: string; nationalId: string }>> = {
  '+256772123456': { name: 'Jane Nakato', nationalId: 'CM90012345ABCD' },
  '+256701234567': { name: 'Moses Okello', nationalId: 'CM88054321WXYZ' },
  '+254712345678': { name: 'John Kamau', nationalId: '23456789' },
  '+255754123456': { name: 'Neema Mushi', nationalId: '19900101-12345-00001-23' },
  '+250788123456': { name: 'Aline Uwase', nationalId: '1199080012345678' },
  '+233241234567': { name: 'Kofi Mensah', nationalId: 'GHA-123456789-0' },
  '+243811234567': { name: 'Grace Mbuyi', nationalId: 'CD-0011223344' },
  '+80000000002': { name: 'Sandbox Tester', nationalId: 'SBX-0002' },
};

type SandboxSettings = { sql: Sql; paymentDelaySeconds: number; payoutDelaySeconds?: number };

/** What the sandbox's payouts read: the database recording them, and how long a payout takes. */
type PayoutSettings = { sql: Sql; payoutDelaySeconds: number };

/** The payout as first recorded (once per reference), and what it comes to at `now`. */
async function payout(settings: PayoutSettings, request: Payout): Promise<PayoutResult> {
  const outcome =
    request.phoneNumber === SANDBOX_PAYOUT_REJECTED_NUMBER
      ? 'rejected'
      : request.phoneNumber === SANDBOX_PAYOUT_FAILING_NUMBER
        ? 'failed'
        : 'completed';
  const recorded = await recordSandboxPayout(settings.sql, {
    reference: request.reference,
    phoneNumber: request.phoneNumber,
    amount: request.amount,
    currency: request.currency,
    outcome,
    remoteTransactionId: `SBX-${request.reference.toUpperCase()}`,
  });
  return payoutResult(settings, request, recorded);
}

function payoutResult(settings: PayoutSettings, request: Payout, recorded: SandboxPayout, asked = false): PayoutResult {
  if (recorded.outcome === 'rejected')
    return { status: 'rejected', error: SANDBOX_PAYOUT_REJECTED_ERROR, remoteTransactionId: null };
  // The silent and failing numbers answer nothing until a status query; others take the configured delay.
  const silent =
    request.phoneNumber === SANDBOX_PAYOUT_SILENT_NUMBER || request.phoneNumber === SANDBOX_PAYOUT_FAILING_NUMBER;
  const due = recorded.created.getTime() + settings.payoutDelaySeconds * 1000;
  if ((silent && !asked) || Date.now() < due)
    return { status: 'pending', remoteTransactionId: recorded.remoteTransactionId };
  if (recorded.outcome === 'failed')
    return {
      status: 'failed',
      error: SANDBOX_PAYOUT_FAILED_ERROR,
      remoteTransactionId: recorded.remoteTransactionId,
    };
  return { status: 'completed', remoteTransactionId: recorded.remoteTransactionId };
}

/**
 * The sandbox network: every prompt is accepted except the cancelling test number; the subscriber
 * "pays" once per request after a configurable delay, except the never-paying test number. The
 * payment is recorded when the prompt is taken (dated when the subscriber pays), so it is durable
 * from that moment. The request's workflow learns of it as it learns of a real operator's: from
 * the answer when the subscriber pays at once, else from the status query at the time the sandbox
 * names. Text messages are recorded instead of sent.
 */
export function createSandboxNetwork({
  sql,
  paymentDelaySeconds,
  payoutDelaySeconds = 0,
}: SandboxSettings): SandboxNetwork {
  const payouts: PayoutSettings = { sql, payoutDelaySeconds };

  return {
    async sendMoney(request: Payout): Promise<PayoutResult> {
      return await payout(payouts, request);
    },

    async payoutStatus(request: Payout): Promise<PayoutResult> {
      const recorded = await findSandboxPayout(sql, request.reference);
      // A payout the network never took (lost with a crash before it was recorded) is sent now.
      return recorded ? payoutResult(payouts, request, recorded, true) : await payout(payouts, request);
    },

    async requestPayment(prompt: PaymentPrompt): Promise<PromptResult> {
      if (prompt.phoneNumber === SANDBOX_CANCELLED_NUMBER) return { accepted: false, error: SANDBOX_CANCELLED_ERROR };
      if (prompt.phoneNumber === SANDBOX_NEVER_PAYS_NUMBER) return { accepted: true };
      // The sandbox subscriber pays a request once, however many prompts it gets: one transaction id per request.
      const remoteTransactionId = `SBX-${prompt.requestId}`;
      const paymentDate = new Date(Date.now() + paymentDelaySeconds * 1000);
      const recorded = await recordSandboxPayment(sql, {
        remoteTransactionId,
        phoneNumber: prompt.phoneNumber,
        amount: prompt.amount,
        currency: prompt.currency,
        reference: prompt.reference,
        network: prompt.network.name,
        promptReference: prompt.promptReference,
        paidAt: paymentDate,
      });
      // Paid at once: the answer says so. Later: the workflow asks the status query when the subscriber said they would
      // pay.
      if (recorded.created.getTime() <= Date.now())
        return { accepted: true, paid: { remoteTransactionId, paymentDate: recorded.created.toISOString() } };
      return {
        accepted: true,
        confirm: {
          operatorReference: remoteTransactionId,
          checkAfterSeconds: Math.ceil((recorded.created.getTime() - Date.now()) / 1000),
        },
      };
    },

    /**
     * The sandbox pays by itself (it reports the payment); asked anyway, it says whether its subscriber has paid yet.
     */
    async promptStatus(prompt: TakenPrompt): Promise<PromptStatus> {
      const paid = await findSandboxPayment(sql, `SBX-${prompt.requestId}`);
      if (prompt.phoneNumber === SANDBOX_CANCELLED_NUMBER) return { status: 'failed', error: SANDBOX_CANCELLED_ERROR };
      if (!paid || paid.created.getTime() > Date.now()) return { status: 'pending' };
      return { status: 'paid', remoteTransactionId: paid.remoteTransactionId, paymentDate: paid.created.toISOString() };
    },

    /** A payment the sandbox made is one it recorded; anything else it never made. */
    async reportedPaymentStatus(payment: ReportedPayment): Promise<ReportedPaymentStatus> {
      const made = await findSandboxPayment(sql, payment.remoteTransactionId);
      if (!made) return { status: 'refused', reason: 'The sandbox network made no such payment.' };
      return { status: 'confirmed', amount: made.amount, phoneNumber: made.phoneNumber };
    },

    async sendSms(message: TextMessage): Promise<void> {
      await recordSandboxMessage(sql, message);
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
      await recordSandboxRejection(sql, remoteTransactionId, reason);
    },
  };
}
