/**
 * Contacts (docs/api.md#contacts): their creation (one per number in an organization, with its
 * `contact.created` event), the list and its filters, a contact by id within the organization, and
 * instant verification against the number's network.
 */
import * as v from 'valibot';
import type { Queryable, Sql } from '../../db';
import { fieldErrors } from '../../domain/errors';
import type { ContactId, OrganizationId } from '../../domain/ids';
import {
  REQUIRED,
  filterDate,
  filterPhoneNumber,
  filterText,
  metadata,
  optionalEmail,
  phoneNumber,
  text,
} from '../../domain/input';
import { nameMatchScore } from '../../domain/name-match';
import { networkForNumber, type Network } from '../../domain/networks';
import { logger } from '../../log';
import type { NameLookup, NetworkPort } from '../platform/ports';
import {
  DEFAULT_CONTACT_TYPE,
  serializeContact,
  type ContactRow,
  type ContactVerification,
} from '../../domain/contacts';
import type { Actor, ServiceDeps } from '../platform/deps';
import { writeOnce, type DuplicateCheck } from './duplicate-checks';
import { recordEvent, type RecordedEvent } from '../webhooks/events';
import { tenantScope, timeRange, type ListPage, type PageWindow } from '../platform/queries';

/** A contact's parameters as merchants send them (docs/api.md#contacts). */
export const ContactCreate = v.object(
  {
    phone_number: phoneNumber,
    first_name: text(100),
    last_name: text(100),
    email: optionalEmail,
    type: v.optional(text(50), DEFAULT_CONTACT_TYPE),
    metadata,
  },
  REQUIRED,
);
type ContactInput = v.InferOutput<typeof ContactCreate>;

export const ContactFilters = v.object({
  first_name: filterText,
  last_name: filterText,
  email: filterText,
  phone_number: filterPhoneNumber,
  created_after: filterDate,
  created_before: filterDate,
});
type ContactFilterValues = v.InferOutput<typeof ContactFilters>;

/** `sync` = 1 (number or text) asks for instant verification (docs/api.md#contacts). */
const wantsVerification = (value: unknown): boolean => value === 1 || value === '1';

export const CONTACT_COLUMNS = `id, organization_id as "organizationId", first_name as "firstName",
  last_name as "lastName", email, phone_number as "phoneNumber", type, status, metadata, author,
  updated_by as "updatedBy", created, modified,
  case when phone_is_supported is null then null else json_build_object(
    'phoneIsSupported', phone_is_supported, 'phoneIsMmRegistered', phone_is_mm_registered,
    'nameOnNetwork', name_on_network,
    'nameMatchesNetworkStatus', name_matches_network_status, 'nameMatchesNetworkScore', name_matches_network_score,
    'networkName', network_name, 'nationalId', national_id, 'nationalIdType', national_id_type) end as verification`;

type NewContact = {
  organizationId: OrganizationId;
  author: number | null;
  firstName: string;
  lastName: string;
  email: string | null;
  phoneNumber: string;
  type: string;
  metadata: Record<string, unknown> | null;
};

type ContactCreation = { contact: ContactRow; event: RecordedEvent } | { contact: null; event: null };

/**
 * Inserts a contact and its `contact.created` event in one transaction. When the organization
 * already has a contact with that number nothing is written and `contact` is null.
 */
async function createContactIn(tx: Queryable, input: NewContact): Promise<ContactCreation> {
  const [contact] = await tx<ContactRow[]>`
    insert into contacts (organization_id, first_name, last_name, email, phone_number, type, metadata, author)
    values (${input.organizationId}, ${input.firstName}, ${input.lastName}, ${input.email}, ${input.phoneNumber},
            ${input.type}, ${input.metadata === null ? null : tx.json(input.metadata as Parameters<typeof tx.json>[0])},
            ${input.author})
    on conflict (organization_id, phone_number) do nothing
    returning ${tx.unsafe(CONTACT_COLUMNS)}`;
  if (!contact) return { contact: null, event: null };
  const event = await recordEvent(tx, {
    organizationId: input.organizationId,
    type: 'contact.created',
    data: serializeContact(contact),
    author: input.author,
  });
  return { contact, event };
}

