/**
 * What signs and authenticates an organization's outgoing webhook deliveries (docs/api.md#webhooks): the signing
 * secret, made on first use and rotated with an overlap, and the optional Basic credentials.
 */
import type { Queryable, Sql } from '../../db';
import type { OrganizationId } from '../../domain/ids';
import { writeAs } from '../merchants/audit';
import type { OrganizationActor } from '../platform/deps';
import { tenantScope } from '../platform/queries';
import { SECRET_ROTATION_OVERLAP_HOURS, newSigningSecret } from '../../domain/webhooks';

type WebhookCredentials = { username: string; password: string };
export type DeliverySecrets = { signingSecrets: string[]; basic: WebhookCredentials | null };

type SettingsRow = {
  signingSecret: string;
  previousSigningSecret: string | null;
  previousSecretExpiresAt: Date | null;
  basicUsername: string | null;
  basicPassword: string | null;
};

async function readSettings(sql: Queryable, organizationId: OrganizationId): Promise<SettingsRow | undefined> {
  const [row] = await sql<SettingsRow[]>`
    select signing_secret as "signingSecret", previous_signing_secret as "previousSigningSecret",
           previous_secret_expires_at as "previousSecretExpiresAt", basic_username as "basicUsername",
           basic_password as "basicPassword"
    from webhook_settings where ${tenantScope(sql, organizationId).owned()}`;
  return row;
}

/** The organization's webhook settings, made (with a fresh signing secret) on first use. */
async function ensureSettings(sql: Queryable, organizationId: OrganizationId): Promise<SettingsRow> {
  const existing = await readSettings(sql, organizationId);
  if (existing) return existing;
  await sql`
    insert into webhook_settings (organization_id, signing_secret)
    select id, ${newSigningSecret()} from organizations where id = ${organizationId}
    on conflict (organization_id) do nothing`;
  const created = await readSettings(sql, organizationId);
  if (!created) throw new Error(`Organization ${organizationId} does not exist`);
  return created;
}

/**
 * What signs and authenticates an outgoing delivery now: the current secret, and the previous one while it overlaps.
 */
export async function deliverySecrets(
  sql: Queryable,
  organizationId: OrganizationId,
  now = new Date(),
): Promise<DeliverySecrets> {
  const row = await ensureSettings(sql, organizationId);
  const previousActive =
    row.previousSigningSecret !== null && row.previousSecretExpiresAt !== null && row.previousSecretExpiresAt > now;
  return {
    signingSecrets: previousActive ? [row.signingSecret, row.previousSigningSecret as string] : [row.signingSecret],
    basic:
      row.basicUsername !== null && row.basicPassword !== null
        ? { username: row.basicUsername, password: row.basicPassword }
        : null,
  };
}

export type SigningSecretView = {
  organizationId: OrganizationId;
  signingSecret: string;
  previousSecretExpiresAt: Date | null;
  basicAuth: boolean;
};

const secretView = (organizationId: OrganizationId, row: SettingsRow): SigningSecretView => {
  const overlap =
    row.previousSecretExpiresAt !== null && row.previousSecretExpiresAt > new Date()
      ? row.previousSecretExpiresAt
      : null;
  return {
    organizationId,
    signingSecret: row.signingSecret,
    previousSecretExpiresAt: overlap,
    basicAuth: row.basicUsername !== null,
  };
};

/** The organization's signing secret (made on first use, a change recorded as `owner`'s). */
export async function showSigningSecret(sql: Sql, owner: OrganizationActor): Promise<SigningSecretView> {
  return secretView(owner.organizationId, await writeAs(sql, owner, (tx) => ensureSettings(tx, owner.organizationId)));
}

/** A new secret signs from now on; the old one keeps signing alongside for the overlap, then stops. */
export async function rotateSigningSecret(sql: Sql, owner: OrganizationActor): Promise<SigningSecretView> {
  const organizationId = owner.organizationId;
  const rotated = await writeAs(sql, owner, async (tx) => {
    await ensureSettings(tx, organizationId);
    await tx`
      update webhook_settings set
        previous_signing_secret = signing_secret,
        previous_secret_expires_at = now() + ${SECRET_ROTATION_OVERLAP_HOURS}::int * interval '1 hour',
        signing_secret = ${newSigningSecret()},
        modified = now()
      where ${tenantScope(tx, organizationId).owned()}`;
    return await ensureSettings(tx, organizationId);
  });
  return secretView(organizationId, rotated);
}

export async function setBasicCredentials(
  sql: Sql,
  owner: OrganizationActor,
  credentials: WebhookCredentials | null,
): Promise<void> {
  await writeAs(sql, owner, async (tx) => {
    await ensureSettings(tx, owner.organizationId);
    await tx`
      update webhook_settings set
        basic_username = ${credentials?.username ?? null},
        basic_password = ${credentials?.password ?? null},
        modified = now()
      where ${tenantScope(tx, owner.organizationId).owned()}`;
  });
}
