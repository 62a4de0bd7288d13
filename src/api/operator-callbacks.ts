/**
 * The fixed paths the real operators call back (Safaricom's Daraja, MTN MoMo). Their callbacks
 * carry no credentials, so none is believed: a callback finds the operation it names
 * (services/network-operations), keeps what it said, and wakes the workflow that waits on it; that
 * workflow then asks the operator's own status query, which alone moves money. Every route answers
 * fast, in the operator's expected shape when it could read the callback, takes repeats without
 * effect, ignores (and logs) references it does not know, and never answers 500. A paybill
 * validation is the one request answered with a decision: Daraja waits about 8 s, so the
 * merchant's verification URL gets MPESA_VALIDATION_TIMEOUT_MS.
 *
 * What arrives is judged before anything reads it. Each body's schema describes what the operator
 * sends (its documented fields, their types and sizes); a body that breaks it is refused with the
 * API's 400 and wakes nothing, except a validation, which Daraja wants a decision on and gets a
 * rejection. A body no operator sends at all (not a JSON object, too large or too deep) is refused
 * before the route runs, except a validation's, which is rejected too. The code after the schema
 * reads nested lists and items through network/daraja.ts, which takes any shape.
 *
 * Every request to these paths is counted, before its body is read, against its source address
 * and, when the address is within its limit, against its operator (OPERATOR_CALLBACK_LIMIT_*, per
 * minute): past either limit it is 429 with Retry-After, and nothing is looked up, woken or asked.
 * Daraja applies the shortcode's default action to a validation its URL does not answer: the one
 * registered here completes the payment (registerUrls), which then arrives as a confirmation.
 */
import { createHash } from 'node:crypto';
import { Elysia } from 'elysia';
import * as v from 'valibot';
import { askMerchant, outgoingTransport } from '../activities/webhook-http';
import { parsePositiveAmount } from '../domain/money';
import { fullNumberOf, numberFitsMask } from '../domain/phone';
import { logger } from '../log';
import { DARAJA_CALLBACK_PATHS, UNANSWERED_PROMPT_SECONDS, callbackItems, readResult } from '../network/daraja';
import { nested } from '../network/operator-http';
import { MOMO_CALLBACK_PATH } from '../network/momo';
import { AIRTEL_CALLBACK_PATH, callbackHashMatches } from '../network/airtel';
import { CONNECTED_NETWORK, airtelNetworks } from '../domain/networks';
import { lookAlikeOrganization, requestOfBillReference, verificationSettingsOf, type BilledRequest } from '../services/collections';
import {
  claimUnanswered, findOperation, findOperationByOperatorReference, recordHint, recordResult, type NetworkOperation,
} from '../services/network-operations';
import { promptReference } from '../domain/collections';
import { clientAddress, throttledAddress } from '../http/client-address';
import type { AppDeps } from '../http/context';
import { ApiError } from '../http/errors';
import { throttled } from '../http/request-policy';
import { MAX_BODY_BYTES, declareBodyOptions } from '../http/request';
import { admitOperatorCallback } from '../services/throttling';
import { countThrottledCallback } from '../telemetry/metrics';
import type { IncomingPaymentInput } from '../workflows/contracts/incoming-collection';
import { checkedRequestSchema, requestSchema, routeDocs } from '../http/route-docs';

const TAGS = ['Operator callbacks'];
/** Text as the operators send it: a string or a number (Daraja sends codes, amounts and numbers as either). */
const text = v.union([v.pipe(v.string(), v.maxLength(1000)), v.number()]);
const optionalText = v.optional(v.nullable(text));
/** An operator's identifier of a transaction or a request, which a route looks an operation up by. */
const reference = v.union([v.pipe(v.string(), v.maxLength(100)), v.number()]);
const optionalReference = v.optional(v.nullable(reference));
/** A `{Name, Value}` item of an STK callback's metadata, or a `{Key, Value}` result parameter: `Balance` comes without a value. */
const namedValue = (name: 'Name' | 'Key') => v.looseObject({ [name]: v.pipe(v.string(), v.maxLength(100)), Value: optionalText });

