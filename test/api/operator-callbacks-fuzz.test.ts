/**
 * Bad input to the operator callback routes, property-based (fast-check). The routes are found in
 * `app.routes` by the connectors' registry (each unit's callback paths, src/network/registry.ts), so
 * a callback route added later is fuzzed without being listed here. Each
 * gets the real callbacks of its operator (as the operators document them and the simulators send
 * them, naming operations that exist and ones that do not) with one to three mutations each (a list
 * or an object made null, text, a number, a list of nulls or the other kind of container; any node
 * replaced by null, a number, a string, a huge string, a list, an object or deep nesting; keys
 * dropped; junk keys added; nodes wrapped), plain random JSON, and bodies no operator sends (not
 * JSON, empty, other media types). For every request:
 *   - no 5xx;
 *   - a 200 is the operator's own answer: Daraja's `{ResultCode, ResultDesc}` (a validation's
 *     decision, an acknowledgement otherwise), MoMo's, Airtel's and pawaPay's `{status: "received"}`; anything else is a 4xx
 *     the OpenAPI document describes (testApp checks every answer against it);
 *   - a paybill validation POSTed is always answered 200 with a decision, whatever its body: a 4xx
 *     would leave the payment to the shortcode's default action, which completes it unvalidated;
 *   - no money moved: no collection, transaction, payment, reversal, wallet or collection request
 *     changed;
 *   - a refusal (4xx) woke no workflow, started none and changed no operation.
 * A fixed seed and a few hundred bodies per route; CALLBACK_FUZZ_RUNS and CALLBACK_FUZZ_SEED send
 * more, or others.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import fc from 'fast-check';
import { DARAJA_CALLBACK_PATHS } from '../../src/network/daraja';
import { MOMO_CALLBACK_PATH } from '../../src/network/momo';
import { AIRTEL_CALLBACK_PATH } from '../../src/network/airtel';
import { PAWAPAY_CALLBACK_PATHS } from '../../src/network/pawapay';
import { callbackUnits } from '../../src/network/registry';
import { createHmac } from 'node:crypto';
import { recordOperation } from '../../src/services/networks/journal';
import { fundWallet } from '../../src/services/merchants/organizations';
import { BASE_URL, createMerchant, testApp, testSql, uniqueNumber, type TestApp } from '../helpers';
import { prepareContracts } from '../openapi-contract';

const RUNS = Number(process.env.CALLBACK_FUZZ_RUNS ?? 300);
const SEED = Number(process.env.CALLBACK_FUZZ_SEED ?? 2_025_11);
const MAX_BODY = 1_048_576;
const DARAJA_PATHS = new Set<string>(Object.values(DARAJA_CALLBACK_PATHS));
const AIRTEL_CALLBACK_KEY = 'fuzz-airtel-callback-key';
const run = crypto.randomUUID().slice(0, 8);
const SOURCE = `2001:db8:${run.slice(0, 4)}:${run.slice(4)}::1`;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Route = { method: string; path: string };

let ctx: TestApp;
/** The operations the real callbacks name, and what else they need to find. */
const fixture = {
  checkoutRequestId: `ws_CO_fuzz${run}`,
  unansweredPhone: '',
  conversationId: `AG_fuzz_${run}`,
  statusConversationId: `AG_status_${run}`,
  momoReference: crypto.randomUUID(),
  airtelId: `Cfuzz${run}`,
  depositId: crypto.randomUUID(),
  billReference: '',
  operationIds: [] as number[],
};
/** What the routes asked of Temporal: every wake (signal) and every workflow start. */
const launched: string[] = [];
const statuses = new Map<string, Map<number, number>>();

