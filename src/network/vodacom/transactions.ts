/**
 * The Vodacom M-Pesa calls of a connector (./client.ts): what its calls share (its settings and each market's
 * client), the calls that may move money (a customer payment, a B2C payment, a reversal), each under a
 * ThirdPartyConversationID derived from our ids, and the transaction status query that decides what became of one.
 */
import { randomBytes } from 'node:crypto';
import type { createMarketClient, Request } from './market-client';
import {
  FAILED_STATES,
  UNDECIDED_CODES,
  accepted,
  conversationIdOf,
  descriptionOf,
  transactionReferenceOf,
  vodacomAmount,
  vodacomFailure,
} from './protocol';
import type { VodacomMarket, VodacomSettings } from './settings';
import type { PaymentPrompt, Payout } from '../adapter';
import { field, msisdnOf, neverSent, OperatorUnreachableError, type OperatorAnswer } from '../operator-http';

/**
 * How long a customer payment's answer is waited for (it comes once the subscriber entered the PIN):
 * within the prompt activity's deadline; past it the status query decides.
 */
const C2B_WAIT_MS = 10_000;
/** A customer payment's deadline: within the prompt activity's 15 s (src/workflows/collection-request.ts). */
const C2B_DEADLINE_MS = 13_000;

/**
 * What became of a call that may move money: done (M-Pesa's transaction id), refused (in words), or not known (the
 * status query decides).
 */
export type Submission =
  | { decided: 'done'; transactionId: string | undefined }
  | { decided: 'refused'; error: string; routeFault?: true }
  | { decided: 'unknown' };
/** A transaction as `queryTransactionStatus` shows it; `unknown`: M-Pesa has no record of it. */
type Found =
  | { state: 'completed'; transactionId: string | undefined }
  | { state: 'failed'; error: string }
  | { state: 'pending' }
  | { state: 'unknown' };

/** A market's client: its sessions, its spare, and its calls (./market-client.ts). */
type MarketClient = ReturnType<typeof createMarketClient>;

/**
 * What a connector's calls share, built once by `createVodacomConnector`: its settings and each market's client (by
 * market code), which holds that market's sessions, so they stay the connector's own.
 */
export type VodacomContext = { settings: VodacomSettings; clients: Map<string, MarketClient> };

export const clientOf = (context: VodacomContext, market: VodacomMarket) => context.clients.get(market.market)!;
export const conversationId = (context: VodacomContext, kind: 'C' | 'B' | 'R', reference: string) =>
  conversationIdOf(kind, context.settings.serviceProviderCode, reference);
export const common = (context: VodacomContext, market: VodacomMarket, id: string) => ({
  input_Country: market.market,
  input_ServiceProviderCode: context.settings.serviceProviderCode,
  input_ThirdPartyConversationID: id,
});

/**
 * Sends a call that may move money and reads its answer; only a call M-Pesa surely did not carry out is a refusal.
 */
async function submit(
  context: VodacomContext,
  market: VodacomMarket,
  request: Request,
  whose: 'subscriber' | 'merchant',
): Promise<Submission> {
  let answer: OperatorAnswer;
  try {
    answer = await clientOf(context, market).call(request);
  } catch (error) {
    // No answer in time: M-Pesa may have carried it out (a customer payment goes on while the subscriber enters the
    // PIN). A connection refused sent nothing, and is thrown as the route's fault.
    if (error instanceof OperatorUnreachableError && !neverSent(error)) return { decided: 'unknown' };
    throw error;
  }
  const code = field(answer.body, 'output_ResponseCode');
  if (accepted(answer) && code === 'INS-0')
    return { decided: 'done', transactionId: field(answer.body, 'output_TransactionID') };
  if ((code !== undefined && UNDECIDED_CODES.has(code)) || (code === undefined && answer.status >= 500))
    return { decided: 'unknown' };
  // Overloaded (INS-16) or throttled: nothing was carried out; the activity tries again.
  if (code === undefined || code === 'INS-16' || answer.status === 429) {
    throw new Error(`Vodacom M-Pesa ${request.path} not taken: HTTP ${answer.status} ${code ?? ''}`.trim());
  }
  const error = vodacomFailure(code, field(answer.body, 'output_ResponseDesc'), whose);
  // Our own M-Pesa account short of the payout (its float): another route may pay it.
  return code === 'INS-2006' && whose === 'merchant'
    ? { decided: 'refused', error, routeFault: true }
    : { decided: 'refused', error };
}

