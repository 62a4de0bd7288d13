import type { Client } from '@temporalio/client';
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import type { Sql } from '../db';
import { instructionsMessage, requestCode, successMessage, type MessageContext } from '../domain/collection-requests';
import { promptReference } from '../domain/collections';
import { networkByName } from '../domain/networks';
import type { NetworkAdapter, PromptResult } from '../network/adapter';
import { changeRequestStatus, findRequest, insertCollectionRequest, REQUEST_COLUMNS, type RequestWithContact, type StatusChange } from '../services/collection-requests';
import { notSetAside, sweepEach } from '../services/sweeps';
import { launchCollectionRequest } from '../temporal/collection-requests';
import { reportIncomingPayment } from '../temporal/collections';
import { startEventDispatch } from '../temporal/events';
import type { CollectionRequestRow } from '../domain/collection-requests';
import type { SandboxPaymentInput } from '../workflows/shared';

/** Tries of one prompt before a network that keeps failing counts as having refused it. */
export const PROMPT_NETWORK_TRIES = 5;
export const NETWORK_UNAVAILABLE_ERROR = 'The mobile network did not respond.';

export type CollectionRequestActivityDeps = {
  sql: Sql;
  client: Client;
  taskQueue: string;
  network: NetworkAdapter;
  failedPromptRetrySeconds: number;
  verificationTimeoutSeconds: number;
};

