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
 * Each body's schema describes what Daraja sends (its documented fields, their types and sizes); a
 * body that breaks it is refused with the API's 400 and wakes nothing, except a validation, which
 * Daraja wants a decision on and gets a rejection. The code after the schema reads nested lists and
 * items through ./client.ts, which takes any shape.
 */
import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { promptReference } from '../../domain/collections';
import { parsePositiveAmount } from '../../domain/money';
import { fullNumberOf, numberFitsMask } from '../../domain/phone';
import { logger } from '../../log';
import type { CallbackContext, CallbackDocs, CallbackRoute, NetworkOperation } from '../adapter';
import { CALLBACK_TAGS, optionalReference, optionalText, text } from '../callback-schemas';
import {
  DARAJA_CALLBACK_PATHS,
  DARAJA_NETWORK,
  PUSH_RECEIPT_SUBJECT,
  UNANSWERED_PROMPT_SECONDS,
  callbackItems,
  completedPaymentOf,
  readResult,
  receiptNaming,
  reversalSubject,
} from './client';
import type { MpesaSettings } from './settings';

type Context = CallbackContext<MpesaSettings>;

/**
 * A `{Name, Value}` item of an STK callback's metadata, or a `{Key, Value}` result parameter: `Balance` comes without a
 * value.
 */
const namedValue = (name: 'Name' | 'Key') =>
  v.looseObject({ [name]: v.pipe(v.string(), v.maxLength(100)), Value: optionalText });

/** Daraja's acknowledgement of a callback (its documented `{ResultCode, ResultDesc}`). */
const DarajaAcknowledgement = v.pipe(
  v.object({
    ResultCode: v.union([v.number(), v.string()]),
    ResultDesc: v.string(),
    ThirdPartyTransID: v.optional(v.string()),
  }),
  v.description(
    "Daraja's expected answer: `ResultCode` 0 (a validation also answers `C2B00013` or `C2B00016` to reject).",
  ),
);
const ACCEPTED = { ResultCode: 0, ResultDesc: 'Accepted' };

const StkCallback = v.looseObject({
  Body: v.looseObject({
    stkCallback: v.looseObject({
      MerchantRequestID: optionalReference,
      CheckoutRequestID: v.pipe(v.string(), v.maxLength(100)),
      ResultCode: text,
      ResultDesc: optionalText,
      // Only a completed payment carries it: Amount, MpesaReceiptNumber, TransactionDate, PhoneNumber (and Balance,
      // without a value).
      CallbackMetadata: v.optional(
        v.nullable(v.looseObject({ Item: v.optional(v.pipe(v.array(namedValue('Name')), v.maxLength(50))) })),
      ),
    }),
  }),
});
type StkCallbackBody = v.InferOutput<typeof StkCallback>;

const PaybillPayment = v.looseObject({
  TransactionType: optionalText,
  TransID: v.pipe(v.string(), v.regex(/^[A-Za-z0-9]{4,30}$/, "Enter M-Pesa's transaction id.")),
  TransTime: optionalText,
  TransAmount: text,
  BusinessShortCode: optionalText,
  BillRefNumber: optionalText,
  InvoiceNumber: optionalText,
  OrgAccountBalance: optionalText,
  ThirdPartyTransID: optionalText,
  MSISDN: text,
  FirstName: optionalText,
  MiddleName: optionalText,
  LastName: optionalText,
});
type PaybillPaymentBody = v.InferOutput<typeof PaybillPayment>;

const DarajaResult = v.looseObject({
  Result: v.looseObject({
    ResultType: optionalText,
    ResultCode: text,
    ResultDesc: optionalText,
    OriginatorConversationID: optionalReference,
    ConversationID: optionalReference,
    TransactionID: optionalReference,
    // Several parameters come as a list, a lone one bare.
    ResultParameters: v.optional(
      v.nullable(
        v.looseObject({
          ResultParameter: v.optional(
            v.union([v.pipe(v.array(namedValue('Key')), v.maxLength(100)), namedValue('Key')]),
          ),
        }),
      ),
    ),
    ReferenceData: v.optional(v.unknown()),
  }),
});

const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

/** Control characters (C0, DEL, C1): Daraja sends none, so a field or key holding one is unreadable. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it looks for
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;
const holdsControlCharacter = (value: unknown): boolean =>
  typeof value === 'string'
    ? CONTROL_CHARACTER.test(value)
    : typeof value === 'object' &&
      value !== null &&
      Object.entries(value).some(([key, item]) => CONTROL_CHARACTER.test(key) || holdsControlCharacter(item));

const wholeShillings = (value: string | number) => {
  const amount = String(value).trim();
  return /^\d{1,12}(\.0+)?$/.test(amount) && parsePositiveAmount(amount.replace(/\.0+$/, '')) !== null
    ? amount.replace(/\.0+$/, '')
    : null;
};

/**
 * The payer of a paybill payment and the request its account number names: the number in full
 * when Daraja gives it; a masked or hashed one stands for the named request's number only when it
 * fits it; otherwise it is kept as Daraja gave it (and matches no request by number).
 */
