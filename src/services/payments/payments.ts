/**
 * Payments (money out): created with their amount debited from the wallet in the same database
 * transaction (the reservation: never a negative balance, whatever the concurrency), then handed
 * to the network by the `payment-<id>` workflow; a payment that fails or is cancelled gets its
 * amount back through a reversing transaction. Every state change writes the row and a
 * `payment.status.changed` event in one transaction, and each step is idempotent: a state is left
 * only from the states it can be left from, so a retried step changes nothing twice.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import { RefusedError, fieldErrors, type FieldErrors } from '../../domain/errors';
import type { OrganizationId, PaymentId } from '../../domain/ids';
import {
  REQUIRED,
  amountField,
  booleanField,
  choiceMessage,
  dateField,
  filterDate,
  filterPhoneNumber,
  integerField,
  metadata,
  optionalText,
  phoneNumber,
  requestDate,
  text,
} from '../../domain/input';
import { SUPPORTED_CURRENCIES } from '../../domain/money';
import {
  CANCELLABLE_PAYMENT_STATES,
  PAYMENT_STATES,
  PAYMENT_TYPES,
  serializePayment,
  type PaymentResource,
  type PaymentRow,
  type PaymentState,
  type PaymentTransaction,
} from '../../domain/money-out';
import { moneyNetwork } from '../../domain/networks';
import { checkCallbackUrl } from '../../formats/urls';
import { recordPaymentState, recordWalletMovement } from '../../telemetry/metrics';
import type { Actor, ServiceDeps } from '../platform/deps';
import { markAuditedWrite } from '../merchants/audit';
import { writeOnce } from '../collections/duplicate-checks';
import { tenantScope, type ListPage, type PageWindow } from '../platform/queries';
import { activeWallets } from '../wallets/wallets';
import { upsertContactIn } from '../collections/contacts';
import { claimDuplicateCheckKey, type DuplicateCheck } from '../collections/duplicate-checks';
import { recordEvent, type RecordedEvent } from '../webhooks/events';
import { debit, moveMoney } from '../wallets/ledger';
import { timeRange } from '../platform/queries';

const PAYMENT_COLUMNS = `id, organization_id as "organizationId", account_id as "accountId", contact_id as "contactId",
  amount::text as amount, currency, phone_number as "phoneNumber", network, payment_type as "paymentType", description,
    metadata,
  callback_url as "callbackUrl", send_sms_message as "sendSmsMessage", state, last_error as "lastError",
  remote_transaction_id as "remoteTransactionId", rejected_reason as "rejectedReason", rejected_by as "rejectedBy",
  rejected_time as "rejectedTime", cancelled_reason as "cancelledReason", cancelled_by as "cancelledBy", cancelled_time
    as "cancelledTime",
  start_date as "startDate", author, updated_by as "updatedBy", created, modified`;

/** A payment refused at creation: the wallet does not hold the amount. */
export class InsufficientFundsError extends Error {}
/** A cancellation of a payment already handed to the network (or finished). */
class NotCancellableError extends Error {}

async function transactionsOf(sql: Queryable, paymentIds: PaymentId[]): Promise<Map<PaymentId, PaymentTransaction[]>> {
  const byPayment = new Map<PaymentId, PaymentTransaction[]>();
  if (paymentIds.length === 0) return byPayment;
  const rows = await sql<(PaymentTransaction & { paymentId: PaymentId })[]>`
    select id, type, amount::text as amount, created, payment_id as "paymentId" from transactions
    where payment_id in ${sql(paymentIds)} order by id`;
  for (const { paymentId, ...transaction } of rows)
    byPayment.set(paymentId, [...(byPayment.get(paymentId) ?? []), transaction]);
  return byPayment;
}

/** Payments as the API shows them (docs/api.md#payments-wallets-and-reversals-money-out), with their transactions. */
export async function paymentResources(sql: Queryable, payments: readonly PaymentRow[]): Promise<PaymentResource[]> {
  const transactions = await transactionsOf(
    sql,
    payments.map((payment) => payment.id),
  );
  return payments.map((payment) => serializePayment(payment, transactions.get(payment.id) ?? []));
}

export async function findPayment(sql: Queryable, id: PaymentId): Promise<PaymentRow | undefined> {
  const [row] = await sql<PaymentRow[]>`select ${sql.unsafe(PAYMENT_COLUMNS)} from payments where id = ${id}`;
  return row;
}

