import type { Sql } from '../db';
import { serializeContact, type ContactRow } from '../domain/contacts';
import type { EventRow } from '../domain/events';
import { recordEvent } from './events';

export const CONTACT_COLUMNS = `id, organization_id as "organizationId", first_name as "firstName", last_name as "lastName",
  email, phone_number as "phoneNumber", type, status, metadata, author, updated_by as "updatedBy", created, modified`;

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

export type ContactCreation = { contact: ContactRow; event: EventRow } | { contact: null; event: null };

/**
 * Inserts a contact and its `contact.created` event in one transaction. When the organization
 * already has a contact with that number nothing is written and `contact` is null.
 */
export async function createContact(sql: Sql, input: NewContact): Promise<ContactCreation> {
  return await sql.begin(async (tx) => {
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
  });
}