beforeAll(async () => {
  ctx = await testApp(undefined, {
    PUBLIC_BASE_URL: 'http://127.0.0.1:9',
    // The connectors on, so every route reaches its lookups; the API process never calls the operators itself.
    MPESA_BASE_URL: 'http://127.0.0.1:9',
    MPESA_CONSUMER_KEY: 'fuzz-key',
    MPESA_CONSUMER_SECRET: 'fuzz-secret',
    MPESA_SHORTCODE: '600999',
    MPESA_PASSKEY: 'fuzz-passkey',
    MPESA_INITIATOR_NAME: 'fuzz',
    MPESA_SECURITY_CREDENTIAL: 'fuzz-credential',
    MTN_MOMO_BASE_URL: 'http://127.0.0.1:9',
    MTN_MOMO_TARGET_ENVIRONMENT: 'sandbox',
    MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: 'fuzz',
    MTN_MOMO_COLLECTION_API_USER: 'fuzz',
    MTN_MOMO_COLLECTION_API_KEY: 'fuzz',
    MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: 'fuzz',
    MTN_MOMO_DISBURSEMENT_API_USER: 'fuzz',
    MTN_MOMO_DISBURSEMENT_API_KEY: 'fuzz',
    AIRTEL_BASE_URL: 'http://127.0.0.1:9',
    AIRTEL_CLIENT_ID: 'fuzz',
    AIRTEL_CLIENT_SECRET: 'fuzz',
    AIRTEL_COUNTRIES: 'UG,KE',
    AIRTEL_PIN: '1234',
    AIRTEL_CALLBACK_KEY,
    PAWAPAY_BASE_URL: 'http://127.0.0.1:9',
    PAWAPAY_API_TOKEN: 'fuzz',
    PAWAPAY_PROVIDERS: 'TIGO_TZA,ORANGE_COD',
    // The throttle is tested on its own (operator-callbacks-throttle.test.ts): here every request reaches its route, and
    // comes from an address of its own (X-Forwarded-For, believed), so no other file's callbacks share its count.
    OPERATOR_CALLBACK_LIMIT_PER_ADDRESS: '1000000',
    OPERATOR_CALLBACK_LIMIT_PER_OPERATOR: '1000000',
    TRUST_PROXY: 'true',
  });
  await prepareContracts(ctx.app);
  // Every wake and start is counted, and still made.
  const { launcher } = ctx;
  const signal = launcher.signalNetworkHint.bind(launcher);
  const start = launcher.startIncomingCollection.bind(launcher);
  launcher.signalNetworkHint = async (workflowId, hint) => {
    launched.push(`signal ${workflowId}`);
    return await signal(workflowId, hint);
  };
  launcher.startIncomingCollection = async (payment, options) => {
    launched.push(`start ${payment.remoteTransactionId}`);
    return await start(payment, options);
  };

  const merchant = await createMerchant(ctx.app);
  await fundWallet(testSql(), merchant.organization.id, 'KES', '1000');
  const requested = await merchant.request('/api/collectionrequests', {
    form: { phonenumber: uniqueNumber('+254711'), amount: '100', currency: 'KES' },
  });
  expect({ status: requested.status, body: requested.body }).toMatchObject({ status: 201 });
  fixture.billReference = requested.body.svccode;
  fixture.unansweredPhone = uniqueNumber('+254711');
  const sql = testSql();
  const operations = [
    {
      network: 'Safaricom',
      kind: 'prompt',
      reference: `fuzz-prompt-${run}`,
      operatorReference: fixture.checkoutRequestId,
      phoneNumber: uniqueNumber('+254711'),
      amount: '100',
    },
    {
      network: 'Safaricom',
      kind: 'prompt',
      reference: `fuzz-unanswered-${run}`,
      operatorReference: null,
      phoneNumber: fixture.unansweredPhone,
      amount: '100',
    },
    {
      network: 'Safaricom',
      kind: 'payout',
      reference: `fuzz-payout-${run}`,
      operatorReference: fixture.conversationId,
    },
    {
      network: 'Safaricom',
      kind: 'status_query',
      reference: `status:fuzz-${run}`,
      operatorReference: fixture.statusConversationId,
    },
    {
      network: 'MTN Uganda',
      kind: 'prompt',
      reference: `fuzz-momo-${run}`,
      operatorReference: fixture.momoReference,
      phoneNumber: uniqueNumber('+256772'),
      amount: '1500',
    },
    {
      network: 'Airtel Uganda',
      kind: 'prompt',
      reference: `fuzz-airtel-${run}`,
      operatorReference: fixture.airtelId,
      phoneNumber: uniqueNumber('+256701'),
      amount: '1500',
    },
    {
      network: 'Tigo Tanzania',
      kind: 'prompt',
      reference: `fuzz-pawapay-${run}`,
      operatorReference: fixture.depositId,
      phoneNumber: uniqueNumber('+25565'),
      amount: '1500',
    },
  ] as const;
  for (const operation of operations) {
    const recorded = await recordOperation(sql, {
      ...operation,
      workflowId: `fuzz-callbacks-${operation.reference}`,
      subject: operation.reference,
    });
    fixture.operationIds.push(recorded.id);
  }
});

afterAll(() => {
  for (const [route, counts] of statuses) {
    const summary = [...counts.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, count]) => `${status}: ${count}`)
      .join(', ');
    process.stdout.write(`callback fuzz ${route}: ${RUNS} bodies, seed ${SEED}; statuses ${summary}\n`);
  }
});

// ---------------------------------------------------------------------------------------------
// The real callbacks, as Daraja and MoMo send them

const msisdn = (e164: string) => Number(e164.slice(1));

