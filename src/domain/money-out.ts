/**
 * Money out and money visible (docs/api.md#payments-wallets-and-reversals-money-out): wallets (accounts), the
 * transactions behind every balance, payments to subscribers and reversals of collections, and the currency and network
 * lists. Each serialiser is typed by the valibot schema that documents its object.
 */
import * as v from 'valibot';
import type { Network } from './networks';
import {
  Author,
  CurrencyCode,
  Id,
  Metadata,
  OwningOrganization,
  PhoneNumber,
  Timestamp,
  UpdatedBy,
  described,
} from './shapes';
import { formatNullableTimestamp, formatTimestamp } from '../formats/time';
import type { CollectionId, ContactId, OrganizationId, PaymentId, ReversalId, TransactionId, WalletId } from './ids';
import {
  LEDGER_LINKS,
  LEDGER_TRANSACTION_TYPES,
  movementNoun,
  type LedgerKind,
  type LedgerLinks,
  type TransactionType,
} from './money-movements';

/** A decimal string with four decimals, negative for a debit. */
const SignedAmount = v.pipe(
  v.string(),
  v.regex(/^-?\d+\.\d{4}$/),
  v.description('Decimal string with four decimals; negative for money out of the wallet.'),
  v.examples(['-250.0000']),
);
const Amount = v.pipe(
  v.string(),
  v.regex(/^\d+\.\d{4}$/),
  v.description('Decimal string with four decimals.'),
  v.examples(['250.0000']),
);
/**
 * Timestamps of money-out objects carry fractional seconds (docs/api.md#api-behaviour-worth-knowing),
 * `YYYY-MM-DDTHH:MM:SS.sssZ`.
 */
const PreciseTimestamp = v.pipe(
  v.string(),
  v.description('UTC with fractional seconds, `YYYY-MM-DDTHH:MM:SS.sssZ`.'),
  v.examples(['2025-05-01T13:45:00.123Z']),
);
/** An instant with milliseconds (what a wallet transaction and a statement show). */
export const precise = (date: Date): string => date.toISOString();
const preciseOrNull = (date: Date | null): string | null => (date === null ? null : date.toISOString());

// Accounts (wallets).

export const ACCOUNT_STATUSES = ['active', 'inactive'] as const;

export type WalletRow = {
  id: WalletId;
  organizationId: OrganizationId;
  currency: string;
  label: string;
  description: string;
  status: string;
  balance: string;
  lowBalanceThreshold: string | null;
  lowBalanceNotificationLastSendTime: Date | null;
  author: number | null;
  updatedBy: number | null;
  created: Date;
  modified: Date;
};

export const AccountSchema = v.pipe(
  v.object({
    id: Id,
    organization: OwningOrganization,
    balance: described(
      Amount,
      'What the wallet holds now: the sum of its transactions (amounts reserved by payments already taken out).',
    ),
    currency: CurrencyCode,
    status: described(v.picklist(ACCOUNT_STATUSES), '`active` or `inactive`.'),
    label: v.string(),
    description: v.string(),
    low_balance_threshold: v.nullable(v.string()),
    low_balance_notification_last_send_time: v.nullable(Timestamp),
    created: Timestamp,
    author: Author,
    modified: Timestamp,
    updated_by: UpdatedBy,
  }),
  v.description('A wallet of the organization (`GET /api/accounts`).'),
  v.examples([
    {
      id: 12,
      organization: 3,
      balance: '98500.0000',
      currency: 'UGX',
      status: 'active',
      label: 'UGX wallet',
      description: '',
      low_balance_threshold: null,
      low_balance_notification_last_send_time: null,
      created: '2025-04-01T09:00:00Z',
      author: 5,
      modified: '2025-05-01T13:47:02Z',
      updated_by: null,
    },
  ]),
);
type AccountResource = v.InferOutput<typeof AccountSchema>;

