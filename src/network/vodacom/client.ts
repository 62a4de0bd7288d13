/**
 * Vodacom M-Pesa connector (the M-Pesa OpenAPI) for the Vodacom networks of the markets it is
 * configured for (VODACOM_MARKETS: `vodacomTZN`, `vodacomDRC`), each market its own API context
 * (`<root>/ipg/v2/<context>/...`) and its own sessions. A session comes from `getSession` with the
 * API key encrypted under the portal's public key (RSA, PKCS#1 v1.5, base64) as the bearer; every
 * other call carries the session id encrypted the same way. A new session becomes usable some time
 * after it is issued (M-Pesa documents "up to 30 seconds"), so no call waits for one in the ordinary
 * course: each market keeps, besides the session in use, a spare already active
 * (src/network/session-pool.ts), asked for at a process's start (`warmUp`) and again whenever the
 * spare takes over, and each session's replacement is asked for ahead of its lifetime's end. M-Pesa
 * refuses a revoked session and one not active yet alike (HTTP 401, `INS-2`): a revoked one is
 * dropped and the spare serves the call; when every session was revoked, the call tries the new
 * session until M-Pesa takes it (one request in flight per market). A call never outlives the
 * activity or API request that makes it: past its deadline it fails with nothing carried out
 * (`SessionUnavailableError`), and a payment or query is then tried again by its activity.
 *
 * The OpenAPI answers each call itself (`output_ResponseCode`: `INS-0` done, `INS-*` otherwise) and
 * calls nothing back. A customer payment (`c2bPayment/singleStage`) answers once the subscriber
 * entered the PIN; one that does not answer in time on our side, or answers "timeout", "duplicate"
 * or an internal error, may still complete: `queryTransactionStatus` decides, never a guess. Each
 * call that moves money carries a ThirdPartyConversationID derived from our ids, so a retried call
 * repeats it and M-Pesa takes it once (`INS-10`).
 *
 * Its parts: the OpenAPI's codes and formats (./protocol.ts) and each market's sessions and calls
 * (./market-client.ts).
 */
import { createPublicKey, randomBytes } from 'node:crypto';
import { createMarketClient, type Request } from './market-client';
import {
  FAILED_STATES,
  UNDECIDED_CODES,
  UNREGISTERED_CODES,
  accepted,
  conversationIdOf,
  descriptionOf,
  transactionReferenceOf,
  vodacomAmount,
  vodacomFailure,
} from './protocol';
import type { VodacomMarket, VodacomSettings } from './settings';
import type { Network } from '../../domain/networks';
import type {
  JournaledOperation,
  NameLookup,
  PaymentPrompt,
  Payout,
  PayoutResult,
  PromptResult,
  PromptStatus,
  ReportedPaymentStatus,
  TakenPrompt,
} from '../adapter';
import { field, msisdnOf, neverSent, OperatorUnreachableError, type OperatorAnswer } from '../operator-http';

/**
 * How long a customer payment's answer is waited for (it comes once the subscriber entered the PIN):
 * within the prompt activity's deadline; past it the status query decides.
 */
const C2B_WAIT_MS = 10_000;
/** A customer payment's deadline: within the prompt activity's 15 s (src/workflows/collection-request.ts). */
const C2B_DEADLINE_MS = 13_000;
/**
 * A name look-up's deadline, sessions waited for included: it answers an API request (instant
 * verification), which must end well within the time the API server and its clients keep a request
 * open (Bun's default idle timeout: 10 s).
 */
const NAME_LOOKUP_DEADLINE_MS = 8_000;
/**
 * A payment request the status query still does not know this long after it was sent never reached M-Pesa: that attempt
 * failed.
 */
const UNKNOWN_PROMPT_FAILS_AFTER_MS = 180_000;

/**
 * What became of a call that may move money: done (M-Pesa's transaction id), refused (in words), or not known (the
 * status query decides).
 */
type Submission =
  | { decided: 'done'; transactionId: string | undefined }
  | { decided: 'refused'; error: string; routeFault?: true }
  | { decided: 'unknown' };
/** A transaction as `queryTransactionStatus` shows it; `unknown`: M-Pesa has no record of it. */
type Found =
  | { state: 'completed'; transactionId: string | undefined }
  | { state: 'failed'; error: string }
  | { state: 'pending' }
  | { state: 'unknown' };

