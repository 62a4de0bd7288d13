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
 * Its parts: the OpenAPI's codes and formats (./protocol.ts), each market's sessions and calls
 * (./market-client.ts), and the calls that move money and the status query (./transactions.ts).
 */
import { createPublicKey, randomBytes } from 'node:crypto';
import { createMarketClient } from './market-client';
import { UNREGISTERED_CODES, accepted } from './protocol';
import {
  c2b,
  clientOf,
  common,
  conversationId,
  payoutId,
  queryStatus,
  sendPayout,
  type Submission,
  type VodacomContext,
} from './transactions';
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
import { field, msisdnOf } from '../operator-http';

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

/** The market a call on `network` in `currency` goes under, or why Vodacom may not move it. */
function marketOf(context: VodacomContext, network: Network, currency: string): VodacomMarket | string {
  const market = context.settings.markets.find((served) => served.network === network.name);
  if (!market) return `${network.name} is not served by this deployment's Vodacom M-Pesa connection.`;
  return market.currency === currency
    ? market
    : `Vodacom M-Pesa in ${market.market} moves ${market.currency} here, not ${currency}.`;
}

function payoutResultOf(context: VodacomContext, payout: Payout, sent: Submission): PayoutResult {
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
    remoteTransactionId: sent.transactionId ?? payoutId(context, payout),
  };
}

/** Whether M-Pesa holds a transaction of ours (queryTransactionStatus by our ThirdPartyConversationID). */
async function lookup(context: VodacomContext, operation: JournaledOperation): Promise<'present' | 'absent'> {
  const market = context.settings.markets.find((served) => served.network === operation.network.name);
  if (!market) return 'present';
  const id = conversationId(
    context,
    operation.kind === 'prompt' ? 'C' : operation.kind === 'reversal' ? 'R' : 'B',
    operation.reference,
  );
  return (await queryStatus(context, market, id)).state === 'unknown' ? 'absent' : 'present';
}

async function requestPayment(context: VodacomContext, prompt: PaymentPrompt): Promise<PromptResult> {
  const market = marketOf(context, prompt.network, prompt.currency);
  if (typeof market === 'string') return { accepted: false, error: market };
  const id = conversationId(context, 'C', prompt.promptReference);
  const sent = await c2b(context, market, prompt);
  if (sent.decided === 'refused') return { accepted: false, error: sent.error };
  // No answer in time, or one without M-Pesa's transaction id: the transaction status query settles it.
  if (sent.decided === 'unknown' || !sent.transactionId) return { accepted: true, confirm: { operatorReference: id } };
  // The subscriber entered the PIN and M-Pesa answered with its transaction: the payment is made.
  return {
    accepted: true,
    paid: { remoteTransactionId: sent.transactionId, paymentDate: new Date().toISOString() },
  };
}

async function promptStatus(context: VodacomContext, prompt: TakenPrompt): Promise<PromptStatus> {
  const market = marketOf(context, prompt.network, prompt.currency);
  if (typeof market === 'string') return { status: 'failed', error: market };
  const id = conversationId(context, 'C', prompt.promptReference);
  const found = await queryStatus(context, market, id);
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
}

async function sendMoney(context: VodacomContext, payout: Payout): Promise<PayoutResult> {
  const market = marketOf(context, payout.network, payout.currency);
  if (typeof market === 'string') return { status: 'rejected', error: market, remoteTransactionId: null };
  return payoutResultOf(context, payout, await sendPayout(context, market, payout));
}

async function payoutStatus(context: VodacomContext, payout: Payout): Promise<PayoutResult> {
  const market = marketOf(context, payout.network, payout.currency);
  if (typeof market === 'string') return { status: 'rejected', error: market, remoteTransactionId: null };
  const found = await queryStatus(context, market, payoutId(context, payout));
  if (found.state === 'completed')
    return payoutResultOf(context, payout, { decided: 'done', transactionId: found.transactionId });
  if (found.state === 'failed') return { status: 'rejected', error: found.error, remoteTransactionId: null };
  if (found.state === 'pending') return { status: 'pending', remoteTransactionId: null };
  // M-Pesa never took it: sent again under the same conversation id (a copy it has is answered INS-10).
  return payoutResultOf(context, payout, await sendPayout(context, market, payout));
}

/** The registered name on a Vodacom number (queryBeneficiaryName, KYC query type `Name`). */
async function lookupName(context: VodacomContext, phoneNumber: string, network: Network): Promise<NameLookup | null> {
  const market = context.settings.markets.find((served) => served.network === network.name);
  if (!market) return null;
  const answer = await clientOf(context, market).call({
    method: 'GET',
    path: 'queryBeneficiaryName',
    deadlineMs: NAME_LOOKUP_DEADLINE_MS,
    query: {
      input_CustomerMSISDN: msisdnOf(phoneNumber),
      ...common(context, market, `N${randomBytes(15).toString('hex')}`),
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
}

export function createVodacomConnector(settings: VodacomSettings) {
  const key = createPublicKey({ key: Buffer.from(settings.publicKey, 'base64'), format: 'der', type: 'spki' });
  const context: VodacomContext = {
    settings,
    clients: new Map(settings.markets.map((market) => [market.market, createMarketClient(settings, market, key)])),
  };
  return {
    markets: settings.markets,

    /** Our ThirdPartyConversationID, derived from our reference: recorded by the core before the call. */
    operatorIdFor: ({ kind, reference }: { kind: string; reference: string }) =>
      conversationId(context, kind === 'prompt' ? 'C' : kind === 'reversal' ? 'R' : 'B', reference),
    // Its call's answer and its status query may name different transaction ids: the first one learnt stays.
    firstTransactionIdStays: true,

    /**
     * Asks for each market's session and its spare in the background: for a process that will call M-Pesa, at its
     * start, so its first call finds one active.
     */
    warmUp(): void {
      for (const client of context.clients.values()) client.warmUp();
    },

    /**
     * No more sessions asked for ahead: for a connector dropped while its process goes on (the timers never keep a
     * process alive).
     */
    stop(): void {
      for (const client of context.clients.values()) client.stop();
    },

    lookup: (operation: JournaledOperation) => lookup(context, operation),
    requestPayment: (prompt: PaymentPrompt) => requestPayment(context, prompt),
    promptStatus: (prompt: TakenPrompt) => promptStatus(context, prompt),

    async reportedPaymentStatus(): Promise<ReportedPaymentStatus> {
      // The OpenAPI calls nothing back: no payment arrives that we did not ask for.
      return { status: 'refused', reason: 'Vodacom M-Pesa reports no payment it was not asked for.' };
    },

    sendMoney: (payout: Payout) => sendMoney(context, payout),
    payoutStatus: (payout: Payout) => payoutStatus(context, payout),
    lookupName: (phoneNumber: string, network: Network) => lookupName(context, phoneNumber, network),
  };
}