export function serializeAccount(wallet: WalletRow): AccountResource {
  return {
    id: wallet.id,
    organization: wallet.organizationId,
    balance: wallet.balance,
    currency: wallet.currency,
    status: wallet.status as AccountResource['status'],
    label: wallet.label,
    description: wallet.description,
    low_balance_threshold: wallet.lowBalanceThreshold,
    low_balance_notification_last_send_time: formatNullableTimestamp(wallet.lowBalanceNotificationLastSendTime),
    created: formatTimestamp(wallet.created),
    author: wallet.author,
    modified: formatTimestamp(wallet.modified),
    updated_by: wallet.updatedBy === null ? null : String(wallet.updatedBy),
  };
}

// Transactions.

/**
 * What moved a wallet's money, a credit (positive) or a debit (negative): the types of src/domain/money-movements.ts.
 */
export const TRANSACTION_TYPES: readonly TransactionType[] = LEDGER_TRANSACTION_TYPES.map((entry) => entry.type);

/**
 * A wallet transaction, with the id of the movement it belongs to in its kind's field (`paymentId`; null for the
 * others).
 */
export type LedgerRow = {
  id: TransactionId;
  accountId: WalletId;
  amount: string;
  currency: string;
  type: string;
  description: string;
  created: Date;
} & LedgerLinks;

