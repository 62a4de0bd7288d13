/**
 * Payments (money out) as they are read: their columns, payments as the API shows them with their transactions
 * (docs/api.md#payments-wallets-and-reversals-money-out), and within the organization the filtered list and a payment
 * by id.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import type { OrganizationId, PaymentId } from '../../domain/ids';
import { choiceMessage, filterDate, filterPhoneNumber } from '../../domain/input';
import {
  PAYMENT_STATES,
  serializePayment,
  type PaymentResource,
  type PaymentRow,
  type PaymentTransaction,
} from '../../domain/money-out';
import { tenantScope, timeRange, type ListPage, type PageWindow } from '../platform/queries';

export const PAYMENT_COLUMNS = `id, organization_id as "organizationId", account_id as "accountId",
  contact_id as "contactId", amount::text as amount, currency, phone_number as "phoneNumber", network,
  payment_type as "paymentType", description, metadata, callback_url as "callbackUrl",
  send_sms_message as "sendSmsMessage", state, last_error as "lastError",
  remote_transaction_id as "remoteTransactionId", rejected_reason as "rejectedReason", rejected_by as "rejectedBy",
  rejected_time as "rejectedTime", cancelled_reason as "cancelledReason", cancelled_by as "cancelledBy",
  cancelled_time as "cancelledTime", start_date as "startDate", author, updated_by as "updatedBy", created, modified`;

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
