/**
 * What the service needs from a mobile network operator (`NetworkAdapter`), and the contract every
 * operator's connector fulfils (`Connector`, built by its `ConnectorUnit`). The sandbox network
 * (./sandbox.ts) is an adapter of its own; each real operator is one folder, `./<operator>/`, whose
 * unit ./registry.ts lists; ./router.ts hands each call to the connector that serves the network. The paths an
 * operator calls back, and what the API hands them, are ./callback-routes.ts.
 */
import type * as v from 'valibot';
import type { CollectionRequestId } from '../domain/ids';
import type { Connections, MoneyOperation, Network } from '../domain/networks';

export type { MoneyOperation } from '../domain/networks';
import type { NetworkRecords } from '../services/networks/records';
import type { CallbackRoute } from './callback-routes';

export type { NetworkOperation } from '../services/networks/operations';
export type { ReceiptNaming } from '../services/networks/receipts';
export type { NetworkRecords } from '../services/networks/records';

export type PaymentPrompt = {
  requestId: CollectionRequestId;
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
  /** What the core's journal holds of it, handed over on each call (`Recorded`). */
  recorded?: Recorded;
};

/**
 * What the core's journal holds of an operation, handed to its connector on each call: the id the operator knows it
 * by (the connector's `operatorIdFor`, recorded before the first send; null where the operator chooses its own) and
 * when it was first recorded.
 */
export type Recorded = { operatorReference: string | null; at: Date };

/**
 * What the network made of a prompt request (`routeFault` on a refusal: the route's own trouble,
 * such as "system busy" or the network down at an aggregator, which another route may not have; never
 * the subscriber's). A real operator answers only that it took the
 * prompt: `confirm` carries its reference, and the request's workflow then asks `promptStatus`
 * (woken by the operator's callback, at `checkAfterSeconds` when the network said when to ask, or
 * at the next poll) until the operator says paid or failed. `paid`: the network charged at once
 * and its answer is the confirmation (the sandbox with no payment delay).
 */
export type PromptResult =
  | {
      accepted: true;
      confirm?: { operatorReference: string; checkAfterSeconds?: number };
      paid?: { remoteTransactionId: string; paymentDate: string };
    }
  | { accepted: false; error: string; routeFault?: true };

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
  /**
   * Not settled for this prompt; `recorded`: the operator names the payment that answered it, and the service already
   * holds that payment under its receipt (stored by another way: a report of it), so nothing is left to receive.
   */
  | { status: 'pending'; recorded?: true };

/**
 * A payment an operator reported by callback that no prompt of ours asked for (a paybill
 * payment): believed only once the operator's status query confirms it (`confirmed`, with the
 * payer's number in full when the operator gives it), `refused` when it does not.
 */
export type ReportedPayment = {
  network: Network;
  remoteTransactionId: string;
  amount: string;
  currency: string;
  phoneNumber: string;
  workflowId: string;
};
export type ReportedPaymentStatus =
  | { status: 'confirmed'; amount: string; phoneNumber: string | null; promptReference?: string | null }
  | { status: 'refused'; reason: string }
  | { status: 'pending' };

/**
 * The registered name on a number, as the network's look-up gave it (services/platform/ports.ts `NameLookup`, the same
 * shape).
 */
export type NameLookup = {
  nameOnNetwork: string;
  nationalId: string | null;
  nationalIdType: string;
  registered: boolean;
};

export type TextMessage = {
  requestId: CollectionRequestId;
  kind: 'instructions' | 'success';
  attempt: number;
  phoneNumber: string;
  text: string;
  /** Whose number and money the text is about: a connected operator has no text-message API (./router.ts). */
  network: Network;
  currency: string;
};

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
  /** What the core's journal holds of it, handed over on each call (`Recorded`). */
  recorded?: Recorded;
};

