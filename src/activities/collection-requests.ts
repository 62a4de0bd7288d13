import { heartbeating } from './heartbeats';
import type { CollectionRequestId } from '../domain/ids';
import type { Sql } from '../db';
import { FINAL_STATUSES, successMessage, type RequestStatus } from '../domain/collection-requests';
import type { NetworkAdapter, PaymentPrompt } from '../network/adapter';
import { changeRequestStatus, countPromptAttempt, type StatusChange } from '../services/collections/request-status';
import { insertCollectionRequest } from '../services/collections/request-creation';
import { subscriptionCancelled } from '../services/collections/subscriptions';
import { recordCollectionRequestFinal } from '../telemetry/metrics';
import type { Launcher } from '../services/platform/ports';
import type { IncomingPaymentInput } from '../contracts/incoming-collection';
import { requestSteps, type Loaded } from './request-steps';

export type CollectionRequestActivityDeps = { sql: Sql; launcher: Launcher; network: NetworkAdapter };

/**
 * What prompting came to: the status the request now has, or the network's refusal. `confirm`: the
 * operator took the prompt and the workflow follows it with `checkPrompt` (its callback wakes it;
 * `checkAfterSeconds` when the network said when to ask). `paid`: the network's answer confirmed
 * the payment itself, which the workflow receives.
 */
type PromptInput = { requestId: CollectionRequestId; attempt: number; sendSms: boolean; pullsFunds: boolean };

type PromptOutcome =
  | {
      accepted: true;
      status: RequestStatus | null;
      confirm?: boolean;
      checkAfterSeconds?: number;
      paid?: IncomingPaymentInput;
    }
  | { accepted: false; error: string; status: RequestStatus | null };

/**
 * Where a prompt an operator took stands: paid (with the payment as the operator confirmed it when
 * the workflow receives it itself; else it is reported for matching), failed, or pending.
 */
export type PromptCheck =
  | { status: 'paid'; payment: IncomingPaymentInput }
  | { status: 'pending'; recorded?: true }
  | { status: 'failed'; error: string };

export function createCollectionRequestActivities(deps: CollectionRequestActivityDeps) {
  const { sql, launcher, network } = deps;
  const { load, messageContext, moneyOf, sendInstructionsText, promptOf, askNetwork } = requestSteps(deps);

  /** One status change: row and event (with its deliveries, which the dispatch pool sends) in one transaction. */
  async function recordStatus(change: StatusChange): Promise<boolean> {
    const event = await changeRequestStatus(sql, change);
    if (event === null) return false;
    if ((FINAL_STATUSES as readonly string[]).includes(change.status)) recordCollectionRequestFinal(change.status);
    return true;
  }

  /** The payment a prompt brought, as the network confirmed it: the prompt's number, amount and currency. */
  function paymentOf(
    prompt: PaymentPrompt,
    paid: { remoteTransactionId: string; paymentDate: string },
  ): IncomingPaymentInput {
    return {
      network: prompt.network.name,
      remoteTransactionId: paid.remoteTransactionId,
      phoneNumber: prompt.phoneNumber,
      amount: prompt.amount,
      currency: prompt.currency,
      reference: prompt.reference,
      promptReference: prompt.promptReference,
      paymentDate: paid.paymentDate,
    };
  }

  /** The steps of one prompt (see `promptSubscriber`). */
  async function promptSteps(loaded: Loaded, input: PromptInput): Promise<PromptOutcome> {
    const { requestId, attempt, sendSms, pullsFunds } = input;
    let status: RequestStatus | null = null;
    const record = async (next: RequestStatus) => {
      if (await recordStatus({ requestId, status: next, attempts: attempt, promptAttempt: attempt })) status = next;
    };
    if (sendSms) {
      await sendInstructionsText(loaded, attempt);
      await record('instructions_sent');
    }
    if (!pullsFunds) {
      if (!sendSms) await record('pending');
      return { accepted: true, status };
    }
    const answer = await askNetwork(loaded, attempt);
    if (!answer.accepted) {
      await countPromptAttempt(sql, requestId, attempt);
      return { accepted: false, error: answer.error, status };
    }
    await record('processing_started');
    if (answer.paid) return { accepted: true, status, paid: paymentOf(promptOf(loaded, attempt), answer.paid) };
    if (!answer.confirm) return { accepted: true, status };
    return {
      accepted: true,
      status,
      confirm: true,
      ...(answer.confirm.checkAfterSeconds !== undefined
        ? { checkAfterSeconds: answer.confirm.checkAfterSeconds }
        : {}),
    };
  }

  return {
    /** A local activity: one status change, idempotent (a repeated change writes nothing). */
    async recordRequestStatus(change: StatusChange): Promise<boolean> {
      return await recordStatus(change);
    },

    /**
     * One prompt of a request, as one activity (it leaves the process: the network): the
     * instructions text and `instructions_sent`, then the USSD/PIN push and `processing_started`
     * when the network takes it (or `pending` when nobody is texted and the network cannot pull
     * funds). Every step is idempotent per (request, attempt), so a retry repeats none of them.
     */
    async promptSubscriber(input: PromptInput): Promise<PromptOutcome> {
      // Heartbeats from the first step: a database that answers slowly (a distant or busy host) must not pass for a
      // dead worker, whose activity is handed to another after the heartbeat timeout.
      return await heartbeating(async () => promptSteps(await load(input.requestId), input));
    },

    /**
     * A regular activity (the operator's status query): where a prompt a real operator took
     * stands. Paid: the payment, as the operator confirmed it, which the request's workflow receives.
     */
    async checkPrompt({
      requestId,
      attempt,
    }: {
      requestId: CollectionRequestId;
      attempt: number;
    }): Promise<PromptCheck> {
      const loaded = await load(requestId);
      const prompt = promptOf(loaded, attempt);
      const found = await network.promptStatus({ ...prompt, operatorReference: prompt.promptReference });
      if (found.status === 'pending') return found;
      if (found.status === 'failed') {
        await countPromptAttempt(sql, requestId, attempt);
        return found;
      }
      return { status: 'paid', payment: paymentOf(prompt, found) };
    },

    /** The success text, once the request is successful (not when it expired while the payment came in). */
    async sendSuccessMessage({ requestId }: { requestId: CollectionRequestId }): Promise<void> {
      const loaded = await load(requestId);
      if (loaded.request.status !== 'successful') return;
      const text = successMessage(loaded.request.successMessage, messageContext(loaded));
      await network.sendSms({
        requestId,
        kind: 'success',
        attempt: 0,
        phoneNumber: loaded.request.phoneNumber,
        text,
        ...moneyOf(loaded),
      });
    },

    /**
     * One occurrence of a subscription: a new request copied from the subscription's request,
     * created once per occurrence time (a unique index), then launched like any other. Nothing once
     * the merchant cancelled the subscription (null): the row says so before the workflow hears it.
     */
    async createSubscriptionOccurrence({
      requestId,
      occurrenceAt,
    }: {
      requestId: CollectionRequestId;
      occurrenceAt: string;
    }): Promise<number | null> {
      const { request, contact } = await load(requestId);
      if (subscriptionCancelled(request)) return null;
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
      await launcher.afterCommit({ requests: [created.request] });
      return created.request.id;
    },
  };
}
