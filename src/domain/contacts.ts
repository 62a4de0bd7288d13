import * as v from 'valibot';
import { Author, Id, Metadata, OwningOrganization, PhoneNumber, Timestamp, UpdatedBy, described } from './shapes';
import { formatTimestamp } from '../formats/time';
import type { ContactId, OrganizationId } from './ids';

export const CONTACT_TYPES = ['employee', 'beneficiary', 'vendor', 'other'] as const;
export const DEFAULT_CONTACT_TYPE = 'other';

export type ContactRow = {
  id: ContactId;
  organizationId: OrganizationId;
  firstName: string;
  lastName: string;
  email: string | null;
  phoneNumber: string;
  type: string;
  status: 'active' | 'inactive';
  metadata: Record<string, unknown> | null;
  author: number | null;
  updatedBy: number | null;
  created: Date;
  modified: Date;
  verification?: ContactVerification | null;
};

/** What the network said about the number (verification fields, docs/api.md#contacts). */
export type ContactVerification = {
  phoneIsSupported: string;
  phoneIsMmRegistered: string | null;
  nameOnNetwork: string | null;
  nameMatchesNetworkStatus: string;
  nameMatchesNetworkScore: number | null;
  networkName: string | null;
  nationalId: string | null;
  nationalIdType: string | null;
};

/** A contact as the API shows it (the examples of the OpenAPI document). */
export const CONTACT_EXAMPLE = {
  id: 17,
  organization: 3,
  first_name: 'Jane',
  last_name: 'Nakato',
  email: 'jane@example.com',
  phone_number: '+256772123456',
  type: 'other',
  status: 'active' as const,
  metadata: { customer: '1042' },
  created: '2025-05-01T13:45:00Z',
  modified: '2025-05-01T13:45:00Z',
  author: 5,
  updated_by: null,
};

const optionalText = (description: string) => v.optional(described(v.nullable(v.string()), description));

/** The contact object (docs/api.md#contacts): types `serializeContact` and describes it in the OpenAPI document. */
export const ContactSchema = v.pipe(
  v.object({
    id: Id,
    organization: OwningOrganization,
    first_name: v.string(),
    last_name: v.string(),
    email: v.nullable(v.string()),
    phone_number: PhoneNumber,
    type: described(v.string(), '`employee`, `beneficiary`, `vendor`, `other` (the default) or a custom string.'),
    status: v.picklist(['active', 'inactive']),
    metadata: Metadata,
    created: Timestamp,
    modified: Timestamp,
    author: Author,
    updated_by: UpdatedBy,
    // Verification fields: present once the number was verified (`metadata.sync` = 1).
    phone_is_supported: v.optional(
      described(
        v.string(),
        'Whether the network supports look-ups of the number (`yes`, `no`); present after verification.',
      ),
    ),
    phone_is_mm_registered: optionalText(
      'Whether the number is registered for mobile money (`yes`, `no`); present after verification.',
    ),
    name_on_network: optionalText('The name the network holds for the number; present after verification.'),
    name_matches_network_status: v.optional(
      described(
        v.string(),
        [
          '`checked`, `not_registered`, `not_supported` or `not_available`',
          '(the look-up could not be made now: ask again with `sync`); present after verification.',
        ].join(' '),
      ),
    ),
    name_matches_network_score: v.optional(
      described(v.nullable(v.number()), 'Similarity of the names, 0 to 100; present after verification.'),
    ),
    network_name: optionalText("The number's network; present after verification."),
    national_id: optionalText('Present after verification.'),
    national_id_type: optionalText('Present after verification.'),
  }),
  v.description('A person who pays or is paid.'),
  v.examples([CONTACT_EXAMPLE]),
);
export type ContactResource = v.InferOutput<typeof ContactSchema>;

export function serializeContact(contact: ContactRow): ContactResource {
  return {
    id: contact.id,
    organization: contact.organizationId,
    first_name: contact.firstName,
    last_name: contact.lastName,
    email: contact.email,
    phone_number: contact.phoneNumber,
    type: contact.type,
    status: contact.status,
    metadata: contact.metadata,
    created: formatTimestamp(contact.created),
    modified: formatTimestamp(contact.modified),
    author: contact.author,
    updated_by: contact.updatedBy === null ? null : String(contact.updatedBy),
    ...(contact.verification ? verificationFields(contact.verification) : {}),
  };
}

function verificationFields(verification: ContactVerification) {
  return {
    phone_is_supported: verification.phoneIsSupported,
    phone_is_mm_registered: verification.phoneIsMmRegistered,
    name_on_network: verification.nameOnNetwork,
    name_matches_network_status: verification.nameMatchesNetworkStatus,
    name_matches_network_score: verification.nameMatchesNetworkScore,
    network_name: verification.networkName,
    national_id: verification.nationalId,
    national_id_type: verification.nationalIdType,
  };
}
