/**
 * Safaricom M-Pesa Daraja connector (Safaricom, KES): STK push (Lipa na M-Pesa Online) and its
 * query, C2B registration (validation and confirmation arrive at the callback routes), B2C for
 * payments, the Reversal API for reversals, and transaction status for whatever needs confirming.
 *
 * Nothing is believed on a callback alone: an STK callback wakes the request's workflow, which then
 * asks the STK push query; a paybill confirmation, a B2C result or a reversal result wakes its
 * workflow, which asks transaction status. Daraja answers transaction status asynchronously, at our
 * result URL, under a ConversationID it gave only to us: the answer is kept with its query
 * (the core's records, services/networks/records.ts) and read at the workflow's next look.
 *
 * A retried call never pays or charges twice: B2C carries an OriginatorConversationID derived from
 * our payout (Daraja refuses a repeat with "Duplicate OriginatorConversationID", which means "already
 * sent"); an STK push or a reversal whose answer was lost is never sent again for the same attempt:
 * the operator's callback names it (for a push: by number and amount, only when exactly one unanswered push in the
 * service fits) and a status query settles it.
 *
 * Its parts: Daraja's protocol (./protocol.ts), its calls with our token (./calls.ts), transaction status
 * (./status-queries.ts), a paid push's receipt (./receipts.ts), and B2C and reversals (./payouts.ts).
 */
import type { MpesaSettings } from './settings';
import { createDarajaCalls, type DarajaCalls } from './calls';
import { createDarajaPayouts } from './payouts';
import {
  DARAJA_CALLBACK_PATHS,
  DARAJA_NETWORK,
  UNANSWERED_PROMPT_SECONDS,
  accepted,
  accountReference,
  completedFor,
  darajaTimestamp,
  errorOf,
  numberOfParty,
  stkFailure,
  whole,
} from './protocol';
import { createPushReceipts } from './receipts';
import { createStatusQueries, type StatusOf } from './status-queries';
import type {
  PaymentPrompt,
  PromptResult,
  PromptStatus,
  ReportedPayment,
  ReportedPaymentStatus,
  TakenPrompt,
  ConnectorDeps,
} from '../adapter';
import { field, msisdnOf, neverSent } from '../operator-http';

/**
 * How long a push of ours to a number that the STK push query has not yet called paid or failed holds
 * back a reported payment of the same number and amount: the push's request is credited first (a
 * prompt times out on the phone within minutes), and a push paid without its receipt then takes it.
 */
const UNSETTLED_PROMPT_SECONDS = 15 * 60;

const network = DARAJA_NETWORK;

/** `inFlightWindowSeconds`: the unit's window (docs/going-live.md#in-doubt-is-not-refused), or the configured one. */
type DarajaDeps = Pick<ConnectorDeps, 'records' | 'callbackBaseUrl' | 'inFlightWindowSeconds'>;

/** What the connector's members work with, built once per connector by `createDarajaConnector`. */
type ConnectorContext = DarajaCalls &
  ReturnType<typeof createPushReceipts> & { records: DarajaDeps['records']; statusOf: StatusOf };

const password = ({ settings }: ConnectorContext, timestamp: string) =>
  Buffer.from(`${settings.shortcode}${settings.passkey}${timestamp}`).toString('base64');

