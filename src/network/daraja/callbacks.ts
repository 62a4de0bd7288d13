/**
 * The paths Safaricom's Daraja calls back, mounted by the API (src/api/operator-callbacks.ts). Its
 * callbacks carry no credentials, so none is believed: a callback finds the operation it names
 * (the core's records, services/networks/records.ts), keeps what it said, and wakes the workflow that waits on it; that
 * workflow then asks Daraja's own status query, which alone moves money. A paybill validation is the
 * one request answered with a decision: Daraja waits about 8 s, so the merchant's verification URL
 * gets MPESA_VALIDATION_TIMEOUT_MS. Daraja applies the shortcode's default action to a validation
 * its URL does not answer: the one registered here completes the payment (registerUrls), which then
 * arrives as a confirmation.
 *
 * Each body's schema (./callback-schemas.ts) describes what Daraja sends (its documented fields, their types and
 * sizes); a body that breaks it is refused with the API's 400 and wakes nothing, except a validation, which
 * Daraja wants a decision on and gets a rejection (./paybill.ts). The code after the schema reads nested lists and
 * items through ./protocol.ts, which takes any shape.
 */
import { logger } from '../../log';
import type { NetworkOperation } from '../adapter';
import type { CallbackContext, CallbackDocs, CallbackRoute } from '../callback-routes';
import { CALLBACK_TAGS } from '../callback-schemas';
import {
  ACCEPTED,
  DarajaAcknowledgement,
  DarajaResult,
  PaybillPayment,
  StkCallback,
  type StkCallbackBody,
} from './callback-schemas';
import { paybillConfirmation, paybillValidation } from './paybill';
import {
  DARAJA_CALLBACK_PATHS,
  DARAJA_NETWORK,
  PUSH_RECEIPT_SUBJECT,
  STATUS_QUERY_REFERENCE,
  UNANSWERED_PROMPT_SECONDS,
  callbackItems,
  completedPaymentOf,
  readResult,
  receiptNaming,
  reversalSubject,
  wholeShillings,
} from './protocol';
import type { MpesaSettings } from './settings';

type Context = CallbackContext<MpesaSettings>;

/**
 * The operation a Daraja result names: by the ConversationID it gave us; else, when its first answer was lost, a B2C
 * by our OriginatorConversationID, or a reversal by the transaction it reverses (the result's OriginalTransactionID);
 * else a transaction status query of ours whose answer has not come yet, by the reference it was sent with as its
 * Occasion (a random id only Daraja and we know: ./status-queries.ts). The ConversationID of an operation found so
 * is kept as its operator reference, so that transaction status is asked about it (./payouts.ts) and the query's
 * answer, when it comes, is read as the same.
 */
async function operationOfResult(
  context: Context,
  result: ReturnType<typeof readResult>,
): Promise<NetworkOperation | undefined> {
  const { records, settings } = context;
  if (!settings || result === null) return undefined;
  if (result.conversationId) {
    const operation = await records.findOperationByOperatorReference(DARAJA_NETWORK, result.conversationId);
    if (operation) return operation;
  }
  const reversed = result.parameters.OriginalTransactionID;
  const operation =
    (result.originatorConversationId
      ? await records.findOperation(DARAJA_NETWORK, result.originatorConversationId)
      : undefined) ??
    (reversed
      ? await records.unansweredOperationAbout(DARAJA_NETWORK, 'reversal', reversalSubject(reversed))
      : undefined) ??
    (await queryOfOccasion(context, result));
  if (operation && operation.operatorReference === null && result.conversationId)
    await records.setOperatorReference(operation.id, result.conversationId);
  return operation;
}

/**
 * The transaction status query of ours sent with the result's Occasion, while Daraja's answer to it has not come (or
 * came, naming this result's ConversationID, since that was looked up).
 */
async function queryOfOccasion({ records }: Context, result: NonNullable<ReturnType<typeof readResult>>) {
  const { occasion, conversationId } = result;
  if (!occasion?.startsWith(STATUS_QUERY_REFERENCE)) return undefined;
  const query = await records.findOperation(DARAJA_NETWORK, occasion);
  const unanswered = query?.operatorReference === null || query?.operatorReference === conversationId;
  return query?.kind === 'status_query' && unanswered ? query : undefined;
}

/** What a callback claiming a completed payment states (number, receipt, whole amount), or null when it claims none. */
function claimedPayment(
  callback: StkCallbackBody['Body']['stkCallback'],
): { phoneNumber: string; receipt: string; amount: string } | null {
  const items = callbackItems(callback);
  const msisdn = items.PhoneNumber ?? '';
  const receipt = items.MpesaReceiptNumber ?? '';
  const amount = wholeShillings(items.Amount ?? '');
  if (
    String(callback.ResultCode) !== '0' ||
    !/^\d{12}$/.test(msisdn) ||
    !/^[A-Z0-9]{6,20}$/.test(receipt) ||
    amount === null
  )
    return null;
  return { phoneNumber: `+${msisdn}`, receipt, amount };
}