/** Daraja's acknowledgement of a callback (its documented `{ResultCode, ResultDesc}`). */
const DarajaAcknowledgement = v.pipe(
  v.object({ ResultCode: v.union([v.number(), v.string()]), ResultDesc: v.string(), ThirdPartyTransID: v.optional(v.string()) }),
  v.description('Daraja\'s expected answer: `ResultCode` 0 (a validation also answers `C2B00013` or `C2B00016` to reject).'),
);
const ACCEPTED = { ResultCode: 0, ResultDesc: 'Accepted' };

const StkCallback = v.looseObject({
  Body: v.looseObject({
    stkCallback: v.looseObject({
      MerchantRequestID: optionalReference,
      CheckoutRequestID: v.pipe(v.string(), v.maxLength(100)),
      ResultCode: text,
      ResultDesc: optionalText,
      // Only a completed payment carries it: Amount, MpesaReceiptNumber, TransactionDate, PhoneNumber (and Balance, without a value).
      CallbackMetadata: v.optional(v.nullable(v.looseObject({ Item: v.optional(v.pipe(v.array(namedValue('Name')), v.maxLength(50))) }))),
    }),
  }),
});

const PaybillPayment = v.looseObject({
  TransactionType: optionalText,
  TransID: v.pipe(v.string(), v.regex(/^[A-Za-z0-9]{4,30}$/, 'Enter M-Pesa\'s transaction id.')),
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
    ResultParameters: v.optional(v.nullable(v.looseObject({
      ResultParameter: v.optional(v.union([v.pipe(v.array(namedValue('Key')), v.maxLength(100)), namedValue('Key')])),
    }))),
    ReferenceData: v.optional(v.unknown()),
  }),
});

const MomoParty = v.looseObject({ partyIdType: optionalText, partyId: optionalText });
const MomoCallback = v.looseObject({
  financialTransactionId: optionalReference,
  externalId: optionalReference,
  amount: optionalText,
  currency: optionalText,
  payer: v.optional(v.nullable(MomoParty)),
  payee: v.optional(v.nullable(MomoParty)),
  payerMessage: optionalText,
  payeeNote: optionalText,
  status: optionalText,
  // A failure's reason: its code, or `{code, message}` as some releases send it.
  reason: v.optional(v.nullable(v.union([text, v.looseObject({ code: optionalText, message: optionalText })]))),
});
const MomoAcknowledgement = v.pipe(v.object({ status: v.literal('received') }), v.description('Taken; MoMo reads only the status code.'));

const AirtelCallback = v.looseObject({
  transaction: v.looseObject({
    id: reference,
    message: optionalText,
    status_code: optionalText,
    airtel_money_id: optionalReference,
  }),
  hash: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(200)))),
});
const AirtelAcknowledgement = v.pipe(v.object({ status: v.literal('received') }), v.description('Taken; Airtel reads only the status code.'));

const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

// A validation that cannot be read at all (not JSON, a NUL, another media type, too large) gets
// Daraja's rejection like one that breaks its schema: any other answer, a 400 included, leaves the
// payment to the shortcode's default action, which completes it unvalidated.
declareBodyOptions('POST', DARAJA_CALLBACK_PATHS.validation, { limit: MAX_BODY_BYTES, answersUnreadable: true });

