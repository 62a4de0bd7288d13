/**
 * Daraja's transaction status, which it answers asynchronously: the answer arrives later at our result URL
 * (./callbacks.ts), under the ConversationID it gave only to us, and is kept with its query by the core's records
 * (services/networks/records.ts), read at the workflow's next look.
 */
import type { DarajaCalls } from './calls';
import {
  DARAJA_CALLBACK_PATHS,
  DARAJA_NETWORK,
  STATUS_QUERY_REFERENCE,
  accepted,
  errorOf,
  readResult,
  type StatusAnswer,
} from './protocol';
import type { NetworkRecords } from '../adapter';
import { field } from '../operator-http';

/**
 * The connector's `statusOf`: asks with `calls`, keeps its queries in `records`, and asks again once most of a poll
 * (`statusPollSeconds`) has passed without an answer that settles the matter.
 */
export function createStatusQueries(
  { settings, post, url }: DarajaCalls,
  records: NetworkRecords,
  statusPollSeconds: number,
) {
  const network = DARAJA_NETWORK;

  /**
   * Asks transaction status about `subject`; the answer arrives later at the result URL, under the ConversationID
   * Daraja gives in its answer to the query. The query is recorded before it is sent, under a reference of ours
   * that is its `Occasion`, which Daraja gives back in the result: across a slow link the result may come before
   * Daraja's answer, and still finds its query (./callbacks.ts). A query Daraja did not take is forgotten.
   */
  async function askStatus(
    subject: string,
    workflowId: string,
    keys: { transactionId?: string; originalConversationId?: string },
  ): Promise<void> {
    const query = await records.recordOperation({
      network,
      kind: 'status_query',
      reference: `${STATUS_QUERY_REFERENCE}${crypto.randomUUID()}`,
      workflowId,
      subject,
    });
    let conversationId: string | undefined;
    try {
      const answer = await post('/mpesa/transactionstatus/v1/query', {
        Initiator: settings.initiatorName,
        SecurityCredential: settings.securityCredential,
        CommandID: 'TransactionStatusQuery',
        ...(keys.transactionId ? { TransactionID: keys.transactionId } : {}),
        ...(keys.originalConversationId ? { OriginalConversationID: keys.originalConversationId } : {}),
        PartyA: settings.shortcode,
        IdentifierType: '4',
        ResultURL: url(DARAJA_CALLBACK_PATHS.result),
        QueueTimeOutURL: url(DARAJA_CALLBACK_PATHS.timeout),
        Remarks: 'Status check',
        Occasion: query.reference,
      });
      conversationId = field(answer.body, 'ConversationID');
      if (!accepted(answer) || conversationId === undefined)
        throw new Error(`Daraja transaction status not taken: ${errorOf(answer)}`);
    } catch (error) {
      await records.forgetOperation(query.id);
      throw error;
    }
    await records.setOperatorReference(query.id, conversationId);
  }

  type Confirmed = { state: 'answered'; result: StatusAnswer } | { state: 'waiting' | 'unanswered' };

  /**
   * The answer of the newest status query about `subject`, or an earlier query's answer that settles
   * the matter (an operator slower than a poll answers a query after the next one was asked). A new
   * query is asked (its answer comes at a later look) when there is none yet, or when the last answer
   * does not settle the matter (`settles` says no: not yet completed, not yet known) and a poll has
   * passed since it was asked. `waiting`: a query was just asked; `unanswered`: the last one went a
   * poll without an answer (asked again now).
   */
  async function statusOf(
    subject: string,
    workflowId: string,
    keys: () => { transactionId?: string; originalConversationId?: string },
    settles: (answer: StatusAnswer) => boolean,
  ): Promise<Confirmed> {
    const last = await records.latestStatusQuery(network, subject);
    const earlier = last?.result ? null : readResult(last?.newestAnswer);
    if (earlier && settles(earlier)) return { state: 'answered', result: earlier };
    const result = last?.result ? readResult(last.result) : null;
    const young = last !== undefined && Date.now() - last.created.getTime() < statusPollSeconds * 1000 * 0.8;
    if (result && (settles(result) || young)) return { state: 'answered', result };
    if (!result && young) return { state: 'waiting' };
    await askStatus(subject, workflowId, keys());
    if (result) return { state: 'answered', result };
    return { state: last === undefined ? 'waiting' : 'unanswered' };
  }

  return statusOf;
}

/** The answer about a subject, as `createStatusQueries` gives it. */
export type StatusOf = ReturnType<typeof createStatusQueries>;
