/**
 * The exactly-once check: the operators' own ledgers (the simulators') against the service's
 * database, per subscriber number (every schedule has numbers of its own), by operator id.
 *   (a) every subscriber debit at an operator is credited once, to the organization whose request
 *       or bill reference it answers, or left unassigned and claimable; never to another;
 *   (b) every payout and reversal is paid at most once across all routes, and what the wallet was
 *       debited for it equals what the operators paid (released money: paid nowhere);
 *   (c) no credit or unassigned collection without an operator debit;
 *   (d) every balance equals the sum of its transactions.
 * A debit no protocol lets the service learn of (`Debit.silent`) is judged by reconciliation with the
 * operator's statement instead (./statement.ts).
 */
import { testSql } from '../helpers';
import type { World } from './world';

export type Debit = {
  phone: string;
  route: string;
  ids: string[];
  amount: number;
  paybill: boolean;
  /**
   * The operator never told the service of it, and its protocol gives no way to ask: an STK push
   * whose answer (the CheckoutRequestID) and result callback M-Pesa both never delivered, by the
   * simulator's own record. Only the operator's statement shows it (test/money/statement.ts).
   */
  silent: boolean;
};
export type MoneyOut = { phone: string; route: string; id: string; amount: number; what: string };
export type OperatorLedgers = { debits: Debit[]; outs: MoneyOut[]; pending: Set<string> };

const plus = (digits: string) => `+${digits}`;
const AIRTEL_CODES: Record<string, string> = { UG: '+256', TZ: '+255', KE: '+254' };

/** What the five operators did, as their simulators recorded it. */
export function operatorLedgers(world: World): OperatorLedgers {
  const debits: Debit[] = [];
  const outs: MoneyOut[] = [];
  const pending = new Set<string>();
  const debit = (
    phone: string,
    route: string,
    ids: (string | null)[],
    amount: number,
    paybill = false,
    silent = false,
  ) => debits.push({ phone, route, ids: ids.filter((id): id is string => !!id), amount, paybill, silent });
  const out = (phone: string, route: string, id: string, amount: number, what: string) =>
    outs.push({ phone, route, id, amount, what });

  const darajaPayers = new Map<string, string>();
  for (const push of world.daraja.stkPushes()) {
    if (!push.decided) pending.add(plus(push.msisdn));
    if (!push.charged) continue;
    darajaPayers.set(push.receipt!, push.msisdn);
    const silent = push.answer === 'lost' && push.callbacksSent === 0;
    debit(
      plus(push.msisdn),
      'daraja',
      [push.receipt, push.checkoutRequestId, push.merchantRequestId],
      push.amount,
      false,
      silent,
    );
  }
  for (const paid of world.paybills.filter((each) => each.completed)) {
    darajaPayers.set(paid.transId, paid.phone.slice(1));
    debit(paid.phone, 'daraja', [paid.transId], paid.amount, true);
  }
  for (const payout of world.daraja.payouts()) {
    if (payout.finishedAt === null) pending.add(plus(payout.msisdn));
    if (payout.completed) out(plus(payout.msisdn), 'daraja', payout.receipt!, payout.amount, 'B2C payout');
  }
  for (const reversal of world.daraja.reversals().filter((each) => each.completed)) {
    const payer = darajaPayers.get(reversal.transactionId);
    if (payer) out(plus(payer), 'daraja', reversal.receipt!, reversal.amount, 'reversal');
  }

  for (const request of world.momo.requestsToPay()) {
    if (request.status === 'PENDING') pending.add(plus(request.payer));
    if (request.status === 'SUCCESSFUL')
      debit(plus(request.payer), 'momo', [request.financialTransactionId, request.referenceId], Number(request.amount));
  }
  for (const transfer of world.momo.transfers()) {
    if (transfer.status === 'PENDING') pending.add(plus(transfer.payee));
    if (transfer.status === 'SUCCESSFUL')
      out(plus(transfer.payee), 'momo', transfer.referenceId, Number(transfer.amount), 'transfer');
  }

  const airtelPhone = (country: string, msisdn: string) => `${AIRTEL_CODES[country] ?? '+'}${msisdn}`;
  const airtelCollections = new Map<string, { phone: string; amount: number }>();
  for (const transaction of [...world.airtel.collections(), ...world.airtel.disbursements()]) {
    const phone = airtelPhone(transaction.country, transaction.msisdn);
    if (transaction.status === 'TIP') pending.add(phone);
    if (transaction.status !== 'TS') continue;
    if (transaction.kind === 'collection') {
      if (transaction.airtelMoneyId)
        airtelCollections.set(transaction.airtelMoneyId, { phone, amount: transaction.amount });
      debit(phone, 'airtel', [transaction.airtelMoneyId, transaction.id], transaction.amount);
    } else out(phone, 'airtel', transaction.id, transaction.amount, 'disbursement');
  }
  for (const refund of world.airtel.refunds()) {
    const collection = airtelCollections.get(refund.airtelMoneyId);
    if (collection) out(collection.phone, 'airtel', refund.refundId, collection.amount, 'refund');
  }

  for (const transaction of world.vodacom.transactions()) {
    const phone = plus(transaction.msisdn);
    if (transaction.status === 'Pending') pending.add(phone);
    if (transaction.status !== 'Completed') continue;
    if (transaction.kind === 'c2b')
      debit(
        phone,
        'vodacom',
        [transaction.transactionId, transaction.conversationId, transaction.thirdPartyConversationId],
        Number(transaction.amount),
      );
    else out(phone, 'vodacom', transaction.transactionId, Number(transaction.amount), transaction.kind);
  }

  const deposits = new Map(world.pawapay.deposits().map((deposit) => [deposit.id, deposit]));
  const settled = new Set(['COMPLETED', 'FAILED']);
  for (const payment of [...world.pawapay.deposits(), ...world.pawapay.payouts(), ...world.pawapay.refunds()]) {
    const phone = plus(payment.phoneNumber || (deposits.get(payment.depositId ?? '')?.phoneNumber ?? ''));
    if (!settled.has(payment.status)) pending.add(phone);
    if (payment.status !== 'COMPLETED') continue;
    if (payment.kind === 'deposit')
      debit(phone, 'pawapay', [payment.id, payment.providerTransactionId], Number(payment.amount));
    else out(phone, 'pawapay', payment.id, Number(payment.amount), payment.kind);
  }
  return { debits, outs, pending };
}