const TRANSACTION_TYPES_NOTE = `${LEDGER_TRANSACTION_TYPES.map(({ type, note }) =>
  note === null ? `\`${type}\`` : `\`${type}\` (${note})`,
).join(', ')}.`;

const belongsToSchema = (kind: LedgerKind) =>
  described(v.nullable(Id), `The ${movementNoun(kind)} it belongs to, if any.`);
/** A field per kind of movement the ledger names (`payment`): the id of the one the transaction belongs to. */
const BELONGS_TO = Object.fromEntries(LEDGER_LINKS.map(({ kind }) => [kind, belongsToSchema(kind)])) as Record<
  LedgerKind,
  ReturnType<typeof belongsToSchema>
>;

/** The ids of the transaction's movement, as the API's fields. */
const belongsTo = (row: LedgerRow) =>
  Object.fromEntries(LEDGER_LINKS.map(({ kind, field }) => [kind, row[field]])) as Record<LedgerKind, number | null>;

export const LedgerTransactionSchema = v.pipe(
  v.object({
    id: Id,
    account: described(Id, 'The wallet whose balance it changed.'),
    amount: SignedAmount,
    currency: CurrencyCode,
    type: described(v.string(), TRANSACTION_TYPES_NOTE),
    description: v.string(),
    ...BELONGS_TO,
    fee_transaction: v.null(),
    created: PreciseTimestamp,
  }),
  v.description("A change of a wallet's balance: every balance is the sum of its transactions."),
  v.examples([
    {
      id: 311,
      account: 12,
      amount: '-250.0000',
      currency: 'UGX',
      type: 'mobile_payment',
      description: 'Payment 77 to +256772123456',
      collection: null,
      payment: 77,
      reversal: null,
      fee_transaction: null,
      created: '2025-05-01T13:47:02.512Z',
    },
  ]),
);
type LedgerTransactionResource = v.InferOutput<typeof LedgerTransactionSchema>;

export function serializeLedgerTransaction(row: LedgerRow): LedgerTransactionResource {
  return {
    id: row.id,
    account: row.accountId,
    amount: row.amount,
    currency: row.currency,
    type: row.type,
    description: row.description,
    ...belongsTo(row),
    fee_transaction: null,
    created: precise(row.created),
  };
}

// Payments.

export const PAYMENT_STATES = [
  'new',
  'scheduled',
  'processing',
  'completed',
  'rejected',
  'processed_with_errors',
  'cancelled',
] as const;
export type PaymentState = (typeof PAYMENT_STATES)[number];
export const FINAL_PAYMENT_STATES: readonly PaymentState[] = [
  'completed',
  'rejected',
  'processed_with_errors',
  'cancelled',
];
/** A payment can be cancelled until it is handed to the network. */
export const CANCELLABLE_PAYMENT_STATES: readonly PaymentState[] = ['new', 'scheduled'];
export const PAYMENT_TYPES = ['money', 'airtime'] as const;

export type PaymentRow = {
  id: PaymentId;
  organizationId: OrganizationId;
  accountId: WalletId;
  contactId: ContactId | null;
  amount: string;
  currency: string;
  phoneNumber: string;
  network: string;
  paymentType: string;
  description: string;
  metadata: Record<string, unknown> | null;
  callbackUrl: string | null;
  sendSmsMessage: boolean;
  state: PaymentState;
  lastError: string | null;
  remoteTransactionId: string | null;
  rejectedReason: string | null;
  rejectedBy: string | null;
  rejectedTime: Date | null;
  cancelledReason: string | null;
  cancelledBy: number | null;
  cancelledTime: Date | null;
  startDate: Date | null;
  author: number | null;
  updatedBy: number | null;
  created: Date;
  modified: Date;
};

const TransactionReference = v.object({ id: Id, type: v.string(), amount: SignedAmount, created: PreciseTimestamp });

export const PaymentSchema = v.pipe(
  v.object({
    id: Id,
    organization: OwningOrganization,
    amount: Amount,
    currency: CurrencyCode,
    payment_type: described(v.picklist(PAYMENT_TYPES), '`money` (a mobile-money transfer) or `airtime`.'),
    metadata: Metadata,
    description: v.string(),
    phone_nos: described(v.array(PhoneNumber), 'The recipient: one number in international format.'),
    state: described(
      v.picklist(PAYMENT_STATES),
      [
        '`new`, `scheduled` (a later `start_date`), `processing` (handed to the network),',
        'then `completed`, `rejected` (the network refused), `processed_with_errors` (the network failed it),',
        'or `cancelled`.',
      ].join(' '),
    ),
    last_error: described(v.nullable(v.string()), 'Why the network refused or failed it.'),
    rejected_reason: v.nullable(v.string()),
    rejected_by: described(v.nullable(v.string()), 'Who refused it: `network`.'),
    rejected_time: v.nullable(PreciseTimestamp),
    cancelled_reason: v.nullable(v.string()),
    cancelled_by: described(v.nullable(v.number()), 'The user who cancelled it.'),
    cancelled_time: v.nullable(PreciseTimestamp),
    created: PreciseTimestamp,
    author: Author,
    modified: PreciseTimestamp,
    updated_by: UpdatedBy,
    start_date: described(v.nullable(PreciseTimestamp), 'When it is sent (a scheduled payment); null: at once.'),
    account: described(Id, 'The wallet it is paid from.'),
    charged_fee: described(Amount, 'Fees charged on top of the amount (none in this service).'),
    remote_transaction_id: described(v.nullable(v.string()), "The network's id of the transfer, once sent."),
    send_sms_message: v.boolean(),
    callback_url: described(
      v.nullable(v.string()),
      'Receives each `payment.status.changed` of this payment, as a webhook does.',
    ),
    transactions: described(
      v.array(TransactionReference),
      'The wallet transactions of the payment: its debit and, when it failed or was cancelled, the release.',
    ),
  }),
  v.description('A payment (money out) to a subscriber.'),
  v.examples([
    {
      id: 77,
      organization: 3,
      amount: '250.0000',
      currency: 'UGX',
      payment_type: 'money' as const,
      metadata: { invoice: 'A-17' },
      description: 'Refund A-17',
      phone_nos: ['+256772123456'],
      state: 'completed' as const,
      last_error: null,
      rejected_reason: null,
      rejected_by: null,
      rejected_time: null,
      cancelled_reason: null,
      cancelled_by: null,
      cancelled_time: null,
      created: '2025-05-01T13:45:00.120Z',
      author: 5,
      modified: '2025-05-01T13:45:02.400Z',
      updated_by: null,
      start_date: null,
      account: 12,
      charged_fee: '0.0000',
      remote_transaction_id: 'SBX-PAY-77',
      send_sms_message: false,
      callback_url: null,
      transactions: [{ id: 311, type: 'mobile_payment', amount: '-250.0000', created: '2025-05-01T13:45:00.120Z' }],
    },
  ]),
);
export type PaymentResource = v.InferOutput<typeof PaymentSchema>;

export type PaymentTransaction = { id: number; type: string; amount: string; created: Date };

export function serializePayment(payment: PaymentRow, transactions: readonly PaymentTransaction[]): PaymentResource {
  return {
    id: payment.id,
    organization: payment.organizationId,
    amount: payment.amount,
    currency: payment.currency,
    payment_type: payment.paymentType as PaymentResource['payment_type'],
    metadata: payment.metadata,
    description: payment.description,
    phone_nos: [payment.phoneNumber],
    state: payment.state,
    last_error: payment.lastError,
    rejected_reason: payment.rejectedReason,
    rejected_by: payment.rejectedBy,
    rejected_time: preciseOrNull(payment.rejectedTime),
    cancelled_reason: payment.cancelledReason,
    cancelled_by: payment.cancelledBy,
    cancelled_time: preciseOrNull(payment.cancelledTime),
    created: precise(payment.created),
    author: payment.author,
    modified: precise(payment.modified),
    updated_by: payment.updatedBy === null ? null : String(payment.updatedBy),
    start_date: preciseOrNull(payment.startDate),
    account: payment.accountId,
    charged_fee: '0.0000',
    remote_transaction_id: payment.remoteTransactionId,
    send_sms_message: payment.sendSmsMessage,
    callback_url: payment.callbackUrl,
    transactions: transactions.map((transaction) => ({
      id: transaction.id,
      type: transaction.type,
      amount: transaction.amount,
      created: precise(transaction.created),
    })),
  };
}

// Reversals.

export const REVERSAL_STATES = ['processing', 'completed', 'failed'] as const;
export type ReversalState = (typeof REVERSAL_STATES)[number];

export type ReversalRow = {
  id: ReversalId;
  organizationId: OrganizationId;
  collectionId: CollectionId;
  accountId: WalletId;
  amount: string;
  currency: string;
  phoneNumber: string;
  network: string;
  reason: string | null;
  state: ReversalState;
  lastError: string | null;
  remoteTransactionId: string | null;
  author: number | null;
  created: Date;
  modified: Date;
};

export const ReversalSchema = v.pipe(
  v.object({
    id: Id,
    organization: OwningOrganization,
    collection: described(Id, 'The collection sent back.'),
    account: described(Id, 'The wallet it was credited to, and is taken out of.'),
    amount: Amount,
    currency: CurrencyCode,
    phonenumber: PhoneNumber,
    reason: v.nullable(v.string()),
    state: described(
      v.picklist(REVERSAL_STATES),
      [
        '`processing` (sent to the network),',
        '`completed` (the subscriber has it back; the request is `reversed`),',
        'or `failed` (the wallet got it back).',
      ].join(' '),
    ),
    last_error: v.nullable(v.string()),
    remote_transaction_id: v.nullable(v.string()),
    created: PreciseTimestamp,
    author: Author,
    modified: PreciseTimestamp,
  }),
  v.description(
    "A collection's amount sent back to the subscriber, out of the wallet it credited; at most one per collection.",
  ),
  v.examples([
    {
      id: 9,
      organization: 3,
      collection: 812,
      account: 12,
      amount: '1500.0000',
      currency: 'UGX',
      phonenumber: '+256772123456',
      reason: 'Order cancelled',
      state: 'completed' as const,
      last_error: null,
      remote_transaction_id: 'SBX-REV-9',
      created: '2025-05-02T08:00:00.000Z',
      author: 5,
      modified: '2025-05-02T08:00:01.500Z',
    },
  ]),
);
export type ReversalResource = v.InferOutput<typeof ReversalSchema>;

export function serializeReversal(reversal: ReversalRow): ReversalResource {
  return {
    id: reversal.id,
    organization: reversal.organizationId,
    collection: reversal.collectionId,
    account: reversal.accountId,
    amount: reversal.amount,
    currency: reversal.currency,
    phonenumber: reversal.phoneNumber,
    reason: reversal.reason,
    state: reversal.state,
    last_error: reversal.lastError,
    remote_transaction_id: reversal.remoteTransactionId,
    created: precise(reversal.created),
    author: reversal.author,
    modified: precise(reversal.modified),
  };
}

// Currencies and networks.

export type CurrencyRow = { id: number; code: string; name: string; minorUnits: number };

export const CurrencySchema = v.pipe(
  v.object({
    id: described(v.number(), "Numeric id (what version 1 shows as a collection's `currency`)."),
    code: CurrencyCode,
    name: v.string(),
    minor_units: described(
      v.number(),
      'Decimal places of the currency: the most an amount in it may have (trailing zeros aside).',
    ),
  }),
  v.description('A currency the service handles.'),
  v.examples([{ id: 2, code: 'UGX', name: 'Ugandan shilling', minor_units: 0 }]),
);
type CurrencyResource = v.InferOutput<typeof CurrencySchema>;

export const serializeCurrency = (currency: CurrencyRow): CurrencyResource => ({
  id: currency.id,
  code: currency.code,
  name: currency.name,
  minor_units: currency.minorUnits,
});

const NetworkAvailabilitySchema = v.picklist(['operational', 'degraded', 'down']);

export const NetworkSchema = v.pipe(
  v.object({
    id: described(v.number(), 'Stable for good: never renumbered or given to another network.'),
    name: v.string(),
    country: described(v.string(), 'ISO 3166 country code (`ZZ` for the sandbox network).'),
    currency: described(
      v.nullable(v.string()),
      [
        'The first of `currencies` (BXC for the sandbox);',
        'null for a network in a country whose currency the service does not handle.',
      ].join(' '),
    ),
    currencies: described(
      v.array(v.string()),
      [
        'Every currency its collections and payments may use:',
        "its country's (the DRC's networks carry CDF and USD), BXC for the sandbox.",
      ].join(' '),
    ),
    verification: described(
      v.boolean(),
      "Whether it asks the organization's verification URL before accepting a collection.",
    ),
    name_lookup: described(v.boolean(), 'Whether contact instant verification works for its numbers.'),
    collections: described(v.boolean(), 'Whether it prompts subscribers to pay (collection requests).'),
    payments: described(v.boolean(), 'Whether it takes payments (money out) and reversals.'),
    availability: described(
      v.nullable(v.object({ collect: NetworkAvailabilitySchema, payout: NetworkAvailabilitySchema })),
      [
        'Whether collections (`collect`) and payments (`payout`) on it go through now:',
        '`operational` (its usual route), `degraded` (a fallback route only), `down` (no route now: try later).',
        'Null where this deployment moves no money on it (no connector, not simulated).',
      ].join(' '),
    ),
  }),
  v.description('A mobile network the service knows, from the prefix of its numbers.'),
  v.examples([
    {
      id: 2,
      name: 'MTN Uganda',
      country: 'UG',
      currency: 'UGX',
      currencies: ['UGX'],
      verification: true,
      name_lookup: true,
      collections: true,
      payments: true,
      availability: { collect: 'operational', payout: 'degraded' },
    },
  ]),
);
type NetworkResource = v.InferOutput<typeof NetworkSchema>;

/**
 * A network's availability now for each operation (`GET /api/network-status` shows the same), null where no money moves
 * on it.
 */
type Availability = {
  collect: 'operational' | 'degraded' | 'down';
  payout: 'operational' | 'degraded' | 'down';
} | null;

export const serializeNetwork = (
  network: Network,
  currencies: readonly string[],
  availability: Availability,
): NetworkResource => ({
  id: network.id,
  name: network.name,
  country: network.country,
  currency: currencies[0] ?? null,
  currencies: [...currencies],
  verification: network.verification,
  name_lookup: network.nameLookup,
  collections: network.pullsFunds,
  payments: currencies.length > 0,
  availability,
});