/**
 * What the network made of a payout: done, refused (`rejected`, e.g. the recipient is not
 * registered), failed after taking it (`failed`), or not known yet (`pending`: ask again later).
 * `routeFault` on a refusal or failure: nothing moved, for the route's own reason (our float there
 * is empty, the operator is busy), so another route may pay it.
 */
export type PayoutResult =
  | { status: 'completed'; remoteTransactionId: string }
  | { status: 'rejected' | 'failed'; error: string; remoteTransactionId: string | null; routeFault?: true }
  | { status: 'pending'; remoteTransactionId: string | null };

/**
 * Every network the service reaches, as one adapter (./router.ts); what the application asks of it is its port
 * (services/platform/ports.ts `NetworkPort`).
 */
export interface NetworkAdapter {
  /**
   * Which networks have a connector, and each connector's own amount rules: the API's validation rules
   * (domain/networks.ts `moneyNetwork`) read it before anything is stored or sent.
   */
  readonly connections: Connections;
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
  rejectPayment(rejection: {
    network: Network;
    currency?: string;
    remoteTransactionId: string;
    reason: string | null;
  }): Promise<void>;
}

/** The sandbox network: an adapter of its own, whose connections are the router's. */
export type SandboxNetwork = Omit<NetworkAdapter, 'connections'>;

/**
 * Raised while an operation is in doubt on its route (no answer, a 5xx, a status query that finds nothing while the
 * request may still be on its way): nothing moves meanwhile, and the activity asks again. Never a refusal.
 */
export class OperationInDoubtError extends Error {}

/** A network a connector moves money on, and the currency it moves there. */
export type Route = { network: string; currency: string };

/**
 * One operator's connector, built from its settings: moves money on its `routes`, believing only
 * the operator's own status query. Idempotent per our references (a retried activity repeats the
 * same operator id, and the operator refuses or ignores the repeat).
 */
export interface Connector {
  /** The route's name (its unit's): what the operation journal and the routes' health call it. */
  readonly name: string;
  readonly routes: readonly Route[];
  /**
   * How long after a send "not found" from `lookup` proves nothing (its unit's `inFlight`, or
   * OPERATOR_IN_FLIGHT_WINDOW_SECONDS): an operation in doubt leaves its route only after it; and
   * whether it may be sent again under the same reference meanwhile.
   */
  readonly inFlight: { windowSeconds: number; resends: boolean };
  /**
   * Whether the operator holds an operation of ours, by its own status query: `absent` means it
   * holds nothing under our reference now (the core believes it only once the in-flight window has
   * passed since the last send). Not offered where the operator cannot be asked by our reference (an
   * operation in doubt then stays on its route, and its status decides).
   * Throws when the operator does not answer.
   */
  lookup?(operation: JournaledOperation): Promise<'present' | 'absent'>;
  /**
   * The id the operator will know an operation by, where the connector chooses it (MoMo's X-Reference-Id, pawaPay's
   * depositId): the core records it before the first send, so that a callback outrunning the call's answer finds the
   * operation, and hands the first one recorded back on every later call (`recorded`). Pure: no call, no record.
   */
  operatorIdFor?(operation: { kind: 'prompt' | 'payout' | 'reversal'; network: Network; reference: string }): string;
  /**
   * Whether the operator's answers about one operation may name different transaction ids (Vodacom's call answer and
   * its status query): the core then keeps the first one learnt, and every later answer reports it.
   */
  readonly firstTransactionIdStays?: boolean;
  /** An aggregator's own word on which of its networks take payments now, per operation (pawaPay's availability). */
  availability?(): Promise<
    { network: string; operation: 'collect' | 'payout'; availability: 'operational' | 'delayed' | 'closed' }[]
  >;
  requestPayment(prompt: PaymentPrompt): Promise<PromptResult>;
  promptStatus(prompt: TakenPrompt): Promise<PromptStatus>;
  reportedPaymentStatus(payment: ReportedPayment): Promise<ReportedPaymentStatus>;
  sendMoney(payout: Payout): Promise<PayoutResult>;
  payoutStatus(payout: Payout): Promise<PayoutResult>;
  /**
   * The registered name on a number; absent where the operator has no look-up (instant verification says "not
   * supported").
   */
  lookupName?(phoneNumber: string, network: Network): Promise<NameLookup | null>;
  /**
   * The operator's own rule for `amount` (null when it takes it): checked by the API's validation, after the
   * network and before the currency's minor units (domain/money.ts).
   */
  amountProblem(network: Network, currency: string, amount: string, operation: MoneyOperation): string | null;
  /** Starts what must be ready before the first call (sessions, limits), in the background. */
  warmUp?(): void;
  /** What the worker does with the operator at its start (Daraja registers the paybill's URLs); never throws. */
  atWorkerStart?(): Promise<void>;
}

