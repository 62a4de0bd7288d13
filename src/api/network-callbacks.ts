import { Elysia } from 'elysia';
import * as v from 'valibot';
import { SUPPORTED_CURRENCIES, listedCodes } from '../domain/money';
import { withinHorizon } from '../formats/dates';
import {
  networkByName,
  reportedPaymentNetwork,
  reportsPayments,
  type Connections,
  type Network,
} from '../domain/networks';
import type { AppDeps } from '../http/context';
import { ApiError } from '../http/errors';
import { fieldErrors } from '../domain/errors';
import { REQUIRED, amountField, optionalText, phoneNumber, text } from '../domain/input';
import { requestSchema, routeDocs } from '../http/route-docs';
import { CONNECTOR_OPERATORS } from '../network/registry';
import { networkOfSecret } from '../services/networks/network-credentials';

const IncomingPaymentReport = v.object(
  {
    network: v.pipe(
      text(64),
      v.check((name) => networkByName(name) !== null, 'Unknown network.'),
    ),
    remote_transaction_id: v.pipe(text(100), v.regex(/^[A-Za-z0-9._:-]+$/, 'Use letters, digits and . _ : - only.')),
    phonenumber: phoneNumber,
    amount: amountField,
    currency: v.pipe(
      text(3),
      v.transform((value) => value.toUpperCase()),
      v.picklist(SUPPORTED_CURRENCIES, 'Unsupported currency.'),
    ),
    reference: optionalText(255),
    // The prompt the payment answered, as the network echoes it (a push-payment callback's reference).
    prompt_reference: optionalText(100),
    payment_date: v.optional(
      v.pipe(
        text(40),
        v.check((value) => withinHorizon(new Date(value)), 'Enter an ISO 8601 date between 1970 and 2099.'),
      ),
    ),
  },
  REQUIRED,
);

const NETWORK_REPORT_PATH = '/network/payments';

const networkUnauthorized = () =>
  new ApiError(401, { detail: 'Invalid network credentials.' }, { 'WWW-Authenticate': 'Bearer' });

const IncomingPaymentAnswer = v.pipe(
  v.object({
    status: v.pipe(
      v.picklist(['accepted', 'duplicate']),
      v.description('`duplicate`: the transaction was reported before; nothing new starts.'),
    ),
    workflow_id: v.pipe(
      v.string(),
      v.description("The payment's workflow: `collection-<network>-<remote transaction id>`."),
    ),
  }),
  v.description('The report was taken.'),
  v.examples([{ status: 'accepted' as const, workflow_id: 'collection-mtn-uganda-MTN-8812' }]),
);

/**
 * The network whose secret the caller presents (`Authorization: Bearer <secret>`), found by the
 * secret's digest alone before anything in the body is read; 401 for no such secret.
 */
async function authenticateNetwork(sql: AppDeps['sql'], request: Request, connections: Connections): Promise<Network> {
  const secret = /^Bearer\s+(\S{1,200})$/i.exec(request.headers.get('authorization') ?? '')?.[1];
  if (secret === undefined) throw networkUnauthorized();
  const name = await networkOfSecret(sql, secret);
  const network = name === null ? null : networkByName(name);
  if (network === null) throw networkUnauthorized();
  if (!reportsPayments(network, connections)) {
    throw new ApiError(403, {
      detail: [
        `${network.name} is connected through its operator's API:`,
        "its payments are believed only through the operator's status query, never reported here",
        '(this route is for the sandbox and the networks without a connector).',
      ].join(' '),
    });
  }
  return network;
}

/**
 * The entry point a mobile network calls to report an incoming payment (`POST /network/payments`),
 * authenticated with that network's secret (`Authorization: Bearer <secret>`, issued by the admin
 * CLI), not with a merchant's key. A repeated report of a transaction is accepted and does nothing.
 */
export const networkCallbackRoutes = ({ sql, launcher, networks }: AppDeps) => {
  const connections = networks.connections;
  const reporters = new WeakMap<Request, Network>();
  return (
    new Elysia({ name: 'network-callbacks' })
      // Credentials before the body: the reporter is judged as the request arrives, before the body is
      // read (parsing comes later), as the API's keys are (src/http/auth.ts).
      .onRequest(async ({ request }) => {
        if (request.method === 'POST' && new URL(request.url).pathname.replace(/\/+$/, '') === NETWORK_REPORT_PATH)
          reporters.set(request, await authenticateNetwork(sql, request, connections));
      })
      .derive(async ({ request }) => ({
        reporter: reporters.get(request) ?? (await authenticateNetwork(sql, request, connections)),
      }))
      .post(
        NETWORK_REPORT_PATH,
        async ({ body: report, set, reporter }) => {
          // The body names the network its secret belongs to; another network's name is not this caller's to use.
          if (networkByName(report.network)?.name !== reporter.name) throw networkUnauthorized();
          // the API's money rules (who may report which currency, the currency's minor units), before anything is
          // stored.
          const recorded = reportedPaymentNetwork(
            reporter,
            report.phonenumber,
            report.currency,
            report.amount,
            connections,
          );
          if (recorded.problems !== undefined) throw fieldErrors(recorded.problems);
          const network = recorded.network;
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
          body: requestSchema(IncomingPaymentReport),
          ...routeDocs({
            operationId: 'reportIncomingPayment',
            summary: 'Report an incoming payment (mobile networks)',
            description: [
              'A mobile network reports a payment a subscriber made,',
              "with that network's secret as `Authorization: Bearer <secret>`.",
              'The payment is stored, matched to a collection request,',
              "verified with the organization's verification URL where the network supports it, and credited;",
              'a repeated report of a transaction starts nothing.',
              'A network this deployment has a connector for',
              `(${listedCodes(CONNECTOR_OPERATORS.map((connector) => connector.operator))}) is refused with 403:`,
              "its payments are believed only through its operator's status query.",
              'A network with no connector reports its currency only in sandbox mode while no connector is on',
              '(400 on `currency` otherwise),',
              "and an amount takes at most its currency's minor units (400 on `amount`: TZS, UGX and RWF are whole).",
            ].join(' '),
            tags: ['Mobile networks'],
            caller: 'network',
            responses: { 202: { description: 'The report was taken.', schema: IncomingPaymentAnswer } },
            // A network with a connector of its own is believed only through its operator's status query.
            errors: [403],
            requestExample: {
              network: 'MTN Uganda',
              remote_transaction_id: 'MTN-8812',
              phonenumber: '+256772123456',
              amount: '1500',
              currency: 'UGX',
              reference: 'Invoice 1042',
              payment_date: '2025-05-01T13:47:00Z',
            },
          }),
        },
      )
  );
};
