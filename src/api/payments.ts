/**
 * Payments (money out, facts.md): `POST /api/payments` (form or JSON, one `phonenumber`,
 * `Duplicate-Check-Key` honoured), `GET /api/payments`, `GET /api/payments/<id>`, and
 * `POST /api/payments/<id>/cancel` for a payment not yet handed to the network.
 */
import { Elysia } from 'elysia';
import * as v from 'valibot';
import { PAYMENT_STATES, PAYMENT_TYPES, PaymentSchema, type PaymentResource } from '../domain/money-out';
import { SUPPORTED_CURRENCIES } from '../domain/money';
import { networkForMoney, operatorAmountProblem } from '../domain/networks';
import { connectedNetworks } from '../network/connections';
import { checkCallbackUrl } from '../domain/urls';
import { listForVersion, listSchemaForVersion, ownedForVersion, ownedSchemaForVersion } from '../domain/versions';
import { writeOnce, type DuplicateCheck } from '../services/duplicate-checks';
import {
  InsufficientFundsError, NotCancellableError, cancelPayment, createPaymentIn, findPayment, listPayments, paymentResources,
} from '../services/payments';
import { recordPaymentState, recordWalletMovement } from '../telemetry/metrics';
import { authPlugin } from '../http/auth';
import { ownedBy, parseId, type AppDeps } from '../http/context';
import { ApiError, notFound } from '../http/errors';
import { fieldErrors, type FieldErrors } from '../domain/errors';
import {
  REQUIRED, amountField, booleanField, choiceMessage, dateField, integerField, metadata, optionalText, phoneNumber, requestDate, text, validate,
} from '../domain/input';
import { queryObject } from '../http/filters';
import { filterDate, filterPhoneNumber } from '../domain/input';
import { listQuery, pagedList, parsePage } from '../http/pagination';
import { PathIdParams, requestSchema, routeDocs } from '../http/route-docs';

const TAGS = ['Payments'];
const paymentSchemaForVersion = ownedSchemaForVersion(PaymentSchema);

/** A payment's parameters as the provider's client libraries send them (facts.md). */
export const PaymentCreate = v.object(
  {
    phonenumber: phoneNumber,
    amount: amountField,
    currency: v.pipe(text(3), v.transform((value) => value.toUpperCase()), v.picklist(SUPPORTED_CURRENCIES, choiceMessage)),
    // Required, as the provider's recorded service requires it (a missing one is named beside the other missing fields).
    description: text(255),
    payment_type: v.optional(v.pipe(text(20), v.transform((value) => value.toLowerCase()), v.picklist(PAYMENT_TYPES, choiceMessage)), 'money'),
    callback_url: optionalText(2000),
    metadata,
    first_name: optionalText(100),
    last_name: optionalText(100),
    account: v.optional(v.pipe(v.union([v.literal(''), v.null(), integerField(1)], 'A valid integer is required.'), v.transform((value) => (value === '' ? null : value))), null),
    send_sms_message: booleanField(false),
    start_date: dateField,
  },
  REQUIRED,
);
export type PaymentInput = v.InferOutput<typeof PaymentCreate>;

const PaymentFilters = v.object({
  state: v.optional(v.picklist(PAYMENT_STATES, choiceMessage)),
  currency: v.optional(v.pipe(v.string(), v.transform((value) => value.toUpperCase()))),
  phonenumber: filterPhoneNumber,
  created_after: filterDate,
  created_before: filterDate,
  modified_after: filterDate,
  modified_before: filterDate,
});

/** The list's filters from a query string, as the REST list reads them (the console's list uses it too). */
export const parsePaymentFilters = (searchParams: URLSearchParams): v.InferOutput<typeof PaymentFilters> =>
  validate(PaymentFilters, queryObject(searchParams));

export const PaymentCancel = v.object({ reason: optionalText(255) });

export type PaymentCreator = { organizationId: number; userId: number };

