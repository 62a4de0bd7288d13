/**
 * Bulk payouts over HTTP: `POST /api/payment-batches` (JSON `{"payments": [...]}` or a CSV of the
 * same columns, `Duplicate-Check-Key` honoured), `GET /api/payment-batches[/<id>]` (its state and
 * counts), `GET .../<id>/rows` (each row and what became of it) and `GET .../<id>/results.csv`;
 * the use cases are in services/payments/payment-batch-creation.ts and services/payments/payment-batch-reads.ts.
 */
import { Elysia } from 'elysia';
import {
  BATCH_CSV_COLUMNS,
  MAX_BATCH_ROWS,
  PaymentBatchLineSchema,
  PaymentBatchSchema,
  batchResultsCsv,
  readBatchCsv,
  serializeBatchLine,
} from '../domain/payment-batches';
import { listSchemaForVersion, ownedForVersion, ownedSchemaForVersion } from '../domain/versions';
import { PaymentBatchCreate, createPaymentBatch } from '../services/payments/payment-batch-creation';
import {
  PaymentBatchFilters,
  batchLines,
  findOwnPaymentBatch,
  listPaymentBatches,
  paymentBatchResources,
} from '../services/payments/payment-batch-reads';
import { authPlugin } from '../http/auth';
import { pathId, type AppDeps } from '../http/context';
import { listAnswer, listQuery, parsePage } from '../http/pagination';
import { MAX_BODY_BYTES, csvResponse, declareBodyOptions } from '../http/request';
import { PathIdParams, requestSchema, routeDocs } from '../http/route-docs';

const TAGS = ['Payment batches'];
const PREFIX = '/api/payment-batches';
const batchSchemaForVersion = ownedSchemaForVersion(PaymentBatchSchema);

/**
 * A batch's rows take more than a single object's body: up to 16 MiB, as JSON or CSV (a multipart form's `payments`
 * file).
 */
const BATCH_UPLOAD = { limit: 16 * MAX_BODY_BYTES, csv: { field: 'payments', read: readBatchCsv } };
declareBodyOptions('POST', PREFIX, BATCH_UPLOAD);

const CSV_EXAMPLE =
  'phonenumber,amount,currency,description\n+256772123456,15000,UGX,Salary May\n+256772123457,15000,UGX,Salary May\n';

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  createPaymentBatch: routeDocs({
    operationId: 'createPaymentBatch',
    summary: 'Send many payments at once',
    description: [
      `Up to ${MAX_BATCH_ROWS} payments, as JSON or as CSV (\`text/csv\`, or a \`payments\` file in a multipart form)`,
      `with a header line naming its columns (${BATCH_CSV_COLUMNS.join(', ')}).`,
      'Every row is checked first, by the rules of `POST /api/payments`:',
      'any error refuses the whole batch (400, keyed `payments[<index>].<field>`),',
      'and so does a wallet that does not hold the sum of its rows (400 `insufficient funds`);',
      'nothing is written then.',
      "The batch's workflow then creates its payments a chunk of rows at a time,",
      "each row's amount taken out of its wallet as its payment is created",
      '(a row its wallet can no longer pay then ends `failed`, the others go on),',
      'and sends them a bounded number at a time.',
      'Each payment is an ordinary payment (`payment.status.changed` events);',
      'when every row is final the batch is `completed` with a `payment_batch.completed` event.',
      'A repeat with the same `Duplicate-Check-Key` is 409 and creates nothing.',
    ].join(' '),
    tags: TAGS,
    caller: 'merchant',
    errors: [413, 415],
    responses: { 201: { description: 'The batch, `processing`.', schema: batchSchemaForVersion } },
    requestExample: {
      payments: [
        { phonenumber: '+256772123456', amount: '15000', currency: 'UGX', description: 'Salary May' },
        {
          phonenumber: '+256772123457',
          amount: '15000',
          currency: 'UGX',
          description: 'Salary May',
          metadata: { employee: 'E-17' },
        },
      ],
    },
    requestCsv: {
      description: `A header line of columns among ${BATCH_CSV_COLUMNS.join(', ')}, then one payment per line.`,
      example: CSV_EXAMPLE,
    },
  }),
  listPaymentBatches: routeDocs({
    operationId: 'listPaymentBatches',
    summary: 'List payment batches',
    description: 'Newest first.',
    tags: TAGS,
    caller: 'merchant',
    responses: {
      200: {
        description: 'A page of batches.',
        schema: (version) => listSchemaForVersion(batchSchemaForVersion(version), version),
      },
    },
  }),
  getPaymentBatch: routeDocs({
    operationId: 'getPaymentBatch',
    summary: 'Get a payment batch',
    description: 'Its state and its rows counted by state: a progress report while it runs.',
    tags: TAGS,
    caller: 'merchant',
    errors: [403, 404],
    responses: { 200: { description: 'The batch.', schema: batchSchemaForVersion } },
  }),
  listPaymentBatchRows: routeDocs({
    operationId: 'listPaymentBatchRows',
    summary: "List a batch's rows",
    description: 'In upload order, each with its payment and what became of it.',
    tags: TAGS,
    caller: 'merchant',
    errors: [403, 404],
    responses: {
      200: {
        description: 'A page of rows.',
        schema: (version) => listSchemaForVersion(PaymentBatchLineSchema, version),
      },
    },
  }),
  getPaymentBatchResults: routeDocs({
    operationId: 'getPaymentBatchResults',
    summary: "Download a batch's results as CSV",
    description: [
      'Every row in upload order:',
      'row, phonenumber, amount, currency, description, state, payment, remote_transaction_id, error.',
    ].join(' '),
    tags: TAGS,
    caller: 'merchant',
    errors: [403, 404],
    responses: {
      200: {
        description: 'The result CSV.',
        mediaType: 'text/csv',
        example: [
          'row,phonenumber,amount,currency,description,state,payment,remote_transaction_id,error',
          '1,+256772123456,15000.0000,UGX,Salary May,completed,77,SBX-PAY-77,',
          '',
        ].join('\n'),
      },
    },
  }),
};