function stkCallbacks(): Json[] {
  const success = (checkoutRequestId: string, phone: number): Json => ({
    Body: {
      stkCallback: {
        MerchantRequestID: '29115-34620561-1',
        CheckoutRequestID: checkoutRequestId,
        ResultCode: 0,
        ResultDesc: 'The service request is processed successfully.',
        CallbackMetadata: {
          Item: [
            { Name: 'Amount', Value: 100 },
            { Name: 'MpesaReceiptNumber', Value: 'NLJ7RT61SV' },
            { Name: 'Balance' },
            { Name: 'TransactionDate', Value: 20191219102115 },
            { Name: 'PhoneNumber', Value: phone },
          ],
        },
      },
    },
  });
  return [
    success(fixture.checkoutRequestId, 254711000001),
    // No prompt of ours names it: the unanswered push of that number and amount, else a payment reported for confirmation.
    success(`ws_CO_other${run}`, msisdn(fixture.unansweredPhone)),
    success(`ws_CO_forged${run}`, 254711000003),
    {
      Body: {
        stkCallback: {
          MerchantRequestID: '29115-34620561-1',
          CheckoutRequestID: fixture.checkoutRequestId,
          ResultCode: 1032,
          ResultDesc: 'Request cancelled by user',
        },
      },
    },
  ];
}

function paybillPayments(): Json[] {
  const payment = {
    TransactionType: 'Pay Bill',
    TransID: 'RKTQDM7W6S',
    TransTime: '20191122063845',
    TransAmount: '100',
    BusinessShortCode: '600999',
    BillRefNumber: fixture.billReference,
    InvoiceNumber: '',
    OrgAccountBalance: '',
    ThirdPartyTransID: '',
    MSISDN: '25471****149',
    FirstName: 'John',
    MiddleName: '',
    LastName: 'Doe',
  };
  return [payment, { ...payment, TransAmount: 100, MSISDN: 254711000002, BillRefNumber: 'INV-1' }];
}

function darajaResults(): Json[] {
  const reference = {
    ReferenceData: {
      ReferenceItem: {
        Key: 'QueueTimeoutURL',
        Value: 'https://internalsandbox.safaricom.co.ke/mpesa/b2cresults/v1/submit',
      },
    },
  };
  return [
    {
      Result: {
        ResultType: 0,
        ResultCode: 0,
        ResultDesc: 'The service request is processed successfully.',
        OriginatorConversationID: `fuzz-payout-${run}`,
        ConversationID: fixture.conversationId,
        TransactionID: 'NLJ41HAY6Q',
        ResultParameters: {
          ResultParameter: [
            { Key: 'TransactionAmount', Value: 10 },
            { Key: 'TransactionReceipt', Value: 'NLJ41HAY6Q' },
            { Key: 'ReceiverPartyPublicName', Value: '254708374149 - John Doe' },
            { Key: 'B2CUtilityAccountAvailableFunds', Value: 10116.0 },
          ],
        },
        ...reference,
      },
    },
    {
      Result: {
        ResultType: 0,
        ResultCode: 0,
        ResultDesc: 'The service request is processed successfully.',
        OriginatorConversationID: 'AG_20191219_0000',
        ConversationID: fixture.statusConversationId,
        TransactionID: 'NLJ41HAY6Q',
        ResultParameters: { ResultParameter: { Key: 'TransactionStatus', Value: 'Completed' } },
        ReferenceData: { ReferenceItem: { Key: 'Occasion', Value: '' } },
      },
    },
    {
      Result: {
        ResultType: 0,
        ResultCode: 'SFC_IC0003',
        ResultDesc: 'The operator does not exist.',
        OriginatorConversationID: 'x',
        ConversationID: 'AG_unknown',
        TransactionID: 'MBN0000000',
      },
    },
  ];
}

function momoCallbacks(): Json[] {
  const base = {
    amount: '1500',
    currency: 'EUR',
    externalId: `fuzz-momo-${run}`,
    payer: { partyIdType: 'MSISDN', partyId: '256772123456' },
    payerMessage: 'Invoice',
    payeeNote: 'Invoice',
  };
  return [
    { ...base, financialTransactionId: '23503452', status: 'SUCCESSFUL' },
    { ...base, status: 'FAILED', reason: 'APPROVAL_REJECTED' },
  ];
}

/** Airtel's callbacks, signed with the configured key (a mutation of the transaction breaks the hash: 403). */
function airtelCallbacks(): Json[] {
  const signed = (transaction: { [key: string]: Json }): Json => ({
    transaction,
    hash: createHmac('sha256', AIRTEL_CALLBACK_KEY).update(JSON.stringify(transaction)).digest('base64'),
  });
  return [
    signed({
      id: fixture.airtelId,
      message: 'Paid UGX 1,500',
      status_code: 'TS',
      airtel_money_id: 'MP210603.1234.L06941',
    }),
    signed({ id: fixture.airtelId, message: 'Transaction failed', status_code: 'TF', airtel_money_id: '' }),
    signed({ id: 'Cunknown', message: 'Paid', status_code: 'TS', airtel_money_id: 'MP210603.1234.L06942' }),
  ];
}

