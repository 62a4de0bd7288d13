import type { Client } from '@temporalio/client';
import { ApplicationFailure, log } from '@temporalio/activity';
import type { Sql } from '../db';
import { parseVerificationAnswer, type CollectionRow } from '../domain/collections';
import type { EventRow } from '../domain/events';
import { networkByName } from '../domain/networks';
import type { NetworkAdapter } from '../network/adapter';
import { acceptCollection, failCollection, matchCollection, rejectCollection, storeIncomingPayment, type Match } from '../services/collections';
import { startEventDispatch } from '../temporal/events';
import { outgoingTransport, postVerification } from './webhook-http';
import type { IncomingPaymentInput, VerificationDecision } from '../workflows/shared';

export type CollectionActivityDeps = {
  sql: Sql;
  client: Client;
  taskQueue: string;
  network: NetworkAdapter;
  sandbox: boolean;
  webhooks: { caFile: string | undefined };
};

export function createCollectionActivities({ sql, client, taskQueue, network, sandbox, webhooks }: CollectionActivityDeps) {
  async function dispatch(events: EventRow[]): Promise<void> {
    for (const event of events) {
      try {
        await startEventDispatch(client, taskQueue, { eventId: event.id, organizationId: event.organizationId, type: event.type });
      } catch (error) {
        log.warn('event dispatch deferred to the outbox sweep', { eventId: event.id, error: String(error) });
      }
    }
  }

  return {
    async storeCollection(payment: IncomingPaymentInput): Promise<Pick<CollectionRow, 'id' | 'status' | 'organizationId'>> {
      const collection = await storeIncomingPayment(sql, payment);
      return { id: collection.id, status: collection.status, organizationId: collection.organizationId };
    },

    async matchCollection(collectionId: number): Promise<Match | null> {
      return await matchCollection(sql, collectionId);
    },

    /**
     * Asks the organization's verification URL (api.md 4.2) when it has one and the network
     * supports verification; no answer in time, or an unreadable one, takes the organization's
     * accept-by-default setting. HTTP failures are answers too ("none"), never activity errors.
     */
    async verifyCollection({ collectionId, organizationId, timeoutSeconds }: { collectionId: number; organizationId: number; timeoutSeconds: number }): Promise<VerificationDecision> {
      const [settings] = await sql<{ url: string | null; acceptByDefault: boolean }[]>`
        select verification_url as url, accept_by_default as "acceptByDefault" from organizations where id = ${organizationId}`;
      const [collection] = await sql<CollectionRow[]>`
        select phone_number as "phoneNumber", amount::text as amount, currency, reference, remote_transaction_id as "remoteTransactionId", network
        from collections where id = ${collectionId}`;
      if (!settings || !collection) throw ApplicationFailure.nonRetryable(`collection ${collectionId} or its organization is gone`, 'NotFound');
      const collectionNetwork = networkByName(collection.network);
      if (!settings.url || !collectionNetwork || !network.supportsVerification(collectionNetwork)) {
        return { decision: 'accept', reason: null, decidedBy: 'not-asked' };
      }
      const fallback: VerificationDecision = { decision: settings.acceptByDefault ? 'accept' : 'reject', reason: null, decidedBy: 'default' };
      const transport = outgoingTransport({ sandbox, caFile: webhooks.caFile, timeoutMs: timeoutSeconds * 1000 });
      const sent = await postVerification(settings.url, {
        phonenumber: collection.phoneNumber,
        amount: collection.amount,
        currency_code: collection.currency,
        reference: collection.reference,
        remote_transaction_id: collection.remoteTransactionId,
      }, transport);
      if (sent.statusCode === null) {
        log.info('verification URL did not answer in time; default applies', { collectionId, error: sent.error });
        return fallback;
      }
      if (sent.statusCode !== 200) {
        log.info('verification URL answered without 200; default applies', { collectionId, status: sent.statusCode });
        return fallback;
      }
      const answer = parseVerificationAnswer(sent.responseExcerpt ?? '', collection.remoteTransactionId);
      if (answer.decision === 'none') {
        log.info('verification answer unreadable; default applies', { collectionId, detail: answer.detail });
        return fallback;
      }
      return { decision: answer.decision, reason: answer.decision === 'reject' ? answer.reason : null, decidedBy: 'merchant' };
    },

    async acceptCollection({ collectionId, organizationId }: { collectionId: number; organizationId: number }): Promise<void> {
      const { events } = await acceptCollection(sql, collectionId, organizationId);
      await dispatch(events);
    },

    /** The credit failed for good (a permanent database error): the collection ends `failed` with why. */
    async failCollection({ collectionId, organizationId, reason }: { collectionId: number; organizationId: number; reason: string }): Promise<void> {
      log.error('collection could not be credited', { collectionId, organizationId, reason });
      await failCollection(sql, collectionId, organizationId, reason);
    },

    async rejectCollection({ collectionId, organizationId, reason }: { collectionId: number; organizationId: number; reason: string | null }): Promise<void> {
      await rejectCollection(sql, collectionId, organizationId, reason);
      const [collection] = await sql<{ network: string; remoteTransactionId: string }[]>`
        select network, remote_transaction_id as "remoteTransactionId" from collections where id = ${collectionId}`;
      const collectionNetwork = collection ? networkByName(collection.network) : null;
      if (collection && collectionNetwork) {
        await network.rejectPayment({ network: collectionNetwork, remoteTransactionId: collection.remoteTransactionId, reason });
      }
    },
  };
}
