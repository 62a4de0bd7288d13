import { Elysia } from 'elysia';
import * as v from 'valibot';
import { keyMatches } from '../auth/keys';
import { SUPPORTED_CURRENCIES } from '../domain/money';
import { withinHorizon } from '../domain/dates';
import { networkByName } from '../domain/networks';
import type { AppDeps } from './context';
import { ApiError } from './errors';
import { REQUIRED, amountField, optionalText, phoneNumber, text, validate } from './fields';
import { parseRequestBody } from './http';

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
export const networkCallbackRoutes = ({ sql, launcher }: AppDeps) =>
  new Elysia({ name: 'network-callbacks' }).post(
    '/network/payments',
    async ({ request, set }) => {
      const body = await parseRequestBody(request);
      // Credentials first: nothing about the report is judged for a caller who is not the network.
      const network = typeof body.network === 'string' ? networkByName(body.network.trim()) : null;
      const secret = /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1];
      const [credential] = network
        ? await sql<{ digest: Uint8Array }[]>`select digest from network_credentials where network = ${network.name}`
        : [];
      if (!network || !secret || !credential || !keyMatches(secret, credential.digest)) throw networkUnauthorized();
      const report = validate(IncomingPaymentReport, body);
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
    { parse: 'none' },
  );
