import { Elysia } from 'elysia';
import * as v from 'valibot';
import { keyMatches } from '../auth/keys';
import { SUPPORTED_CURRENCIES } from '../domain/money';
import { withinHorizon } from '../domain/dates';
import { networkByName } from '../domain/networks';
import type { AppDeps } from './context';
import { ApiError } from './errors';
import { REQUIRED, amountField, optionalText, phoneNumber, text } from './fields';
import { requestSchema, routeDocs } from './route-docs';

const IncomingPaymentReport = v.object(
  {
    network: v.pipe(text(64), v.check((name) => networkByName(name) !== null, 'Unknown network.')),
    remote_transaction_id: v.pipe(text(100), v.regex(/^[A-Za-z0-9._:-]+$/, 'Use letters, digits and . _ : - only.')),
    phonenumber: phoneNumber,
    amount: amountField,
    currency: v.pipe(text(3), v.transform((value) => value.toUpperCase()), v.picklist(SUPPORTED_CURRENCIES, 'Unsupported currency.')),
    reference: optionalText(255),
    // The prompt the payment answered, as the network echoes it (a push-payment callback's reference).
    prompt_reference: optionalText(100),
    payment_date: v.optional(v.pipe(text(40), v.check((value) => withinHorizon(new Date(value)), 'Enter an ISO 8601 date between 1970 and 2099.'))),
  },
  REQUIRED,
);

const networkUnauthorized = () => new ApiError(401, { detail: 'Invalid network credentials.' }, { 'WWW-Authenticate': 'Bearer' });

/**
 * The entry point a mobile network calls to report an incoming payment (`POST /network/payments`),
 * authenticated with that network's secret (`Authorization: Bearer <secret>`, issued by the admin
 * CLI), not with a merchant's key. A repeated report of a transaction is accepted and does nothing.
 */
const IncomingPaymentAnswer = v.pipe(
  v.object({
    status: v.pipe(v.picklist(['accepted', 'duplicate']), v.description('`duplicate`: the transaction was reported before; nothing new starts.')),
    workflow_id: v.pipe(v.string(), v.description('The payment\'s workflow: `collection-<network>-<remote transaction id>`.')),
  }),
  v.description('The report was taken.'),
  v.examples([{ status: 'accepted' as const, workflow_id: 'collection-mtn-uganda-MTN-8812' }]),
);

/** The network named in the body, when its `Authorization: Bearer <secret>` is that network's secret; else 401. */
async function authenticateNetwork(sql: AppDeps['sql'], request: Request, body: unknown) {
  const name = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).network : undefined;
  const network = typeof name === 'string' ? networkByName(name.trim()) : null;
  const secret = /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1];
  const [credential] = network
    ? await sql<{ digest: Uint8Array }[]>`select digest from network_credentials where network = ${network.name}`
    : [];
  if (!network || !secret || !credential || !keyMatches(secret, credential.digest)) throw networkUnauthorized();
  return network;
}

/**
 * The entry point a mobile network calls to report an incoming payment (`POST /network/payments`),
 * authenticated with that network's secret (`Authorization: Bearer <secret>`, issued by the admin
 * CLI), not with a merchant's key. A repeated report of a transaction is accepted and does nothing.
 */
export const networkCallbackRoutes = ({ sql, launcher }: AppDeps) =>
  new Elysia({ name: 'network-callbacks' }).post(
    '/network/payments',
    async ({ body: report, set }) => {
      const network = networkByName(report.network)!;
      const started = await launcher.startIncomingCollection({
        network: network.name,
        remoteTransactionId: report.remote_transaction_id,
        phoneNumber: report.phonenumber,
        amount: report.amount,
        currency: report.currency,
        reference: report.reference ?? '',
        promptReference: report.prompt_reference,
        paymentDate: new Date(report.payment_date ?? Date.now()).toISOString(),
      });
      set.status = 202;
      return { status: started.duplicate ? 'duplicate' : 'accepted', workflow_id: started.workflowId };
    },
    {
      // Credentials first, before the report is validated: nothing about it is judged for a caller who is not the network.
      transform: async ({ request, body }) => {
        await authenticateNetwork(sql, request, body);
      },
      body: requestSchema(IncomingPaymentReport),
      ...routeDocs({
        operationId: 'reportIncomingPayment',
        summary: 'Report an incoming payment (mobile networks)',
        description:
          'A mobile network reports a payment a subscriber made, with that network\'s secret as `Authorization: Bearer <secret>`. ' +
          'The payment is stored, matched to a collection request, verified with the organization\'s verification URL where ' +
          'the network supports it, and credited; a repeated report of a transaction starts nothing.',
        tags: ['Mobile networks'],
        caller: 'network',
        responses: { 202: { description: 'The report was taken.', schema: IncomingPaymentAnswer } },
        requestExample: {
          network: 'MTN Uganda', remote_transaction_id: 'MTN-8812', phonenumber: '+256772123456', amount: '1500', currency: 'UGX',
          reference: 'Invoice 1042', payment_date: '2025-05-01T13:47:00Z',
        },
      }),
    },
  );
