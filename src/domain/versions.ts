/**
 * API versions (docs/api.md#throttling-duplicates-versions): every resource is serialised in its current shape, then
 * these pure functions turn it into the shape of the version the caller asked for. A resource with
 * version differences adds its function here; routes call it with the request's VersionContext.
 *
 *   v1  lists are bare arrays; `organization` is the organization's name; a collection's
 *       `currency` is a numeric id
 *   v2  `organization` is an id; `currency` a 3-letter code
 *   v3  a collection's `collection_request` is the expanded object (before: its id)
 *   v4  collections carry `transaction`
 */
import * as v from 'valibot';
import { CollectionRequestSchema } from './collection-requests';
import { CollectionSchema } from './collections';
import { ContactSchema, type ContactResource } from './contacts';
import { EventSchema, type EventResource, type EventType } from './events';
import { described } from './shapes';
import { CURRENCIES } from './money';

export const API_VERSIONS = [1, 2, 3, 4] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];
/** The newest version the service implements: what an organization is saved with on its first request. */
export const CURRENT_API_VERSION: ApiVersion = 4;

export function isApiVersion(value: unknown): value is ApiVersion {
  return (API_VERSIONS as readonly unknown[]).includes(value);
}

/** `v3`, `V3` or `3` → 3; anything else (unknown versions included) → null. */
export function parseApiVersion(text: string): ApiVersion | null {
  const match = /^v?(\d{1,3})$/i.exec(text.trim());
  const version = match ? Number(match[1]) : null;
  return isApiVersion(version) ? version : null;
}

export const formatApiVersion = (version: ApiVersion): string => `v${version}`;

/** What a version function needs to know about the request it answers. */
export type VersionContext = {
  version: ApiVersion;
  organizationName: string;
};

/** v1's numeric currency ids: the `currencies` table of migrations 001 and 022 (a test keeps them equal). */
export const V1_CURRENCY_IDS: Readonly<Record<string, number>> = Object.fromEntries(
  CURRENCIES.map((currency) => [currency.code, currency.id]),
);

type Paged<T> = { count: number; next: string | null; previous: string | null; results: T[] };

/**
 * v1 lists are bare arrays of the page's items; later versions keep the list envelope
 * (docs/api.md#api-behaviour-worth-knowing).
 */
export function listForVersion<T>(list: Paged<T>, context: VersionContext): Paged<T> | T[] {
  return context.version === 1 ? list.results : list;
}

/** A resource whose `organization` is an id, or (v1) the organization's name. */
type WithOrganization<T> = Omit<T, 'organization'> & { organization: number | string };

/** v1 names the owning organization; later versions give its id. */
function organizationForVersion<T extends { organization: number | string }>(
  resource: T,
  context: VersionContext,
): WithOrganization<T> {
  return context.version === 1 ? { ...resource, organization: context.organizationName } : resource;
}

/**
 * Any resource owned by an organization whose only version difference is `organization` (payments, accounts,
 * reversals).
 */
export function ownedForVersion<T extends { organization: number | string }>(
  resource: T,
  context: VersionContext,
): WithOrganization<T> {
  return organizationForVersion(resource, context);
}

export function contactForVersion(contact: ContactResource, context: VersionContext) {
  return organizationForVersion(contact, context);
}

/** A collection in its current (v4) shape; the collections resource fills in the rest. */
export type CollectionResource = {
  organization: number | string;
  currency: string | number;
  collection_request: { id: number; [field: string]: unknown } | number | null;
  transaction?: unknown;
  [field: string]: unknown;
};

export function collectionForVersion(collection: CollectionResource, context: VersionContext): CollectionResource {
  const shaped: CollectionResource = { ...collection };
  if (context.version < 4) delete shaped.transaction;
  if (context.version < 3 && shaped.collection_request !== null && typeof shaped.collection_request === 'object') {
    shaped.collection_request = shaped.collection_request.id;
  }
  if (context.version === 1) {
    if (typeof shaped.currency === 'string') {
      const currencyId = V1_CURRENCY_IDS[shaped.currency];
      if (currencyId === undefined) throw new Error(`Currency ${shaped.currency} has no v1 numeric id`);
      shaped.currency = currencyId;
    }
  }
  return { ...shaped, organization: context.version === 1 ? context.organizationName : shaped.organization };
}

/** A collection request in its current shape: only `organization` differs (v1: a name). */
export function collectionRequestForVersion<T extends { organization: number | string }>(
  collectionRequest: T,
  context: VersionContext,
) {
  return organizationForVersion(collectionRequest, context);
}

type DataForVersion = (data: Record<string, unknown>, context: VersionContext) => Record<string, unknown>;
const hasOrganization = (data: Record<string, unknown>): data is { organization: number | string } =>
  typeof data.organization === 'number' || typeof data.organization === 'string';

/** An event's `data` is the object that triggered it, recorded in the current shape. */
const EVENT_DATA_FOR_VERSION: Partial<Record<EventType, DataForVersion>> = {
  'contact.created': (data, context) => (hasOrganization(data) ? organizationForVersion(data, context) : data),
  'collection.received': (data, context) =>
    hasOrganization(data) && 'currency' in data && 'collection_request' in data
      ? collectionForVersion(data as CollectionResource, context)
      : data,
  'collectionrequest.status.changed': (data, context) =>
    hasOrganization(data) ? organizationForVersion(data, context) : data,
  'payment.status.changed': (data, context) => (hasOrganization(data) ? organizationForVersion(data, context) : data),
  'payment_batch.completed': (data, context) => (hasOrganization(data) ? organizationForVersion(data, context) : data),
};

