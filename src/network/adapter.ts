/**
 * What the service needs from a mobile network operator. The sandbox network (./sandbox.ts) is
 * the implementation used here; a real operator adapter implements the same interface.
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
};

export type PromptResult = { accepted: true } | { accepted: false; error: string };

export type TextMessage = { requestId: number; kind: 'instructions' | 'success'; attempt: number; phoneNumber: string; text: string };

export type NameLookup = { nameOnNetwork: string; nationalId: string | null; nationalIdType: string; registered: boolean };

/** Money out to a subscriber: a payment, or a collection sent back. `reference` is ours and unique per payout. */
export type Payout = {
  reference: string;
  kind: 'payment' | 'reversal';
  phoneNumber: string;
  amount: string;
  currency: string;
  network: Network;
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
  /** Sends a text message; idempotent for one (request, kind, attempt). */
  sendSms(message: TextMessage): Promise<void>;
  /** The registered name on a number, where the network offers look-ups. */
  lookupName(phoneNumber: string, network: Network): Promise<NameLookup | null>;
  /** Whether the network asks the merchant's verification URL before accepting a collection. */
  supportsVerification(network: Network): boolean;
  /** Tells the network a payment was refused by the merchant, with the merchant's reason. */
  rejectPayment(rejection: { network: Network; remoteTransactionId: string; reason: string | null }): Promise<void>;
}