/** The `payment.status.changed` event of the payment as it now is, in the caller's transaction. */
async function recordStateEvent(tx: Queryable, payment: PaymentRow, author: number | null): Promise<RecordedEvent> {
  const [resource] = await paymentResources(tx, [payment]);
  return await recordEvent(tx, {
    organizationId: payment.organizationId,
    type: 'payment.status.changed',
    data: resource!,
    author,
  });
}

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
      payment_type, description,
                          metadata, callback_url, send_sms_message, state, start_date, author, workflow_started_at)
    values
      (${input.organizationId}, ${input.accountId}, ${contactRow.id}, ${input.amount}, ${input.currency},
        ${input.phoneNumber},
            ${input.network}, ${input.paymentType}, ${input.description},
            ${input.metadata === null ? null : tx.json(input.metadata as Parameters<typeof tx.json>[0])},
              ${input.callbackUrl},
            ${input.sendSmsMessage}, ${scheduled ? 'scheduled' : 'new'}, ${input.startDate}, ${input.author},
            ${options.startedByBatch ? tx`now()` : null})
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
    await tx`insert into webhooks (organization_id, user_id, event, target, payment_id)
             values (${input.organizationId}, ${input.author},
               'payment.status.changed', ${input.callbackUrl}, ${payment!.id})`;
  }
  events.push(await recordStateEvent(tx, payment!, input.author));
  return { payment: payment!, events };
}

export type StateChange = { payment: PaymentRow; events: RecordedEvent[] };
/** A state change a merchant asked for (a cancellation): recorded as its actor's, claiming its Duplicate-Check-Key. */
type MerchantRequest = { actor: Actor; duplicateCheck: DuplicateCheck | null };

/**
 * Moves a payment from one of `from` to `to` with the given columns, in one transaction with its
 * event and, when `release` is set, the reversing transaction that gives the amount back. Null when
 * the payment is not in one of `from` (another step moved it first): nothing is written.
 */
async function changeState(
  sql: Sql,
  paymentId: PaymentId,
  from: readonly PaymentState[],
  to: PaymentState,
  set: {
    lastError?: string | null;
    remoteTransactionId?: string | null;
    rejected?: { reason: string; by: string };
    cancelled?: { reason: string | null; by: number | null };
  },
  release: boolean,
  merchant: MerchantRequest | null = null,
): Promise<StateChange | null> {
  return (await sql.begin(async (tx): Promise<StateChange | null> => {
    if (merchant !== null) await markAuditedWrite(tx, merchant.actor);
    const [payment] = await tx<PaymentRow[]>`
      update payments set
        state = ${to},
        last_error = ${set.lastError === undefined ? tx`last_error` : set.lastError},
        remote_transaction_id
          = ${set.remoteTransactionId === undefined ? tx`remote_transaction_id` : set.remoteTransactionId},
        rejected_reason = ${set.rejected ? set.rejected.reason : tx`rejected_reason`},
        rejected_by = ${set.rejected ? set.rejected.by : tx`rejected_by`},
        rejected_time = ${set.rejected ? tx`now()` : tx`rejected_time`},
        cancelled_reason = ${set.cancelled ? set.cancelled.reason : tx`cancelled_reason`},
        cancelled_by = ${set.cancelled ? set.cancelled.by : tx`cancelled_by`},
        cancelled_time = ${set.cancelled ? tx`now()` : tx`cancelled_time`},
        updated_by = ${set.cancelled ? set.cancelled.by : tx`updated_by`},
        workflow_started_at = coalesce(workflow_started_at, now()),
        modified = now()
      where id = ${paymentId} and state in ${tx(from as PaymentState[])}
      returning ${tx.unsafe(PAYMENT_COLUMNS)}`;
    if (!payment) return null;
    // A merchant's request (a cancellation) claims its Duplicate-Check-Key with the change it made.
    if (merchant?.duplicateCheck) await claimDuplicateCheckKey(tx, merchant.duplicateCheck);
    if (release) {
      const released = await moveMoney(tx, {
        accountId: payment.accountId,
        amount: payment.amount,
        currency: payment.currency,
        type: 'payment_release',
        description: `Payment ${payment.id} ${to === 'cancelled' ? 'cancelled' : 'failed'}: amount given back`,
        paymentId: payment.id,
      });
      if (!released) throw new Error(`payment ${payment.id}: the release could not be credited`);
    }
    return { payment, events: [await recordStateEvent(tx, payment, set.cancelled?.by ?? null)] };
  })) as StateChange | null;
}

/** The workflow hands the payment to the network: `processing`. Null when it was cancelled (or moved on) first. */
export const beginPayment = (sql: Sql, paymentId: PaymentId) =>
  changeState(sql, paymentId, CANCELLABLE_PAYMENT_STATES, 'processing', {}, false);

export type PayoutOutcome =
  | { status: 'completed'; remoteTransactionId: string }
  | { status: 'rejected' | 'failed'; error: string; remoteTransactionId: string | null };

