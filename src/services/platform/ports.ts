/**
 * What the application layer needs from machinery below the line that it does not own, declared
 * here as interfaces: starting and signalling workflows after a commit (`Launcher`, implemented by
 * src/temporal/launcher.ts), and what it asks of the mobile networks (`NetworkPort`, implemented by
 * src/network/router.ts). The compositions (src/app.ts, src/worker.ts) wire them; nothing in
 * services, activities, network or domain imports src/temporal/.
 */
import type { CollectionRequestRow } from '../../domain/collection-requests';
import type { CollectionRequestId, OrganizationId, PaymentBatchId, PaymentId, ReversalId } from '../../domain/ids';
import type { MovementOutboxKind } from '../../domain/money-movements';
import type { Connections, Network } from '../../domain/networks';
import type { CollectionMatch } from '../../contracts/collection-request';
import type { NetworkHint } from '../../contracts/common';
import type { IncomingPaymentInput } from '../../contracts/incoming-collection';

export type PaymentToStart = { id: PaymentId; organizationId: OrganizationId; startDate: Date | null };
export type ReversalToStart = { id: ReversalId; organizationId: OrganizationId };
export type PaymentBatchToStart = { id: PaymentBatchId; organizationId: OrganizationId };

/**
 * One row type per outbox kind of the money movements (src/domain/money-movements.ts): a kind left out does not
 * compile.
 */
type EachMovement<Rows extends Record<MovementOutboxKind, { id: number }>> = Rows;

/** The row each kind of the outbox (./outbox.ts) hands the start of its workflow. */
export type OutboxRows = { requests: CollectionRequestRow } & EachMovement<{
  payments: PaymentToStart;
  reversals: ReversalToStart;
  paymentBatches: PaymentBatchToStart;
}>;
export type OutboxKind = keyof OutboxRows;
export type OutboxRow<K extends OutboxKind> = OutboxRows[K];

/**
 * What a committed transaction recorded that needs a workflow: outbox rows of each kind. (Its events'
 * webhook deliveries need none: the dispatch pool finds the rows, woken by the commit's notification.)
 */
export type Committed = { [K in OutboxKind]?: readonly OutboxRow<K>[] };

/**
 * Starts and signals the workflows of what the application committed: once per id (a second start
 * counts as done), never before the commit; a failed start loses nothing (the outbox sweep starts it).
 */
export interface Launcher {
  /** A saved request's workflow, and its subscription's when it has one; true when this call started it. */
  startCollectionRequest(request: CollectionRequestRow): Promise<boolean>;
  /** The workflow of a payment a network reported (`confirm`: its operator's status query confirms it first). */
  startIncomingCollection(
    payment: IncomingPaymentInput,
    options?: { confirm?: boolean },
  ): Promise<{ workflowId: string; duplicate: boolean }>;
  /** The webhook delivery pool's dispatchers, started where one is not running; how many were started. */
  ensureWebhookDispatchers(): Promise<number>;
  startPayment(payment: PaymentToStart): Promise<boolean>;
  startReversal(reversal: ReversalToStart): Promise<boolean>;
  startPaymentBatch(batch: PaymentBatchToStart): Promise<boolean>;
  /** Wakes a cancelled payment's workflow so it ends now. */
  signalPaymentCancelled(paymentId: PaymentId): Promise<void>;
  /** Cancels request `requestId`'s subscription workflow: it waits for no further occurrence (none running is fine). */
  cancelSubscription(requestId: CollectionRequestId): Promise<void>;
  /** Tells a request's workflow a collection paid it; false when the workflow has ended. */
  signalCollectionMatched(requestId: CollectionRequestId, match: CollectionMatch): Promise<boolean>;
  /** Wakes the workflow that waits on an operator's answer (a hint, never proof); false when it has ended. */
  signalNetworkHint(workflowId: string, hint: NetworkHint): Promise<boolean>;
  /**
   * After a commit: starts the workflows of what it recorded. Never throws (a failed start is left to the outbox
   * sweep).
   */
  afterCommit(committed: Committed): Promise<void>;
  /**
   * Hands outbox rows of `kind` to their workflow (the post-commit start and the sweep); true when any is new to
   * Temporal.
   */
  startOutboxRows<K extends OutboxKind>(kind: K, group: readonly OutboxRow<K>[]): Promise<boolean>;
}

/** The registered name on a number, as the network's look-up gave it (instant verification). */
export type NameLookup = {
  nameOnNetwork: string;
  nationalId: string | null;
  nationalIdType: string;
  registered: boolean;
};

/** What the application asks of the mobile networks for its validation and for contacts. */
export interface NetworkPort {
  /** Which networks have a connector, and each connector's own amount rules (the API's validation rules). */
  readonly connections: Connections;
  /** The registered name on a number, where the network offers look-ups; null where it does not. */
  lookupName(phoneNumber: string, network: Network): Promise<NameLookup | null>;
}
