/**
 * A contract simulator of Safaricom's M-Pesa Daraja API on loopback, written from Safaricom's
 * public documentation (OAuth client credentials; STK push, its callback and its query; C2B
 * register URL, validation and confirmation; B2C v3 with its duplicate OriginatorConversationID
 * refusal; transaction status and reversal answered asynchronously at the ResultURL). It plays the
 * operator for the network tests and `npm run start:networks`: subscribers and payees are scripted
 * per number, and it misbehaves on request (a callback that lies, none, a late one, a 500 after
 * recording, a slow answer, expired tokens, a result lost on its way to the ResultURL).
 *
 * Transaction status finds a payment by its receipt (`TransactionID`), or by the
 * `OriginalConversationID` of a request of the API's own (a B2C's OriginatorConversationID), as
 * Daraja documents; an `OriginalConversationID` it cannot find answers `R000002`. Whether it also
 * finds an STK push's payment by the push's CheckoutRequestID or MerchantRequestID is not documented:
 * `checkoutRequestLookup` chooses (`answered`, the default, or `refused`).
 *
 * The Reversal API reverses a transaction once: a reversal of a transaction already reversed, by the
 * API or outside it (`reverseOutOfBand`: the M-Pesa organization portal, customer care), is taken
 * and answered at the ResultURL with `R000001`, "The transaction has already been reversed", as
 * Safaricom's result codes for the Reversal API document.
 */
import { SIMULATOR_HOST, serveWithOutages, type LateAnswer, type OutageMode } from './outage';
import { createScheduler } from './scheduler';

export type DarajaCredentials = {
  consumerKey: string;
  consumerSecret: string;
  shortcode: string;
  passkey: string;
  initiatorName: string;
  securityCredential: string;
};
export type StkBehaviour = {
  outcome: 'pay' | 'cancel' | 'insufficient' | 'unreachable' | 'wrong-pin' | 'ignore';
  callback: 'truthful' | 'none' | 'lie' | 'twice';
  decideAfterMs?: number;
  /** How long after the subscriber's decision the callback is sent (the simulator's `callbackDelayMs` when absent). */
  callbackAfterMs?: number;
};
export type PayoutBehaviour = { outcome: 'complete' | 'fail'; callback: 'truthful' | 'none' | 'lie' };
export type FaultMode = '500-after-recording' | '500-before-recording' | 'slow';
/** Whether transaction status finds an STK push's payment by the push's own ids (undocumented: see above). */
export type CheckoutRequestLookup = 'answered' | 'refused';
export type DarajaSimulatorOptions = {
  credentials: DarajaCredentials;
  port?: number;
  decisionDelayMs?: number;
  callbackDelayMs?: number;
  tokenLifetimeSeconds?: number;
  slowMs?: number;
  checkoutRequestLookup?: CheckoutRequestLookup;
};
export type PaybillPayment = {
  msisdn: string;
  amount: string;
  billRefNumber: string;
  maskMsisdn?: boolean;
  transId?: string;
  firstName?: string;
};
export type PaybillOutcome = {
  transId: string;
  validation: {
    answer: { ResultCode: string | number; ResultDesc?: string; ThirdPartyTransID?: string } | null;
    elapsedMs: number;
    status: number | null;
  } | null;
  completed: boolean;
  confirmation: { status: number | null; body: unknown; elapsedMs: number } | null;
};
type Api = 'oauth' | 'stkpush' | 'stkquery' | 'registerurl' | 'b2c' | 'transactionstatus' | 'reversal';
type StkPush = {
  checkoutRequestId: string;
  merchantRequestId: string;
  amount: number;
  msisdn: string;
  accountReference: string;
  callbackUrl: string;
  outcome: StkBehaviour['outcome'];
  decided: boolean;
  receipt: string | null;
  charged: boolean;
  /**
   * Whether the partner got the push's own answer (its CheckoutRequestID): `lost` when a system
   * error went in its place or the partner had hung up before it (see outage.ts `undelivered`).
   */
  answer: 'sent' | 'lost';
  /** How many result callbacks were sent to its CallBackURL (0: none, as the subscriber's behaviour chose). */
  callbacksSent: number;
};
type Payout = {
  originatorConversationId: string;
  conversationId: string;
  amount: number;
  msisdn: string;
  commandId: string;
  completed: boolean;
  receipt: string | null;
  submissions: number;
  resultCode: number;
  finishedAt: string | null;
};
type Reversal = {
  conversationId: string;
  originatorConversationId: string;
  transactionId: string;
  amount: number;
  completed: boolean;
  resultCode: string | number;
  receipt: string | null;
  /** When M-Pesa processed it (epoch ms). */
  at: number;
  /** Reversed outside the Reversal API (`reverseOutOfBand`). */
  outOfBand: boolean;
};
/** The APIs that answer at the ResultURL. */
type ResultApi = 'b2c' | 'transactionstatus' | 'reversal';
/** What transaction status can find: every money movement, by its receipt (`stkPush`: an STK push's, found by its ids only in `answered` mode). */
type Movement = {
  receipt: string;
  amount: number;
  status: 'Completed' | 'Failed';
  debitParty: string;
  creditParty: string;
  originatorConversationId: string;
  conversationId: string;
  reason: string;
  stkPush?: boolean;
  /** When M-Pesa completed (or failed) it, epoch ms: the statement's Completion Time. */
  at: number;
  /** The transaction it belongs to: a reversal's original receipt (the statement's Linked Transaction ID). */
  linkedId?: string;
};
export type DarajaSimulator = {
  url: string;
  stop(): Promise<void>;
  subscriber(msisdn: string, behaviour: Partial<StkBehaviour>): void;
  payee(msisdn: string, behaviour: Partial<PayoutBehaviour>): void;
  failNext(api: Api, mode: FaultMode): void;
  expireTokens(): void;
  externalValidation(enabled: boolean): void;
  checkoutRequestLookup(lookup: CheckoutRequestLookup): void;
  /** How long transaction status takes to answer at the ResultURL from now on (null: the simulator's `callbackDelayMs`). */
  transactionStatusDelay(ms: number | null): void;
  /**
   * The next `times` results of `api` (default 1) are lost on their way to the ResultURL: M-Pesa
   * carried the request out and sent its result, which never arrived. What was done stays done.
   */
  loseResults(api: ResultApi, times?: number): void;
  /** Reverses a completed transaction outside the Reversal API, as the M-Pesa organization portal does. */
  reverseOutOfBand(transactionId: string): void;
  payBill(payment: PaybillPayment): Promise<PaybillOutcome>;
  stkPushes(): StkPush[];
  /**
   * The organization's M-PESA statement as Safaricom's business portal exports it (CSV): every
   * movement on the shortcode, money in as Paid In and out as Withdrawn, its Completion Time in
   * East Africa Time, a reversal linked to the receipt it sent back.
   */
  statement(): string;
  payouts(): Payout[];
  reversals(): Reversal[];
  registeredUrls(): { shortCode: string; responseType: string; confirmationUrl: string; validationUrl: string } | null;
  calls(): { api: string; status: number; at: number }[];
  /** Takes the whole API down (OAuth included) or brings it back: see outage.ts. */
  outage(mode: OutageMode): Promise<void>;
  /** Answers the next matching calls out of time: processed before or after the answer, answered late or 500. */
  late(rule: LateAnswer): void;
  clearLate(): void;
  /** Resolves once every late call has been processed and answered. */
  settled(): Promise<void>;
};