/** pawaPay's final deposits, payouts and refunds as it posts them (unsigned here: the connector takes them as hints). */
function pawapayCallbacks(path: string): Json[] {
  const payer = { type: 'MMO', accountDetails: { phoneNumber: '255651234567', provider: 'TIGO_TZA' } };
  if (path === PAWAPAY_CALLBACK_PATHS.deposit) {
    return [
      {
        depositId: fixture.depositId,
        status: 'COMPLETED',
        amount: '1500.00',
        currency: 'TZS',
        country: 'TZA',
        payer,
        customerMessage: 'Invoice 901',
        created: '2026-11-27T09:00:00Z',
        providerTransactionId: 'ABC123',
      },
      {
        depositId: fixture.depositId,
        status: 'FAILED',
        amount: '1500.00',
        currency: 'TZS',
        country: 'TZA',
        payer,
        created: '2026-11-27T09:00:00Z',
        failureReason: { failureCode: 'PAYMENT_NOT_APPROVED', failureMessage: 'Declined' },
      },
      {
        depositId: crypto.randomUUID(),
        status: 'COMPLETED',
        amount: '10',
        currency: 'TZS',
        country: 'TZA',
        payer,
        created: '2026-11-27T09:00:00Z',
      },
    ];
  }
  if (path === PAWAPAY_CALLBACK_PATHS.payout)
    return [
      {
        payoutId: crypto.randomUUID(),
        status: 'COMPLETED',
        amount: '100.00',
        currency: 'TZS',
        country: 'TZA',
        recipient: payer,
        created: '2026-11-27T09:00:00Z',
      },
    ];
  return [
    {
      refundId: crypto.randomUUID(),
      depositId: fixture.depositId,
      status: 'COMPLETED',
      amount: '1500.00',
      currency: 'TZS',
      country: 'TZA',
      created: '2026-11-27T09:00:00Z',
    },
  ];
}

/** The real callbacks of a route; a route no entry knows (added later) is fuzzed with random JSON and foreign bodies alone. */
function realCallbacks(route: Route): Json[] {
  if (route.path === DARAJA_CALLBACK_PATHS.stkResult) return stkCallbacks();
  if (route.path === DARAJA_CALLBACK_PATHS.validation || route.path === DARAJA_CALLBACK_PATHS.confirmation)
    return paybillPayments();
  if (route.path === DARAJA_CALLBACK_PATHS.result || route.path === DARAJA_CALLBACK_PATHS.timeout)
    return darajaResults();
  if (route.path.startsWith(`${MOMO_CALLBACK_PATH}/`)) return momoCallbacks();
  if (route.path === AIRTEL_CALLBACK_PATH) return airtelCallbacks();
  if (route.path.startsWith('/network/pawapay/')) return pawapayCallbacks(route.path);
  return [];
}

// ---------------------------------------------------------------------------------------------
// Mutations

const AWKWARD_STRINGS = [
  '',
  ' ',
  '0',
  '-1',
  '1e309',
  'NaN',
  'null',
  'true',
  '[]',
  '{}',
  '__proto__',
  'constructor',
  'toString',
  '254711000001',
  '+254711000001',
  '25471****149',
  'NLJ7RT61SV',
  'ws_CO_x',
  `ws_CO_fuzz${run}`,
  '100',
  '100.50',
  ' 100 ',
  '١٠٠',
  "' or 1=1 --",
  '\u202e',
  '😀',
  '\ud800',
  'a\u0000b',
];

const deeplyNested = fc.tuple(fc.integer({ min: 5, max: 40 }), fc.boolean()).map(([depth, arrays]): Json => {
  let value: Json = 'deep';
  for (let level = 0; level < depth; level += 1) value = arrays ? [value] : { a: value };
  return value;
});

const replacement: fc.Arbitrary<Json> = fc.oneof(
  { arbitrary: fc.constant(null), weight: 4 },
  { arbitrary: fc.boolean(), weight: 1 },
  {
    arbitrary: fc.oneof(
      fc.integer(),
      fc.constantFrom(0, -1, 1.5, 1e21, -0, 2 ** 53 + 1, Number.MAX_VALUE, 254711000001),
    ),
    weight: 3,
  },
  { arbitrary: fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom(...AWKWARD_STRINGS)), weight: 4 },
  { arbitrary: fc.integer({ min: 1000, max: 1_100_000 }).map((size) => 'x'.repeat(size)), weight: 1 },
  { arbitrary: fc.constantFrom<Json>([], [null], [1, 'a'], [[]], {}, { Name: 'Amount' }, { Item: [] }), weight: 3 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>, weight: 2 },
  { arbitrary: deeplyNested, weight: 1 },
);