/**
 * The organization's contact for a number a request or payment names (docs/api.md#contacts): created (with
 * its `contact.created` event) when new, its names updated when the caller gave any. Returns the
 * contact and the event, when one was recorded.
 */
export async function upsertContactIn(
  tx: Queryable,
  input: {
    organizationId: OrganizationId;
    author: number | null;
    phoneNumber: string;
    firstName: string | null;
    lastName: string | null;
  },
): Promise<{ contact: ContactRow; event: RecordedEvent | null }> {
  const [row] = await tx<(ContactRow & { inserted: boolean })[]>`
    insert into contacts (organization_id, first_name, last_name, phone_number, author)
    values (${input.organizationId}, ${input.firstName ?? 'Anonymous'}, ${input.lastName ?? 'Contact'},
            ${input.phoneNumber}, ${input.author})
    on conflict (organization_id, phone_number) do update set
      first_name = coalesce(${input.firstName}, contacts.first_name),
      last_name = coalesce(${input.lastName}, contacts.last_name),
      modified = case when ${input.firstName !== null || input.lastName !== null} then now() else contacts.modified end
    returning ${tx.unsafe(CONTACT_COLUMNS)}, (xmax = 0) as inserted`;
  if (!row) throw new Error('contact upsert returned no row');
  const { inserted, ...contact } = row;
  const event = inserted
    ? await recordEvent(tx, {
        organizationId: input.organizationId,
        type: 'contact.created',
        data: serializeContact(contact),
        author: input.author,
      })
    : null;
  return { contact, event };
}

/**
 * A look-up the network could not make now (unreachable, no session, an answer it does not document): asked again on a
 * later read with `sync`.
 */
const NOT_AVAILABLE = 'not_available';

/**
 * What the number's network says of it: its look-up, null where it offers none, or `not_available` when the look-up
 * failed.
 */
async function lookUpName(
  contact: ContactRow,
  numberNetwork: Network | null,
  network: NetworkPort | null,
): Promise<NameLookup | null | typeof NOT_AVAILABLE> {
  if (!numberNetwork || !network) return null;
  try {
    return await network.lookupName(contact.phoneNumber, numberNetwork);
  } catch (error) {
    // Instant verification answers the contact either way (docs/api.md#contacts): the failure is the network's, told as
    // "not available".
    logger.warn('name look-up not made: verification not available', {
      contactId: contact.id,
      network: numberNetwork.name,
      error,
    });
    return NOT_AVAILABLE;
  }
}

/** The verification fields of a look-up's outcome. */
function verificationOf(
  contact: ContactRow,
  numberNetwork: Network | null,
  lookup: NameLookup | null | typeof NOT_AVAILABLE,
): ContactVerification {
  const networkName = numberNetwork?.name ?? null;
  const nothing = {
    phoneIsMmRegistered: null,
    nameOnNetwork: null,
    nameMatchesNetworkScore: null,
    networkName,
    nationalId: null,
    nationalIdType: null,
  };
  if (lookup === null) return { ...nothing, phoneIsSupported: 'no', nameMatchesNetworkStatus: 'not_supported' };
  if (lookup === NOT_AVAILABLE) return { ...nothing, phoneIsSupported: 'yes', nameMatchesNetworkStatus: NOT_AVAILABLE };
  return {
    phoneIsSupported: 'yes',
    phoneIsMmRegistered: lookup.registered ? 'yes' : 'no',
    nameOnNetwork: lookup.nameOnNetwork,
    nameMatchesNetworkStatus: lookup.registered ? 'checked' : 'not_registered',
    nameMatchesNetworkScore: lookup.registered
      ? nameMatchScore(`${contact.firstName} ${contact.lastName}`, lookup.nameOnNetwork)
      : 0,
    networkName,
    nationalId: lookup.nationalId,
    nationalIdType: lookup.nationalIdType,
  };
}

/**
 * Contact instant verification (docs/api.md#contacts): asks the number's network for the registered name
 * and stores what it said with a name-match score, even when the names differ. A look-up that could
 * not be made is "not available", never an error: stored for a contact never verified, while an
 * earlier answer of the network stays as it was.
 */
