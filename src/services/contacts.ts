import type { Queryable, Sql } from '../db';
import { nameMatchScore } from '../domain/name-match';
import { networkForNumber } from '../domain/networks';
import type { NetworkAdapter } from '../network/adapter';
import { serializeContact, type ContactRow, type ContactVerification } from '../domain/contacts';
import { recordEvent, type RecordedEvent } from './events';

export const CONTACT_COLUMNS = `id, organization_id as "organizationId", first_name as "firstName", last_name as "lastName",
  email, phone_number as "phoneNumber", type, status, metadata, author, updated_by as "updatedBy", created, modified,
  case when phone_is_supported is null then null else json_build_object(
    'phoneIsSupported', phone_is_supported, 'phoneIsMmRegistered', phone_is_mm_registered, 'nameOnNetwork', name_on_network,
    'nameMatchesNetworkStatus', name_matches_network_status, 'nameMatchesNetworkScore', name_matches_network_score,
    'networkName', network_name, 'nationalId', national_id, 'nationalIdType', national_id_type) end as verification`;

export type NewContact = {
  organizationId: number;
  author: number | null;
  firstName: string;
  lastName: string;
  email: string | null;
  phoneNumber: string;
  type: string;
  metadata: Record<string, unknown> | null;
};

export type ContactCreation = { contact: ContactRow; event: RecordedEvent } | { contact: null; event: null };

/**
 * Inserts a contact and its `contact.created` event in one transaction. When the organization
 * already has a contact with that number nothing is written and `contact` is null.
 */
export async function createContactIn(tx: Queryable, input: NewContact): Promise<ContactCreation> {
  const [contact] = await tx<ContactRow[]>`
    insert into contacts (organization_id, first_name, last_name, email, phone_number, type, metadata, author)
    values (${input.organizationId}, ${input.firstName}, ${input.lastName}, ${input.email}, ${input.phoneNumber},
            ${input.type}, ${input.metadata === null ? null : tx.json(input.metadata as Parameters<typeof tx.json>[0])}, ${input.author})
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
 * The organization's contact for a number a request or payment names (api.md 4.4): created (with
 * its `contact.created` event) when new, its names updated when the caller gave any. Returns the
 * contact and the event, when one was recorded.
 */
export async function upsertContactIn(
  tx: Queryable,
  input: { organizationId: number; author: number | null; phoneNumber: string; firstName: string | null; lastName: string | null },
): Promise<{ contact: ContactRow; event: RecordedEvent | null }> {
  const [row] = await tx<(ContactRow & { inserted: boolean })[]>`
    insert into contacts (organization_id, first_name, last_name, phone_number, author)
    values (${input.organizationId}, ${input.firstName ?? 'Anonymous'}, ${input.lastName ?? 'Contact'}, ${input.phoneNumber}, ${input.author})
    on conflict (organization_id, phone_number) do update set
      first_name = coalesce(${input.firstName}, contacts.first_name),
      last_name = coalesce(${input.lastName}, contacts.last_name),
      modified = case when ${input.firstName !== null || input.lastName !== null} then now() else contacts.modified end
    returning ${tx.unsafe(CONTACT_COLUMNS)}, (xmax = 0) as inserted`;
  if (!row) throw new Error('contact upsert returned no row');
  const { inserted, ...contact } = row;
  const event = inserted
    ? await recordEvent(tx, { organizationId: input.organizationId, type: 'contact.created', data: serializeContact(contact), author: input.author })
    : null;
  return { contact, event };
}

/**
 * Contact instant verification (api.md 4.4): asks the number's network for the registered name
 * and stores what it said with a name-match score, even when the names differ.
 */
export async function verifyContact(sql: Sql, contact: ContactRow, network: NetworkAdapter | null): Promise<ContactRow> {
  const numberNetwork = networkForNumber(contact.phoneNumber);
  const lookup = numberNetwork && network ? await network.lookupName(contact.phoneNumber, numberNetwork) : null;
  const verification: ContactVerification = lookup === null
    ? { phoneIsSupported: 'no', phoneIsMmRegistered: null, nameOnNetwork: null, nameMatchesNetworkStatus: 'not_supported',
        nameMatchesNetworkScore: null, networkName: numberNetwork?.name ?? null, nationalId: null, nationalIdType: null }
    : { phoneIsSupported: 'yes', phoneIsMmRegistered: lookup.registered ? 'yes' : 'no', nameOnNetwork: lookup.nameOnNetwork,
        nameMatchesNetworkStatus: lookup.registered ? 'checked' : 'not_registered',
        nameMatchesNetworkScore: lookup.registered ? nameMatchScore(`${contact.firstName} ${contact.lastName}`, lookup.nameOnNetwork) : 0,
        networkName: numberNetwork!.name, nationalId: lookup.nationalId, nationalIdType: lookup.nationalIdType };
  const [updated] = await sql<ContactRow[]>`
    update contacts set phone_is_supported = ${verification.phoneIsSupported}, phone_is_mm_registered = ${verification.phoneIsMmRegistered},
      name_on_network = ${verification.nameOnNetwork}, name_matches_network_status = ${verification.nameMatchesNetworkStatus},
      name_matches_network_score = ${verification.nameMatchesNetworkScore}, network_name = ${verification.networkName},
      national_id = ${verification.nationalId}, national_id_type = ${verification.nationalIdType}, modified = now()
    where id = ${contact.id} returning ${sql.unsafe(CONTACT_COLUMNS)}`;
  return updated ?? contact;
}
