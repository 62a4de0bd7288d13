/**
 * Creating a payment (money out), as the API and the console both do: its parameters checked together, then the
 * payment written with its amount debited from the wallet in the same database transaction (the reservation: never a
 * negative balance, whatever the concurrency), and handed to the network by the `payment-<id>` workflow started after
 * the commit.
 */
import * as v from 'valibot';
import type { Queryable } from '../../db';
import { RefusedError, fieldErrors, type FieldErrors } from '../../domain/errors';
import type { OrganizationId } from '../../domain/ids';
import {
  REQUIRED,
  amountField,
  booleanField,
  choiceMessage,
  dateField,
  integerField,
  metadata,
  optionalText,
  phoneNumber,
  requestDate,
  text,
} from '../../domain/input';
import { SUPPORTED_CURRENCIES } from '../../domain/money';
import { PAYMENT_TYPES, type PaymentResource, type PaymentRow } from '../../domain/money-out';
import { moneyNetwork } from '../../domain/networks';
import { checkCallbackUrl } from '../../formats/urls';
import { recordPaymentState, recordWalletMovement } from '../../telemetry/metrics';
import type { Actor, ServiceDeps } from '../platform/deps';
import { writeOnce, type DuplicateCheck } from '../collections/duplicate-checks';
import { activeWallets } from '../wallets/wallets';
import { upsertContactIn } from '../collections/contacts';
import type { RecordedEvent } from '../webhooks/events';
import { debit, moveMoney } from '../wallets/ledger';
import { PAYMENT_COLUMNS, paymentResources } from './payment-reads';
import { recordStateEvent } from './payment-state';

/** A payment refused at creation: the wallet does not hold the amount. */
export class InsufficientFundsError extends Error {}

export type NewPayment = {
  organizationId: OrganizationId;
  author: number;
  accountId: number;
  phoneNumber: string;
  network: string;
  amount: string;
  currency: string;
  paymentType: string;
  description: string;
  metadata: Record<string, unknown> | null;
  callbackUrl: string | null;
  sendSmsMessage: boolean;
  startDate: Date | null;
  /** Null keeps a saved contact's name; a new contact gets Anonymous Contact. */
  firstName: string | null;
  lastName: string | null;
};

type CreatedPayment = { payment: PaymentRow; events: RecordedEvent[] };

/**
 * A payment in the caller's transaction: the recipient's contact (created for a new number, with
 * its event: docs/api.md#contacts), the row (`new`, or `scheduled` for a later start), the debit of its amount
 * (InsufficientFundsError when the wallet does not hold it: nothing is written), the callback URL
 * bound to it, and its first `payment.status.changed` event.
 */
export async function createPaymentIn(
  tx: Queryable,
  input: NewPayment,
  options: { startedByBatch?: boolean } = {},
): Promise<CreatedPayment> {
  const events: RecordedEvent[] = [];
  const { contact: contactRow, event: contactEvent } = await upsertContactIn(tx, input);
  if (contactEvent) events.push(contactEvent);
  const scheduled = input.startDate !== null && input.startDate.getTime() > Date.now();
  const [payment] = await tx<PaymentRow[]>`
    insert into payments (organization_id, account_id, contact_id, amount, currency, phone_number, network,
                          payment_type, description, metadata, callback_url, send_sms_message, state, start_date,
                          author, workflow_started_at)
    values (${input.organizationId}, ${input.accountId}, ${contactRow.id}, ${input.amount}, ${input.currency},
            ${input.phoneNumber}, ${input.network}, ${input.paymentType}, ${input.description},
            ${input.metadata === null ? null : tx.json(input.metadata as Parameters<typeof tx.json>[0])},
            ${input.callbackUrl}, ${input.sendSmsMessage}, ${scheduled ? 'scheduled' : 'new'}, ${input.startDate},
            ${input.author}, ${options.startedByBatch ? tx`now()` : null})
    returning ${tx.unsafe(PAYMENT_COLUMNS)}`;
  const reserved = await moveMoney(tx, {
    accountId: input.accountId,
    amount: debit(input.amount),
    currency: input.currency,
    type: 'mobile_payment',
    description: `Payment ${payment!.id} to ${input.phoneNumber}`,
    paymentId: payment!.id,
  });
  if (reserved === null)
    throw new InsufficientFundsError(`The ${input.currency} wallet does not hold ${input.amount}.`);
  if (input.callbackUrl !== null) {
    await tx`
      insert into webhooks (organization_id, user_id, event, target, payment_id)
      values (${input.organizationId}, ${input.author}, 'payment.status.changed', ${input.callbackUrl},
              ${payment!.id})`;
  }
  events.push(await recordStateEvent(tx, payment!, input.author));
  return { payment: payment!, events };
}

/**
 * A payment's parameters as the provider's client libraries send them
 * (docs/api.md#payments-wallets-and-reversals-money-out).
 */
