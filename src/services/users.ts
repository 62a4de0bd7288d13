/**
 * The people of an organization who sign in to the web console: an email (stored, found and
 * unique in one normalised form, domain/emails.ts) and a password kept only as an argon2id hash (Bun.password), and the organization's
 * permissions (MANAGE_ORGANIZATION gates users, settings, API keys and webhooks).
 */
import type { Queryable, Sql } from '../db';
import { MANAGE_ORGANIZATION } from '../domain/permissions';
import { hashPassword } from '../auth/passwords';
import { normalizeEmail } from '../domain/emails';
import { writeAs } from './audit';
import type { OrganizationActor } from './deps';

const PASSWORD_MIN_LENGTH = 10;
const PASSWORD_MAX_LENGTH = 200;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

type UserRow = {
  id: number;
  organizationId: number;
  name: string;
  email: string | null;
  permissions: string[];
  created: Date;
};

const USER_COLUMNS = `id, organization_id as "organizationId", name, email, permissions, created`;

export class UserInputError extends Error {
  constructor(readonly field: 'email' | 'password' | 'name', message: string) {
    super(message);
  }
}

/** The problem with a password, or null: long enough to resist guessing, short enough to hash quickly. */
function passwordProblem(password: string): string | null {
  if (password.length < PASSWORD_MIN_LENGTH) return `Use at least ${PASSWORD_MIN_LENGTH} characters.`;
  if (password.length > PASSWORD_MAX_LENGTH) return `Use at most ${PASSWORD_MAX_LENGTH} characters.`;
  return null;
}

/** A new user of `organizationId`; `audit` is the console's (the admin CLI has none). */
type NewUser = OrganizationActor & { email: string; password: string; name?: string | null; manage: boolean };

/** A console user; UserInputError names the field when the email is taken or the password too weak. */
export async function createUser(sql: Sql, input: NewUser): Promise<UserRow> {
  const email = normalizeEmail(input.email);
  if (!EMAIL.test(email) || email.length > 254) throw new UserInputError('email', 'Enter a valid email address.');
  const problem = passwordProblem(input.password);
  if (problem !== null) throw new UserInputError('password', problem);
  const name = input.name?.trim() || input.email.trim().split('@')[0]!;
  if (name.length > 100) throw new UserInputError('name', 'Use at most 100 characters.');
  const passwordHash = await hashPassword(input.password);
  try {
    const [user] = await writeAs(sql, input, (tx) => tx<UserRow[]>`
      insert into users (organization_id, name, email, password_hash, permissions)
      select id, ${name}, ${email}, ${passwordHash}, ${input.manage ? [MANAGE_ORGANIZATION] : []}::text[]
      from organizations where id = ${input.organizationId}
      returning ${tx.unsafe(USER_COLUMNS)}`);
    if (!user) throw new Error(`Organization ${input.organizationId} does not exist`);
    return user;
  } catch (error) {
    if ((error as { code?: string }).code === '23505') throw new UserInputError('email', 'A user with this email already exists.');
    throw error;
  }
}

/** The organization's users who have not been removed, oldest first. */
export async function listUsers(sql: Queryable, organizationId: number): Promise<UserRow[]> {
  return await sql<UserRow[]>`
    select ${sql.unsafe(USER_COLUMNS)} from users where organization_id = ${organizationId} and removed_at is null order by id`;
}

export async function findUser(sql: Queryable, organizationId: number, userId: number): Promise<UserRow | undefined> {
  const [user] = await sql<UserRow[]>`
    select ${sql.unsafe(USER_COLUMNS)} from users where id = ${userId} and organization_id = ${organizationId} and removed_at is null`;
  return user;
}

/** The user an email signs in, with its password hash; removed users sign nobody in. */
export async function findUserForSignIn(sql: Queryable, email: string): Promise<(UserRow & { passwordHash: string }) | undefined> {
  const [user] = await sql<(UserRow & { passwordHash: string })[]>`
    select ${sql.unsafe(USER_COLUMNS)}, password_hash as "passwordHash" from users
    where email = ${normalizeEmail(email)} and removed_at is null and password_hash is not null`;
  return user;
}

/**
 * Removes a user: it can no longer sign in, its sessions end and its API keys are revoked (a key
 * acts as the user who holds it). The row stays, since API keys, webhooks and records name it.
 */
export async function removeUser(sql: Sql, owner: OrganizationActor, userId: number): Promise<boolean> {
  return await writeAs(sql, owner, async (tx) => {
    const [removed] = await tx`
      update users set removed_at = now() where id = ${userId} and organization_id = ${owner.organizationId} and removed_at is null
      returning id`;
    if (!removed) return false;
    await tx`delete from console_sessions where user_id = ${userId}`;
    await tx`update api_keys set revoked_at = now() where user_id = ${userId} and revoked_at is null`;
    return true;
  });
}

/** Grants or takes away "Manage Users and Organization Settings". */
export async function setManagePermission(sql: Sql, owner: OrganizationActor, userId: number, grant: boolean): Promise<boolean> {
  const rows = await writeAs(sql, owner, (tx) => tx`
    update users set permissions = ${grant
      ? tx`array_append(array_remove(permissions, ${MANAGE_ORGANIZATION}), ${MANAGE_ORGANIZATION})`
      : tx`array_remove(permissions, ${MANAGE_ORGANIZATION})`}
    where id = ${userId} and organization_id = ${owner.organizationId} and removed_at is null returning id`);
  return rows.length > 0;
}
