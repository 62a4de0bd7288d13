/**
 * What the service needs from a mobile network operator. Implementations: the sandbox network
 * (./sandbox.ts), M-Pesa Daraja for Safaricom (./daraja.ts), MTN MoMo for the MTN markets (./momo.ts),
 * Airtel Money (./airtel.ts), Vodacom M-Pesa through the M-Pesa OpenAPI (./vodacom.ts);
 * ./router.ts hands each call to the one that serves the network and currency.
 */
import type { Network } from '../domain/networks';

export type PaymentPrompt = {
  requestId: number;
  attempt: number;
  phoneNumber: string;
  amount: string;
  currency: string;
  /** What the subscriber sees and what comes back as the collection's reference. */
  reference: string;
  /** Identifies this prompt; the network's report of a payment made through it carries it back. */
  promptReference: string;
  network: Network;
  /** The workflow an operator's callback about this prompt wakes (the request's). */
  workflowId: string;
  /**
   * How the payment the prompt brings reaches us. `answer` (the request's workflow asks for it, by
   * the operator's status query or in the network's answer itself); `report` (absent) for request
   * workflows started before the actor core, which wait to hear of it from the network's report.
   * Only the sandbox, which pays by itself, differs by it.
   */
  receiving?: 'answer' | 'report';
};

/**
 * What the network made of a prompt request. A real operator answers only that it took the
 * prompt: `confirm` carries its reference, and the request's workflow then asks `promptStatus`
 * (woken by the operator's callback, at `checkAfterSeconds` when the network said when to ask, or
 * at the next poll) until the operator says paid or failed. `paid`: the network charged at once
 * and its answer is the confirmation (the sandbox with no payment delay).
 */
export type PromptResult =
  | { accepted: true; confirm?: { operatorReference: string; checkAfterSeconds?: number }; paid?: { remoteTransactionId: string; paymentDate: string } }
  | { accepted: false; error: string };

/** A prompt the operator took, as `promptStatus` asks about it. */
export type TakenPrompt = PaymentPrompt & { operatorReference: string };

/**
 * Where a taken prompt stands, by the operator's own status query (never by a callback alone):
 * `paid` with the payment as the operator confirmed it (its amount, number and currency are the
 * prompt's), `failed` with a reason a merchant understands, or `pending`.
 */
export type PromptStatus =
  | { status: 'paid'; remoteTransactionId: string; paymentDate: string }
  | { status: 'failed'; error: string }
  | { status: 'pending' };

/**
 * A payment an operator reported by callback that no prompt of ours asked for (a paybill
 * payment): believed only once the operator's status query confirms it (`confirmed`, with the
 * payer's number in full when the operator gives it), `refused` when it does not.
 */
export type ReportedPayment = { network: Network; remoteTransactionId: string; amount: string; currency: string; phoneNumber: string; workflowId: string };
export type ReportedPaymentStatus =
  | { status: 'confirmed'; amount: string; phoneNumber: string | null; promptReference?: string | null }
  | { status: 'refused'; reason: string }
  | { status: 'pending' };

export type TextMessage = {
  requestId: number; kind: 'instructions' | 'success'; attempt: number; phoneNumber: string; text: string;
  /** Whose number and money the text is about: a connected operator has no text-message API (./router.ts). */
  network: Network; currency: string;
};

export type NameLookup = { nameOnNetwork: string; nationalId: string | null; nationalIdType: string; registered: boolean };

/** Money out to a subscriber: a payment, or a collection sent back. `reference` is ours and unique per payout. */
export type Payout = {
  reference: string;
  kind: 'payment' | 'reversal';
  phoneNumber: string;
  amount: string;
  currency: string;
  network: Network;
  /** A reversal's collection: the operator's id of the payment sent back (its receipt). */
  originalTransactionId?: string;
  /** The workflow an operator's callback about this payout wakes. */
  workflowId: string;
};

/**
 * What the network made of a payout: done, refused (`rejected`, e.g. the recipient is not
 * registered), failed after taking it (`failed`), or not known yet (`pending`: ask again later).
 */
export type PayoutResult =
  | { status: 'completed'; remoteTransactionId: string }
  | { status: 'rejected' | 'failed'; error: string; remoteTransactionId: string | null }
  | { status: 'pending'; remoteTransactionId: string | null };

export interface NetworkAdapter {
  /** Sends money to a subscriber; idempotent per `reference` (a repeat reports the first send). */
  sendMoney(payout: Payout): Promise<PayoutResult>;
  /** Where a payout stands now (after `pending`). */
  payoutStatus(payout: Payout): Promise<PayoutResult>;
  /** Asks the subscriber's network to prompt them (USSD push / PIN approval) for the payment. */
  requestPayment(prompt: PaymentPrompt): Promise<PromptResult>;
  /** Where a prompt the operator took (`confirm`) stands, by the operator's status query. */
  promptStatus(prompt: TakenPrompt): Promise<PromptStatus>;
  /** Whether a payment an operator reported by callback really happened, by its status query. */
  reportedPaymentStatus(payment: ReportedPayment): Promise<ReportedPaymentStatus>;
  /** Sends a text message; idempotent for one (request, kind, attempt). */
  sendSms(message: TextMessage): Promise<void>;
  /** The registered name on a number, where the network offers look-ups. */
  lookupName(phoneNumber: string, network: Network): Promise<NameLookup | null>;
  /** Whether the network asks the merchant's verification URL before accepting a collection in `currency`. */
  supportsVerification(network: Network, currency?: string): boolean;
  /** Tells the network a payment was refused by the merchant, with the merchant's reason. */
  rejectPayment(rejection: { network: Network; currency?: string; remoteTransactionId: string; reason: string | null }): Promise<void>;
}
