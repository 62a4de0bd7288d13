/**
 * The kinds of money movement, declared once: every way money enters or leaves a wallet. The
 * ledger's transaction types and their labels, the ledger's column that names the movement
 * (`<kind>_id`), the settlement report's line types, totals and references, the audit trail's object
 * types, the outbox kinds and the workflows they start, and the console's link to each movement's
 * page all derive from this list. Every part of an entry is required (null where the kind has none),
 * so a new kind states each, and the compiler then asks for what the code needs per part: its
 * settlement statement (src/services/wallets/settlements.ts), its outbox row type (src/services/platform/ports.ts),
 * entry (src/services/platform/outbox.ts) and start (src/temporal/launcher.ts), its workflow
 * (src/workflows/registry.ts).
 *
 * A kind's key is its name wherever one word names it: the audit trail's `object_type`, the
 * settlement line's `type`, the wallet transaction's field in the API (`payment`), the CSV's
 * `belongs_to`; its words spaced out are its name for people (`payment batch`).
 */
import type { Id, IdKind } from './ids';

/**
 * A ledger transaction type: the console's label, and what the API's documentation says it is (null: its name says it).
 */
type TransactionTypeSpec = { label: string; note: string | null };

type MovementSpec = {
  /** The ledger transaction types it writes, credits and debits, in the order the API lists them. */
  transactions: Readonly<Record<string, TransactionTypeSpec>>;
  /**
   * Its own row, when it has one: the kind of its id; its console page (`/console/<page>/<id>`);
   * whether the audit trail records its changes (its table has the audit trigger); whether each of
   * its ledger transactions names it (the `<kind>_id` column of `transactions`).
   */
  record: { idKind: IdKind; page: string; audited: boolean; ledger: boolean } | null;
  /**
   * Its line in the daily settlement report, when it moves money with a network: money in or out
   * (the net adds or takes it), the total it counts in, that total's note, and the prefix of our
   * reference the operator holds (`pay` for `pay-<id>`; null: the row holds its own).
   */
  settlement: { direction: 'in' | 'out'; total: string; totalNote: string; referencePrefix: string | null } | null;
  /**
   * The outbox kind whose rows start its workflow (src/services/platform/outbox.ts), and that workflow's registered
   * name.
   */
  outbox: { kind: string; workflow: string } | null;
};

export const MONEY_MOVEMENTS = {
  funding: {
    transactions: { funding: { label: 'funding', note: null } },
    record: null,
    settlement: null,
    outbox: null,
  },
  collection: {
    transactions: { mobile_collection: { label: 'collection received', note: 'a collection credited' } },
    record: { idKind: 'Collection', page: 'collections', audited: true, ledger: true },
    settlement: {
      direction: 'in',
      total: 'in',
      totalNote: 'Collections: their number and sum.',
      referencePrefix: null,
    },
    outbox: null,
  },
  payment: {
    transactions: {
      mobile_payment: { label: 'payment sent', note: 'a payment debited' },
      payment_release: { label: 'payment given back', note: 'a failed or cancelled payment given back' },
    },
    record: { idKind: 'Payment', page: 'payments', audited: true, ledger: true },
    settlement: {
      direction: 'out',
      total: 'out',
      totalNote: 'Payments: their number and sum.',
      referencePrefix: 'pay',
    },
    outbox: { kind: 'payments', workflow: 'payment' },
  },
  // Its money moves through its payments: their transactions and settlement lines are theirs.
  payment_batch: {
    transactions: {},
    record: { idKind: 'PaymentBatch', page: 'payment-batches', audited: true, ledger: false },
    settlement: null,
    outbox: { kind: 'paymentBatches', workflow: 'paymentBatch' },
  },
  reversal: {
    transactions: {
      reversal: { label: 'collection sent back', note: 'a collection sent back' },
      reversal_release: { label: 'reversal given back', note: 'a failed reversal given back' },
    },
    record: { idKind: 'Reversal', page: 'reversals', audited: true, ledger: true },
    settlement: {
      direction: 'out',
      total: 'reversed',
      totalNote: 'Reversals: their number and sum.',
      referencePrefix: 'rev',
    },
    outbox: { kind: 'reversals', workflow: 'reversal' },
  },
} as const satisfies Record<string, MovementSpec>;

type Movements = typeof MONEY_MOVEMENTS;
type MovementKind = keyof Movements;
const KINDS = Object.keys(MONEY_MOVEMENTS) as MovementKind[];
const specOf = (kind: MovementKind): MovementSpec => MONEY_MOVEMENTS[kind];

/** `payment_batch` as `paymentBatch`. */
type Camel<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S;
const camel = (name: string): string => name.replace(/_(.)/g, (_, letter: string) => letter.toUpperCase());

/** Its words spaced out, as people read it: `payment batch`. */
export const movementNoun = (kind: MovementKind): string => kind.replaceAll('_', ' ');