/** Control characters (C0, DEL, C1): Daraja sends none, so a field or key holding one is unreadable. */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;
const holdsControlCharacter = (value: unknown): boolean =>
  typeof value === 'string' ? CONTROL_CHARACTER.test(value)
    : typeof value === 'object' && value !== null && Object.entries(value).some(([key, item]) => CONTROL_CHARACTER.test(key) || holdsControlCharacter(item));

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  darajaStkResult: routeDocs({
    operationId: 'darajaStkResult',
    summary: 'STK push result (Daraja CallBackURL)',
    description: 'Daraja posts the outcome of an STK push here. It is a hint: the request\'s workflow wakes and asks the STK push query, which alone decides.',
    tags: TAGS, caller: 'anyone', errors: [429], responses: { 200: { description: 'Taken.', schema: DarajaAcknowledgement } },
    requestExample: { Body: { stkCallback: { MerchantRequestID: '29115-34620561-1', CheckoutRequestID: 'ws_CO_191220191020363925', ResultCode: 1032, ResultDesc: 'Request cancelled by user' } } },
  }),
  darajaPaybillValidation: routeDocs({
    operationId: 'darajaPaybillValidation',
    summary: 'Paybill validation (Daraja C2B ValidationURL)',
    description:
      'Before M-Pesa completes a paybill payment it asks here. The organization the account number (a request code `<organization>-<request>`) ' +
      'or the payer\'s number points to is asked at its verification URL within MPESA_VALIDATION_TIMEOUT_MS (Safaricom waits about 8 s for the whole answer); ' +
      'no answer in time takes its accept-by-default setting. Payments nobody has to decide are accepted; a validation that cannot be read ' +
      '(a field missing or of the wrong type, a control character in any field, a body that is not JSON) is rejected with 200 and `C2B00016`, ' +
      'never a 4xx, and one with an amount that is not whole shillings too (`C2B00013`).',
    tags: TAGS, caller: 'anyone', errors: [429], responses: { 200: { description: 'The decision.', schema: DarajaAcknowledgement } },
    requestExample: {
      TransactionType: 'Pay Bill', TransID: 'RKTQDM7W6S', TransTime: '20191122063845', TransAmount: '10', BusinessShortCode: '600638',
      BillRefNumber: '3-901', InvoiceNumber: '', OrgAccountBalance: '', ThirdPartyTransID: '', MSISDN: '25470****149', FirstName: 'John', MiddleName: '', LastName: 'Doe',
    },
  }),
  darajaPaybillConfirmation: routeDocs({
    operationId: 'darajaPaybillConfirmation',
    summary: 'Paybill confirmation (Daraja C2B ConfirmationURL)',
    description:
      'M-Pesa reports a completed paybill payment here. It is believed only once transaction status confirms it (amount, receipt); ' +
      'it then matches the request its account number names, or by the payer\'s number where it comes in full. A repeat starts nothing.',
    tags: TAGS, caller: 'anyone', errors: [429], responses: { 200: { description: 'Taken.', schema: DarajaAcknowledgement } },
  }),
  darajaResult: routeDocs({
    operationId: 'darajaResult',
    summary: 'Asynchronous result (Daraja ResultURL)',
    description: 'B2C, reversal and transaction status results. A B2C or reversal result wakes its workflow (a hint); a transaction status answer, matched by the ConversationID Daraja gave only to us, is kept for the workflow that asked.',
    tags: TAGS, caller: 'anyone', errors: [429], responses: { 200: { description: 'Taken.', schema: DarajaAcknowledgement } },
  }),
  darajaQueueTimeout: routeDocs({
    operationId: 'darajaQueueTimeout',
    summary: 'Queue time-out (Daraja QueueTimeOutURL)',
    description: 'A request timed out in Daraja\'s queue: its workflow wakes and asks transaction status.',
    tags: TAGS, caller: 'anyone', errors: [429], responses: { 200: { description: 'Taken.', schema: DarajaAcknowledgement } },
  }),
};

