import { ApplicationFailure, Context, log } from '@temporalio/activity';
import type { Sql } from '../db';
import type { CollectionId, CollectionRequestId, OrganizationId } from '../domain/ids';
import { networkByName } from '../domain/networks';
import type { NetworkAdapter } from '../network/adapter';
import {
  acceptVerified,
  receivePayment,
  rejectCollection,
  verificationSettingsOf,
  type Receipt,
} from '../services/collections/collection-receiving';
import { findCollection } from '../services/collections/collection-reads';
import {
  measuredVerification,
  recordCollectionMatch,
  recordFinalRequestStatuses,
  recordWalletMovement,
} from '../telemetry/metrics';
import type { Launcher } from '../services/platform/ports';
import { askMerchant, outgoingTransport } from '../outbound/merchant-http';
import type { IncomingPaymentInput, VerificationDecision } from '../contracts/incoming-collection';

export type CollectionActivityDeps = {
  sql: Sql;
  launcher: Launcher;
  network: NetworkAdapter;
  sandbox: boolean;
  webhooks: { caFile: string | undefined };
};

/** What the incoming-collection workflow learns from a receipt (its events are started here, not returned). */
export type ReceiptOutcome =
  | {
      outcome: 'accepted' | 'unmatched' | 'already-processed';
      collectionId: CollectionId;
      requestId: CollectionRequestId | null;
    }
  | { outcome: 'verify'; collectionId: CollectionId; requestId: CollectionRequestId; organizationId: OrganizationId }
  | { outcome: 'failed'; collectionId: CollectionId; requestId: CollectionRequestId | null; reason: string };

/** The receipt in the metrics, once committed: how it matched, the credit, the request it made successful. */
function recordReceipt(receipt: Receipt): void {
  if (receipt.outcome === 'unmatched') recordCollectionMatch('unassigned');
  if (receipt.outcome === 'verify') recordCollectionMatch(receipt.match.rule);
  if (receipt.outcome !== 'accepted') return;
  if (receipt.rule !== null) recordCollectionMatch(receipt.rule);
  if (receipt.credit !== null)
    recordWalletMovement({ type: 'mobile_collection', direction: 'credit', ...receipt.credit });
  recordFinalRequestStatuses(receipt.events);
}