async function requestPayment(context: ConnectorContext, prompt: PaymentPrompt): Promise<PromptResult> {
  const { settings, tokens, post, url } = context;
  // A token first: failing to get one sends nothing, and the activity's retry may push cleanly.
  await tokens.get();
  // Recorded by the core before this call, and pushed once per attempt: the operation journal
  // (src/network/routes.ts) never asks again for an attempt it recorded, since a push carries no id of ours that
  // a second one could be refused by.
  const timestamp = darajaTimestamp();
  const msisdn = Number(msisdnOf(prompt.phoneNumber));
  const answer = await post('/mpesa/stkpush/v1/processrequest', {
    BusinessShortCode: Number(settings.shortcode),
    Password: password(context, timestamp),
    Timestamp: timestamp,
    TransactionType: 'CustomerPayBillOnline',
    Amount: whole(prompt.amount),
    PartyA: msisdn,
    PartyB: Number(settings.shortcode),
    PhoneNumber: msisdn,
    CallBackURL: url(DARAJA_CALLBACK_PATHS.stkResult),
    // Shown on the phone: at most 12 characters; the transaction description at most 13.
    AccountReference: accountReference(prompt.reference),
    TransactionDesc: prompt.promptReference.slice(0, 13),
    // A connection refused sent nothing: the journal may take the prompt elsewhere. Any other failure may have
    // pushed.
  }).catch((error: unknown) => {
    if (neverSent(error)) throw error;
    return null;
  });
  const checkoutRequestId = answer ? field(answer.body, 'CheckoutRequestID') : undefined;
  // The core records the CheckoutRequestID as the prompt's operator reference.
  if (answer && accepted(answer) && checkoutRequestId !== undefined) {
    return { accepted: true, confirm: { operatorReference: checkoutRequestId } };
  }
  // No answer, or a server error: the push may have gone out. It is never repeated for this attempt;
  // its callback names it, or it counts as unanswered after UNANSWERED_PROMPT_SECONDS.
  const message = answer ? (field(answer.body, 'errorMessage') ?? '') : '';
  if (
    answer === null ||
    (answer.status >= 500 && !/lock subscriber|wrong credentials|merchant does not exist/i.test(message))
  ) {
    return { accepted: true, confirm: { operatorReference: prompt.promptReference } };
  }
  // Daraja refused it outright: nothing went out (the journal marks the attempt refused).
  if (/lock subscriber/i.test(message))
    return { accepted: false, error: 'Another M-Pesa prompt is still open on this phone.' };
  return { accepted: false, error: `M-Pesa refused the prompt (${errorOf(answer)}).` };
}

async function promptStatus(context: ConnectorContext, prompt: TakenPrompt): Promise<PromptStatus> {
  const { settings, records, post, paidPrompt } = context;
  const operation = await records.findOperation(network, prompt.promptReference);
  if (!operation) return { status: 'failed', error: 'The prompt never reached M-Pesa.' };
  // A push whose answer was lost has no CheckoutRequestID (the journal may hold our own reference in its place):
  // Daraja's push query knows nothing by ours, so only its callback can name it (./callbacks.ts). Until then it is
  // pending; after UNANSWERED_PROMPT_SECONDS it has timed out on the phone and the prompt fails. A payment of it
  // that still comes later is reported on its own, and goes to nobody its identifiers do not name.
  const checkoutRequestId = records.operatorReferenceOf(operation);
  if (checkoutRequestId === null) {
    const age = (Date.now() - operation.created.getTime()) / 1000;
    if (age <= UNANSWERED_PROMPT_SECONDS) return { status: 'pending' };
    await records.settlePrompt(operation.id, 'failed');
    return { status: 'failed', error: 'M-Pesa did not confirm the prompt.' };
  }
  const timestamp = darajaTimestamp();
  const answer = await post('/mpesa/stkpushquery/v1/query', {
    BusinessShortCode: Number(settings.shortcode),
    Password: password(context, timestamp),
    Timestamp: timestamp,
    CheckoutRequestID: checkoutRequestId,
  });
  const resultCode = field(answer.body, 'ResultCode');
  if (answer.status === 200 && resultCode !== undefined) {
    if (resultCode !== '0') {
      await records.settlePrompt(operation.id, 'failed');
      return { status: 'failed', error: stkFailure(resultCode, field(answer.body, 'ResultDesc')) };
    }
    return await paidPrompt(operation, prompt, checkoutRequestId);
  }
  if (/being processed/i.test(field(answer.body, 'errorMessage') ?? '')) return { status: 'pending' };
  if (answer.status === 400) {
    await records.settlePrompt(operation.id, 'failed');
    return { status: 'failed', error: `M-Pesa has no record of the prompt (${errorOf(answer)}).` };
  }
  throw new Error(`Daraja STK push query: ${errorOf(answer)}`);
}

/**
 * A paybill payment (or an STK payment no prompt of ours names) is believed once transaction status confirms it.
 */