/** What a list or an object becomes when its shape is broken: nothing, a scalar, a list of nulls, the other kind of container. */
const RESHAPED = ['null', 'text', 'number', 'nulls', 'other', 'empty'] as const;

type Mutation =
  | { kind: 'reshape'; pick: number; to: (typeof RESHAPED)[number] }
  | { kind: 'replace'; pick: number; value: Json }
  | { kind: 'drop'; pick: number }
  | { kind: 'add'; pick: number; key: string; value: Json }
  | { kind: 'wrap'; pick: number; inList: boolean };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  // Shape bugs live where code walks into a list or an object: those nodes are picked apart.
  {
    arbitrary: fc.record({ kind: fc.constant('reshape' as const), pick: fc.nat(), to: fc.constantFrom(...RESHAPED) }),
    weight: 4,
  },
  { arbitrary: fc.record({ kind: fc.constant('replace' as const), pick: fc.nat(), value: replacement }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant('drop' as const), pick: fc.nat() }), weight: 2 },
  {
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      pick: fc.nat(),
      key: fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('__proto__', 'Item', 'Value', 'Result')),
      value: replacement,
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ kind: fc.constant('wrap' as const), pick: fc.nat(), inList: fc.boolean() }), weight: 1 },
);

type Path = (string | number)[];

/** Every node of a JSON value by its path, the root first. */
function pathsOf(value: Json, at: Path = []): Path[] {
  const paths: Path[] = [at];
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) paths.push(...pathsOf(item, [...at, index]));
  } else if (typeof value === 'object' && value !== null)
    for (const [key, item] of Object.entries(value)) paths.push(...pathsOf(item, [...at, key]));
  return paths;
}

const valueAt = (value: Json, path: Path): Json =>
  path.reduce<Json>((node, step) => (node as Record<string | number, Json>)[step]!, value);