export function createCollectionActivities({ sql, launcher, network, sandbox, webhooks }: CollectionActivityDeps) {
  // The verification URL's transport: its extra certificate authority read once, its deadline per call.
  const verificationTransport = outgoingTransport({ sandbox, caFile: webhooks.caFile, timeoutMs: 0 });
  const asksVerification = (networkName: string, currency: string): boolean => {
    const collectionNetwork = networkByName(networkName);
    return collectionNetwork !== null && network.supportsVerification(collectionNetwork, currency);
  };

  /**
   * After a receipt's commit: its events' deliveries start, and the request it paid hears of it
   * (again, after a retry: harmless), unless that request's own workflow is the one receiving it
   * (`receivedBy`). Then the workflow learns the outcome.
   */
  async function settle(receipt: Receipt, receivedBy: CollectionRequestId | null = null): Promise<ReceiptOutcome> {
    recordReceipt(receipt);
    if (receipt.outcome === 'accepted' && receipt.requestId !== null && receipt.requestId !== receivedBy) {
      await launcher.signalCollectionMatched(receipt.requestId, {
        collectionId: receipt.collectionId,
        remoteTransactionId: receipt.remoteTransactionId,
      });
    }
    if (receipt.outcome === 'failed')
      log.error('collection could not be credited', { collectionId: receipt.collectionId, reason: receipt.reason });
    switch (receipt.outcome) {
      case 'verify':
        return {
          outcome: 'verify',
          collectionId: receipt.collectionId,
          requestId: receipt.match.requestId,
          organizationId: receipt.match.organizationId,
        };
      case 'failed':
        return {
          outcome: 'failed',
          collectionId: receipt.collectionId,
          requestId: receipt.requestId,
          reason: receipt.reason,
        };
      case 'accepted':
        return { outcome: 'accepted', collectionId: receipt.collectionId, requestId: receipt.requestId };
      default:
        return { outcome: receipt.outcome, collectionId: receipt.collectionId, requestId: null };
    }
  }

  return {
    /**
     * A regular activity (the operator's status query): whether a payment an operator reported by
     * callback really happened. Confirmed: the payment as the operator confirmed it (the payer's
     * number in full when the operator gives it); refused: why not; pending: ask again later.
     */
    async checkReportedPayment(
      payment: IncomingPaymentInput,
    ): Promise<
      | { status: 'confirmed'; payment: IncomingPaymentInput }
      | { status: 'refused'; reason: string }
      | { status: 'pending' }
    > {
      const paymentNetwork = networkByName(payment.network);
      if (!paymentNetwork)
        throw ApplicationFailure.nonRetryable(`unknown network ${payment.network}`, 'UnknownNetwork');
      const found = await network.reportedPaymentStatus({
        network: paymentNetwork,
        remoteTransactionId: payment.remoteTransactionId,
        amount: payment.amount,
        currency: payment.currency,
        phoneNumber: payment.phoneNumber,
        workflowId: Context.current().info.workflowExecution?.workflowId ?? '',
      });
      if (found.status !== 'confirmed') {
        if (found.status === 'refused')
          log.warn('a reported payment was not confirmed by its operator', {
            network: payment.network,
            remoteTransactionId: payment.remoteTransactionId,
            reason: found.reason,
          });
        return found;
      }
      // Matched by what the operator confirmed: its payer, its amount, and the prompt of ours the receipt answers, if
      // any; a payment a connector reported goes only where the operator's identifiers name, never by number and
      // amount.
      const promptReference = found.promptReference ?? payment.promptReference;
      return {
        status: 'confirmed',
        payment: {
          ...payment,
          amount: found.amount,
          phoneNumber: found.phoneNumber ?? payment.phoneNumber,
          promptReference,
          namedOnly: true,
        },
      };
    },

    /**
     * A local activity: the payment stored, matched and (unless the merchant's verification URL
     * must answer first) credited, in one transaction; then the request told, unless its own
     * workflow receives it (`receivedBy`, the request's id).
     */
    async receiveCollection(
      payment: IncomingPaymentInput,
      receiver: { receivedBy?: CollectionRequestId } = {},
    ): Promise<ReceiptOutcome> {
      return await settle(await receivePayment(sql, payment, asksVerification), receiver.receivedBy ?? null);
    },

    /** A local activity: the credit after the verification URL (or its default) accepted. */
    async acceptVerifiedCollection({
      collectionId,
      organizationId,
      receivedBy,
    }: {
      collectionId: CollectionId;
      organizationId: OrganizationId;
      receivedBy?: CollectionRequestId;
    }): Promise<ReceiptOutcome> {
      return await settle(await acceptVerified(sql, collectionId, organizationId), receivedBy ?? null);
    },

    /**
     * Asks the organization's verification URL (docs/api.md#collections) when it has one and the network
     * supports verification; no answer in time, or an unreadable one, takes the organization's
     * accept-by-default setting. HTTP failures are answers too ("none"), never activity errors.
     */
    verifyCollection: measuredVerification(
      async ({
        collectionId,
        organizationId,
        timeoutSeconds,
      }: {
        collectionId: CollectionId;
        organizationId: OrganizationId;
        timeoutSeconds: number;
      }): Promise<VerificationDecision> => {
        const settings = await verificationSettingsOf(sql, organizationId);
        const collection = await findCollection(sql, collectionId);
        if (!settings || !collection)
          throw ApplicationFailure.nonRetryable(`collection ${collectionId} or its organization is gone`, 'NotFound');
        const collectionNetwork = networkByName(collection.network);
        if (
          !settings.url ||
          !collectionNetwork ||
          !network.supportsVerification(collectionNetwork, collection.currency)
        ) {
          return { decision: 'accept', reason: null, decidedBy: 'not-asked' };
        }
        // The same guarded transport as webhooks: outside sandbox mode no loopback or private address,
        // whatever the URL's name resolves to; no redirects; a hard deadline.
        const decided = await askMerchant(
          settings.url,
          {
            phonenumber: collection.phoneNumber,
            amount: collection.amount,
            currency_code: collection.currency,
            reference: collection.reference,
            remote_transaction_id: collection.remoteTransactionId,
          },
          { ...verificationTransport, timeoutMs: timeoutSeconds * 1000 },
          settings.acceptByDefault,
        );
        if (decided.detail !== null)
          log.info('verification URL gave no decision; default applies', { collectionId, detail: decided.detail });
        return { decision: decided.decision, reason: decided.reason, decidedBy: decided.decidedBy };
      },
    ),

    async rejectCollection({
      collectionId,
      organizationId,
      reason,
    }: {
      collectionId: CollectionId;
      organizationId: OrganizationId;
      reason: string | null;
    }): Promise<void> {
      await rejectCollection(sql, collectionId, organizationId, reason);
      const collection = await findCollection(sql, collectionId);
      const collectionNetwork = collection ? networkByName(collection.network) : null;
      if (collection && collectionNetwork) {
        await network.rejectPayment({
          network: collectionNetwork,
          currency: collection.currency,
          remoteTransactionId: collection.remoteTransactionId,
          reason,
        });
      }
    },
  };
}