export function createCollectionRequestActivities(deps: CollectionRequestActivityDeps) {
  const { sql, client, taskQueue, network } = deps;

  async function load(requestId: number): Promise<RequestWithContact & { organizationName: string }> {
    const found = await findRequest(sql, requestId);
    // Nothing can bring a deleted request back: retrying would not help.
    if (!found) throw ApplicationFailure.nonRetryable(`collection request ${requestId} does not exist`, 'RequestNotFound');
    const [organization] = await sql<{ name: string }[]>`select name from organizations where id = ${found.request.organizationId}`;
    return { ...found, organizationName: organization?.name ?? '' };
  }

  function messageContext({ request, contact, organizationName }: RequestWithContact & { organizationName: string }): MessageContext {
    return {
      amount: request.amount,
      currency: request.currency,
      customer: `${contact.firstName} ${contact.lastName}`.trim(),
      organization: organizationName,
      code: requestCode(request),
    };
  }

  return {
    /** One status change: row and event in one transaction, then the event goes to dispatch. */
    async recordRequestStatus(change: StatusChange): Promise<boolean> {
      const event = await changeRequestStatus(sql, change);
      if (event === null) return false;
      try {
        await startEventDispatch(client, taskQueue, { eventId: event.id, organizationId: event.organizationId, type: event.type });
      } catch (error) {
        log.warn('event dispatch deferred to the outbox sweep', { eventId: event.id, error: String(error) });
      }
      return true;
    },

    async sendInstructions({ requestId, attempt }: { requestId: number; attempt: number }): Promise<void> {
      const loaded = await load(requestId);
      const text = instructionsMessage(loaded.request.instructions, messageContext(loaded));
      await network.sendSms({ requestId, kind: 'instructions', attempt, phoneNumber: loaded.request.phoneNumber, text });
    },

    async promptForPayment({ requestId, attempt }: { requestId: number; attempt: number }): Promise<PromptResult> {
      const loaded = await load(requestId);
      const requestNetwork = networkByName(loaded.request.network);
      if (!requestNetwork) throw ApplicationFailure.nonRetryable(`unknown network ${loaded.request.network}`, 'UnknownNetwork');
      try {
        return await network.requestPayment({
          requestId,
          attempt,
          phoneNumber: loaded.request.phoneNumber,
          amount: loaded.request.amount,
          currency: loaded.request.currency,
          reference: loaded.request.reason ?? requestCode(loaded.request),
          promptReference: promptReference(requestId, attempt),
          network: requestNetwork,
        });
      } catch (error) {
        // Our own failures (the database above) are retried for as long as they last; a network that
        // keeps failing to take the prompt is, after a few tries, a refused prompt, which the
        // request's retry rules then handle.
        const tries = Context.current().info.attempt;
        if (tries < PROMPT_NETWORK_TRIES) throw error;
        log.warn('the network did not take the prompt', { requestId, attempt, tries, error: String(error) });
        return { accepted: false, error: NETWORK_UNAVAILABLE_ERROR };
      }
    },

    async sendSuccessMessage({ requestId }: { requestId: number }): Promise<void> {
      const loaded = await load(requestId);
      const text = successMessage(loaded.request.successMessage, messageContext(loaded));
      await network.sendSms({ requestId, kind: 'success', attempt: 0, phoneNumber: loaded.request.phoneNumber, text });
    },

    /**
     * One occurrence of a subscription: a new request copied from the subscription's request,
     * created once per occurrence time (a unique index), then launched like any other.
     */
    async createSubscriptionOccurrence({ requestId, occurrenceAt }: { requestId: number; occurrenceAt: string }): Promise<number> {
      const { request, contact } = await load(requestId);
      const occurrence = new Date(occurrenceAt);
      const lifetime = request.expiryDate.getTime() - (request.startDate ?? request.created).getTime();
      const created = await insertCollectionRequest(sql, {
        organizationId: request.organizationId,
        author: request.author,
        phoneNumber: request.phoneNumber,
        network: request.network,
        amount: request.amount,
        currency: request.currency,
        accountId: request.accountId,
        firstName: contact.firstName,
        lastName: contact.lastName,
        reason: request.reason,
        metadata: request.metadata,
        successMessage: request.successMessage,
        sendInstructions: request.sendInstructions,
        instructions: request.instructions,
        expiresAt: new Date(occurrence.getTime() + Math.max(lifetime, 60_000)),
        startAt: null,
        retryIntervalSeconds: request.retryIntervalSeconds,
        maxAttempts: request.maxAttempts,
        subscriptionSettings: null,
        subscriptionId: request.id,
        occurrenceAt: occurrence,
      });
      await launchCollectionRequest(deps, created, (error) => log.warn('occurrence launch deferred to the outbox sweep', { error: String(error) }));
      return created.request.id;
    },

    /**
     * The sweep's second half: requests committed whose workflows never started. A request that
     * cannot be launched (its own data is at fault) is set aside; the others still start.
     */
    async startPendingRequests({ graceSeconds, batchSize }: { graceSeconds: number; batchSize: number }): Promise<number> {
      const pending = await sql<CollectionRequestRow[]>`
        select ${sql.unsafe(REQUEST_COLUMNS)} from collection_requests
        where workflow_started_at is null and created < now() - ${graceSeconds}::int * interval '1 second'
          ${notSetAside(sql, 'outbox-request', 'collection_requests.id')}
        order by created limit ${batchSize}`;
      const result = await sweepEach(sql, 'outbox-request', pending, (request) =>
        launchCollectionRequest(deps, { request, events: [] }, (error) => {
          throw error;
        }),
      (request, error) => log.error('outbox sweep set a collection request aside', { requestId: request.id, error: String(error) }));
      return result.processed;
    },

    /**
     * What the sandbox network's subscriber pays: recorded once per request, then reported through
     * the same entry point a real network's callback uses.
     */
    async deliverSandboxPayment(payment: SandboxPaymentInput): Promise<string> {
      const remoteTransactionId = `SBX-${payment.requestId}`;
      const [recorded] = await sql<{ created: Date }[]>`
        insert into sandbox_payments (remote_transaction_id, phone_number, amount, currency, reference, network)
        values (${remoteTransactionId}, ${payment.phoneNumber}, ${payment.amount}, ${payment.currency}, ${payment.reference}, ${payment.network})
        on conflict (remote_transaction_id) do update set remote_transaction_id = excluded.remote_transaction_id
        returning created`;
      await reportIncomingPayment(client, taskQueue, {
        network: payment.network,
        remoteTransactionId,
        phoneNumber: payment.phoneNumber,
        amount: payment.amount,
        currency: payment.currency,
        reference: payment.reference,
        promptReference: payment.promptReference ?? null,
        paymentDate: (recorded?.created ?? new Date()).toISOString(),
      }, deps.verificationTimeoutSeconds);
      return remoteTransactionId;
    },
  };
}