export type ServiceRecords = {
  collections: {
    id: number;
    phone: string;
    organizationId: number | null;
    remoteTransactionId: string;
    creditedTo: number | null;
  }[];
  moneyOut: {
    what: 'payment' | 'reversal';
    id: number;
    phone: string;
    state: string;
    amount: number;
    debited: number;
  }[];
  unbalanced: { organizationId: number; accountId: number; balance: string; sum: string }[];
};

/** What the service's database says of those numbers and organizations (read only). */
export async function serviceRecords(phones: string[], organizations: number[]): Promise<ServiceRecords> {
  const sql = testSql();
  const collections = await sql<ServiceRecords['collections']>`
    select c.id, c.phone_number as phone, c.organization_id as "organizationId",
      c.remote_transaction_id as "remoteTransactionId", a.organization_id as "creditedTo"
    from collections c
    left join transactions t on t.collection_id = c.id and t.type = 'mobile_collection'
    left join accounts a on a.id = t.account_id
    where c.phone_number = any(${phones})`;
  const moneyOut = await sql<ServiceRecords['moneyOut']>`
    select 'payment' as what, p.id, p.phone_number as phone, p.state, p.amount::float8 as amount,
      coalesce(-(select sum(t.amount) from transactions t where t.payment_id = p.id), 0)::float8 as debited
    from payments p where p.phone_number = any(${phones})
    union all
    select 'reversal' as what, r.id, r.phone_number as phone, r.state, r.amount::float8 as amount,
      coalesce(-(select sum(t.amount) from transactions t where t.reversal_id = r.id), 0)::float8 as debited
    from reversals r where r.phone_number = any(${phones})`;
  const unbalanced = await sql<ServiceRecords['unbalanced']>`
    select a.organization_id as "organizationId", a.id as "accountId", a.balance::text as balance,
      coalesce((select sum(t.amount) from transactions t where t.account_id = a.id), 0)::text as sum
    from accounts a
    where a.organization_id = any(${organizations})
      and a.balance <> coalesce((select sum(t.amount) from transactions t where t.account_id = a.id), 0)`;
  return { collections: [...collections], moneyOut: [...moneyOut], unbalanced: [...unbalanced] };
}

export type Anomaly = { phone: string | null; rule: 'a' | 'b' | 'c' | 'd' | 'stuck'; text: string };