async function paybillPayer({ merchants }: Context, body: PaybillPaymentBody, amount: string) {
  const given = String(body.MSISDN);
  const named = body.BillRefNumber
    ? await merchants.requestOfBillReference(String(body.BillRefNumber), DARAJA_NETWORK, 'KES')
    : undefined;
  const request =
    named && parsePositiveAmount(named.amount) !== null && Number(named.amount) === Number(amount) ? named : null;
  const full = fullNumberOf(given);
  if (full !== null) return { phoneNumber: full, request: request && request.phoneNumber === full ? request : null };
  if (request && numberFitsMask(request.phoneNumber, given, sha256Hex))
    return { phoneNumber: request.phoneNumber, request };
  return { phoneNumber: `+${given.replace(/\s+/g, '').replace(/^\+/, '')}`.slice(0, 70), request: null };
}

/**
 * The operation a Daraja result names: by the ConversationID it gave us; else, when its first answer was lost, a B2C
 * by our OriginatorConversationID, or a reversal by the transaction it reverses (the result's OriginalTransactionID).
 * The ConversationID of an operation found so is kept as its operator reference, so that transaction status is
 * asked about it (./client.ts).
 */
async function operationOfResult(
  { records, settings }: Context,
  result: ReturnType<typeof readResult>,
): Promise<NetworkOperation | undefined> {
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
      : undefined);
  if (operation && operation.kind !== 'status_query' && operation.operatorReference === null && result.conversationId)
    await records.setOperatorReference(operation.id, result.conversationId);
  return operation;
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
 * followed by nobody, so its payment is reported on its own, as that push's: it goes to no other organization.
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

async function paybillValidation(
  checked: { valid: true; body: PaybillPaymentBody } | { valid: false; errors: Record<string, string[]> },
  context: Context,
) {
  const { merchants, settings } = context;
  // Daraja waits for a decision: a validation that cannot be read is refused, so the subscriber pays for nothing nobody
  // could follow.
  if (!checked.valid || holdsControlCharacter(checked.body)) {
    logger.warn('paybill validation unreadable: rejected', {
      fields: checked.valid ? ['control characters'] : Object.keys(checked.errors),
    });
    return { ResultCode: 'C2B00016', ResultDesc: 'Rejected' };
  }
  const body = checked.body;
  const amount = wholeShillings(body.TransAmount);
  if (!settings || amount === null) return { ResultCode: 'C2B00013', ResultDesc: 'Rejected' };
  const payer = await paybillPayer(context, body, amount);
  // Only the request the account number names says whose payment it is: never an organization guessed by the payer's
  // number and amount.
  const organizationId = payer.request?.organizationId ?? null;
  const verification = organizationId === null ? undefined : await merchants.verificationSettingsOf(organizationId);
  // Nobody to ask (no organization, or none with a verification URL): the payment goes on to matching.
  if (!verification?.url) return { ...ACCEPTED, ResultCode: '0' };
  const decided = await context.askVerification(
    verification.url,
    {
      phonenumber: payer.phoneNumber,
      amount,
      currency_code: 'KES',
      reference: String(body.BillRefNumber ?? ''),
      remote_transaction_id: body.TransID,
    },
    verification.acceptByDefault,
    settings.validationTimeoutMs,
  );
  logger.info('paybill validation answered', {
    transId: body.TransID,
    organizationId,
    decision: decided.decision,
    decidedBy: decided.decidedBy,
    detail: decided.detail,
  });
  return decided.decision === 'accept'
    ? { ResultCode: '0', ResultDesc: 'Accepted' }
    : { ResultCode: 'C2B00016', ResultDesc: 'Rejected' };
}

async function paybillConfirmation(body: PaybillPaymentBody, context: Context) {
  const amount = wholeShillings(body.TransAmount);
  if (!context.settings || amount === null) {
    logger.warn('paybill confirmation ignored', {
      transId: body.TransID,
      reason: context.settings ? 'amount' : 'no M-Pesa connector',
    });
    return ACCEPTED;
  }
  const payer = await paybillPayer(context, body, amount);
  // Believed once transaction status confirms it; the request its account number names is its prompt.
  await context.reportForConfirmation({
    network: DARAJA_NETWORK,
    remoteTransactionId: body.TransID,
    phoneNumber: payer.phoneNumber,
    amount,
    currency: 'KES',
    reference: String(body.BillRefNumber ?? '').slice(0, 255),
    promptReference: payer.request ? promptReference(payer.request.id, 0) : null,
    paymentDate: new Date().toISOString(),
    // An account number that names no open request of ours leaves it unassigned: never matched by number and amount.
    namedOnly: true,
  });
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
      "Daraja posts the outcome of an STK push here. It is a hint: the request's workflow wakes and asks the STK " +
        'push query, which alone decides.',
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
      'B2C, reversal and transaction status results. A B2C or reversal result wakes its workflow (a hint); a ' +
        'transaction status answer, matched by the ConversationID Daraja gave only to us, is kept for the workflow ' +
        'that asked.',
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