const AIRTEL_DOCS = routeDocs({
  operationId: 'airtelCallback',
  summary: 'Airtel Money callback (the callback URL registered in Airtel\'s portal)',
  description:
    'Airtel Money reports a USSD push\'s outcome here. It is a hint: the request\'s workflow wakes and asks Airtel\'s transaction enquiry, which alone decides. ' +
    'With AIRTEL_CALLBACK_KEY set, a callback whose `hash` is not Base64(HMAC-SHA256(key, its `transaction` object as compact JSON)) is refused (403) and wakes nothing.',
  tags: TAGS, caller: 'anyone', errors: [403, 429], responses: { 200: { description: 'Taken.', schema: AirtelAcknowledgement } },
  requestExample: { transaction: { id: 'C0d1e2f3a4b5c6d7e8f9a0b1', message: 'Paid UGX 1,500 to Merchant', status_code: 'TS', airtel_money_id: 'MP210603.1234.L06941' }, hash: 'zITVAAGYSlzl1WkUQJn81kbpT5drH3koffT8jCkcJJA=' },
});

export const operatorCallbackRoutes = (deps: AppDeps) => {
  const { sql, config, launcher } = deps;
  const daraja = config.mpesa;
  const verificationTransport = outgoingTransport({ sandbox: config.sandbox, caFile: config.webhooks.caFile, timeoutMs: daraja?.validationTimeoutMs ?? 3000 });

  /** Keeps what an operator said about one of our operations and wakes its workflow; failures are logged, never answered. */
  async function wake(operation: NetworkOperation, said: unknown, asResult = false): Promise<void> {
    try {
      if (asResult) await recordResult(sql, operation.id, said);
      else await recordHint(sql, operation.id, said);
      await launcher.signalNetworkHint(operation.workflowId, { reference: operation.kind === 'status_query' ? operation.subject : operation.reference });
    } catch (error) {
      // The workflow asks the operator at its next poll anyway.
      logger.warn('operator callback not passed on; the next poll asks the operator', { network: operation.network, reference: operation.reference, error });
    }
  }

  /**
   * The payer of a paybill payment and the request its account number names: the number in full
   * when Daraja gives it; a masked or hashed one stands for the named request's number only when it
   * fits it; otherwise it is kept as Daraja gave it (and matches no request by number).
   */
  async function paybillPayer(body: PaybillPaymentBody, amount: string): Promise<{ phoneNumber: string; request: BilledRequest | null }> {
    const given = String(body.MSISDN);
    const named = body.BillRefNumber ? await requestOfBillReference(sql, String(body.BillRefNumber), CONNECTED_NETWORK.daraja, 'KES') : undefined;
    const request = named && parsePositiveAmount(named.amount) !== null && Number(named.amount) === Number(amount) ? named : null;
    const full = fullNumberOf(given);
    if (full !== null) return { phoneNumber: full, request: request && request.phoneNumber === full ? request : null };
    if (request && numberFitsMask(request.phoneNumber, given, sha256Hex)) return { phoneNumber: request.phoneNumber, request };
    return { phoneNumber: `+${given.replace(/\s+/g, '').replace(/^\+/, '')}`.slice(0, 70), request: null };
  }

  const wholeShillings = (value: string | number) => {
    const amount = String(value).trim();
    return /^\d{1,12}(\.0+)?$/.test(amount) && parsePositiveAmount(amount.replace(/\.0+$/, '')) !== null ? amount.replace(/\.0+$/, '') : null;
  };

  // Counted against the operator and the account its callbacks are for (Daraja's shortcode, MoMo's target environment).
  const operatorAccount = {
    daraja: `${CONNECTED_NETWORK.daraja}:${daraja?.shortcode ?? '-'}`,
    momo: `${CONNECTED_NETWORK.momo}:${config.momoMarkets.map((market) => market.targetEnvironment).join(',') || '-'}`,
    airtel: `Airtel:${config.airtel?.clientId ?? '-'}`,
  };

  return new Elysia({ name: 'operator-callbacks' })
    // Before the body is read and before anything is looked up: past a limit a request costs one counter row.
    .onRequest(async ({ request, server }) => {
      const operator = callbackOperatorOf(request);
      if (operator === null) return;
      const address = throttledAddress(clientAddress(request, server, config.console.trustProxy) ?? 'unknown');
      const admission = await admitOperatorCallback(sql, { address, operator: operatorAccount[operator], limits: config.operatorCallbacks });
      if (admission.admitted) return;
      countThrottledCallback(OPERATOR_NAMES[operator], admission.limit);
      throw throttled(admission.retryAfterSeconds);
    })
    .post(DARAJA_CALLBACK_PATHS.stkResult, async ({ body }) => {
      const callback = body.Body.stkCallback;
      const operation = daraja ? await findOperationByOperatorReference(sql, CONNECTED_NETWORK.daraja, callback.CheckoutRequestID) : undefined;
      if (operation) {
        await wake(operation, body);
        return ACCEPTED;
      }
      const items = callbackItems(callback);
      const msisdn = items.PhoneNumber ?? '';
      const receipt = items.MpesaReceiptNumber ?? '';
      const amount = wholeShillings(items.Amount ?? '');
      if (!daraja || String(callback.ResultCode) !== '0' || !/^\d{12}$/.test(msisdn) || !/^[A-Z0-9]{6,20}$/.test(receipt) || amount === null) {
        logger.info('STK callback for no prompt of ours ignored', { checkoutRequestId: callback.CheckoutRequestID, resultCode: String(callback.ResultCode) });
        return ACCEPTED;
      }
      // A push whose answer was lost: its callback names it by number and amount.
      const unanswered = await claimUnanswered(sql, CONNECTED_NETWORK.daraja, `+${msisdn}`, amount, callback.CheckoutRequestID, UNANSWERED_PROMPT_SECONDS);
      if (unanswered) {
        await wake(unanswered, body);
        return ACCEPTED;
      }
      // A payment no prompt of ours names: believed once transaction status confirms it, then matched by number.
      await reportForConfirmation({
        network: CONNECTED_NETWORK.daraja, remoteTransactionId: receipt, phoneNumber: `+${msisdn}`, amount, currency: 'KES',
        reference: '', promptReference: null, paymentDate: new Date().toISOString(),
      });
      return ACCEPTED;
    }, { body: requestSchema(StkCallback), ...DOCS.darajaStkResult })
    .post(DARAJA_CALLBACK_PATHS.validation, async ({ body: checked }) => {
      // Daraja waits for a decision: a validation that cannot be read is refused, so the subscriber pays for nothing nobody could follow.
      if (!checked.valid || holdsControlCharacter(checked.body)) {
        logger.warn('paybill validation unreadable: rejected', { fields: checked.valid ? ['control characters'] : Object.keys(checked.errors) });
        return { ResultCode: 'C2B00016', ResultDesc: 'Rejected' };
      }
      const body = checked.body;
      const amount = wholeShillings(body.TransAmount);
      if (!daraja || amount === null) return { ResultCode: 'C2B00013', ResultDesc: 'Rejected' };
      const payer = await paybillPayer(body, amount);
      const organizationId = payer.request?.organizationId
        ?? (payer.phoneNumber.includes('*') ? null : await lookAlikeOrganization(sql, { phoneNumber: payer.phoneNumber, currency: 'KES', amount }));
      const settings = organizationId === null ? undefined : await verificationSettingsOf(sql, organizationId);
      // Nobody to ask (no organization, or none with a verification URL): the payment goes on to matching.
      if (!settings?.url) return { ...ACCEPTED, ResultCode: '0' };
      const decided = await askMerchant(settings.url, {
        phonenumber: payer.phoneNumber, amount, currency_code: 'KES', reference: String(body.BillRefNumber ?? ''), remote_transaction_id: body.TransID,
      }, verificationTransport, settings.acceptByDefault);
      logger.info('paybill validation answered', { transId: body.TransID, organizationId, decision: decided.decision, decidedBy: decided.decidedBy, detail: decided.detail });
      return decided.decision === 'accept' ? { ResultCode: '0', ResultDesc: 'Accepted' } : { ResultCode: 'C2B00016', ResultDesc: 'Rejected' };
    }, { body: checkedRequestSchema(PaybillPayment), ...DOCS.darajaPaybillValidation })
    .post(DARAJA_CALLBACK_PATHS.confirmation, async ({ body }) => {
      const amount = wholeShillings(body.TransAmount);
      if (!daraja || amount === null) {
        logger.warn('paybill confirmation ignored', { transId: body.TransID, reason: daraja ? 'amount' : 'no M-Pesa connector' });
        return ACCEPTED;
      }
      const payer = await paybillPayer(body, amount);
      // Believed once transaction status confirms it; the request its account number names is its prompt.
      await reportForConfirmation({
        network: CONNECTED_NETWORK.daraja, remoteTransactionId: body.TransID, phoneNumber: payer.phoneNumber, amount, currency: 'KES',
        reference: String(body.BillRefNumber ?? '').slice(0, 255), promptReference: payer.request ? promptReference(payer.request.id, 0) : null,
        paymentDate: new Date().toISOString(),
      });
      return ACCEPTED;
    }, { body: requestSchema(PaybillPayment), ...DOCS.darajaPaybillConfirmation })
    .post(DARAJA_CALLBACK_PATHS.result, async ({ body }) => {
      const result = readResult(body);
      const operation = await operationOfResult(result);
      if (operation) await wake(operation, body, operation.kind === 'status_query');
      else logger.info('Daraja result for no operation of ours ignored', { conversationId: result?.conversationId });
      return ACCEPTED;
    }, { body: requestSchema(DarajaResult), ...DOCS.darajaResult })
    .post(DARAJA_CALLBACK_PATHS.timeout, async ({ body }) => {
      const operation = await operationOfResult(readResult(body));
      // The request timed out in Daraja's queue: the workflow asks transaction status at once.
      if (operation) await wake(operation, operation.kind === 'status_query' ? null : body);
      return ACCEPTED;
    }, { body: requestSchema(DarajaResult), ...DOCS.darajaQueueTimeout })
    .put(`${MOMO_CALLBACK_PATH}/:referenceId`, async ({ params, body }) => await momoCallback(params.referenceId, body), momoRoute('momoCallback', 'PUT'))
    .post(`${MOMO_CALLBACK_PATH}/:referenceId`, async ({ params, body }) => await momoCallback(params.referenceId, body), momoRoute('momoCallbackPost', 'POST'))
    .post(AIRTEL_CALLBACK_PATH, async ({ body, request }) => await airtelCallback(body, request), {
      // Before validation rebuilds the body: the transaction object as it arrived, for its hash.
      transform: ({ body, request }) => {
        receivedTransactions.set(request, JSON.stringify(nested(body, 'transaction')) ?? '');
      },
      body: requestSchema(AirtelCallback),
      ...AIRTEL_DOCS,
    });

  /**
   * Starts the workflow that confirms a reported payment with the operator, then stores and credits
   * it. Temporal out of reach is a 503 (try again), never a 500: the payment is not recorded yet.
   */
  async function reportForConfirmation(payment: IncomingPaymentInput): Promise<void> {
    try {
      await launcher.startIncomingCollection(payment, { confirm: true });
    } catch (cause) {
      logger.error('reported payment not taken: Temporal out of reach', { network: payment.network, remoteTransactionId: payment.remoteTransactionId, error: cause });
      throw new ApiError(503, { detail: 'The service is temporarily unavailable. Try again shortly.' }, { 'Retry-After': '5' }, { cause });
    }
  }

  /** The operation a Daraja result names: by the ConversationID it gave us, else (a B2C whose answer was lost) by our OriginatorConversationID. */
  async function operationOfResult(result: ReturnType<typeof readResult>): Promise<NetworkOperation | undefined> {
    if (!daraja || result === null) return undefined;
    if (result.conversationId) {
      const operation = await findOperationByOperatorReference(sql, CONNECTED_NETWORK.daraja, result.conversationId);
      if (operation) return operation;
    }
    return result.originatorConversationId ? await findOperation(sql, CONNECTED_NETWORK.daraja, result.originatorConversationId) : undefined;
  }

  async function momoCallback(referenceId: string, body: unknown) {
    // Every market calls back at the same path: the reference (derived from the market's own API user) names one operation.
    let operation: NetworkOperation | undefined;
    for (const market of config.momoMarkets) operation ??= await findOperationByOperatorReference(sql, market.network, referenceId);
    if (operation) await wake(operation, body);
    else logger.info('MoMo callback for no operation of ours ignored', { referenceId });
    return { status: 'received' as const };
  }

  /**
   * Airtel's callback, checked against AIRTEL_CALLBACK_KEY when one is set: the hash is computed over
   * the `transaction` object as it arrived (its keys in their order), not over the schema's output.
   */
  async function airtelCallback(body: v.InferOutput<typeof AirtelCallback>, request: Request) {
    const airtel = config.airtel;
    if (airtel?.callbackKey && !callbackHashMatches(airtel.callbackKey, receivedTransactions.get(request) ?? '', body.hash)) {
      logger.warn('Airtel callback refused: its hash does not match', { transactionId: String(body.transaction.id) });
      throw new ApiError(403, { detail: 'The callback\'s hash does not match.' });
    }
    const reference = String(body.transaction.id);
    const operation = airtel ? await findOperationByOperatorReference(sql, airtelNetworks(airtel.countries), reference) : undefined;
    if (operation) await wake(operation, body);
    else logger.info('Airtel callback for no operation of ours ignored', { transactionId: reference });
    return { status: 'received' as const };
  }
};