/** M-Pesa's record of one of our transactions, by its ThirdPartyConversationID. */
export async function queryStatus(context: VodacomContext, market: VodacomMarket, reference: string): Promise<Found> {
  const answer = await clientOf(context, market).call({
    method: 'GET',
    path: 'queryTransactionStatus',
    query: { input_QueryReference: reference, ...common(context, market, `Q${randomBytes(15).toString('hex')}`) },
  });
  const code = field(answer.body, 'output_ResponseCode');
  if (code === 'INS-18') return { state: 'unknown' };
  if (!accepted(answer) || code !== 'INS-0')
    throw new Error(`Vodacom M-Pesa transaction status: HTTP ${answer.status} ${code ?? ''}`.trim());
  const state = (field(answer.body, 'output_ResponseTransactionStatus') ?? '').trim().toLowerCase();
  if (state === 'completed')
    return {
      state: 'completed',
      transactionId: field(answer.body, 'output_OriginalTransactionID') ?? field(answer.body, 'output_TransactionID'),
    };
  if (FAILED_STATES[state]) return { state: 'failed', error: FAILED_STATES[state]! };
  if (state === 'n/a' || state === 'not found' || state === '') return { state: 'unknown' };
  return { state: 'pending' };
}

export const c2b = (context: VodacomContext, market: VodacomMarket, prompt: PaymentPrompt) => {
  const id = conversationId(context, 'C', prompt.promptReference);
  return submit(
    context,
    market,
    {
      method: 'POST',
      path: 'c2bPayment/singleStage',
      timeoutMs: C2B_WAIT_MS,
      deadlineMs: C2B_DEADLINE_MS,
      json: {
        input_Amount: vodacomAmount(prompt.amount, market.currency),
        input_Currency: market.currency,
        input_CustomerMSISDN: msisdnOf(prompt.phoneNumber),
        input_TransactionReference: transactionReferenceOf(id),
        input_PurchasedItemsDesc: descriptionOf(prompt.reference),
        ...common(context, market, id),
      },
    },
    'subscriber',
  );
};

const b2c = (context: VodacomContext, market: VodacomMarket, payout: Payout) => {
  const id = conversationId(context, 'B', payout.reference);
  return submit(
    context,
    market,
    {
      method: 'POST',
      path: 'b2cPayment',
      json: {
        input_Amount: vodacomAmount(payout.amount, market.currency),
        input_Currency: market.currency,
        input_CustomerMSISDN: msisdnOf(payout.phoneNumber),
        input_TransactionReference: transactionReferenceOf(id),
        input_PaymentItemsDesc: 'Payment',
        ...common(context, market, id),
      },
    },
    'merchant',
  );
};

/** A reversal of the collection (its M-Pesa transaction id) for the payout's amount. */
const reversal = (context: VodacomContext, market: VodacomMarket, payout: Payout): Promise<Submission> => {
  if (!payout.originalTransactionId)
    return Promise.resolve({ decided: 'refused', error: 'The collection has no M-Pesa transaction id to reverse.' });
  return submit(
    context,
    market,
    {
      method: 'PUT',
      path: 'reversal',
      json: {
        input_ReversalAmount: vodacomAmount(payout.amount, market.currency),
        input_TransactionID: payout.originalTransactionId,
        ...common(context, market, conversationId(context, 'R', payout.reference)),
      },
    },
    'merchant',
  );
};

export const payoutId = (context: VodacomContext, payout: Payout) =>
  conversationId(context, payout.kind === 'reversal' ? 'R' : 'B', payout.reference);
export const sendPayout = (context: VodacomContext, market: VodacomMarket, payout: Payout) =>
  payout.kind === 'reversal' ? reversal(context, market, payout) : b2c(context, market, payout);
