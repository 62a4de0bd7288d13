/**
 * Branded ids: each resource's id is a number the compiler tells apart from every other kind, so an
 * organization's id cannot be passed where a request's is expected, nor two ids swapped. At run
 * time they are plain numbers (JSON, PostgreSQL and Temporal see no difference).
 *
 * Ids get their brand at the boundaries only: the row types read from PostgreSQL declare them (the
 * database is their source), and what arrives as a plain number (a path, the admin CLI's options)
 * goes through `asId`, the one conversion, which checks that the number can be an id at all.
 */

declare const brand: unique symbol;

/** The kinds of ids the services pass around. */
export type IdKind =
  | 'Organization'
  | 'User'
  | 'ApiKey'
  | 'CollectionRequest'
  | 'Collection'
  | 'Contact'
  | 'Payment'
  | 'PaymentBatch'
  | 'Reversal'
  | 'Webhook'
  | 'Delivery'
  | 'Recovery'
  | 'Event'
  | 'Wallet'
  | 'Transaction';

/** An id of one kind: a number whose kind is part of its type. */
export type Id<Kind extends IdKind> = number & { readonly [brand]: Kind };

export type OrganizationId = Id<'Organization'>;
export type UserId = Id<'User'>;
export type ApiKeyId = Id<'ApiKey'>;
export type CollectionRequestId = Id<'CollectionRequest'>;
export type CollectionId = Id<'Collection'>;
export type ContactId = Id<'Contact'>;
export type PaymentId = Id<'Payment'>;
export type PaymentBatchId = Id<'PaymentBatch'>;
export type ReversalId = Id<'Reversal'>;
export type WebhookId = Id<'Webhook'>;
export type DeliveryId = Id<'Delivery'>;
export type RecoveryId = Id<'Recovery'>;
export type EventId = Id<'Event'>;
/** A wallet's id (the `accounts` table). */
export type WalletId = Id<'Wallet'>;
/** A wallet transaction's id (the ledger). */
export type TransactionId = Id<'Transaction'>;

/**
 * A plain number as an id of `kind`: the one place an id is made from a number that did not come
 * from a row. Ids are positive integers within JavaScript's exact range; anything else is a bug of
 * the caller (a path or an option is checked before), so it throws.
 */
export function asId<Kind extends IdKind>(kind: Kind, value: number): Id<Kind> {
  if (!Number.isSafeInteger(value) || value <= 0) throw new TypeError(`${value} is not a ${kind} id`);
  return value as Id<Kind>;
}