/** The `transaction` object of each Airtel callback as it arrived (compact JSON), by request. */
const receivedTransactions = new WeakMap<Request, string>();

/** The operators whose callback routes are throttled, as the metrics name them. */
const OPERATOR_NAMES = { ...CONNECTED_NETWORK, airtel: 'Airtel' } as const;

const DARAJA_PATHS: ReadonlySet<string> = new Set(Object.values(DARAJA_CALLBACK_PATHS));

/** The operator whose callback path a request is on (with or without a trailing slash, any method), or null. */
function callbackOperatorOf(request: Request): keyof typeof OPERATOR_NAMES | null {
  const path = new URL(request.url).pathname.replace(/\/+$/, '');
  if (DARAJA_PATHS.has(path)) return 'daraja';
  if (path === AIRTEL_CALLBACK_PATH) return 'airtel';
  return path.startsWith(`${MOMO_CALLBACK_PATH}/`) ? 'momo' : null;
}

function momoRoute(operationId: string, method: 'PUT' | 'POST') {
  return {
    params: requestSchema(v.object({ referenceId: v.pipe(v.string(), v.regex(/^[0-9a-f-]{36}$/i, 'Not found.'), v.description('The X-Reference-Id of the request to pay or transfer.')) })),
    body: requestSchema(MomoCallback),
    ...routeDocs({
      operationId,
      summary: `MoMo callback (X-Callback-Url, ${method})`,
      description: 'MTN MoMo reports a request to pay or a transfer here (once, PUT or POST). It is a hint: the workflow wakes and asks MoMo\'s GET of the transaction, which alone decides.',
      tags: TAGS, caller: 'anyone', errors: [404, 429], responses: { 200: { description: 'Taken.', schema: MomoAcknowledgement } },
      requestExample: { financialTransactionId: '23503452', externalId: 'req-901-1', amount: '1500', currency: 'UGX', payer: { partyIdType: 'MSISDN', partyId: '256772123456' }, status: 'SUCCESSFUL' },
    }),
  };
}
