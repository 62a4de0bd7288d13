/**
 * Sandbox (sandbox mode only): simulate a subscriber's payment from a number, reported through the
 * same entry point a network's callback uses (the launcher's incoming collection), so it is stored, matched,
 * verified and credited exactly as a real one; it matches the signed-in organization's requests only.
 */
import { randomBytes } from 'node:crypto';
import { Elysia } from 'elysia';
import type { AppDeps } from '../../http/context';
import { REQUIRED, amountField, optionalText, phoneNumber, text as textField, validate } from '../../domain/input';
import { findApiError } from '../../http/errors';
import { SUPPORTED_CURRENCIES } from '../../domain/money';
import { SANDBOX_NETWORK, reportedPaymentNetwork } from '../../domain/networks';
import type { ConsoleSession } from '../../services/merchants/console-sessions';
import * as v from 'valibot';
import { html } from '../html';
import { consoleError, htmlResponse } from '../http';
import {
  formErrors,
  input,
  layout,
  notice,
  postForm,
  sectionFrame,
  select,
  type FieldErrors,
  type Values,
} from '../layout';
import { consoleSessionPlugin } from '../session';

const SimulatedPayment = v.object(
  {
    phonenumber: phoneNumber,
    amount: amountField,
    currency: v.pipe(
      textField(3),
      v.transform((value) => value.toUpperCase()),
      v.picklist(SUPPORTED_CURRENCIES, 'Unsupported currency.'),
    ),
    reference: optionalText(255),
  },
  REQUIRED,
);

export const sandboxRoutes = (deps: AppDeps) => {
  const { config, launcher } = deps;
  const frame = sectionFrame(config.sandbox, 'sandbox');
  const onlyInSandbox = () => {
    if (!config.sandbox) throw consoleError(404, 'The sandbox exists in sandbox mode only.');
  };

  function page(session: ConsoleSession, values: Values, errors: FieldErrors, result?: string, status = 200) {
    const content = html`${result ? notice(result) : ''}
<section class="card"><h2>Simulate an incoming payment</h2>
<p class="muted">A subscriber pays from this number, as the sandbox network reports it. The payment can complete only \
your own \
organization's open requests: it is matched to your oldest open request with the same number, amount and currency, \
verified with your \
verification URL where the network asks for it, and credited to your wallet. A payment that matches none of your \
requests is never \
matched to another organization's; it waits unassigned, for you to claim under Collections.</p>
${formErrors(errors, ['phonenumber', 'amount', 'currency', 'reference'])}
${postForm(
  session,
  '/console/sandbox/payments',
  html`
${input('phonenumber', 'From number', values, errors, {
  required: true,
  inputmode: 'tel',
  hint: 'For example +256772123456.',
})}
${input('amount', 'Amount', values, errors, { required: true, inputmode: 'decimal' })}
${select(
  'currency',
  'Currency',
  SUPPORTED_CURRENCIES.map((code) => [code, code] as const),
  { currency: 'BXC', ...values },
  errors,
)}
${input('reference', 'Reference', values, errors)}
<div class="actions"><button type="submit" class="primary">Send payment</button></div>`,
)}</section>`;
    return htmlResponse(layout(frame(session, 'Sandbox'), content), status);
  }

  return new Elysia({ name: 'console-sandbox' })
    .use(consoleSessionPlugin(deps))
    .get(
      '/console/sandbox',
      ({ session }) => {
        onlyInSandbox();
        return page(session, {}, {});
      },
      { page: 'view' },
    )
    .post(
      '/console/sandbox/payments',
      async ({ session, form }) => {
        onlyInSandbox();
        try {
          const payment = validate(SimulatedPayment, form);
          // The sandbox pays BXC, and the real currencies of the networks it simulates (with no connector on at all),
          // in their minor units.
          const choice = reportedPaymentNetwork(
            SANDBOX_NETWORK,
            payment.phonenumber,
            payment.currency,
            payment.amount,
            deps.networks.connections,
          );
          if (choice.problems !== undefined) return page(session, form, choice.problems, undefined, 400);
          const remoteTransactionId = `SBX-CONSOLE-${randomBytes(6).toString('hex').toUpperCase()}`;
          const reported = await launcher.startIncomingCollection({
            network: choice.network!.name,
            remoteTransactionId,
            phoneNumber: payment.phonenumber,
            amount: payment.amount,
            currency: payment.currency,
            reference: payment.reference ?? '',
            promptReference: null,
            paymentDate: new Date().toISOString(),
            // The page acts for the signed-in organization: it completes that organization's requests only.
            reportedFor: session.organizationId,
          });
          return page(
            session,
            {},
            {},
            [
              `Payment ${remoteTransactionId} reported on ${choice.network!.name} (workflow ${reported.workflowId}).`,
              'If it matches an open request of yours (number, amount, currency) it is credited and appears under',
              'Collections; otherwise it waits unassigned:',
              `claim it under Collections with remote transaction id ${remoteTransactionId}.`,
            ].join(' '),
          );
        } catch (error) {
          const apiError = findApiError(error);
          if (apiError?.status !== 400) throw error;
          return page(session, form, apiError.body as FieldErrors, undefined, 400);
        }
      },
      { action: 'collect', parse: 'none' },
    );
};