async function verifyContact(sql: Sql, contact: ContactRow, network: NetworkPort | null): Promise<ContactRow> {
  const numberNetwork = networkForNumber(contact.phoneNumber);
  const lookup = await lookUpName(contact, numberNetwork, network);
  if (lookup === NOT_AVAILABLE && contact.verification) return contact;
  const verification = verificationOf(contact, numberNetwork, lookup);
  const [updated] = await sql<ContactRow[]>`
    update contacts set
      phone_is_supported = ${verification.phoneIsSupported},
      phone_is_mm_registered = ${verification.phoneIsMmRegistered},
      name_on_network = ${verification.nameOnNetwork},
      name_matches_network_status = ${verification.nameMatchesNetworkStatus},
      name_matches_network_score = ${verification.nameMatchesNetworkScore},
      network_name = ${verification.networkName},
      national_id = ${verification.nationalId},
      national_id_type = ${verification.nationalIdType},
      modified = now()
    where id = ${contact.id}
    returning ${sql.unsafe(CONTACT_COLUMNS)}`;
  return updated ?? contact;
}

/**
 * Creates a contact from a merchant's parameters (validated with `ContactCreate`), as the REST
 * route and the web console both do: saved with its `contact.created` event (claiming the
 * Duplicate-Check-Key in the same transaction), the event dispatched, and the number verified at
 * once when `metadata.sync` is 1.
 */
export async function createContact(
  { sql, networks }: Pick<ServiceDeps, 'sql' | 'networks'>,
  creator: Actor,
  input: ContactInput,
  duplicateCheck: DuplicateCheck | null,
): Promise<ContactRow> {
  const created = await writeOnce(
    sql,
    creator,
    duplicateCheck,
    async (tx) => {
      const creation = await createContactIn(tx, {
        organizationId: creator.organizationId,
        author: creator.userId,
        firstName: input.first_name,
        lastName: input.last_name,
        email: input.email,
        phoneNumber: input.phone_number,
        type: input.type,
        metadata: input.metadata,
      });
      if (creation.contact === null)
        throw fieldErrors({ phone_number: ['A contact with this phone number already exists.'] });
      return creation;
    },
    (creation) => ({ type: 'contact', id: creation.contact.id }),
  );
  return wantsVerification(input.metadata?.sync)
    ? await verifyContact(sql, created.contact, networks)
    : created.contact;
}

/** One page of an organization's contacts matching the filters, newest first, with the total count. */
export async function listContacts(
  sql: Sql,
  organizationId: OrganizationId,
  filters: ContactFilterValues,
  page: PageWindow,
): Promise<ListPage<ContactRow>> {
  return await tenantScope(sql, organizationId).listPage<ContactRow>(
    {
      columns: sql.unsafe(CONTACT_COLUMNS),
      from: sql`contacts`,
      filters: sql`
      ${filters.first_name !== undefined ? sql`and first_name = ${filters.first_name}` : sql``}
      ${filters.last_name !== undefined ? sql`and last_name = ${filters.last_name}` : sql``}
      ${filters.email !== undefined ? sql`and email = ${filters.email}` : sql``}
      ${filters.phone_number !== undefined ? sql`and phone_number = ${filters.phone_number}` : sql``}
      ${timeRange(sql, 'created', filters.created_after, filters.created_before)}`,
      orderBy: sql`order by created desc, id desc`,
    },
    page,
  );
}

/**
 * The organization's contact `id` (403 when another organization's, 404 when none), verified first when `sync` asks.
 */
export async function readContact(
  { sql, networks }: Pick<ServiceDeps, 'sql' | 'networks'>,
  organizationId: OrganizationId,
  id: ContactId,
  sync: unknown,
): Promise<ContactRow> {
  const contact = await tenantScope(sql, organizationId).ownRow<ContactRow>({
    table: 'contacts',
    id,
    columns: sql.unsafe(CONTACT_COLUMNS),
  });
  return wantsVerification(sync) ? await verifyContact(sql, contact, networks) : contact;
}