export function createVodacomConnector(settings: VodacomSettings) {
  const key = createPublicKey({ key: Buffer.from(settings.publicKey, 'base64'), format: 'der', type: 'spki' });
  const clients = new Map(settings.markets.map((market) => [market.market, createMarketClient(settings, market, key)]));
  const clientOf = (market: VodacomMarket) => clients.get(market.market)!;
  const conversationId = (kind: 'C' | 'B' | 'R', reference: string) =>
    conversationIdOf(kind, settings.serviceProviderCode, reference);
  const common = (market: VodacomMarket, id: string) => ({
    input_Country: market.market,
    input_ServiceProviderCode: settings.serviceProviderCode,
    input_ThirdPartyConversationID: id,
  });

  /** The market a call on `network` in `currency` goes under, or why Vodacom may not move it. */
  function marketOf(network: Network, currency: string): VodacomMarket | string {
    const market = settings.markets.find((served) => served.network === network.name);
    if (!market) return `${network.name} is not served by this deployment's Vodacom M-Pesa connection.`;
    return market.currency === currency
      ? market
      : `Vodacom M-Pesa in ${market.market} moves ${market.currency} here, not ${currency}.`;
  }

  /**
   * Sends a call that may move money and reads its answer; only a call M-Pesa surely did not carry out is a refusal.
   */
  async function submit(
    market: VodacomMarket,
    request: Request,
    whose: 'subscriber' | 'merchant',
  ): Promise<Submission> {
    let answer: OperatorAnswer;
    try {
      answer = await clientOf(market).call(request);
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
  async function queryStatus(market: VodacomMarket, reference: string): Promise<Found> {
    const answer = await clientOf(market).call({
      method: 'GET',
      path: 'queryTransactionStatus',
      query: { input_QueryReference: reference, ...common(market, `Q${randomBytes(15).toString('hex')}`) },
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

  const c2b = (market: VodacomMarket, prompt: PaymentPrompt) => {
    const id = conversationId('C', prompt.promptReference);
    return submit(
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
          ...common(market, id),
        },
      },
      'subscriber',
    );
  };

  const b2c = (market: VodacomMarket, payout: Payout) => {
    const id = conversationId('B', payout.reference);
    return submit(
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
          ...common(market, id),
        },
      },
      'merchant',
    );
  };

  /** A reversal of the collection (its M-Pesa transaction id) for the payout's amount. */
  const reversal = (market: VodacomMarket, payout: Payout): Promise<Submission> => {
    if (!payout.originalTransactionId)
      return Promise.resolve({ decided: 'refused', error: 'The collection has no M-Pesa transaction id to reverse.' });
    return submit(
      market,
      {
        method: 'PUT',
        path: 'reversal',
        json: {
          input_ReversalAmount: vodacomAmount(payout.amount, market.currency),
          input_TransactionID: payout.originalTransactionId,
          ...common(market, conversationId('R', payout.reference)),
        },
      },
      'merchant',
    );
  };

  const payoutId = (payout: Payout) => conversationId(payout.kind === 'reversal' ? 'R' : 'B', payout.reference);
  const sendPayout = (market: VodacomMarket, payout: Payout) =>
    payout.kind === 'reversal' ? reversal(market, payout) : b2c(market, payout);

  function payoutResultOf(payout: Payout, sent: Submission): PayoutResult {
    if (sent.decided === 'refused')
      return {
        status: 'rejected',
        error: sent.error,
        remoteTransactionId: null,
        ...(sent.routeFault ? { routeFault: true as const } : {}),
      };
    if (sent.decided === 'unknown') return { status: 'pending', remoteTransactionId: null };
    return {
      status: 'completed',
      remoteTransactionId: sent.transactionId ?? payoutId(payout),
    };
  }

  return {
    markets: settings.markets,

    /** Our ThirdPartyConversationID, derived from our reference: recorded by the core before the call. */
    operatorIdFor: ({ kind, reference }: { kind: string; reference: string }) =>
      conversationId(kind === 'prompt' ? 'C' : kind === 'reversal' ? 'R' : 'B', reference),
    // Its call's answer and its status query may name different transaction ids: the first one learnt stays.
    firstTransactionIdStays: true,

    /**
     * Asks for each market's session and its spare in the background: for a process that will call M-Pesa, at its
     * start, so its first call finds one active.
     */
    warmUp(): void {
      for (const client of clients.values()) client.warmUp();
    },

    /**
     * No more sessions asked for ahead: for a connector dropped while its process goes on (the timers never keep a
     * process alive).
     */
    stop(): void {
      for (const client of clients.values()) client.stop();
    },

    /** Whether M-Pesa holds a transaction of ours (queryTransactionStatus by our ThirdPartyConversationID). */
    async lookup(operation: JournaledOperation): Promise<'present' | 'absent'> {
      const market = settings.markets.find((served) => served.network === operation.network.name);
      if (!market) return 'present';
      const id = conversationId(
        operation.kind === 'prompt' ? 'C' : operation.kind === 'reversal' ? 'R' : 'B',
        operation.reference,
      );
      return (await queryStatus(market, id)).state === 'unknown' ? 'absent' : 'present';
    },

    async requestPayment(prompt: PaymentPrompt): Promise<PromptResult> {
      const market = marketOf(prompt.network, prompt.currency);
      if (typeof market === 'string') return { accepted: false, error: market };
      const id = conversationId('C', prompt.promptReference);
      const sent = await c2b(market, prompt);
      if (sent.decided === 'refused') return { accepted: false, error: sent.error };
      // No answer in time, or one without M-Pesa's transaction id: the transaction status query settles it.
      if (sent.decided === 'unknown' || !sent.transactionId)
        return { accepted: true, confirm: { operatorReference: id } };
      // The subscriber entered the PIN and M-Pesa answered with its transaction: the payment is made.
      return {
        accepted: true,
        paid: { remoteTransactionId: sent.transactionId, paymentDate: new Date().toISOString() },
      };
    },

    async promptStatus(prompt: TakenPrompt): Promise<PromptStatus> {
      const market = marketOf(prompt.network, prompt.currency);
      if (typeof market === 'string') return { status: 'failed', error: market };
      const id = conversationId('C', prompt.promptReference);
      const found = await queryStatus(market, id);
      // Credited under M-Pesa's own transaction id only (docs/architecture.md#one-receipt-one-credit): without one,
      // asked again at the next poll.
      if (found.state === 'completed') {
        if (!found.transactionId) return { status: 'pending' };
        return {
          status: 'paid',
          remoteTransactionId: found.transactionId,
          paymentDate: new Date().toISOString(),
        };
      }
      if (found.state === 'failed') return { status: 'failed', error: found.error };
      if (found.state === 'unknown') {
        // Never sent again (the subscriber would be prompted twice): once M-Pesa has long had no record of it, the
        // attempt failed.
        const recordedAt = prompt.recorded?.at;
        if (recordedAt && Date.now() - recordedAt.getTime() > UNKNOWN_PROMPT_FAILS_AFTER_MS) {
          return {
            status: 'failed',
            error: 'M-Pesa has no record of the payment request (it never reached the subscriber).',
          };
        }
      }
      return { status: 'pending' };
    },

    async reportedPaymentStatus(): Promise<ReportedPaymentStatus> {
      // The OpenAPI calls nothing back: no payment arrives that we did not ask for.
      return { status: 'refused', reason: 'Vodacom M-Pesa reports no payment it was not asked for.' };
    },

    async sendMoney(payout: Payout): Promise<PayoutResult> {
      const market = marketOf(payout.network, payout.currency);
      if (typeof market === 'string') return { status: 'rejected', error: market, remoteTransactionId: null };
      return payoutResultOf(payout, await sendPayout(market, payout));
    },

    async payoutStatus(payout: Payout): Promise<PayoutResult> {
      const market = marketOf(payout.network, payout.currency);
      if (typeof market === 'string') return { status: 'rejected', error: market, remoteTransactionId: null };
      const found = await queryStatus(market, payoutId(payout));
      if (found.state === 'completed')
        return payoutResultOf(payout, { decided: 'done', transactionId: found.transactionId });
      if (found.state === 'failed') return { status: 'rejected', error: found.error, remoteTransactionId: null };
      if (found.state === 'pending') return { status: 'pending', remoteTransactionId: null };
      // M-Pesa never took it: sent again under the same conversation id (a copy it has is answered INS-10).
      return payoutResultOf(payout, await sendPayout(market, payout));
    },

    /** The registered name on a Vodacom number (queryBeneficiaryName, KYC query type `Name`). */
    async lookupName(phoneNumber: string, network: Network): Promise<NameLookup | null> {
      const market = settings.markets.find((served) => served.network === network.name);
      if (!market) return null;
      const answer = await clientOf(market).call({
        method: 'GET',
        path: 'queryBeneficiaryName',
        deadlineMs: NAME_LOOKUP_DEADLINE_MS,
        query: {
          input_CustomerMSISDN: msisdnOf(phoneNumber),
          ...common(market, `N${randomBytes(15).toString('hex')}`),
          input_KycQueryType: 'Name',
        },
      });
      const code = field(answer.body, 'output_ResponseCode');
      if (code !== undefined && UNREGISTERED_CODES.has(code))
        return { nameOnNetwork: '', nationalId: null, nationalIdType: '', registered: false };
      if (!accepted(answer) || code !== 'INS-0')
        throw new Error(`Vodacom M-Pesa beneficiary name: HTTP ${answer.status} ${code ?? ''}`.trim());
      const name = [field(answer.body, 'output_CustomerFirstName'), field(answer.body, 'output_CustomerLastName')]
        .filter(Boolean)
        .join(' ');
      return { nameOnNetwork: name, nationalId: null, nationalIdType: '', registered: true };
    },
  };
}