export function eventForVersion(event: EventResource, context: VersionContext) {
  const dataForVersion = EVENT_DATA_FOR_VERSION[event.type];
  const data = dataForVersion ? dataForVersion(event.data, context) : event.data;
  return organizationForVersion({ ...event, data }, context);
}

// ---------------------------------------------------------------------------------------------
// The same rules as schemas: what each version's responses look like, for the OpenAPI document of
// that version (src/api/openapi.ts). Each function mirrors the data function above it; a unit test
// and every response of the API tests (checked against the document of its version) keep them equal.

/** The paged list envelope (docs/api.md#api-behaviour-worth-knowing) around `item`. */
const pagedListSchema = <const TItem extends v.GenericSchema>(item: TItem) =>
  v.pipe(
    v.object({
      count: described(v.number(), 'Total number of items.'),
      next: described(
        v.nullable(v.string()),
        'Absolute URL of the next page (carries `offset`, and `limit` when given), or null.',
      ),
      previous: described(v.nullable(v.string()), 'Absolute URL of the previous page, or null.'),
      results: described(v.array(item), 'Items of the page.'),
    }),
    v.description('A page of a list; version 1 answers the bare array of `results`.'),
  );

export function listSchemaForVersion<const TItem extends v.GenericSchema>(item: TItem, version: ApiVersion) {
  return version === 1 ? v.array(item) : pagedListSchema(item);
}

const OrganizationName = described(v.string(), "The owning organization's name (version 1).");
const objectEntries = <TEntries extends v.ObjectEntries>(
  // biome-ignore lint/suspicious/noExplicitAny: valibot's pipe items are invariant in their types
  schema: v.SchemaWithPipe<readonly [v.ObjectSchema<TEntries, undefined>, ...v.PipeItem<any, any, any>[]]>,
) => schema.pipe[0].entries;
/** Version 1 schemas, built once so the document can name each by identity. */
const v1 = {
  contact: v.pipe(
    v.object({ ...objectEntries(ContactSchema), organization: OrganizationName }),
    v.description('A contact (version 1).'),
  ),
  collectionRequest: v.pipe(
    v.object({ ...objectEntries(CollectionRequestSchema), organization: OrganizationName }),
    v.description('A collection request (version 1).'),
  ),
};
const { transaction: _transaction, ...collectionBeforeV4 } = objectEntries(CollectionSchema);
const collectionRequestId = described(
  v.nullable(v.number()),
  'Id of the request the collection fulfilled (the expanded object from version 3).',
);
const collectionsBefore: Record<1 | 2 | 3, v.GenericSchema> = {
  3: v.pipe(v.object(collectionBeforeV4), v.description('A collection (version 3: no `transaction`).')),
  2: v.pipe(
    v.object({ ...collectionBeforeV4, collection_request: collectionRequestId }),
    v.description('A collection (version 2).'),
  ),
  1: v.pipe(
    v.object({
      ...collectionBeforeV4,
      collection_request: collectionRequestId,
      organization: OrganizationName,
      currency: described(
        v.number(),
        [
          'Numeric currency id (version 1):',
          `${CURRENCIES.map((currency) => `${currency.id} ${currency.code}`).join(', ')}.`,
        ].join(' '),
      ),
    }),
    v.description('A collection (version 1).'),
  ),
};
const eventV1 = v.pipe(
  v.object({ ...objectEntries(EventSchema), organization: OrganizationName }),
  v.description('An event (version 1).'),
);

export const contactSchemaForVersion = (version: ApiVersion) => (version === 1 ? v1.contact : ContactSchema);
export const collectionRequestSchemaForVersion = (version: ApiVersion) =>
  version === 1 ? v1.collectionRequest : CollectionRequestSchema;
export const collectionSchemaForVersion = (version: ApiVersion): v.GenericSchema =>
  version === 4 ? CollectionSchema : collectionsBefore[version];
/** An event; its `data` is documented as an object in every version (its shape per type is in the description). */
export const eventSchemaForVersion = (version: ApiVersion) => (version === 1 ? eventV1 : EventSchema);

const ownedV1 = new WeakMap<v.GenericSchema, v.GenericSchema>();

/**
 * The schema of an organization-owned resource in `version`: version 1 names the organization
 * (`ownedForVersion`). Built once per schema, so the document can name it by identity.
 */
export function ownedSchemaForVersion<TEntries extends v.ObjectEntries>(
  // biome-ignore lint/suspicious/noExplicitAny: valibot's pipe items are invariant in their types
  schema: v.SchemaWithPipe<readonly [v.ObjectSchema<TEntries, undefined>, ...v.PipeItem<any, any, any>[]]>,
): (version: ApiVersion) => v.GenericSchema {
  return (version) => {
    if (version !== 1) return schema;
    let named = ownedV1.get(schema);
    if (named === undefined) {
      named = v.pipe(
        v.object({ ...objectEntries(schema), organization: OrganizationName }),
        v.description('Version 1: `organization` is its name.'),
      );
      ownedV1.set(schema, named);
    }
    return named;
  };
}