/** Whose each debit of a number is: the asking merchant's, or the one a paybill payment's reference named. */
export type Intents = {
  /** The organization whose request prompted the number. */
  asker: number;
  /** Paybill payments by their receipt: the organization they named (null: none). */
  paybills: Map<string, number | null>;
};

const key = (organization: number | null) => (organization === null ? 'none' : String(organization));

/** (a) and (c) for one number. */
export function checkCredits(
  phone: string,
  debits: Debit[],
  collections: ServiceRecords['collections'],
  intents: Intents,
): Anomaly[] {
  const anomalies: Anomaly[] = [];
  const intended = (debit: Debit) =>
    debit.paybill ? (intents.paybills.get(debit.ids[0]!) ?? null) : (intents.asker as number | null);
  const owed = new Map<string, number>();
  for (const debit of debits) owed.set(key(intended(debit)), (owed.get(key(intended(debit))) ?? 0) + 1);
  const credited = new Map<string, number>();
  let unassigned = 0;
  for (const collection of collections) {
    if (collection.creditedTo === null) {
      if (collection.organizationId === null) unassigned += 1;
      continue;
    }
    credited.set(key(collection.creditedTo), (credited.get(key(collection.creditedTo)) ?? 0) + 1);
    const source = debits.find((debit) => debit.ids.includes(collection.remoteTransactionId));
    if (source && intended(source) !== collection.creditedTo)
      anomalies.push({
        phone,
        rule: 'a',
        text: `${source.route} debit ${collection.remoteTransactionId} (${source.paybill ? 'paybill' : 'prompt'}, for ${key(intended(source))}) credited to organization ${collection.creditedTo}`,
      });
  }
  let shortfall = 0;
  for (const organization of new Set([...owed.keys(), ...credited.keys()])) {
    const debitCount = owed.get(organization) ?? 0;
    const creditCount = credited.get(organization) ?? 0;
    if (creditCount > debitCount)
      anomalies.push({
        phone,
        rule: debitCount === 0 ? 'c' : 'a',
        text: `organization ${organization} credited ${creditCount} time(s) for ${debitCount} operator debit(s) (${debits.map((debit) => `${debit.route} ${debit.ids[0]}`).join(', ') || 'none'})`,
      });
    shortfall += Math.max(0, debitCount - creditCount);
  }
  if (shortfall > unassigned)
    anomalies.push({
      phone,
      rule: 'a',
      text: `${shortfall - unassigned} operator debit(s) neither credited to their organization nor left unassigned (${debits.map((debit) => `${debit.route} ${debit.ids[0]} for ${key(intended(debit))}`).join(', ')})`,
    });
  else if (unassigned > shortfall)
    anomalies.push({
      phone,
      rule: 'c',
      text: `${unassigned - shortfall} unassigned collection(s) with no operator debit`,
    });
  return anomalies;
}

const RELEASED = new Set(['rejected', 'failed', 'cancelled']);

/** (b) for one number: its payment or reversal against what the operators paid it. */
export function checkMoneyOut(phone: string, outs: MoneyOut[], records: ServiceRecords['moneyOut']): Anomaly[] {
  const anomalies: Anomaly[] = [];
  const paid = outs.map((each) => `${each.route} ${each.what} ${each.id}`).join(', ');
  const said = records.map((record) => `${record.what} ${record.id} ${record.state}`).join(', ') || 'nothing';
  if (outs.length > records.length)
    anomalies.push({
      phone,
      rule: 'b',
      text: `paid ${outs.length} time(s) at operators (${paid}); the service: ${said}`,
    });
  for (const record of records) {
    if (RELEASED.has(record.state) && outs.length > 0)
      anomalies.push({ phone, rule: 'b', text: `${said}, money released, yet paid at an operator (${paid})` });
    if (record.state === 'completed' && outs.length === 0)
      anomalies.push({ phone, rule: 'b', text: `${said}, yet paid at no operator` });
  }
  const debited = records.reduce((sum, record) => sum + record.debited, 0);
  const paidSum = outs.reduce((sum, each) => sum + each.amount, 0);
  if (Math.abs(debited - paidSum) > 0.001 && !records.some((record) => record.state === 'processing'))
    anomalies.push({ phone, rule: 'b', text: `wallet debited ${debited} for ${said}; operators paid ${paidSum}` });
  return anomalies;
}
