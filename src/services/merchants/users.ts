/**
 * The people of an organization who sign in to the web console: an email (stored, found and
 * unique in one normalised form, domain/emails.ts) and a password kept only as an argon2id hash (Bun.password), and one
 * role each (domain/roles.ts).
 */
import type { Queryable, Sql } from '../../db';
import type { OrganizationId, UserId } from '../../domain/ids';
import { mayAssignRole, type Role } from '../../domain/roles';
import { hashPassword } from '../../auth/passwords';
import { emailProblem, normalizeEmail } from '../../domain/emails';
import { writeAs } from './audit';
import type { Actor, OrganizationActor } from '../platform/deps';
import { tenantScope } from '../platform/queries';

const PASSWORD_MIN_LENGTH = 10;
const PASSWORD_MAX_LENGTH = 200;

type UserRow = {
  id: UserId;
  organizationId: OrganizationId;
  name: string;
  email: string | null;
  role: Role;
  created: Date;
};

const USER_COLUMNS = `id, organization_id as "organizationId", name, email, role, created`;

export class UserInputError extends Error {
  constructor(
    readonly field: 'email' | 'password' | 'name',
    message: string,
  ) {
    super(message);
  }
}

/** The problem with a password, or null: long enough to resist guessing, short enough to hash quickly. */
function passwordProblem(password: string): string | null {
  if (password.length < PASSWORD_MIN_LENGTH) return `Use at least ${PASSWORD_MIN_LENGTH} characters.`;
  if (password.length > PASSWORD_MAX_LENGTH) return `Use at most ${PASSWORD_MAX_LENGTH} characters.`;
  return null;
}

/** A new user of `organizationId` with a role; `audit` is the console's (the admin CLI has none). */
type NewUser = OrganizationActor & { email: string; password: string; name?: string | null; role: Role };

/** A console user; UserInputError names the field when the email is taken or the password too weak. */
export async function createUser(sql: Sql, input: NewUser): Promise<UserRow> {
  const email = normalizeEmail(input.email);
  const emailIssue = emailProblem(email);
  if (emailIssue !== null) throw new UserInputError('email', emailIssue);
  const problem = passwordProblem(input.password);
  if (problem !== null) throw new UserInputError('password', problem);
  const name = input.name?.trim() || input.email.trim().split('@')[0]!;
  if (name.length > 100) throw new UserInputError('name', 'Use at most 100 characters.');
  const passwordHash = await hashPassword(input.password);
  try {
    const [user] = await writeAs(
      sql,
      input,
      (tx) => tx<UserRow[]>`
      insert into users (organization_id, name, email, password_hash, role)
      select id, ${name}, ${email}, ${passwordHash}, ${input.role}
      from organizations where id = ${input.organizationId}
      returning ${tx.unsafe(USER_COLUMNS)}`,
    );
    if (!user) throw new Error(`Organization ${input.organizationId} does not exist`);
    return user;
  } catch (error) {
    if ((error as { code?: string }).code === '23505')
      throw new UserInputError('email', await takenEmailProblem(sql, input.organizationId, email));
    throw error;
  }
}

/**
 * Why a taken email cannot be given to a new user: said plainly when a user of the organization
 * holds it; otherwise in words that name no other organization and do not say that it has the
 * address (emails sign in, so one address is one user across the service).
 */
async function takenEmailProblem(sql: Queryable, organizationId: OrganizationId, email: string): Promise<string> {
  const [own] = await sql<{ removed: boolean }[]>`
    select removed_at is not null as removed from users
    where email = ${email} and ${tenantScope(sql, organizationId).owned()}`;
  if (own === undefined) return 'This email cannot be used for a new user; use another address.';
  return own.removed
    ? 'A removed user of your organization had this email; use another address.'
    : 'A user of your organization already has this email.';
}

/** The organization's users who have not been removed, oldest first. */
export async function listUsers(sql: Queryable, organizationId: OrganizationId): Promise<UserRow[]> {
  return await sql<UserRow[]>`
    select ${sql.unsafe(USER_COLUMNS)} from users
    where ${tenantScope(sql, organizationId).owned()} and removed_at is null
    order by id`;
}

export async function findUser(
  sql: Queryable,
  organizationId: OrganizationId,
  userId: UserId,
): Promise<UserRow | undefined> {
  const [user] = await sql<UserRow[]>`
    select ${sql.unsafe(USER_COLUMNS)} from users
    where id = ${userId} and ${tenantScope(sql, organizationId).owned()} and removed_at is null`;
  return user;
}

/**
 * The user an email signs in, with its password hash; removed users sign nobody in (sign-in: across organizations, as
 * an email is one user).
 */
export async function findUserForSignIn(
  sql: Queryable,
  email: string,
): Promise<(UserRow & { passwordHash: string }) | undefined> {
  const [user] = await sql<(UserRow & { passwordHash: string })[]>`
    select ${sql.unsafe(USER_COLUMNS)}, password_hash as "passwordHash" from users
    where email = ${normalizeEmail(email)} and removed_at is null and password_hash is not null`;
  return user;
}

/** What a change of a user's role or a removal came to. */
export type RoleChange = 'done' | 'not found' | 'not allowed' | 'last owner';

/**
 * Locks the organization's live users and checks that `actorId`, with the role they hold now (not
 * when their session began), may give `userId` the role `next` (null: remove them), and that an
 * owner stays; the change itself is the caller's. Two owners demoting each other at once: the
 * second finds itself demoted.
 */
async function checkRoleChange(
  tx: Queryable,
  organizationId: OrganizationId,
  actorId: UserId,
  userId: UserId,
  next: Role | null,
): Promise<RoleChange> {
  const users = await tx<{ id: UserId; role: Role }[]>`
    select id, role from users where ${tenantScope(tx, organizationId).owned()} and removed_at is null
    order by id for update`;
  const actor = users.find((user) => user.id === actorId);
  const target = users.find((user) => user.id === userId);
  if (target === undefined) return 'not found';
  if (actor === undefined || !mayAssignRole(actor.role, target.role, next)) return 'not allowed';
  const ownersLeft = users.filter((user) => user.role === 'owner' && (user.id !== userId || next === 'owner')).length;
  return ownersLeft === 0 ? 'last owner' : 'done';
}

/**
 * Removes a user: it can no longer sign in, its sessions end and its API keys are revoked (a key
 * acts as the user who holds it). The row stays, since API keys, webhooks and records name it.
 * `checkRoleChange` holds the user's row `for update` from the start: a key being made for them
 * holds it `for share` (`issueKeyForUser`), so it commits before this revocation, which then sees
 * it, or waits and finds the user removed. The key lookup refuses a removed user's keys in any case.
 */
export async function removeUser(sql: Sql, actor: Actor, userId: UserId): Promise<RoleChange> {
  return await writeAs(sql, actor, async (tx) => {
    const check = await checkRoleChange(tx, actor.organizationId, actor.userId, userId, null);
    if (check !== 'done') return check;
    await tx`update users set removed_at = now() where id = ${userId}`;
    await tx`delete from console_sessions where user_id = ${userId}`;
    await tx`update api_keys set revoked_at = now() where user_id = ${userId} and revoked_at is null`;
    return check;
  });
}

/** Gives a user another role; their keys follow at once (a key never does more than its user). */
export async function setUserRole(sql: Sql, actor: Actor, userId: UserId, role: Role): Promise<RoleChange> {
  return await writeAs(sql, actor, async (tx) => {
    const check = await checkRoleChange(tx, actor.organizationId, actor.userId, userId, role);
    if (check === 'done') await tx`update users set role = ${role} where id = ${userId}`;
    return check;
  });
}