/**
 * A payment a callback claims, believed once transaction status confirms it (`reportedPaymentStatus` then finds whose
 * it is). `pushReference`: the push of ours the callback named, whose payment it is: it goes to that push's request if
 * still open, else it stays unassigned; never to a request of a number and amount the operator did not name.
 */
async function reportClaimed(
  context: Context,
  claimed: { phoneNumber: string; receipt: string; amount: string },
  pushReference: string | null = null,
): Promise<void> {
  await context.reportForConfirmation({
    network: DARAJA_NETWORK,
    remoteTransactionId: claimed.receipt,
    phoneNumber: claimed.phoneNumber,
    amount: claimed.amount,
    currency: 'KES',
    reference: '',
    promptReference: pushReference,
    paymentDate: new Date().toISOString(),
    namedOnly: true,
  });
}

/**
 * After a callback claiming a payment woke the push it names: a push credited before its receipt was known (read after
 * the hint is kept: docs/architecture.md#one-receipt-one-credit) has the claimed receipt confirmed like any report, and
 * attached to that credit; a push not paid whose request ended (expired, failed, or paid by another payment) is
 * followed on by that request only to record its payment unassigned, and may never learn its receipt: its payment is
 * reported on its own too, as that push's (it goes to no other organization), and the push takes the receipt this
 * report confirms (./receipts.ts `pushNamedFor`), so that both record it once.
 */
async function reportClaimedOfPush(
  context: Context,
  operation: NetworkOperation,
  claimed: { phoneNumber: string; receipt: string; amount: string },
): Promise<void> {
  const now = await context.records.findOperation(DARAJA_NETWORK, operation.reference);
  if (!now) return;
  if (context.records.awaitsReceipt(now)) return await reportClaimed(context, claimed);
  const paid = now.remoteTransactionId !== null || now.result?.status === 'paid';
  if (!paid && !(await context.records.promptRequestOpen(now.reference)))
    await reportClaimed(context, claimed, now.reference);
}

/**
 * A transaction status answer about a push's receipt that came after the push was credited without
 * it (read after the answer is kept, so that the answer itself names the receipt for that push): the
 * receipt it states is confirmed like any report, and attaches to that credit
 * (docs/architecture.md#one-receipt-one-credit).
 */
async function reportLateReceipt(context: Context, result: ReturnType<typeof readResult>): Promise<void> {
  const stated = completedPaymentOf(result);
  if (stated && (await context.records.pushNamingReceipt(DARAJA_NETWORK, receiptNaming(stated.receipt))) !== null)
    await reportClaimed(context, stated);
}

async function stkResult(body: StkCallbackBody, context: Context) {
  const { records, settings } = context;
  const callback = body.Body.stkCallback;
  const operation = settings
    ? await records.findOperationByOperatorReference(DARAJA_NETWORK, callback.CheckoutRequestID)
    : undefined;
  const claimed = claimedPayment(callback);
  if (operation) {
    await context.wake(operation, body);
    if (claimed) await reportClaimedOfPush(context, operation, claimed);
    return ACCEPTED;
  }
  if (!settings || !claimed) {
    logger.info('STK callback for no prompt of ours ignored', {
      checkoutRequestId: callback.CheckoutRequestID,
      resultCode: String(callback.ResultCode),
    });
    return ACCEPTED;
  }
  // A push whose answer was lost: its callback names it by number and amount, only when exactly one unanswered push in
  // the whole service fits (`claimUnanswered`).
  const unanswered = await records.claimUnanswered(
    DARAJA_NETWORK,
    claimed.phoneNumber,
    claimed.amount,
    callback.CheckoutRequestID,
    UNANSWERED_PROMPT_SECONDS,
  );
  if (unanswered) {
    await context.wake(unanswered, body);
    await reportClaimedOfPush(context, unanswered, claimed);
    return ACCEPTED;
  }
  // A payment no prompt of ours names: believed once transaction status confirms it, then left unassigned for the
  // right merchant to claim (a payment the operator reports is never matched by number and amount).
  await reportClaimed(context, claimed);
  return ACCEPTED;
}

const taken = (
  operationId: string,
  summary: string,
  description: string,
  requestExample?: Record<string, unknown>,
): CallbackDocs => ({
  operationId,
  summary,
  description,
  tags: CALLBACK_TAGS,
  caller: 'anyone',
  errors: [429],
  responses: {
    200: {
      description: operationId === 'darajaPaybillValidation' ? 'The decision.' : 'Taken.',
      schema: DarajaAcknowledgement,
    },
  },
  ...(requestExample === undefined ? {} : { requestExample }),
});

