/**
 * The steps the request's activities share (activities/collection-requests.ts): the request read with its contact, its
 * instructions text, and its prompt as the network is asked for it.
 */
import type { CollectionRequestId } from '../domain/ids';
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import type { Sql } from '../db';
import { instructionsMessage, requestCode, type MessageContext } from '../domain/collection-requests';
import { promptReference } from '../domain/collections';
import { networkByName } from '../domain/networks';
import { OperationInDoubtError, type NetworkAdapter, type PaymentPrompt, type PromptResult } from '../network/adapter';
import { findRequestToPrompt, type RequestWithContact } from '../services/collections/request-reads';
import { collectionRequestWorkflowId } from '../contracts/collection-request';

/** Tries of one prompt before a network that keeps failing counts as having refused it. */
const PROMPT_NETWORK_TRIES = 5;
const NETWORK_UNAVAILABLE_ERROR = 'The mobile network did not respond.';

/** A request as its activities read it: with its contact and its organization's name. */
export type Loaded = RequestWithContact & { organizationName: string };

export function requestSteps({ sql, network }: { sql: Sql; network: NetworkAdapter }) {
  async function load(requestId: CollectionRequestId): Promise<Loaded> {
    const found = await findRequestToPrompt(sql, requestId);
    // Nothing can bring a deleted request back: retrying would not help.
    if (!found)
      throw ApplicationFailure.nonRetryable(`collection request ${requestId} does not exist`, 'RequestNotFound');
    return found;
  }

  function messageContext({ request, contact, organizationName }: Loaded): MessageContext {
    return {
      amount: request.amount,
      currency: request.currency,
      customer: `${contact.firstName} ${contact.lastName}`.trim(),
      organization: organizationName,
      code: requestCode(request),
    };
  }

  async function sendInstructionsText(loaded: Loaded, attempt: number): Promise<void> {
    const text = instructionsMessage(loaded.request.instructions, messageContext(loaded));
    await network.sendSms({
      requestId: loaded.request.id,
      kind: 'instructions',
      attempt,
      phoneNumber: loaded.request.phoneNumber,
      text,
      ...moneyOf(loaded),
    });
  }

  /** The network and currency a request's money moves on (texts and prompts go where they do). */
  function moneyOf(loaded: Loaded) {
    const requestNetwork = networkByName(loaded.request.network);
    if (!requestNetwork)
      throw ApplicationFailure.nonRetryable(`unknown network ${loaded.request.network}`, 'UnknownNetwork');
    return { network: requestNetwork, currency: loaded.request.currency };
  }

  /** The prompt of one attempt, as the network is asked for it. */
  function promptOf(loaded: Loaded, attempt: number): PaymentPrompt {
    return {
      requestId: loaded.request.id,
      attempt,
      phoneNumber: loaded.request.phoneNumber,
      amount: loaded.request.amount,
      currency: loaded.request.currency,
      reference: loaded.request.reason ?? requestCode(loaded.request),
      promptReference: promptReference(loaded.request.id, attempt),
      network: moneyOf(loaded).network,
      workflowId:
        Context.current().info.workflowExecution?.workflowId ?? collectionRequestWorkflowId(loaded.request.id),
    };
  }

  /**
   * Asks the network to prompt the subscriber. Our own failures (the database) are retried for as
   * long as they last; a network that keeps failing to take the prompt is, after a few tries, a
   * refused prompt, which the request's retry rules then handle.
   */
  async function askNetwork(loaded: Loaded, attempt: number): Promise<PromptResult> {
    const prompt = promptOf(loaded, attempt);
    try {
      return await network.requestPayment(prompt);
    } catch (error) {
      const tries = Context.current().info.attempt;
      // In doubt is not refused: a prompt the route may have taken is asked about until it says, never sent anew.
      if (tries < PROMPT_NETWORK_TRIES || error instanceof OperationInDoubtError) throw error;
      log.warn('the network did not take the prompt', {
        requestId: loaded.request.id,
        attempt,
        tries,
        error: String(error),
      });
      return { accepted: false, error: NETWORK_UNAVAILABLE_ERROR };
    }
  }

  return { load, messageContext, moneyOf, sendInstructionsText, promptOf, askNetwork };
}