/** An operation as the journal holds it, for a connector's `lookup`. */
export type JournaledOperation = {
  kind: 'prompt' | 'payout' | 'reversal';
  network: Network;
  reference: string;
  operatorReference: string | null;
};

/**
 * What a connector is built with: where the operator calls back, how often an operator is asked, its in-flight
 * window (its unit's, or OPERATOR_IN_FLIGHT_WINDOW_SECONDS), and the core's records (never the database): what an
 * operator answering later than its call needs kept (Daraja's status queries and receipts) is kept by the core.
 */
export type ConnectorDeps = {
  records: NetworkRecords;
  callbackBaseUrl: string;
  statusPollSeconds: number;
  inFlightWindowSeconds: number;
};

/** How a network is reached, for operators and the console (never a secret). */
export type NetworkConnection = { network: string; currency: string; connector: string; detail: string };

/**
 * A connector as a unit: everything one operator needs, in its own folder and listed once in
 * ./registry.ts: the declaration of its settings (read and checked with the rest of the
 * configuration), the networks they serve, the connector they build, and the paths the operator
 * calls back. Nothing outside the folder names the operator.
 */
export type ConnectorUnit<Key extends string, Settings> = {
  /** The route's name in the operation journal, health and metrics (`momo`, `pawapay`): the unit's folder. */
  name: string;
  /** Where the configuration keeps its settings (`config[configKey]`). */
  configKey: Key;
  /** The operator as people name it ("M-Pesa Daraja"). */
  operator: string;
  /** Its environment variables, checked with the rest of the configuration. */
  variables: Record<string, v.GenericSchema>;
  /** Its settings from the checked variables (off: null or empty); what is wrong goes to `problems`. */
  // biome-ignore lint/suspicious/noExplicitAny: the values are what the connector's own variables' schemas produced
  readSettings(values: Record<string, any>, problems: string[]): Settings;
  /** The networks and currencies its settings serve. */
  routesOf(settings: Settings): Route[];
  /** Whether its operator calls back (PUBLIC_BASE_URL is then required). */
  callsBack: boolean;
  /**
   * How long after a send the operator may still be processing it: until then a status query that finds nothing
   * proves nothing (docs/going-live.md#in-doubt-is-not-refused). `source` says where the number comes from.
   */
  inFlight: {
    windowSeconds: number;
    /** Whether an operation in doubt may be sent again under the same reference (the operator deduplicates on it). */
    resends: boolean;
    source: string;
  };
  create(settings: Settings, deps: ConnectorDeps): Omit<Connector, 'name' | 'inFlight'>;
  /** How each network it knows is reached (`simulated`: what a network with no connector does here). */
  describe(settings: Settings, simulated: string): NetworkConnection[];
  /** The paths its operator calls back, counted per `callbackAccount` against OPERATOR_CALLBACK_LIMIT_PER_OPERATOR. */
  callbacks?: {
    routes: readonly CallbackRoute<NonNullable<Settings>>[];
    /** The operator's name on the throttling metric. */
    metricName: string;
    /** Whether a request's path (no trailing slash) is one of its routes. */
    owns(path: string): boolean;
    /** Who its callbacks are counted against (the operator and account). */
    account(settings: Settings): string;
  };
};