export const paymentBatchRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  return new Elysia({ name: 'payment-batches', prefix: PREFIX })
    .use(authPlugin(sql))
    .post(
      '',
      async ({ body: input, principal, apiVersion, duplicateCheck, set }) => {
        const batch = await createPaymentBatch(deps, principal, input, duplicateCheck);
        set.status = 201;
        return ownedForVersion(batch, apiVersion);
      },
      { can: 'pay', body: requestSchema(PaymentBatchCreate), ...DOCS.createPaymentBatch },
    )
    .get(
      '',
      async ({ request, query: filters, principal, apiVersion }) => {
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const { count, rows } = await listPaymentBatches(sql, principal.organizationId, filters, page);
        const results = (await paymentBatchResources(sql, rows)).map((batch) => ownedForVersion(batch, apiVersion));
        return listAnswer(request, config.publicBaseUrl, page, { count, results }, apiVersion);
      },
      { can: 'view', query: listQuery(PaymentBatchFilters), ...DOCS.listPaymentBatches },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion }) => {
        const [resource] = await paymentBatchResources(sql, [
          await findOwnPaymentBatch(sql, principal.organizationId, pathId(params.id, 'PaymentBatch')),
        ]);
        return ownedForVersion(resource!, apiVersion);
      },
      { can: 'view', params: PathIdParams, ...DOCS.getPaymentBatch },
    )
    .get(
      '/:id/rows',
      async ({ request, params, principal, apiVersion }) => {
        const batch = await findOwnPaymentBatch(sql, principal.organizationId, pathId(params.id, 'PaymentBatch'));
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const { count, rows } = await batchLines(sql, batch, page);
        return listAnswer(
          request,
          config.publicBaseUrl,
          page,
          { count, results: rows.map(serializeBatchLine) },
          apiVersion,
        );
      },
      { can: 'view', params: PathIdParams, ...DOCS.listPaymentBatchRows },
    )
    .get(
      '/:id/results.csv',
      async ({ params, principal }) => {
        const batch = await findOwnPaymentBatch(sql, principal.organizationId, pathId(params.id, 'PaymentBatch'));
        return csvResponse(
          batchResultsCsv((await batchLines(sql, batch)).rows),
          `payment-batch-${batch.id}-results.csv`,
        );
      },
      { can: 'view', params: PathIdParams, ...DOCS.getPaymentBatchResults },
    );
};