/**
 * Creates a payment as the REST route and the web console both do, from parameters validated by
 * `PaymentCreate`: checks what depends on several fields (network, callback URL, start date,
 * wallet; 400 with field errors), writes it with the debit of its amount in one transaction
 * (400 `insufficient funds` when the wallet does not hold it), claiming the Duplicate-Check-Key in
 * that transaction, and starts its workflow after the commit.
 */
export async function createPayment(
  { sql, config, launcher }: Pick<AppDeps, 'sql' | 'config' | 'launcher'>,
  creator: PaymentCreator,
  input: PaymentInput,
  duplicateCheck: DuplicateCheck | null,
): Promise<PaymentResource> {
  const now = new Date();
  const errors: FieldErrors = {};
  const connected = connectedNetworks(config);
  const network = networkForMoney(input.phonenumber, input.currency, { sandboxMode: config.sandbox, connected });
  if (network.problem !== undefined) errors.phonenumber = [network.problem.replace('collections need', 'payments need')];
  const amountProblem = network.network ? operatorAmountProblem(network.network, input.currency, input.amount, connected) : null;
  if (amountProblem !== null) errors.amount = [amountProblem];
  let callbackUrl: string | null = null;
  if (input.callback_url !== null) {
    const checked = checkCallbackUrl(input.callback_url, { sandbox: config.sandbox, allowHttp: false, subject: 'Callback URLs' });
    if (checked.problem !== undefined) errors.callback_url = [checked.problem];
    else callbackUrl = checked.url;
  }
  const startDate = input.start_date === null ? null : requestDate(errors, 'start_date', input.start_date, now, '2 hours');
  const wallets = await sql<{ id: number }[]>`
    select id from accounts where organization_id = ${creator.organizationId} and currency = ${input.currency} and status = 'active'
    order by created, id`;
  const wallet = input.account === null ? wallets[0] : wallets.find((candidate) => candidate.id === input.account);
  if (wallet === undefined) {
    errors[input.account === null ? 'currency' : 'account'] = [input.account === null
      ? `Your organization has no active ${input.currency} wallet.`
      : `No active ${input.currency} wallet with id ${input.account} belongs to your organization.`];
  }
  if (Object.keys(errors).length > 0) throw fieldErrors(errors);

  let created;
  try {
    created = await writeOnce(sql, duplicateCheck, (tx) => createPaymentIn(tx, {
      organizationId: creator.organizationId,
      author: creator.userId,
      accountId: wallet!.id,
      phoneNumber: input.phonenumber,
      network: network.network!.name,
      amount: input.amount,
      currency: input.currency,
      paymentType: input.payment_type,
      description: input.description,
      metadata: input.metadata,
      callbackUrl,
      sendSmsMessage: input.send_sms_message,
      startDate,
      firstName: input.first_name,
      lastName: input.last_name,
    }), (result) => ({ type: 'payment', id: result.payment.id }));
  } catch (error) {
    if (error instanceof InsufficientFundsError) throw new ApiError(400, { detail: `insufficient funds: ${error.message}` }, {}, { cause: error });
    throw error;
  }
  const { payment, events } = created;
  await launcher.afterCommit({ events, payments: [{ id: payment.id, organizationId: payment.organizationId, startDate: payment.startDate }] });
  recordPaymentState(payment.state);
  recordWalletMovement({ type: 'mobile_payment', direction: 'debit', currency: payment.currency, amount: payment.amount });
  const [resource] = await paymentResources(sql, [payment]);
  return resource!;
}