const STK_RESULTS: Record<StkBehaviour['outcome'], { code: number; description: string }> = {
  pay: { code: 0, description: 'The service request is processed successfully.' },
  cancel: { code: 1032, description: 'Request cancelled by user' },
  insufficient: { code: 1, description: 'The balance is insufficient for the transaction.' },
  unreachable: { code: 1037, description: 'DS timeout user cannot be reached' },
  'wrong-pin': { code: 2001, description: 'The initiator information is invalid.' },
  ignore: { code: 1037, description: 'DS timeout user cannot be reached' },
};
const FORBIDDEN_URL_WORDS = /m-?pesa|safaricom|exe|exec|cmd|sql|query/i;
const MSISDN = /^254[17]\d{8}$/;
const MAX_BODY_BYTES = 1_048_576;
const CUSTOMER_NAMES = ['JOHN DOE', 'JANE WANJIRU', 'PETER OTIENO'];

const requestId = () => `${Math.floor(Math.random() * 99999)}-${Math.floor(Math.random() * 9999999)}-1`;
const errorBody = (status: number, errorCode: string, errorMessage: string) =>
  Response.json({ requestId: requestId(), errorCode, errorMessage }, { status });
const badRequest = (field: string) => errorBody(400, '400.002.02', `Bad Request - Invalid ${field}`);
const receiptNumber = () =>
  Array.from({ length: 10 }, () => 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'[Math.floor(Math.random() * 36)]).join('');
const conversationId = () =>
  `AG_${new Date().toISOString().slice(0, 10).replaceAll('-', '')}_${crypto.randomUUID().replaceAll('-', '').slice(0, 20)}`;
const eatTimestamp = () => new Date(Date.now() + 3 * 3600_000).toISOString().replace(/\D/g, '').slice(0, 14);
const mask = (msisdn: string) => `${msisdn.slice(0, 4)}****${msisdn.slice(-3)}`;
/** A JSON number or a digit string, as Daraja's numeric fields arrive either way; null otherwise. */
const numeric = (value: unknown): string | null =>
  typeof value === 'number' && Number.isFinite(value)
    ? String(value)
    : typeof value === 'string' && /^\d+(\.\d+)?$/.test(value)
      ? value
      : null;
const wholePositive = (value: unknown): number | null => {
  const text = numeric(value);
  return text !== null && /^\d+(\.0+)?$/.test(text) && Number(text) >= 1 ? Number(text) : null;
};

export async function startDarajaSimulator(options: DarajaSimulatorOptions): Promise<DarajaSimulator> {
  const { credentials } = options;
  const tokens = new Map<string, number>();
  const subscribers = new Map<string, Partial<StkBehaviour>>();
  const payees = new Map<string, Partial<PayoutBehaviour>>();
  const faults = new Map<Api, FaultMode>();
  const pushes = new Map<string, StkPush>();
  const payouts = new Map<string, Payout>();
  const reversals: Reversal[] = [];
  const movements = new Map<string, Movement>();
  /** Each push's answer, so that an answer its partner never received is kept with the push. */
  const pushAnswers = new WeakMap<Response, StkPush>();
  const reversed = new Set<string>();
  const lostResults = new Map<ResultApi, number>();
  const log: { api: string; status: number; at: number }[] = [];
  const { later, track, stop } = createScheduler();
  let registered: { shortCode: string; responseType: string; confirmationUrl: string; validationUrl: string } | null =
    null;
  let validationOn = true;
  let lookup: CheckoutRequestLookup = options.checkoutRequestLookup ?? 'answered';
  let statusDelayMs: number | undefined;

  /** POSTs JSON to a partner URL; Daraja does not retry, and a failure is the partner's. */
  async function send(
    url: string,
    body: unknown,
    timeoutMs = 10_000,
  ): Promise<{ status: number | null; body: unknown; elapsedMs: number }> {
    const started = Date.now();
    const answer = await track(
      fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      })
        .then(async (response) => ({ status: response.status, text: await response.text() }))
        .catch(() => null),
    );
    let parsed: unknown = answer?.text ?? null;
    try {
      parsed = answer ? JSON.parse(answer.text) : null;
    } catch {
      // Not JSON: kept as text.
    }
    return { status: answer?.status ?? null, body: parsed, elapsedMs: Date.now() - started };
  }
  const sendLater = (url: string, body: unknown, delayMs = options.callbackDelayMs ?? 100) =>
    later(delayMs, () => void send(url, body));
  /** An asynchronous result of `api`, sent to the partner's ResultURL unless `loseResults` loses it in transit. */
  function sendResult(api: ResultApi, url: string, body: unknown, delayMs?: number): void {
    const lost = lostResults.get(api) ?? 0;
    if (lost > 0) {
      lostResults.set(api, lost - 1);
      return;
    }
    sendLater(url, body, delayMs);
  }

  function authorized(request: Request): Response | null {
    const token = /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1];
    const expiresAt = token ? tokens.get(token) : undefined;
    if (expiresAt === undefined || expiresAt < Date.now()) return errorBody(401, '404.001.03', 'Invalid Access Token');
    if (!(request.headers.get('content-type') ?? '').toLowerCase().startsWith('application/json'))
      return badRequest('Content-Type');
    return null;
  }
  async function readJson(request: Request): Promise<Record<string, unknown> | Response> {
    const text = await request.text();
    if (text.length > MAX_BODY_BYTES) return errorBody(413, '413.001.01', 'Request Entity Too Large');
    try {
      const body = JSON.parse(text) as unknown;
      if (typeof body === 'object' && body !== null && !Array.isArray(body)) return body as Record<string, unknown>;
    } catch {
      // Falls through.
    }
    return errorBody(400, '400.002.05', 'Invalid Request Payload');
  }
  const password = (timestamp: string) =>
    Buffer.from(`${credentials.shortcode}${credentials.passkey}${timestamp}`).toString('base64');
  /** The Lipa na M-Pesa Online password check; a Response when it fails. */
  function checkPassword(body: Record<string, unknown>): Response | null {
    if (numeric(body.BusinessShortCode) !== credentials.shortcode)
      return errorBody(500, '500.001.1001', 'Merchant does not exist');
    if (typeof body.Timestamp !== 'string' || !/^\d{14}$/.test(body.Timestamp)) return badRequest('Timestamp');
    if (body.Password !== password(body.Timestamp)) return errorBody(500, '500.001.1001', 'Wrong credentials');
    return null;
  }
  /** The API operator's credentials (B2C, transaction status, reversal); a Response when wrong. */
  function checkInitiator(name: unknown, credential: unknown): Response | null {
    if (name !== credentials.initiatorName) return badRequest('InitiatorName');
    if (credential !== credentials.securityCredential) return badRequest('SecurityCredential');
    return null;
  }
  const validUrl = (value: unknown) => {
    try {
      return typeof value === 'string' && /^https?:$/.test(new URL(value).protocol);
    } catch {
      return false;
    }
  };

  function oauth(request: Request): Response {
    const url = new URL(request.url);
    if (url.searchParams.get('grant_type') !== 'client_credentials')
      return errorBody(400, '400.008.02', 'Invalid grant type passed');
    const basic = /^Basic\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1];
    if (!basic) return errorBody(400, '400.008.01', 'Invalid authentication type passed');
    // Wrong key or secret: Daraja answers 400 with the authentication error (it has no 401 for this call).
    if (Buffer.from(basic, 'base64').toString() !== `${credentials.consumerKey}:${credentials.consumerSecret}`)
      return errorBody(400, '400.008.01', 'Invalid Authentication passed');
    const token = crypto.randomUUID().replaceAll('-', '').slice(0, 28);
    const lifetime = options.tokenLifetimeSeconds ?? 3599;
    tokens.set(token, Date.now() + lifetime * 1000);
    return Response.json({ access_token: token, expires_in: String(lifetime) });
  }

  function decidePush(push: StkPush): void {
    const behaviour: StkBehaviour = { outcome: 'pay', callback: 'truthful', ...subscribers.get(push.msisdn) };
    later(behaviour.decideAfterMs ?? options.decisionDelayMs ?? 300, () => {
      if (behaviour.outcome === 'ignore') return;
      push.decided = true;
      if (behaviour.outcome === 'pay') {
        push.receipt = receiptNumber();
        push.charged = true;
        movements.set(push.receipt, {
          receipt: push.receipt,
          amount: push.amount,
          status: 'Completed',
          debitParty: `${push.msisdn} - ${CUSTOMER_NAMES[0]}`,
          creditParty: `${credentials.shortcode} - Merchant`,
          originatorConversationId: push.merchantRequestId,
          conversationId: push.checkoutRequestId,
          reason: 'Customer Pay Bill Online',
          stkPush: true,
          at: Date.now(),
        });
      }
      if (behaviour.callback === 'none') return;
      const told = behaviour.callback === 'lie' ? 'pay' : behaviour.outcome;
      const result = STK_RESULTS[told];
      const receipt = told === 'pay' ? (push.receipt ?? receiptNumber()) : null;
      const callback = {
        Body: {
          stkCallback: {
            MerchantRequestID: push.merchantRequestId,
            CheckoutRequestID: push.checkoutRequestId,
            ResultCode: result.code,
            ResultDesc: result.description,
            ...(receipt
              ? {
                  CallbackMetadata: {
                    Item: [
                      { Name: 'Amount', Value: push.amount },
                      { Name: 'MpesaReceiptNumber', Value: receipt },
                      { Name: 'TransactionDate', Value: Number(eatTimestamp()) },
                      { Name: 'PhoneNumber', Value: Number(push.msisdn) },
                    ],
                  },
                }
              : {}),
          },
        },
      };
      const sendCallback = () =>
        later(behaviour.callbackAfterMs ?? options.callbackDelayMs ?? 100, () => {
          push.callbacksSent += 1;
          void send(push.callbackUrl, callback);
        });
      sendCallback();
      if (behaviour.callback === 'twice') sendCallback();
    });
  }

  async function stkPush(request: Request, fault: FaultMode | undefined): Promise<Response> {
    const body = await readJson(request);
    if (body instanceof Response) return body;
    const refused = checkPassword(body);
    if (refused) return refused;
    if (body.TransactionType !== 'CustomerPayBillOnline' && body.TransactionType !== 'CustomerBuyGoodsOnline')
      return badRequest('TransactionType');
    const amount = wholePositive(body.Amount);
    if (amount === null) return badRequest('Amount');
    const msisdn = numeric(body.PartyA);
    if (msisdn === null || !MSISDN.test(msisdn)) return badRequest('PartyA');
    if (numeric(body.PhoneNumber) === null || !MSISDN.test(numeric(body.PhoneNumber)!))
      return badRequest('PhoneNumber');
    if (numeric(body.PartyB) !== credentials.shortcode) return badRequest('PartyB');
    if (!validUrl(body.CallBackURL)) return badRequest('CallBackURL');
    if (
      typeof body.AccountReference !== 'string' ||
      body.AccountReference.length === 0 ||
      body.AccountReference.length > 12
    )
      return badRequest('AccountReference');
    if (
      body.TransactionDesc !== undefined &&
      (typeof body.TransactionDesc !== 'string' || body.TransactionDesc.length > 13)
    )
      return badRequest('TransactionDesc');
    if (fault === '500-before-recording') return errorBody(500, '500.003.1001', 'Internal Server Error');
    if (
      [...pushes.values()].some(
        (push) => push.msisdn === msisdn && !push.decided && subscribers.get(msisdn)?.outcome !== 'ignore',
      )
    ) {
      return errorBody(
        500,
        '500.001.1001',
        'Unable to lock subscriber, a transaction is already in process for the current subscriber',
      );
    }
    const push: StkPush = {
      checkoutRequestId: `ws_CO_${eatTimestamp()}${Math.floor(Math.random() * 1e9)}`,
      merchantRequestId: `${crypto.randomUUID().slice(0, 4)}-${crypto.randomUUID().slice(0, 4)}-${Date.now()}`,
      amount,
      msisdn,
      accountReference: body.AccountReference,
      callbackUrl: String(body.CallBackURL),
      outcome: subscribers.get(msisdn)?.outcome ?? 'pay',
      decided: false,
      receipt: null,
      charged: false,
      answer: 'sent',
      callbacksSent: 0,
    };
    pushes.set(push.checkoutRequestId, push);
    decidePush(push);
    if (fault === '500-after-recording') {
      push.answer = 'lost';
      return errorBody(500, '500.003.1001', 'Internal Server Error');
    }
    const answer = Response.json({
      MerchantRequestID: push.merchantRequestId,
      CheckoutRequestID: push.checkoutRequestId,
      ResponseCode: '0',
      ResponseDescription: 'Success. Request accepted for processing',
      CustomerMessage: 'Success. Request accepted for processing',
    });
    pushAnswers.set(answer, push);
    return answer;
  }

  async function stkQuery(request: Request): Promise<Response> {
    const body = await readJson(request);
    if (body instanceof Response) return body;
    const refused = checkPassword(body);
    if (refused) return refused;
    const push = typeof body.CheckoutRequestID === 'string' ? pushes.get(body.CheckoutRequestID) : undefined;
    if (!push) return badRequest('CheckoutRequestID');
    if (!push.decided) return errorBody(500, '500.001.1001', 'The transaction is being processed');
    const result = STK_RESULTS[push.outcome];
    return Response.json({
      ResponseCode: '0',
      ResponseDescription: 'The service request has been accepted successsfully',
      MerchantRequestID: push.merchantRequestId,
      CheckoutRequestID: push.checkoutRequestId,
      ResultCode: String(result.code),
      ResultDesc: result.description,
    });
  }

  async function registerUrl(request: Request): Promise<Response> {
    const body = await readJson(request);
    if (body instanceof Response) return body;
    if (numeric(body.ShortCode) !== credentials.shortcode) return badRequest('ShortCode');
    if (body.ResponseType !== 'Completed' && body.ResponseType !== 'Cancelled') return badRequest('ResponseType');
    for (const field of ['ValidationURL', 'ConfirmationURL'] as const) {
      if (!validUrl(body[field]) || FORBIDDEN_URL_WORDS.test(String(body[field]))) return badRequest(field);
    }
    registered = {
      shortCode: credentials.shortcode,
      responseType: body.ResponseType,
      confirmationUrl: String(body.ConfirmationURL),
      validationUrl: String(body.ValidationURL),
    };
    return Response.json({ OriginatorCoversationID: requestId(), ResponseCode: '0', ResponseDescription: 'success' });
  }

  async function payBill(payment: PaybillPayment): Promise<PaybillOutcome> {
    const transId = payment.transId ?? receiptNumber();
    const names = (payment.firstName ?? 'JOHN DOE').split(' ');
    const base = {
      TransactionType: 'Pay Bill',
      TransID: transId,
      TransTime: eatTimestamp(),
      TransAmount: payment.amount,
      BusinessShortCode: credentials.shortcode,
      BillRefNumber: payment.billRefNumber,
      InvoiceNumber: '',
      OrgAccountBalance: '',
      ThirdPartyTransID: '',
      MSISDN: payment.maskMsisdn === false ? payment.msisdn : mask(payment.msisdn),
      FirstName: names[0] ?? '',
      MiddleName: '',
      LastName: names.slice(1).join(' '),
    };
    if (!registered) {
      record(transId, payment, '');
      return { transId, validation: null, completed: true, confirmation: null };
    }
    let validation: PaybillOutcome['validation'] = null;
    let completed = true;
    let thirdParty = '';
    if (validationOn) {
      const sent = await send(registered.validationUrl, base, 8000);
      const answer =
        typeof sent.body === 'object' && sent.body !== null
          ? (sent.body as { ResultCode: string | number; ResultDesc?: string; ThirdPartyTransID?: string })
          : null;
      validation = {
        answer: sent.status !== null && sent.status < 300 ? answer : null,
        elapsedMs: sent.elapsedMs,
        status: sent.status,
      };
      if (validation.answer && 'ResultCode' in validation.answer)
        completed = String(validation.answer.ResultCode) === '0';
      else completed = registered.responseType === 'Completed';
      thirdParty = validation.answer?.ThirdPartyTransID ?? '';
    }
    if (!completed) return { transId, validation, completed, confirmation: null };
    const balance = record(transId, payment, thirdParty);
    const sent = await send(registered.confirmationUrl, {
      ...base,
      OrgAccountBalance: balance,
      ThirdPartyTransID: thirdParty,
    });
    return {
      transId,
      validation,
      completed,
      confirmation: { status: sent.status, body: sent.body, elapsedMs: sent.elapsedMs },
    };
  }

  let utilityBalance = 0;
  /** A completed paybill payment, for transaction status; returns the paybill's new balance. */
  function record(transId: string, payment: PaybillPayment, _thirdParty: string): string {
    utilityBalance += Number(payment.amount);
    movements.set(transId, {
      receipt: transId,
      amount: Number(payment.amount),
      status: 'Completed',
      debitParty: `${payment.msisdn} - ${payment.firstName ?? CUSTOMER_NAMES[0]}`,
      creditParty: `${credentials.shortcode} - Merchant`,
      originatorConversationId: requestId(),
      conversationId: conversationId(),
      reason: 'Pay Bill',
      at: Date.now(),
    });
    return utilityBalance.toFixed(2);
  }

  async function b2c(request: Request, fault: FaultMode | undefined): Promise<Response> {
    const body = await readJson(request);
    if (body instanceof Response) return body;
    const refused = checkInitiator(body.InitiatorName, body.SecurityCredential);
    if (refused) return refused;
    if (typeof body.OriginatorConversationID !== 'string' || body.OriginatorConversationID.length === 0)
      return badRequest('OriginatorConversationID');
    if (!['SalaryPayment', 'BusinessPayment', 'PromotionPayment'].includes(String(body.CommandID)))
      return badRequest('CommandID');
    const amount = wholePositive(body.Amount);
    if (amount === null) return badRequest('Amount');
    if (numeric(body.PartyA) !== credentials.shortcode) return badRequest('PartyA');
    const msisdn = numeric(body.PartyB);
    if (msisdn === null || !MSISDN.test(msisdn)) return badRequest('PartyB');
    if (typeof body.Remarks !== 'string' || body.Remarks.length < 2 || body.Remarks.length > 100)
      return badRequest('Remarks');
    if (!validUrl(body.ResultURL)) return badRequest('ResultURL');
    if (!validUrl(body.QueueTimeOutURL)) return badRequest('QueueTimeOutURL');
    if (fault === '500-before-recording') return errorBody(500, '500.003.1001', 'Internal Server Error');
    const existing = payouts.get(body.OriginatorConversationID);
    if (existing) {
      existing.submissions += 1;
      return errorBody(500, '500.002.1001', 'Duplicate OriginatorConversationID.');
    }
    const payout: Payout = {
      originatorConversationId: body.OriginatorConversationID,
      conversationId: conversationId(),
      amount,
      msisdn,
      commandId: String(body.CommandID),
      completed: false,
      receipt: null,
      submissions: 1,
      resultCode: 0,
      finishedAt: null,
    };
    payouts.set(payout.originatorConversationId, payout);
    const behaviour: PayoutBehaviour = { outcome: 'complete', callback: 'truthful', ...payees.get(msisdn) };
    later(options.decisionDelayMs ?? 300, () => {
      payout.receipt = receiptNumber();
      payout.completed = behaviour.outcome === 'complete';
      payout.resultCode = payout.completed ? 0 : 2040;
      payout.finishedAt = new Date().toISOString();
      movements.set(payout.receipt, {
        receipt: payout.receipt,
        amount,
        status: payout.completed ? 'Completed' : 'Failed',
        debitParty: `${credentials.shortcode} - Merchant`,
        creditParty: `${msisdn} - ${CUSTOMER_NAMES[1]}`,
        originatorConversationId: payout.originatorConversationId,
        conversationId: payout.conversationId,
        reason: 'Business Payment to Customer via API',
        at: Date.now(),
      });
      if (behaviour.callback === 'none') return;
      const told = behaviour.callback === 'lie' ? !payout.completed : payout.completed;
      sendResult('b2c', String(body.ResultURL), b2cResult(payout, told));
    });
    if (fault === '500-after-recording') return errorBody(500, '500.003.1001', 'Internal Server Error');
    return Response.json({
      ConversationID: payout.conversationId,
      OriginatorConversationID: payout.originatorConversationId,
      ResponseCode: '0',
      ResponseDescription: 'Accept the service request successfully.',
    });
  }

  function b2cResult(payout: Payout, completed: boolean) {
    const reference = {
      ReferenceData: {
        ReferenceItem: {
          Key: 'QueueTimeoutURL',
          Value: 'https://internalsandbox.safaricom.co.ke/mpesa/b2cresults/v1/submit',
        },
      },
    };
    if (!completed) {
      return {
        Result: {
          ResultType: 0,
          ResultCode: 2040,
          ResultDesc:
            "Credit Party customer type (Unregistered or Registered Customer) can't be supported by the service.",
          OriginatorConversationID: payout.originatorConversationId,
          ConversationID: payout.conversationId,
          TransactionID: payout.receipt ?? receiptNumber(),
          ...reference,
        },
      };
    }
    return {
      Result: {
        ResultType: 0,
        ResultCode: 0,
        ResultDesc: 'The service request is processed successfully.',
        OriginatorConversationID: payout.originatorConversationId,
        ConversationID: payout.conversationId,
        TransactionID: payout.receipt,
        ResultParameters: {
          ResultParameter: [
            { Key: 'TransactionAmount', Value: payout.amount },
            { Key: 'TransactionReceipt', Value: payout.receipt },
            { Key: 'ReceiverPartyPublicName', Value: `${payout.msisdn} - ${CUSTOMER_NAMES[1]}` },
            {
              Key: 'TransactionCompletedDateTime',
              Value: new Date().toLocaleString('en-GB').replace(',', '').replaceAll('/', '.'),
            },
            { Key: 'B2CUtilityAccountAvailableFunds', Value: 10116.0 },
            { Key: 'B2CWorkingAccountAvailableFunds', Value: 900000.0 },
            { Key: 'B2CRecipientIsRegisteredCustomer', Value: 'Y' },
            { Key: 'B2CChargesPaidAccountAvailableFunds', Value: -4510.0 },
          ],
        },
        ...reference,
      },
    };
  }

  async function transactionStatus(request: Request): Promise<Response> {
    const body = await readJson(request);
    if (body instanceof Response) return body;
    const refused = checkInitiator(body.Initiator, body.SecurityCredential);
    if (refused) return refused;
    const command = body.CommandID ?? body['Command ID'];
    if (command !== 'TransactionStatusQuery') return badRequest('CommandID');
    const transactionId = (body.TransactionID ?? body['Transaction ID']) as string | undefined;
    const original = body.OriginalConversationID as string | undefined;
    if (!transactionId && !original) return badRequest('TransactionID');
    if (!validUrl(body.ResultURL)) return badRequest('ResultURL');
    const answer = {
      OriginatorConversationID: requestId(),
      ConversationID: conversationId(),
      ResponseCode: '0',
      ResponseDescription: 'Accept the service request successfully.',
    };
    const movement =
      (transactionId ? movements.get(transactionId) : undefined) ??
      // A request's own id as the original conversation: a payout's OriginatorConversationID; a push's MerchantRequestID or CheckoutRequestID unless refused.
      [...movements.values()].find(
        (candidate) =>
          original !== undefined &&
          (lookup === 'answered' || !candidate.stkPush) &&
          (candidate.originatorConversationId === original || candidate.conversationId === original),
      );
    // Daraja gives the query's Occasion back in every result, found or not.
    const base = {
      ConversationID: answer.ConversationID,
      OriginatorConversationID: answer.OriginatorConversationID,
      ResultType: 0,
      TransactionID: transactionId ?? 'MBN0000000',
      ReferenceData: { ReferenceItem: { Key: 'Occasion', Value: String(body.Occasion ?? '') } },
    };
    const unknown = transactionId
      ? { ResultCode: 'SFC_IC0003', ResultDesc: 'The operator does not exist.' }
      : { ResultCode: 'R000002', ResultDesc: 'The OriginalTransactionID is invalid.' };
    sendResult(
      'transactionstatus',
      String(body.ResultURL),
      movement
        ? {
            Result: {
              ...base,
              ResultCode: 0,
              ResultDesc: 'The service request is processed successfully.',
              ResultParameters: {
                ResultParameter: [
                  { Key: 'DebitPartyName', Value: movement.debitParty },
                  { Key: 'CreditPartyName', Value: movement.creditParty },
                  { Key: 'OriginatorConversationID', Value: movement.originatorConversationId },
                  { Key: 'InitiatedTime', Value: eatTimestamp() },
                  { Key: 'DebitAccountType', Value: 'Utility Account' },
                  { Key: 'ReasonType', Value: movement.reason },
                  { Key: 'TransactionStatus', Value: movement.status },
                  { Key: 'FinalisedTime', Value: eatTimestamp() },
                  { Key: 'Amount', Value: String(movement.amount) },
                  { Key: 'ConversationID', Value: movement.conversationId },
                  { Key: 'ReceiptNo', Value: movement.receipt },
                ],
              },
            },
          }
        : { Result: { ...base, ...unknown } },
      statusDelayMs,
    );
    return Response.json(answer);
  }

  /** Sends a completed transaction's money back (the reversal's own receipt is a movement transaction status finds). */
  function reverse(entry: Reversal, original: Movement): void {
    reversed.add(entry.transactionId);
    entry.receipt = receiptNumber();
    movements.set(entry.receipt, {
      receipt: entry.receipt,
      amount: entry.amount,
      status: 'Completed',
      debitParty: `${credentials.shortcode} - Merchant`,
      creditParty: original.debitParty.startsWith('254') ? original.debitParty : original.creditParty,
      originatorConversationId: entry.originatorConversationId,
      conversationId: entry.conversationId,
      reason: 'Reversal',
      at: Date.now(),
      linkedId: entry.transactionId,
    });
  }

  function statement(): string {
    const cell = (text: string) => (/[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);
    const eastAfrican = (at: number) => new Date(at + 3 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');
    let balance = 0;
    const rows = [...movements.values()]
      .sort((a, b) => a.at - b.at)
      .map((movement) => {
        const moneyIn = movement.creditParty.startsWith(`${credentials.shortcode} `);
        const completed = movement.status === 'Completed';
        if (completed) balance += moneyIn ? movement.amount : -movement.amount;
        const time = eastAfrican(movement.at);
        return [
          movement.receipt,
          time,
          time,
          movement.reason,
          movement.status,
          moneyIn ? movement.amount.toFixed(2) : '',
          moneyIn ? '' : `-${movement.amount.toFixed(2)}`,
          balance.toFixed(2),
          'true',
          movement.reason,
          moneyIn ? movement.debitParty : movement.creditParty,
          movement.linkedId ?? '',
          '',
        ]
          .map(cell)
          .join(',');
      });
    return [
      'Organisation Name:,Simulated Merchant',
      `Shortcode:,${credentials.shortcode}`,
      '',
      'Receipt No.,Completion Time,Initiation Time,Details,Transaction Status,Paid In,Withdrawn,Balance,Balance Confirmed,Reason Type,Other Party Info,Linked Transaction ID,A/C No.',
      ...rows,
    ].join('\r\n');
  }

  async function reversal(request: Request): Promise<Response> {
    const body = await readJson(request);
    if (body instanceof Response) return body;
    const refused = checkInitiator(body.Initiator, body.SecurityCredential);
    if (refused) return refused;
    if (body.CommandID !== 'TransactionReversal') return badRequest('CommandID');
    if (typeof body.TransactionID !== 'string' || body.TransactionID === '') return badRequest('TransactionID');
    const amount = wholePositive(body.Amount);
    if (amount === null) return badRequest('Amount');
    if (numeric(body.ReceiverParty) !== credentials.shortcode) return badRequest('ReceiverParty');
    if (String(body.RecieverIdentifierType) !== '11') return badRequest('RecieverIdentifierType');
    if (!validUrl(body.ResultURL) || !validUrl(body.QueueTimeOutURL)) return badRequest('ResultURL');
    const answer = {
      OriginatorConversationID: requestId(),
      ConversationID: conversationId(),
      ResponseCode: '0',
      ResponseDescription: 'Accept the service request successfully.',
    };
    const original = movements.get(body.TransactionID);
    const resultCode: string | number = !original
      ? 'R000002'
      : reversed.has(body.TransactionID)
        ? 'R000001'
        : amount > original.amount
          ? 2
          : 0;
    const entry: Reversal = {
      conversationId: answer.ConversationID,
      originatorConversationId: answer.OriginatorConversationID,
      transactionId: body.TransactionID,
      amount,
      completed: resultCode === 0,
      resultCode,
      receipt: null,
      at: Date.now(),
      outOfBand: false,
    };
    reversals.push(entry);
    if (resultCode === 0) reverse(entry, original!);
    const descriptions: Record<string, string> = {
      0: 'The service request is processed successfully.',
      R000001: 'The transaction has already been reversed',
      R000002: 'The OriginalTransactionID is invalid.',
      2: 'Declined due to limit rule',
    };
    sendResult('reversal', String(body.ResultURL), {
      Result: {
        ResultType: 0,
        ResultCode: resultCode,
        ResultDesc: descriptions[String(resultCode)],
        OriginatorConversationID: answer.OriginatorConversationID,
        ConversationID: answer.ConversationID,
        TransactionID: entry.receipt ?? 'SKE0000000',
        ...(resultCode === 0
          ? {
              ResultParameters: {
                ResultParameter: [
                  {
                    Key: 'DebitAccountBalance',
                    Value: `Utility Account|KES|${utilityBalance.toFixed(2)}|${utilityBalance.toFixed(2)}|0.00|0.00`,
                  },
                  { Key: 'Amount', Value: amount },
                  { Key: 'TransCompletedTime', Value: Number(eatTimestamp()) },
                  { Key: 'OriginalTransactionID', Value: body.TransactionID },
                  { Key: 'Charge', Value: 0 },
                  {
                    Key: 'CreditPartyPublicName',
                    Value: original!.debitParty.startsWith('254') ? original!.debitParty : original!.creditParty,
                  },
                  { Key: 'DebitPartyPublicName', Value: `${credentials.shortcode} - Merchant` },
                ],
              },
            }
          : {}),
        ReferenceData: {
          ReferenceItem: {
            Key: 'QueueTimeoutURL',
            Value: 'https://internalsandbox.safaricom.co.ke/mpesa/reversalresults/v1/submit',
          },
        },
      },
    });
    return Response.json(answer);
  }

  const ROUTES: Record<
    string,
    {
      api: Api;
      method: string;
      handle: (request: Request, fault: FaultMode | undefined) => Promise<Response> | Response;
    }
  > = {
    '/oauth/v1/generate': { api: 'oauth', method: 'GET', handle: (request) => oauth(request) },
    '/mpesa/stkpush/v1/processrequest': { api: 'stkpush', method: 'POST', handle: stkPush },
    '/mpesa/stkpushquery/v1/query': { api: 'stkquery', method: 'POST', handle: (request) => stkQuery(request) },
    '/mpesa/c2b/v1/registerurl': { api: 'registerurl', method: 'POST', handle: (request) => registerUrl(request) },
    '/mpesa/b2c/v3/paymentrequest': { api: 'b2c', method: 'POST', handle: b2c },
    '/mpesa/transactionstatus/v1/query': {
      api: 'transactionstatus',
      method: 'POST',
      handle: (request) => transactionStatus(request),
    },
    '/mpesa/reversal/v1/request': { api: 'reversal', method: 'POST', handle: (request) => reversal(request) },
  };

  const server = serveWithOutages({
    port: options.port,
    // Daraja's system error, as its gateway answers when the M-Pesa core behind it fails.
    systemError: () => errorBody(500, '500.003.1001', 'Internal Server Error'),
    undelivered(response) {
      const push = pushAnswers.get(response);
      if (push) push.answer = 'lost';
    },
    async handle(request) {
      const route = ROUTES[new URL(request.url).pathname];
      let response: Response;
      if (!route) response = errorBody(404, '404.001.01', 'Resource not found');
      else if (request.method !== route.method)
        response = errorBody(405, '405.001', `${request.method} Method Not Allowed`);
      else {
        const refused = route.api === 'oauth' ? null : authorized(request);
        const fault = faults.get(route.api);
        if (fault) faults.delete(route.api);
        response = refused ?? (await route.handle(request, fault));
        if (fault === 'slow') await Bun.sleep(options.slowMs ?? 6000);
      }
      log.push({ api: route?.api ?? 'unknown', status: response.status, at: Date.now() });
      return response;
    },
  });

  return {
    url: `http://${SIMULATOR_HOST}:${server.port}`,
    async stop() {
      await stop();
      await server.stop();
    },
    outage: (mode) => server.set(mode),
    late: (rule) => server.late(rule),
    clearLate: () => server.clearLate(),
    settled: () => server.settled(),
    subscriber(msisdn, behaviour) {
      subscribers.set(msisdn, { ...subscribers.get(msisdn), ...behaviour });
    },
    payee(msisdn, behaviour) {
      payees.set(msisdn, { ...payees.get(msisdn), ...behaviour });
    },
    failNext(api, mode) {
      faults.set(api, mode);
    },
    expireTokens() {
      for (const token of tokens.keys()) tokens.set(token, 0);
    },
    externalValidation(enabled) {
      validationOn = enabled;
    },
    checkoutRequestLookup(next) {
      lookup = next;
    },
    transactionStatusDelay(ms) {
      statusDelayMs = ms ?? undefined;
    },
    loseResults(api, times = 1) {
      lostResults.set(api, (lostResults.get(api) ?? 0) + times);
    },
    reverseOutOfBand(transactionId) {
      const original = movements.get(transactionId);
      if (original?.status !== 'Completed') throw new Error(`no completed transaction ${transactionId}`);
      if (reversed.has(transactionId)) throw new Error(`${transactionId} is already reversed`);
      const entry: Reversal = {
        conversationId: conversationId(),
        originatorConversationId: requestId(),
        transactionId,
        amount: original.amount,
        completed: true,
        resultCode: 0,
        receipt: null,
        at: Date.now(),
        outOfBand: true,
      };
      reversals.push(entry);
      reverse(entry, original);
    },
    payBill,
    stkPushes: () => [...pushes.values()].map((push) => ({ ...push })),
    statement,
    payouts: () => [...payouts.values()].map((payout) => ({ ...payout })),
    reversals: () => reversals.map((entry) => ({ ...entry })),
    registeredUrls: () => (registered ? { ...registered } : null),
    calls: () => [...log],
  };
}