/** `value` with the node at `path` changed by `change` (undefined drops it). */
function changedAt(value: Json, path: Path, change: (node: Json) => Json | undefined): Json | undefined {
  if (path.length === 0) return change(value);
  const [step, ...rest] = path;
  if (Array.isArray(value)) {
    const copy = [...value];
    const changed = changedAt(copy[step as number]!, rest, change);
    if (changed === undefined) copy.splice(step as number, 1);
    else copy[step as number] = changed;
    return copy;
  }
  const copy = { ...(value as Record<string, Json>) };
  const changed = changedAt(copy[step as string]!, rest, change);
  if (changed === undefined) delete copy[step as string];
  else
    Object.defineProperty(copy, step as string, {
      value: changed,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return copy;
}

const isContainer = (node: Json): node is Json[] | { [key: string]: Json } => typeof node === 'object' && node !== null;

function reshaped(node: Json, to: (typeof RESHAPED)[number]): Json {
  if (to === 'null') return null;
  if (to === 'text') return 'notalist';
  if (to === 'number') return 7;
  if (to === 'nulls') return [null, null];
  if (to === 'empty') return Array.isArray(node) ? [] : {};
  return Array.isArray(node) ? Object.fromEntries(node.map((item, index) => [String(index), item])) : [node];
}

function mutated(base: Json, mutations: Mutation[]): Json | undefined {
  let body: Json | undefined = base;
  for (const step of mutations) {
    if (body === undefined) return undefined;
    const all = pathsOf(body);
    const containers = all.filter((path) => isContainer(valueAt(body!, path)));
    const paths = step.kind === 'reshape' && containers.length > 0 ? containers : all;
    const path = paths[step.pick % paths.length]!;
    body = changedAt(body, path, (node) => {
      if (step.kind === 'reshape') return reshaped(node, step.to);
      if (step.kind === 'replace') return step.value;
      if (step.kind === 'drop') return undefined;
      if (step.kind === 'wrap') return step.inList ? [node] : { value: node };
      if (Array.isArray(node)) return [...node, step.value];
      if (typeof node === 'object' && node !== null)
        return Object.defineProperty({ ...node }, step.key, { value: step.value, enumerable: true });
      return node;
    });
  }
  return body;
}

// ---------------------------------------------------------------------------------------------
// Requests

type Body = { text?: string | Uint8Array | FormData; contentType?: string; described: string };

const JSON_TYPES = ['application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON'];
const FOREIGN_TYPES = [
  'text/plain',
  'application/xml',
  'application/octet-stream',
  'application/json; charset=utf-16',
  'multipart/mixed; boundary=x',
  '',
];

const asJson = (value: Json | undefined, contentType = 'application/json'): Body =>
  value === undefined
    ? { contentType, described: 'no body' }
    : { text: JSON.stringify(value), contentType, described: JSON.stringify(value).slice(0, 300) };

/** A callback's top-level fields as a form (all text): what a form-encoded callback would read as. */
function asForm(value: Json, multipart: boolean): Body {
  const pairs =
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? Object.entries(value).map(([key, item]): [string, string] => [
          key,
          typeof item === 'string' ? item : JSON.stringify(item),
        ])
      : [];
  if (!multipart)
    return {
      text: new URLSearchParams(pairs).toString(),
      contentType: 'application/x-www-form-urlencoded',
      described: `form ${JSON.stringify(pairs).slice(0, 300)}`,
    };
  const form = new FormData();
  for (const [key, item] of pairs) form.append(key, item);
  return { text: form, described: `multipart ${JSON.stringify(pairs).slice(0, 300)}` };
}

const foreignBody: fc.Arbitrary<Body> = fc.oneof(
  fc
    .constantFrom(
      '',
      ' ',
      'null',
      '[]',
      '"text"',
      '1',
      'true',
      '{',
      '{"Body":',
      'not json',
      '<xml/>',
      '\ufeff{}',
      '{"a":1}{"b":2}',
      '[null]',
      '{"Item":"notalist"}',
    )
    .chain((text) =>
      fc
        .constantFrom(...JSON_TYPES, ...FOREIGN_TYPES)
        .map((contentType): Body => ({ text, contentType, described: `${contentType}: ${text}` })),
    ),
  fc
    .uint8Array({ maxLength: 200 })
    .map((bytes): Body => ({ text: bytes, contentType: 'application/octet-stream', described: 'bytes' })),
  fc.integer({ min: 33, max: 5000 }).map(
    (depth): Body => ({
      text: `${'['.repeat(depth)}${']'.repeat(depth)}`,
      contentType: 'application/json',
      described: `${depth} levels`,
    }),
  ),
  fc.constant<Body>({
    text: `{"Body":"${'x'.repeat(MAX_BODY)}"}`,
    contentType: 'application/json',
    described: 'past 1 MiB',
  }),
);

function callbackBody(route: Route): fc.Arbitrary<Body> {
  const real = realCallbacks(route);
  const choices: fc.WeightedArbitrary<Body>[] = [
    { arbitrary: (fc.jsonValue({ maxDepth: 4 }) as fc.Arbitrary<Json>).map((value) => asJson(value)), weight: 2 },
    { arbitrary: foreignBody, weight: 2 },
  ];
  if (real.length > 0) {
    const base = fc.constantFrom(...real);
    choices.push(
      {
        arbitrary: fc
          .tuple(base, fc.array(mutation, { minLength: 1, maxLength: 3 }))
          .map(([body, steps]) => asJson(mutated(body, steps))),
        weight: 12,
      },
      { arbitrary: base.map((body) => asJson(body)), weight: 1 },
      {
        arbitrary: fc
          .tuple(base, fc.constantFrom('form', 'multipart', ...FOREIGN_TYPES))
          .map(([body, how]) =>
            how === 'form' || how === 'multipart' ? asForm(body, how === 'multipart') : asJson(body, how),
          ),
        weight: 2,
      },
    );
  }
  return fc.oneof(...choices);
}

/** The path a request goes to: MoMo's names an operation of ours, another reference, or one that is no reference. */
function concretePath(route: Route): fc.Arbitrary<string> {
  if (!route.path.includes(':')) return fc.constant(route.path);
  const reference = fc.oneof(
    { arbitrary: fc.constant(fixture.momoReference), weight: 6 },
    { arbitrary: fc.uuid(), weight: 2 },
    {
      arbitrary: fc.constantFrom('x', '..', '%00', '1'.repeat(40), 'ffffffff-ffff-ffff-ffff-ffffffffffff0'),
      weight: 1,
    },
  );
  return reference.map((value) => route.path.replace(/:[^/]+/, value));
}

const callbackRequest = (route: Route) =>
  fc.record({
    method: fc.oneof(
      { arbitrary: fc.constant(route.method), weight: 19 },
      { arbitrary: fc.constantFrom('GET', 'PATCH', 'DELETE', 'PUT', 'POST'), weight: 1 },
    ),
    path: concretePath(route),
    slash: fc.boolean(),
    body: callbackBody(route),
  });

function toRequest(request: { method: string; path: string; slash: boolean; body: Body }): Request {
  const headers = new Headers({ 'X-Forwarded-For': SOURCE });
  const hasBody = !['GET', 'HEAD'].includes(request.method) && request.body.text !== undefined;
  if (hasBody && request.body.contentType) headers.set('Content-Type', request.body.contentType);
  return new Request(`${BASE_URL}${request.path}${request.slash ? '/' : ''}`, {
    method: request.method,
    headers,
    body: hasBody ? request.body.text : undefined,
  });
}

// ---------------------------------------------------------------------------------------------
// What must not change

type Print = { money: Record<string, string>; operations: string };

/**
 * Every money table and collection request, as counts, sums and last changes that any write moves
 * (transactions are only ever added), and the operations the callbacks name: one query.
 */
async function print(): Promise<Print> {
  const sql = testSql();
  const [row] = await sql<(Record<string, string> & { operations: string })[]>`
    select
      (select count(*) || ':' || coalesce(max(modified)::text, '') from collections) as collections,
      (select count(*) || ':' || coalesce(max(id)::text, '') from transactions) as transactions,
      (select count(*) || ':' || coalesce(max(modified)::text, '') from payments) as payments,
      (select count(*) || ':' || coalesce(max(modified)::text, '') from reversals) as reversals,
      (select count(*) || ':' || coalesce(sum(balance)::text, '') || ':' || coalesce(max(modified)::text, '') from accounts) as accounts,
      (select count(*) || ':' || coalesce(max(modified)::text, '') from collection_requests) as requests,
      (select coalesce(string_agg(t::text, '|' order by t.id), '') || '#' || (select count(*) from network_operations)
       from network_operations t where t.id in ${sql(fixture.operationIds)}) as operations`;
  const { operations, ...money } = row!;
  return { money, operations };
}

const isDarajaAnswer = (body: unknown, route: Route): boolean => {
  if (typeof body !== 'object' || body === null) return false;
  const { ResultCode: code, ResultDesc: description, ...rest } = body as Record<string, unknown>;
  if (Object.keys(rest).length > 0 || typeof description !== 'string') return false;
  // A validation decides (accept, or reject naming why); every other route acknowledges.
  if (route.path === DARAJA_CALLBACK_PATHS.validation) return ['0', 'C2B00013', 'C2B00016'].includes(String(code));
  return code === 0 && description === 'Accepted';
};

const operatorAnswered = (route: Route, body: unknown): boolean =>
  DARAJA_PATHS.has(route.path)
    ? isDarajaAnswer(body, route)
    : JSON.stringify(body) === JSON.stringify({ status: 'received' });

/** Refusals a callback route may answer: unreadable body, Airtel's hash not matching, unknown MoMo reference, another method, body too large, another media type. */
const REFUSALS = new Set([400, 403, 404, 405, 413, 415]);

test("every operator callback route answers any body in the operator's shape or a 4xx, moving no money, waking nothing on a refusal", async () => {
  const routes: Route[] = ctx.app.routes
    .filter((route) => callbackUnits(ctx.config).some(({ unit }) => unit.callbacks.owns(route.path)))
    .map((route) => ({ method: route.method.toUpperCase(), path: route.path }));
  expect(routes.length).toBeGreaterThanOrEqual(11);
  const first = await print();
  let before = first;
  const rejected = new Set<string>();

  for (const route of routes) {
    const counts = new Map<number, number>();
    statuses.set(`${route.method} ${route.path}`, counts);
    await fc.assert(
      fc.asyncProperty(callbackRequest(route), async (request) => {
        const launchedBefore = launched.length;
        const response = await ctx.app.handle(toRequest(request));
        const text = await response.text();
        const after = await print();
        const operationsBefore = before.operations;
        before = after;
        counts.set(response.status, (counts.get(response.status) ?? 0) + 1);
        const seen = {
          route: `${route.method} ${route.path}`,
          request: `${request.method} ${request.path}`,
          sent: request.body.described,
          status: response.status,
          body: text.slice(0, 300),
        };

        expect({ ...seen, serverError: response.status >= 500 }).toEqual({ ...seen, serverError: false });
        if (route.path === DARAJA_CALLBACK_PATHS.validation && request.method === 'POST')
          expect({ ...seen, decided: response.status === 200 }).toEqual({ ...seen, decided: true });
        const body: unknown = JSON.parse(text);
        if (response.status === 200 && (body as { ResultCode?: unknown }).ResultCode === 'C2B00016')
          rejected.add(route.path);
        if (response.status === 200)
          expect({ ...seen, operatorShape: operatorAnswered(route, body) }).toEqual({ ...seen, operatorShape: true });
        else expect({ ...seen, refusal: REFUSALS.has(response.status) }).toEqual({ ...seen, refusal: true });
        if (response.status >= 400) {
          expect({ ...seen, woke: launched.slice(launchedBefore) }).toEqual({ ...seen, woke: [] });
          expect({ ...seen, operations: after.operations }).toEqual({ ...seen, operations: operationsBefore });
        }
        expect({ ...seen, money: after.money }).toEqual({ ...seen, money: first.money });
      }),
      { numRuns: RUNS, seed: SEED },
    );
    // Each route was reached past its schema, and refused too (a validation: rejected): the generators are not all one or the other.
    const refused =
      route.path === DARAJA_CALLBACK_PATHS.validation ? rejected.has(route.path) : (counts.get(400) ?? 0) > 0;
    expect({ route: route.path, answered: (counts.get(200) ?? 0) > 0, refused }).toEqual({
      route: route.path,
      answered: true,
      refused: true,
    });
  }
}, 300_000);

test('an STK result whose items are not a list, a list of nulls or an object is refused (400); a validation that cannot be read is rejected', async () => {
  const post = async (path: string, body: unknown) => {
    const response = await ctx.app.handle(
      new Request(`${BASE_URL}${path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': SOURCE },
        body: JSON.stringify(body),
      }),
    );
    return { status: response.status, body: await response.json() };
  };
  const launchedBefore = launched.length;
  for (const Item of ['notalist', [null], { Name: 'Amount', Value: 100 }]) {
    const answer = await post(DARAJA_CALLBACK_PATHS.stkResult, {
      Body: { stkCallback: { CheckoutRequestID: 'ws_CO_x', ResultCode: 0, CallbackMetadata: { Item } } },
    });
    expect({ Item, status: answer.status }).toEqual({ Item, status: 400 });
  }
  const validation = await post(DARAJA_CALLBACK_PATHS.validation, {
    TransID: 'RKTQDM7W6S',
    TransAmount: { value: 100 },
    MSISDN: [254711000001],
  });
  expect(validation).toEqual({ status: 200, body: { ResultCode: 'C2B00016', ResultDesc: 'Rejected' } });
  expect(launched.slice(launchedBefore)).toEqual([]);
});

test("a paybill validation that cannot be read is answered 200 with Daraja's rejection, never a 4xx, and wakes nothing", async () => {
  const rejection = { ResultCode: 'C2B00016', ResultDesc: 'Rejected' };
  const payment = {
    TransactionType: 'Pay Bill',
    TransID: 'RKTQDM7W6S',
    TransTime: '20191122063845',
    TransAmount: '100',
    BusinessShortCode: '600999',
    BillRefNumber: fixture.billReference,
    InvoiceNumber: '',
    OrgAccountBalance: '',
    ThirdPartyTransID: '',
    MSISDN: '254711000001',
    FirstName: 'John',
    MiddleName: '',
    LastName: 'Doe',
  };
  const validate = async (text: string, contentType = 'application/json') => {
    const response = await ctx.app.handle(
      new Request(`${BASE_URL}${DARAJA_CALLBACK_PATHS.validation}`, {
        method: 'POST',
        headers: { 'Content-Type': contentType, 'X-Forwarded-For': SOURCE },
        body: text,
      }),
    );
    return { sent: text.slice(0, 80), status: response.status, body: await response.json() };
  };
  const launchedBefore = launched.length;
  const unreadable: [string, string?][] = [
    // A NUL anywhere: PostgreSQL could not store it, so the shared body reader would refuse it (400).
    [JSON.stringify({ ...payment, TransID: 'RKTQ\u0000DM7W6S' })],
    [JSON.stringify({ ...payment, FirstName: 'Jo\u0000hn' })],
    [JSON.stringify({ ...payment, 'Bill\u0000Ref': 'x' })],
    // Other control characters, in a field the schema takes as any text.
    [JSON.stringify({ ...payment, FirstName: 'Jo\u0001hn' })],
    [JSON.stringify({ ...payment, BillRefNumber: `${fixture.billReference}\n` })],
    // Not JSON, not an object, not UTF-8, another media type.
    ['not json'],
    ['{"TransID":'],
    ['[]'],
    ['"text"'],
    [JSON.stringify(payment), 'text/plain'],
    ['TransID=RKTQDM7W6S', 'application/x-www-form-urlencoded'],
    // A field missing or of the wrong type.
    [JSON.stringify({ ...payment, TransID: undefined })],
    [JSON.stringify({ ...payment, MSISDN: [254711000001] })],
  ];
  for (const [text, contentType] of unreadable) {
    const answer = await validate(text, contentType);
    expect(answer).toEqual({ sent: text.slice(0, 80), status: 200, body: rejection });
  }
  const invalidUtf8 = await ctx.app.handle(
    new Request(`${BASE_URL}${DARAJA_CALLBACK_PATHS.validation}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': SOURCE },
      body: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
    }),
  );
  expect({ status: invalidUtf8.status, body: await invalidUtf8.json() }).toEqual({ status: 200, body: rejection });
  expect(launched.slice(launchedBefore)).toEqual([]);
  // The same validation, readable, is decided as before (nobody to ask: accepted).
  expect(await validate(JSON.stringify(payment))).toMatchObject({ status: 200, body: { ResultCode: '0' } });
});