/** The path of a movement's page in the console. */
export function movementPage(kind: MovementKind, id: number): string {
  const record = specOf(kind).record;
  if (record === null) throw new TypeError(`a ${movementNoun(kind)} has no page`);
  return `/console/${record.page}/${id}`;
}

// Ledger transactions.

/** What moved a wallet's money: a credit (positive) or a debit (negative). */
export type TransactionType = { [K in MovementKind]: keyof Movements[K]['transactions'] & string }[MovementKind];

/** Every ledger transaction type, each with the kind that writes it, in the list's order. */
export const LEDGER_TRANSACTION_TYPES: readonly ({
  type: TransactionType;
  kind: MovementKind;
} & TransactionTypeSpec)[] = KINDS.flatMap((kind) =>
  Object.entries(specOf(kind).transactions).map(([type, spec]) => ({ type: type as TransactionType, kind, ...spec })),
);

/** The console's words for a transaction type (the type itself when it is none of the list's). */
export const transactionLabel = (type: string): string =>
  LEDGER_TRANSACTION_TYPES.find((entry) => entry.type === type)?.label ?? type;

/** The kinds each of whose ledger transactions names it. */
export type LedgerKind = {
  [K in MovementKind]: Movements[K]['record'] extends { ledger: true } ? K : never;
}[MovementKind];
/** The field of a wallet transaction row that names the movement of a kind (`paymentId`). */
export type LedgerField = `${Camel<LedgerKind>}Id`;
type IdOf<K extends LedgerKind> = Id<Exclude<Movements[K]['record'], null>['idKind']>;
/** The fields of a wallet transaction row that name its movement, one per ledger kind (`paymentId`). */
export type LedgerLinks = { [K in LedgerKind as `${Camel<K>}Id`]: IdOf<K> | null };

type LedgerLink = { kind: LedgerKind; column: string; field: LedgerField };

/**
 * The ledger's columns that name a movement (`payment_id`), with their row fields (`paymentId`), in the list's order.
 */
export const LEDGER_LINKS: readonly LedgerLink[] = KINDS.filter((kind) => specOf(kind).record?.ledger).map((kind) => ({
  kind: kind as LedgerKind,
  column: `${kind}_id`,
  field: `${camel(kind)}Id` as LedgerField,
}));

/** The link of the movement that writes transactions of `type` (what a statement line belongs to); none for funding. */
export function ledgerLinkOf(type: string): LedgerLink | undefined {
  const kind = LEDGER_TRANSACTION_TYPES.find((entry) => entry.type === type)?.kind;
  return LEDGER_LINKS.find((link) => link.kind === kind);
}

// Settlement, audit trail, outbox.

/** The kinds that move money with a network: the settlement report's line types. */
export type SettlementKind = { [K in MovementKind]: Movements[K]['settlement'] extends null ? never : K }[MovementKind];
export const SETTLEMENT_KINDS = KINDS.filter((kind) => specOf(kind).settlement !== null) as SettlementKind[];

type ReferencedKind = {
  [K in MovementKind]: Movements[K]['settlement'] extends { referencePrefix: string } ? K : never;
}[MovementKind];

export const hasReferenceRule = (kind: MovementKind): kind is ReferencedKind =>
  typeof specOf(kind).settlement?.referencePrefix === 'string';

/**
 * Our reference of a movement as the operator holds it (`pay-<id>`): what a payout sends, what the settlement report
 * shows.
 */
export const movementReference = (kind: ReferencedKind, id: number): string =>
  `${MONEY_MOVEMENTS[kind].settlement.referencePrefix}-${id}`;

type AuditedKind = { [K in MovementKind]: Movements[K]['record'] extends { audited: true } ? K : never }[MovementKind];
/** The kinds whose changes the audit trail records, as its object types. */
export const AUDITED_MOVEMENTS = KINDS.filter((kind) => specOf(kind).record?.audited) as AuditedKind[];

type OutboxMovement = { [K in MovementKind]: Movements[K]['outbox'] extends null ? never : K }[MovementKind];
/** The outbox kinds of the movements (`payments`): src/services/platform/outbox.ts holds an entry for each. */
export type MovementOutboxKind = Exclude<Movements[OutboxMovement]['outbox'], null>['kind'];
/** The workflows the movements' outbox rows start: startable, so the worker must register each. */
export type MovementWorkflow = Exclude<Movements[OutboxMovement]['outbox'], null>['workflow'];

/** The movement whose outbox kind is `outboxKind`. */
export function movementOfOutbox(outboxKind: MovementOutboxKind): MovementKind {
  const kind = KINDS.find((candidate) => specOf(candidate).outbox?.kind === outboxKind);
  if (kind === undefined) throw new TypeError(`no money movement has the outbox kind ${outboxKind}`);
  return kind;
}