export const DARAJA_CALLBACK_ROUTES: readonly CallbackRoute<MpesaSettings>[] = [
  {
    method: 'POST',
    path: DARAJA_CALLBACK_PATHS.stkResult,
    body: StkCallback,
    docs: taken(
      'darajaStkResult',
      'STK push result (Daraja CallBackURL)',
      [
        'Daraja posts the outcome of an STK push here.',
        "It is a hint: the request's workflow wakes and asks the STK push query, which alone decides.",
      ].join(' '),
      {
        Body: {
          stkCallback: {
            MerchantRequestID: '29115-34620561-1',
            CheckoutRequestID: 'ws_CO_191220191020363925',
            ResultCode: 1032,
            ResultDesc: 'Request cancelled by user',
          },
        },
      },
    ),
    handle: async ({ body }, context) => await stkResult(body, context),
  },
  {
    // A validation that cannot be read at all (not JSON, a NUL, another media type, too large) gets
    // Daraja's rejection like one that breaks its schema: any other answer, a 400 included, leaves the
    // payment to the shortcode's default action, which completes it unvalidated.
    method: 'POST',
    path: DARAJA_CALLBACK_PATHS.validation,
    body: PaybillPayment,
    checked: true,
    answersUnreadable: true,
    docs: taken(
      'darajaPaybillValidation',
      'Paybill validation (Daraja C2B ValidationURL)',
      [
        'Before M-Pesa completes a paybill payment it asks here.',
        'The organization whose request the account number (a request code `<organization>-<request>`) names is asked',
        'at its verification URL within MPESA_VALIDATION_TIMEOUT_MS (Safaricom waits about 8 s for the whole answer);',
        'no answer in time takes its accept-by-default setting.',
        'Payments nobody has to decide are accepted;',
        'a validation that cannot be read (a field missing or of the wrong type, a control character in any field,',
        'a body that is not JSON) is rejected with 200 and `C2B00016`, never a 4xx,',
        'and one with an amount that is not whole shillings too (`C2B00013`).',
      ].join(' '),
      {
        TransactionType: 'Pay Bill',
        TransID: 'RKTQDM7W6S',
        TransTime: '20191122063845',
        TransAmount: '10',
        BusinessShortCode: '600638',
        BillRefNumber: '3-901',
        InvoiceNumber: '',
        OrgAccountBalance: '',
        ThirdPartyTransID: '',
        MSISDN: '25470****149',
        FirstName: 'John',
        MiddleName: '',
        LastName: 'Doe',
      },
    ),
    handle: async ({ body }, context) => await paybillValidation(body, context),
  },
  {
    method: 'POST',
    path: DARAJA_CALLBACK_PATHS.confirmation,
    body: PaybillPayment,
    docs: taken(
      'darajaPaybillConfirmation',
      'Paybill confirmation (Daraja C2B ConfirmationURL)',
      [
        'M-Pesa reports a completed paybill payment here.',
        'It is believed only once transaction status confirms it (amount, receipt);',
        'it then goes to the open request its account number names,',
        "or else stays unassigned for the right merchant to claim (never matched by the payer's number and amount).",
        'A repeat starts nothing.',
      ].join(' '),
    ),
    handle: async ({ body }, context) => await paybillConfirmation(body, context),
  },
  {
    method: 'POST',
    path: DARAJA_CALLBACK_PATHS.result,
    body: DarajaResult,
    docs: taken(
      'darajaResult',
      'Asynchronous result (Daraja ResultURL)',
      [
        'B2C, reversal and transaction status results.',
        'A B2C or reversal result wakes its workflow (a hint);',
        'a transaction status answer, matched by the ConversationID Daraja gave only to us,',
        'is kept for the workflow that asked.',
      ].join(' '),
    ),
    handle: async ({ body }, context) => {
      const result = readResult(body);
      const operation = await operationOfResult(context, result);
      if (!operation) {
        logger.info('Daraja result for no operation of ours ignored', { conversationId: result?.conversationId });
        return ACCEPTED;
      }
      await context.wake(operation, body, operation.kind === 'status_query');
      if (operation.kind === 'status_query' && PUSH_RECEIPT_SUBJECT.test(operation.subject))
        await reportLateReceipt(context, result);
      return ACCEPTED;
    },
  },
  {
    method: 'POST',
    path: DARAJA_CALLBACK_PATHS.timeout,
    body: DarajaResult,
    docs: taken(
      'darajaQueueTimeout',
      'Queue time-out (Daraja QueueTimeOutURL)',
      "A request timed out in Daraja's queue: its workflow wakes and asks transaction status.",
    ),
    handle: async ({ body }, context) => {
      const operation = await operationOfResult(context, readResult(body));
      // The request timed out in Daraja's queue: the workflow asks transaction status at once.
      if (operation) await context.wake(operation, operation.kind === 'status_query' ? null : body);
      return ACCEPTED;
    },
  },
];
