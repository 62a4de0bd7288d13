/**
 * Daraja's paybill callbacks (C2B): a validation, the one request answered with a decision (Daraja waits about 8 s,
 * so the merchant's verification URL gets MPESA_VALIDATION_TIMEOUT_MS), and a confirmation, believed once
 * transaction status confirms it. Mounted with Daraja's other callback routes (./callbacks.ts).
 */
import { createHash } from 'node:crypto';
import { ACCEPTED, type PaybillPaymentBody } from './callback-schemas';
import { DARAJA_NETWORK, wholeShillings } from './protocol';
import type { MpesaSettings } from './settings';
import { promptReference } from '../../domain/collections';
import { parsePositiveAmount } from '../../domain/money';
import { fullNumberOf, numberFitsMask } from '../../domain/phone';
import { logger } from '../../log';
import type { CallbackContext } from '../callback-routes';

type Context = CallbackContext<MpesaSettings>;

const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

/** Control characters (C0, DEL, C1): Daraja sends none, so a field or key holding one is unreadable. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it looks for
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;
const holdsControlCharacter = (value: unknown): boolean =>
  typeof value === 'string'
    ? CONTROL_CHARACTER.test(value)
    : typeof value === 'object' &&
      value !== null &&
      Object.entries(value).some(([key, item]) => CONTROL_CHARACTER.test(key) || holdsControlCharacter(item));

/**
 * The payer of a paybill payment and the request its account number names: the number in full
 * when Daraja gives it; a masked or hashed one stands for the named request's number only when it
 * fits it; otherwise it is kept as Daraja gave it (and matches no request by number).
 */
async function paybillPayer({ merchants }: Context, body: PaybillPaymentBody, amount: string) {
  const given = String(body.MSISDN);
  const named = body.BillRefNumber
    ? await merchants.requestOfBillReference(String(body.BillRefNumber), DARAJA_NETWORK, 'KES')
    : undefined;
  const request =
    named && parsePositiveAmount(named.amount) !== null && Number(named.amount) === Number(amount) ? named : null;
  const full = fullNumberOf(given);
  if (full !== null) return { phoneNumber: full, request: request && request.phoneNumber === full ? request : null };
  if (request && numberFitsMask(request.phoneNumber, given, sha256Hex))
    return { phoneNumber: request.phoneNumber, request };
  return { phoneNumber: `+${given.replace(/\s+/g, '').replace(/^\+/, '')}`.slice(0, 70), request: null };
}

export async function paybillValidation(
  checked: { valid: true; body: PaybillPaymentBody } | { valid: false; errors: Record<string, string[]> },
  context: Context,
) {
  const { merchants, settings } = context;
  // Daraja waits for a decision: a validation that cannot be read is refused, so the subscriber pays for nothing nobody
  // could follow.
  if (!checked.valid || holdsControlCharacter(checked.body)) {
    logger.warn('paybill validation unreadable: rejected', {
      fields: checked.valid ? ['control characters'] : Object.keys(checked.errors),
    });
    return { ResultCode: 'C2B00016', ResultDesc: 'Rejected' };
  }
  const body = checked.body;
  const amount = wholeShillings(body.TransAmount);
  if (!settings || amount === null) return { ResultCode: 'C2B00013', ResultDesc: 'Rejected' };
  const payer = await paybillPayer(context, body, amount);
  // Only the request the account number names says whose payment it is: never an organization guessed by the payer's
  // number and amount.
  const organizationId = payer.request?.organizationId ?? null;
  const verification = organizationId === null ? undefined : await merchants.verificationSettingsOf(organizationId);
  // Nobody to ask (no organization, or none with a verification URL): the payment goes on to matching.
  if (!verification?.url) return { ...ACCEPTED, ResultCode: '0' };
  const decided = await context.askVerification(
    verification.url,
    {
      phonenumber: payer.phoneNumber,
      amount,
      currency_code: 'KES',
      reference: String(body.BillRefNumber ?? ''),
      remote_transaction_id: body.TransID,
    },
    verification.acceptByDefault,
    settings.validationTimeoutMs,
  );
  logger.info('paybill validation answered', {
    transId: body.TransID,
    organizationId,
    decision: decided.decision,
    decidedBy: decided.decidedBy,
    detail: decided.detail,
  });
  return decided.decision === 'accept'
    ? { ResultCode: '0', ResultDesc: 'Accepted' }
    : { ResultCode: 'C2B00016', ResultDesc: 'Rejected' };
}

export async function paybillConfirmation(body: PaybillPaymentBody, context: Context) {
  const amount = wholeShillings(body.TransAmount);
  if (!context.settings || amount === null) {
    logger.warn('paybill confirmation ignored', {
      transId: body.TransID,
      reason: context.settings ? 'amount' : 'no M-Pesa connector',
    });
    return ACCEPTED;
  }
  const payer = await paybillPayer(context, body, amount);
  // Believed once transaction status confirms it; the request its account number names is its prompt.
  await context.reportForConfirmation({
    network: DARAJA_NETWORK,
    remoteTransactionId: body.TransID,
    phoneNumber: payer.phoneNumber,
    amount,
    currency: 'KES',
    reference: String(body.BillRefNumber ?? '').slice(0, 255),
    promptReference: payer.request ? promptReference(payer.request.id, 0) : null,
    paymentDate: new Date().toISOString(),
    // An account number that names no open request of ours leaves it unassigned: never matched by number and amount.
    namedOnly: true,
  });
  return ACCEPTED;
}
