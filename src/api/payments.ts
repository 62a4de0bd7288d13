/**
 * Payments (money out, docs/api.md#payments-wallets-and-reversals-money-out) over HTTP: `POST /api/payments` (form or
 * JSON, one `phonenumber`, `Duplicate-Check-Key` honoured), `GET /api/payments`, `GET /api/payments/<id>`, and
 * `POST /api/payments/<id>/cancel`; the use cases are in services/payments/payment-creation.ts,
 * services/payments/payment-reads.ts and services/payments/payment-state.ts.
 */
import { Elysia } from 'elysia';
import { PaymentSchema } from '../domain/money-out';
import { listSchemaForVersion, ownedForVersion, ownedSchemaForVersion } from '../domain/versions';
import { PaymentCancel, cancelOwnPayment } from '../services/payments/payment-state';
import { PaymentCreate, createPayment } from '../services/payments/payment-creation';
import { PaymentFilters, findOwnPayment, listPayments, paymentResources } from '../services/payments/payment-reads';
import { authPlugin } from '../http/auth';
import { pathId, type AppDeps } from '../http/context';
import { listAnswer, listQuery, parsePage } from '../http/pagination';
import { PathIdParams, requestSchema, routeDocs } from '../http/route-docs';

const TAGS = ['Payments'];
const paymentSchemaForVersion = ownedSchemaForVersion(PaymentSchema);

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  createPayment: routeDocs({
    operationId: 'createPayment',
    summary: 'Send money to a subscriber',
    description: [
      'The amount is taken out of the wallet at once',
      '(400 `insufficient funds` when it does not hold it; never a negative balance),',
      'then the payment is sent through the network: `new` (or `scheduled` until `start_date`), `processing`,',
      'then `completed`, `rejected` or `processed_with_errors` (the amount given back).',
      'Every state change is a `payment.status.changed` event;',
      '`callback_url` receives them too, signed as webhooks are.',
      'A new number becomes a contact.',
    ].join(' '),
    tags: TAGS,
    caller: 'merchant',
    responses: { 201: { description: 'The payment.', schema: paymentSchemaForVersion } },
    requestExample: {
      phonenumber: '+256772123456',
      amount: '250',
      currency: 'UGX',
      description: 'Refund A-17',
      payment_type: 'money',
      metadata: { invoice: 'A-17' },
    },
  }),
  listPayments: routeDocs({
    operationId: 'listPayments',
    summary: 'List payments',
    description: 'Newest first. Filters are exact matches and combine; the date ranges are inclusive.',
    tags: TAGS,
    caller: 'merchant',
    responses: {
      200: {
        description: 'A page of payments.',
        schema: (version) => listSchemaForVersion(paymentSchemaForVersion(version), version),
      },
    },
  }),
  getPayment: routeDocs({
    operationId: 'getPayment',
    summary: 'Get a payment',
    tags: TAGS,
    caller: 'merchant',
    errors: [403, 404],
    responses: { 200: { description: 'The payment.', schema: paymentSchemaForVersion } },
  }),
  cancelPayment: routeDocs({
    operationId: 'cancelPayment',
    summary: 'Cancel a payment not yet sent',
    description: [
      'Only a `new` or `scheduled` payment (one waiting for its `start_date`) can be cancelled (400 otherwise):',
      'it ends `cancelled`, with `cancelled_reason`, `cancelled_by` and `cancelled_time`,',
      'and its amount goes back to the wallet.',
    ].join(' '),
    tags: TAGS,
    caller: 'merchant',
    errors: [403, 404],
    responses: { 200: { description: 'The cancelled payment.', schema: paymentSchemaForVersion } },
    requestExample: { reason: 'Sent to the wrong number' },
  }),
};

export const paymentRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  return new Elysia({ name: 'payments', prefix: '/api/payments' })
    .use(authPlugin(sql))
    .post(
      '',
      async ({ body: input, principal, apiVersion, duplicateCheck, set }) => {
        const payment = await createPayment(deps, principal, input, duplicateCheck);
        set.status = 201;
        return ownedForVersion(payment, apiVersion);
      },
      {
        can: 'pay',
        body: requestSchema(PaymentCreate),
        ...DOCS.createPayment,
      },
    )
    .get(
      '',
      async ({ request, query: filters, principal, apiVersion }) => {
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const { count, rows } = await listPayments(sql, principal.organizationId, filters, page);
        const results = (await paymentResources(sql, rows)).map((payment) => ownedForVersion(payment, apiVersion));
        return listAnswer(request, config.publicBaseUrl, page, { count, results }, apiVersion);
      },
      {
        can: 'view',
        query: listQuery(PaymentFilters),
        ...DOCS.listPayments,
      },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion }) => {
        const payment = await findOwnPayment(sql, principal.organizationId, pathId(params.id, 'Payment'));
        const [resource] = await paymentResources(sql, [payment]);
        return ownedForVersion(resource!, apiVersion);
      },
      {
        can: 'view',
        params: PathIdParams,
        ...DOCS.getPayment,
      },
    )
    .post(
      '/:id/cancel',
      async ({ params, body, principal, apiVersion, duplicateCheck }) => {
        return ownedForVersion(
          await cancelOwnPayment(deps, principal, pathId(params.id, 'Payment'), body.reason, duplicateCheck),
          apiVersion,
        );
      },
      {
        can: 'pay',
        params: PathIdParams,
        body: requestSchema(PaymentCancel),
        ...DOCS.cancelPayment,
      },
    );
};