async function reportedPaymentStatus(
  { records, statusOf, pushNamedFor }: ConnectorContext,
  payment: ReportedPayment,
): Promise<ReportedPaymentStatus> {
  // Any answer settles a reported payment: M-Pesa either has the completed transaction or does not.
  const status = await statusOf(
    `c2b:${payment.remoteTransactionId}`,
    payment.workflowId,
    () => ({ transactionId: payment.remoteTransactionId }),
    () => true,
  );
  if (status.state !== 'answered') return { status: 'pending' };
  const { result } = status;
  if (result.resultCode !== '0')
    return {
      status: 'refused',
      reason: `M-Pesa does not know this transaction (${result.resultCode}: ${result.description}).`,
    };
  if (result.parameters.ReceiptNo !== undefined && result.parameters.ReceiptNo !== payment.remoteTransactionId) {
    return { status: 'refused', reason: "M-Pesa's record is of another transaction." };
  }
  if (!completedFor(result, payment.amount)) {
    const state = result.parameters.TransactionStatus ?? 'not completed';
    const amount = result.parameters.Amount ?? 'no';
    return { status: 'refused', reason: `M-Pesa reports the transaction ${state} for ${amount} KES.` };
  }
  const payer = numberOfParty(result.parameters.DebitPartyName);
  const named = await pushNamedFor(result, payment.remoteTransactionId);
  // The answer to a push of ours that is still being settled is that push's: it is received by the
  // push's request first, and this report then finds the receipt credited. A wait only: what the
  // report is matched with is what Daraja names below.
  if (
    named === 'unsettled' ||
    (await records.unsettledPromptFor(network, payer ?? payment.phoneNumber, payment.amount, UNSETTLED_PROMPT_SECONDS))
  )
    return { status: 'pending' };
  // A receipt a push of ours settled is that push's payment, whatever account the report names; so is one Daraja
  // names for a push credited before its receipt was known, which takes it now. Any other is a payment of its own,
  // matched by its account number (docs/architecture.md#one-receipt-one-credit).
  const promptReference = await records.attachReceipt(
    network,
    { phoneNumber: payer ?? payment.phoneNumber, amount: payment.amount },
    payment.remoteTransactionId,
    named,
  );
  return { status: 'confirmed', amount: payment.amount, phoneNumber: payer, promptReference };
}

/** Registers the paybill's validation and confirmation URLs (idempotent: Daraja keeps the last registration). */
async function registerUrls(context: ConnectorContext): Promise<{ registered: boolean; detail: string }> {
  const { settings, post, url } = context;
  const answer = await post('/mpesa/c2b/v1/registerurl', {
    ShortCode: settings.shortcode,
    // What M-Pesa does when our validation cannot answer in time, or answers 429 past the callback throttle:
    // complete the payment (it then arrives as a confirmation).
    ResponseType: 'Completed',
    ConfirmationURL: url(DARAJA_CALLBACK_PATHS.confirmation),
    ValidationURL: url(DARAJA_CALLBACK_PATHS.validation),
  });
  return accepted(answer)
    ? { registered: true, detail: field(answer.body, 'ResponseDescription') ?? 'success' }
    : { registered: false, detail: errorOf(answer) };
}

export function createDarajaConnector(
  settings: MpesaSettings,
  { records, callbackBaseUrl, inFlightWindowSeconds }: DarajaDeps,
  statusPollSeconds: number,
) {
  const calls = createDarajaCalls(settings, callbackBaseUrl);
  const { tokens, post, url } = calls;
  const statusOf = createStatusQueries(calls, records, statusPollSeconds);
  const { paidPrompt, pushNamedFor } = createPushReceipts(records, statusOf);
  const payouts = createDarajaPayouts(calls, records, statusOf, inFlightWindowSeconds);
  const context: ConnectorContext = { settings, tokens, post, url, records, statusOf, paidPrompt, pushNamedFor };

  return {
    requestPayment: (prompt: PaymentPrompt) => requestPayment(context, prompt),
    promptStatus: (prompt: TakenPrompt) => promptStatus(context, prompt),
    reportedPaymentStatus: (payment: ReportedPayment) => reportedPaymentStatus(context, payment),
    sendMoney: payouts.sendMoney,
    payoutStatus: payouts.payoutStatus,
    registerUrls: () => registerUrls(context),
  };
}