/** Cancels a payment of the organization not yet handed to the network (400 otherwise), giving its amount back. */
export async function cancelOwnPayment(
  { sql, launcher }: Pick<AppDeps, 'sql' | 'launcher'>,
  canceller: PaymentCreator,
  paymentId: number,
  reason: string | null,
  duplicateCheck: DuplicateCheck | null,
): Promise<PaymentResource> {
  const payment = ownedBy(await findPayment(sql, paymentId), canceller.organizationId);
  let change;
  try {
    change = await cancelPayment(sql, payment.id, { reason, by: canceller.userId }, duplicateCheck);
  } catch (error) {
    if (error instanceof NotCancellableError) throw new ApiError(400, { detail: error.message }, {}, { cause: error });
    throw error;
  }
  await launcher.afterCommit({ events: change.events });
  await launcher.signalPaymentCancelled(payment.id).catch(() => {});
  recordPaymentState('cancelled');
  recordWalletMovement({ type: 'payment_release', direction: 'credit', currency: payment.currency, amount: payment.amount });
  const [resource] = await paymentResources(sql, [change.payment]);
  return resource!;
}

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
        auth: true,
        body: requestSchema(PaymentCreate),
        ...routeDocs({
          operationId: 'createPayment',
          summary: 'Send money to a subscriber',
          description:
            'The amount is taken out of the wallet at once (400 `insufficient funds` when it does not hold it; never a negative balance), ' +
            'then the payment is sent through the network: `new` (or `scheduled` until `start_date`), `processing`, then `completed`, ' +
            '`rejected` or `processed_with_errors` (the amount given back). Every state change is a `payment.status.changed` event; ' +
            '`callback_url` receives them too, signed as webhooks are. A new number becomes a contact.',
          tags: TAGS,
          caller: 'merchant',
          responses: { 201: { description: 'The payment.', schema: paymentSchemaForVersion } },
          requestExample: { phonenumber: '+256772123456', amount: '250', currency: 'UGX', description: 'Refund A-17', payment_type: 'money', metadata: { invoice: 'A-17' } },
        }),
      },
    )
    .get(
      '',
      async ({ request, query: filters, principal, apiVersion }) => {
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const { count, rows } = await listPayments(sql, principal.organizationId, filters, page);
        const results = (await paymentResources(sql, rows)).map((payment) => ownedForVersion(payment, apiVersion));
        return listForVersion(pagedList(request, config.publicBaseUrl, page, count, results), apiVersion);
      },
      {
        auth: true,
        query: listQuery(PaymentFilters),
        ...routeDocs({
          operationId: 'listPayments',
          summary: 'List payments',
          description: 'Newest first. Filters are exact matches and combine; the date ranges are inclusive.',
          tags: TAGS,
          caller: 'merchant',
          responses: { 200: { description: 'A page of payments.', schema: (version) => listSchemaForVersion(paymentSchemaForVersion(version), version) } },
        }),
      },
    )
    .get(
      '/:id',
      async ({ params, principal, apiVersion }) => {
        const id = parseId(params.id);
        if (id === null) throw notFound();
        const payment = ownedBy(await findPayment(sql, id), principal.organizationId);
        const [resource] = await paymentResources(sql, [payment]);
        return ownedForVersion(resource!, apiVersion);
      },
      {
        auth: true,
        params: PathIdParams,
        ...routeDocs({
          operationId: 'getPayment',
          summary: 'Get a payment',
          tags: TAGS,
          caller: 'merchant',
          errors: [403, 404],
          responses: { 200: { description: 'The payment.', schema: paymentSchemaForVersion } },
        }),
      },
    )
    .post(
      '/:id/cancel',
      async ({ params, body, principal, apiVersion, duplicateCheck }) => {
        const id = parseId(params.id);
        if (id === null) throw notFound();
        return ownedForVersion(await cancelOwnPayment(deps, principal, id, body.reason, duplicateCheck), apiVersion);
      },
      {
        auth: true,
        params: PathIdParams,
        body: requestSchema(PaymentCancel),
        ...routeDocs({
          operationId: 'cancelPayment',
          summary: 'Cancel a payment not yet sent',
          description: 'Only a `new` or `scheduled` payment (one waiting for its `start_date`) can be cancelled (400 otherwise): it ends `cancelled`, with `cancelled_reason`, `cancelled_by` and `cancelled_time`, and its amount goes back to the wallet.',
          tags: TAGS,
          caller: 'merchant',
          errors: [403, 404],
          responses: { 200: { description: 'The cancelled payment.', schema: paymentSchemaForVersion } },
          requestExample: { reason: 'Sent to the wrong number' },
        }),
      },
    );
};