/** What the network made of it: `completed`, or `rejected` / `processed_with_errors` with the amount given back. */
export function finishPayment(sql: Sql, paymentId: PaymentId, outcome: PayoutOutcome): Promise<StateChange | null> {
  if (outcome.status === 'completed') {
    return changeState(
      sql,
      paymentId,
      ['processing'],
      'completed',
      { remoteTransactionId: outcome.remoteTransactionId, lastError: null },
      false,
    );
  }
  if (outcome.status === 'rejected') {
    return changeState(
      sql,
      paymentId,
      ['processing'],
      'rejected',
      {
        lastError: outcome.error,
        remoteTransactionId: outcome.remoteTransactionId,
        rejected: { reason: outcome.error, by: 'network' },
      },
      true,
    );
  }
  return changeState(
    sql,
    paymentId,
    ['processing'],
    'processed_with_errors',
    { lastError: outcome.error, remoteTransactionId: outcome.remoteTransactionId },
    true,
  );
}

/**
 * Cancels a payment not yet handed to the network, giving its amount back (NotCancellableError
 * otherwise). The workflow, woken by a signal or at its start date, finds it cancelled and ends.
 */
async function cancelPayment(
  sql: Sql,
  paymentId: PaymentId,
  canceller: Actor,
  reason: string | null,
  duplicateCheck: DuplicateCheck | null,
): Promise<StateChange> {
  const cancelled = { reason, by: canceller.userId };
  const change = await changeState(sql, paymentId, CANCELLABLE_PAYMENT_STATES, 'cancelled', { cancelled }, true, {
    actor: canceller,
    duplicateCheck,
  });
  if (change === null) {
    const current = await findPayment(sql, paymentId);
    throw new NotCancellableError(
      `A ${current?.state ?? 'missing'} payment cannot be cancelled: only new and scheduled payments can.`,
    );
  }
  return change;
}

/** One page of an organization's payments matching the filters, newest first, with the total count. */
export async function listPayments(
  sql: Sql,
  organizationId: OrganizationId,
  filters: PaymentFilterValues,
  page: PageWindow,
): Promise<ListPage<PaymentRow>> {
  return await tenantScope(sql, organizationId).listPage<PaymentRow>(
    {
      columns: sql.unsafe(PAYMENT_COLUMNS),
      from: sql`payments`,
      filters: sql`
      ${filters.state !== undefined ? sql`and state = ${filters.state}` : sql``}
      ${filters.currency !== undefined ? sql`and currency = ${filters.currency}` : sql``}
      ${filters.phonenumber !== undefined ? sql`and phone_number = ${filters.phonenumber}` : sql``}
      ${timeRange(sql, 'created', filters.created_after, filters.created_before)}
      ${timeRange(sql, 'modified', filters.modified_after, filters.modified_before)}`,
      orderBy: sql`order by created desc, id desc`,
    },
    page,
  );
}

/** The organization's payment `id` (403 when another organization's, 404 when none). */
export async function findOwnPayment(
  sql: Queryable,
  organizationId: OrganizationId,
  id: PaymentId,
): Promise<PaymentRow> {
  return await tenantScope(sql, organizationId).ownRow<PaymentRow>({
    table: 'payments',
    id,
    columns: sql.unsafe(PAYMENT_COLUMNS),
  });
}

// ---------------------------------------------------------------------------------------------
// Payments as the API and the console make and cancel them

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

export const PaymentFilters = v.object({
  state: v.optional(v.picklist(PAYMENT_STATES, choiceMessage)),
  currency: v.optional(
    v.pipe(
      v.string(),
      v.transform((value) => value.toUpperCase()),
    ),
  ),
  phonenumber: filterPhoneNumber,
  created_after: filterDate,
  created_before: filterDate,
  modified_after: filterDate,
  modified_before: filterDate,
});
type PaymentFilterValues = v.InferOutput<typeof PaymentFilters>;

export const PaymentCancel = v.object({ reason: optionalText(255) });

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

/** Cancels a payment of the organization not yet handed to the network (400 otherwise), giving its amount back. */
export async function cancelOwnPayment(
  { sql, launcher }: Pick<ServiceDeps, 'sql' | 'launcher'>,
  canceller: Actor,
  paymentId: PaymentId,
  reason: string | null,
  duplicateCheck: DuplicateCheck | null,
): Promise<PaymentResource> {
  const payment = await findOwnPayment(sql, canceller.organizationId, paymentId);
  let change;
  try {
    change = await cancelPayment(sql, payment.id, canceller, reason, duplicateCheck);
  } catch (error) {
    if (error instanceof NotCancellableError) throw new RefusedError(error.message, { cause: error });
    throw error;
  }
  await launcher.signalPaymentCancelled(payment.id).catch(() => {});
  recordPaymentState('cancelled');
  recordWalletMovement({
    type: 'payment_release',
    direction: 'credit',
    currency: payment.currency,
    amount: payment.amount,
  });
  const [resource] = await paymentResources(sql, [change.payment]);
  return resource!;
}
