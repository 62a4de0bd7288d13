import { formatTimestamp } from './time';

export const CONTACT_TYPES = ['employee', 'beneficiary', 'vendor', 'other'] as const;
export const DEFAULT_CONTACT_TYPE = 'other';

export type ContactRow = {
  id: number;
  organizationId: number;
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

/** What the network said about the number (api.md 2.4 verification fields). */
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

/** The contact object of api.md 2.4. */
export function serializeContact(contact: ContactRow) {
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
export type ContactResource = ReturnType<typeof serializeContact>;
