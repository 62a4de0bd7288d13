import type { Client } from '@temporalio/client';
import { ApplicationFailure, log } from '@temporalio/activity';
import type { Sql } from '../db';
import { parseVerificationAnswer, type CollectionRow } from '../domain/collections';
import type { EventRow } from '../domain/events';
import { networkByName } from '../domain/networks';
import type { NetworkAdapter } from '../network/adapter';
import { acceptCollection, matchCollection, rejectCollection, storeIncomingPayment, type Match } from '../services/collections';
import { startEventDispatch } from '../temporal/events';
import { measuredVerification } from '../telemetry/metrics';
import { tracedFetch } from '../telemetry/trace-context';
import type { IncomingPaymentInput, VerificationDecision } from '../workflows/shared';

export type CollectionActivityDeps = { sql: Sql; client: Client; taskQueue: string; network: NetworkAdapter };

export function createCollectionActivities({ sql, client, taskQueue, network }: CollectionActivityDeps) {
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
    verifyCollection: measuredVerification(async ({ collectionId, organizationId, timeoutSeconds }: { collectionId: number; organizationId: number; timeoutSeconds: number }): Promise<VerificationDecision> => {
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
      try {
        const response = await tracedFetch('POST verification', settings.url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Accept: 'text/plain' },
          body: JSON.stringify({
            phonenumber: collection.phoneNumber,
            amount: collection.amount,
            currency_code: collection.currency,
            reference: collection.reference,
            remote_transaction_id: collection.remoteTransactionId,
          }),
          redirect: 'manual',
          signal: AbortSignal.timeout(timeoutSeconds * 1000),
        });
        const text = (await response.text()).slice(0, 2000);
        if (response.status !== 200) {
          log.info('verification URL answered without 200; default applies', { collectionId, status: response.status });
          return fallback;
        }
        const answer = parseVerificationAnswer(text, collection.remoteTransactionId);
        if (answer.decision === 'none') {
          log.info('verification answer unreadable; default applies', { collectionId, detail: answer.detail });
          return fallback;
        }
        return { decision: answer.decision, reason: answer.decision === 'reject' ? answer.reason : null, decidedBy: 'merchant' };
      } catch (error) {
        log.info('verification URL did not answer in time; default applies', { collectionId, error: String(error) });
        return fallback;
      }
    }),

    async acceptCollection({ collectionId, organizationId }: { collectionId: number; organizationId: number }): Promise<void> {
      const { events } = await acceptCollection(sql, collectionId, organizationId);
      await dispatch(events);
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
