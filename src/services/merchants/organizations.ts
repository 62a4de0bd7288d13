import { issueApiKey } from '../../auth/keys';
import type { Queryable, Sql } from '../../db';
import type { OrganizationId, UserId, WalletId } from '../../domain/ids';
import type { Currency } from '../../domain/money';
import type { CallbackUrlRules } from '../../formats/urls';
import { moveMoney } from '../wallets/ledger';
import { writeAs } from './audit';
import type { OrganizationActor } from '../platform/deps';
import { tenantScope } from '../platform/queries';

export type CreatedOrganization = {
  organization: { id: OrganizationId; name: string };
  user: { id: UserId; name: string; role: 'owner' };
  apiKey: string;
};

async function insertApiKey(tx: Queryable, organizationId: OrganizationId, userId: UserId): Promise<string> {
  const issued = issueApiKey();
  await tx`insert into api_keys (organization_id, user_id, prefix, digest)
           values (${organizationId}, ${userId}, ${issued.prefix}, ${issued.digest})`;
  return issued.key;
}

/** An organization, its first user (its owner) and that user's API key. */
export async function createOrganization(sql: Sql, name: string): Promise<CreatedOrganization> {
  return await sql.begin(async (tx) => {
    const [organization] = await tx<{ id: OrganizationId; name: string }[]>`
      insert into organizations (name) values (${name}) returning id, name`;
    if (!organization) throw new Error('insert into organizations returned no row');
    const [user] = await tx<{ id: UserId; name: string; role: 'owner' }[]>`
      insert into users (organization_id, name, role) values (${organization.id}, ${`${name} admin`}, 'owner')
      returning id, name, role`;
    if (!user) throw new Error('insert into users returned no row');
    return { organization, user, apiKey: await insertApiKey(tx, organization.id, user.id) };
  });
}

/**
 * A new key for the organization's first user not removed (a removed user's key would answer 401),
 * its row held `for share` as `issueKeyForUser` holds it, so a removal under way is waited for.
 */
export async function createApiKey(
  sql: Sql,
  organizationId: OrganizationId,
): Promise<{ apiKey: string; userId: UserId }> {
  return await sql.begin(async (tx) => {
    const [user] = await tx<{ id: UserId }[]>`
      select id from users where ${tenantScope(tx, organizationId).owned()} and removed_at is null
      order by id limit 1 for share`;
    if (!user) throw new Error(`Organization ${organizationId} does not exist or has no user that is not removed`);
    return { apiKey: await insertApiKey(tx, organizationId, user.id), userId: user.id };
  });
}

type Funding = { accountId: WalletId; balance: string; transactionId: number };

/**
 * Adds money to the organization's oldest active wallet in the currency (creating one when it has
 * none); the balance and its transaction row change together.
 */
export async function fundWallet(
  sql: Sql,
  organizationId: OrganizationId,
  currency: Currency,
  amount: string,
): Promise<Funding> {
  return await sql.begin(async (tx) => {
    const [organization] = await tx`select id from organizations where id = ${organizationId} for update`;
    if (!organization) throw new Error(`Organization ${organizationId} does not exist`);
    let [account] = await tx<{ id: WalletId }[]>`
      select id from accounts
      where ${tenantScope(tx, organizationId).owned()} and currency = ${currency} and status = 'active'
      order by created, id limit 1`;
    if (!account) {
      [account] = await tx<{ id: WalletId }[]>`
        insert into accounts (organization_id, currency, label)
        values (${organizationId}, ${currency}, ${`${currency} wallet`})
        returning id`;
    }
    if (!account) throw new Error('insert into accounts returned no row');
    const moved = await moveMoney(tx, {
      accountId: account.id,
      amount,
      currency,
      type: 'funding',
      description: 'Wallet funded by an operator',
    });
    if (!moved) throw new Error('wallet funding wrote no row');
    return { accountId: account.id, balance: moved.balance, transactionId: moved.transactionId };
  });
}

/** What a verification URL may be (docs/api.md#collections): HTTPS, or plain HTTP in sandbox mode for local servers. */
export const verificationUrlRules = (sandbox: boolean): CallbackUrlRules => ({
  sandbox,
  allowHttp: sandbox,
  subject: 'Verification URLs',
});

type CollectionSettings = { verificationUrl?: string | null; acceptByDefault?: boolean };

export async function updateCollectionSettings(sql: Sql, owner: OrganizationActor, settings: CollectionSettings) {
  const organizationId = owner.organizationId;
  const [row] = await writeAs(
    sql,
    owner,
    (tx) => tx<{ id: number; verificationUrl: string | null; acceptByDefault: boolean }[]>`
    update organizations set
      verification_url = ${settings.verificationUrl === undefined ? tx`verification_url` : settings.verificationUrl},
      accept_by_default = ${settings.acceptByDefault === undefined ? tx`accept_by_default` : settings.acceptByDefault},
      modified = now()
    where id = ${organizationId}
    returning id, verification_url as "verificationUrl", accept_by_default as "acceptByDefault"`,
  );
  if (!row) throw new Error(`Organization ${organizationId} does not exist`);
  return row;
}

/** An organization's name (the default reason of its requests, the sender of its messages); '' for none. */
export async function organizationName(sql: Queryable, organizationId: OrganizationId): Promise<string> {
  const [organization] = await sql<{ name: string }[]>`select name from organizations where id = ${organizationId}`;
  return organization?.name ?? '';
}

/**
 * Saves the version an organization's first request used (docs/api.md#throttling-duplicates-versions), unless one was
 * saved already.
 */
export async function saveFirstApiVersion(
  sql: Queryable,
  organizationId: OrganizationId,
  version: number,
): Promise<void> {
  await sql`update organizations set api_version = ${version} where id = ${organizationId} and api_version is null`;
}

/**
 * The organization's saved API version (docs/api.md#throttling-duplicates-versions); requests without a version header
 * use it.
 */
export async function setApiVersion(
  sql: Sql,
  organizationId: OrganizationId,
  version: number,
): Promise<{ id: number }> {
  const [row] = await sql<{ id: number }[]>`
    update organizations set api_version = ${version}, modified = now() where id = ${organizationId} returning id`;
  if (!row) throw new Error(`Organization ${organizationId} does not exist`);
  return row;
}