export const PaymentCreate = v.object(
  {
    phonenumber: phoneNumber,
    amount: amountField,
    currency: v.pipe(
      text(3),
      v.transform((value) => value.toUpperCase()),
      v.picklist(SUPPORTED_CURRENCIES, choiceMessage),
    ),
    // Required, as the provider's recorded service requires it (a missing one is named beside the other missing
    // fields).
    description: text(255),
    payment_type: v.optional(
      v.pipe(
        text(20),
        v.transform((value) => value.toLowerCase()),
        v.picklist(PAYMENT_TYPES, choiceMessage),
      ),
      'money',
    ),
    callback_url: optionalText(2000),
    metadata,
    first_name: optionalText(100),
    last_name: optionalText(100),
    account: v.optional(
      v.pipe(
        v.union([v.literal(''), v.null(), integerField(1)], 'A valid integer is required.'),
        v.transform((value) => (value === '' ? null : value)),
      ),
      null,
    ),
    send_sms_message: booleanField(false),
    start_date: dateField,
  },
  REQUIRED,
);
export type PaymentInput = v.InferOutput<typeof PaymentCreate>;

/** A payment's parameters checked together, ready to write: the row's values, or field errors. */
type CheckedPayment = { errors: FieldErrors; fields: Omit<NewPayment, 'organizationId' | 'author'> | null };

/**
 * What depends on several fields of a payment validated by `PaymentCreate` (network, callback URL,
 * start date, wallet among the organization's active `wallets` of its currency): the values to
 * write, or field errors. The single payment and every row of a batch are checked by this one rule.
 */
export function checkPayment(
  { config, networks }: Pick<ServiceDeps, 'config' | 'networks'>,
  input: PaymentInput,
  wallets: readonly { id: number }[],
  now: Date,
): CheckedPayment {
  const { network, errors } = moneyNetwork(
    input.phonenumber,
    input.currency,
    input.amount,
    networks.connections,
    'payment',
  );
  if (errors.phonenumber)
    errors.phonenumber = errors.phonenumber.map((problem) => problem.replace('collections need', 'payments need'));
  let callbackUrl: string | null = null;
  if (input.callback_url !== null) {
    const checked = checkCallbackUrl(input.callback_url, {
      sandbox: config.sandbox,
      allowHttp: false,
      subject: 'Callback URLs',
    });
    if (checked.problem !== undefined) errors.callback_url = [checked.problem];
    else callbackUrl = checked.url;
  }
  const startDate =
    input.start_date === null ? null : requestDate(errors, 'start_date', input.start_date, now, '2 hours');
  const wallet = input.account === null ? wallets[0] : wallets.find((candidate) => candidate.id === input.account);
  if (wallet === undefined) {
    errors[input.account === null ? 'currency' : 'account'] = [
      input.account === null
        ? `Your organization has no active ${input.currency} wallet.`
        : `No active ${input.currency} wallet with id ${input.account} belongs to your organization.`,
    ];
  }
  if (Object.keys(errors).length > 0) return { errors, fields: null };
  return {
    errors,
    fields: {
      accountId: wallet!.id,
      phoneNumber: input.phonenumber,
      network: network!.name,
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
    },
  };
}

/** A refused debit as the API says it: 400 `insufficient funds: ...`. */
function refusedForFunds(error: unknown): unknown {
  return error instanceof InsufficientFundsError
    ? new RefusedError(`insufficient funds: ${error.message}`, { cause: error })
    : error;
}

/**
 * Creates a payment as the REST route and the web console both do, from parameters validated by
 * `PaymentCreate`: checks what depends on several fields (`checkPayment`; 400 with field errors),
 * writes it with the debit of its amount in one transaction (400 `insufficient funds` when the
 * wallet does not hold it), claiming the Duplicate-Check-Key in that transaction, and starts its
 * workflow after the commit.
 */
export async function createPayment(
  { sql, config, launcher, networks }: Pick<ServiceDeps, 'sql' | 'config' | 'launcher' | 'networks'>,
  creator: Actor,
  input: PaymentInput,
  duplicateCheck: DuplicateCheck | null,
): Promise<PaymentResource> {
  const { errors, fields } = checkPayment(
    { config, networks },
    input,
    await activeWallets(sql, creator.organizationId, input.currency),
    new Date(),
  );
  if (fields === null) throw fieldErrors(errors);
  let created;
  try {
    created = await writeOnce(
      sql,
      creator,
      duplicateCheck,
      (tx) => createPaymentIn(tx, { organizationId: creator.organizationId, author: creator.userId, ...fields }),
      (result) => ({ type: 'payment', id: result.payment.id }),
    );
  } catch (error) {
    throw refusedForFunds(error);
  }
  const { payment } = created;
  await launcher.afterCommit({
    payments: [{ id: payment.id, organizationId: payment.organizationId, startDate: payment.startDate }],
  });
  recordPaymentState(payment.state);
  recordWalletMovement({
    type: 'mobile_payment',
    direction: 'debit',
    currency: payment.currency,
    amount: payment.amount,
  });
  const [resource] = await paymentResources(sql, [payment]);
  return resource!;
}
