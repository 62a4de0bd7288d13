/**
 * Web console sessions, stored in PostgreSQL. The browser holds a random token in an HttpOnly
 * cookie; only its SHA-256 digest is stored, so a copy of the table signs nobody in. Each session
 * has its own CSRF synchronizer token, which every console form carries.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Sql } from '../../db';
import type { OrganizationId, UserId } from '../../domain/ids';
import type { Role } from '../../domain/roles';

/** How long a session lasts from sign-in. */
export const SESSION_HOURS = 12;

export type ConsoleSession = {
  id: number;
  userId: UserId;
  email: string;
  userName: string;
  organizationId: OrganizationId;
  organizationName: string;
  role: Role;
  csrfToken: string;
  expiresAt: Date;
};

const randomToken = (): string => randomBytes(32).toString('base64url');
const digest = (token: string): Buffer => createHash('sha256').update(token).digest();

/** A new session for a user who just signed in: the token for the cookie (shown nowhere else). */
export async function startSession(sql: Sql, userId: UserId): Promise<{ token: string; expiresAt: Date }> {
  const token = randomToken();
  const [row] = await sql<{ expiresAt: Date }[]>`
    insert into console_sessions (token_digest, user_id, csrf_token, expires_at)
    values (${digest(token)}, ${userId}, ${randomToken()}, now() + ${SESSION_HOURS}::int * interval '1 hour')
    returning expires_at as "expiresAt"`;
  // Expired sessions of this user go now; nobody can use them any more.
  await sql`delete from console_sessions where user_id = ${userId} and expires_at <= now()`;
  return { token, expiresAt: row!.expiresAt };
}

/**
 * The live session a cookie token names, with its user and organization; undefined when expired,
 * ended or unknown. Authentication, so across organizations: the token says whose it is.
 */
export async function findSession(sql: Sql, token: string): Promise<ConsoleSession | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
  const [session] = await sql<ConsoleSession[]>`
    select s.id, s.user_id as "userId", u.email, u.name as "userName", u.organization_id as "organizationId",
           o.name as "organizationName", u.role, s.csrf_token as "csrfToken", s.expires_at as "expiresAt"
    from console_sessions s join users u on u.id = s.user_id join organizations o on o.id = u.organization_id
    where s.token_digest = ${digest(token)} and s.expires_at > now() and u.removed_at is null`;
  return session;
}

/** Sign-out: the session row goes, so the cookie is worthless even if it was copied. */
export async function endSession(sql: Sql, token: string): Promise<void> {
  await sql`delete from console_sessions where token_digest = ${digest(token)}`;
}

/** Constant-time comparison of a form's CSRF token with the session's. */
export function csrfTokenMatches(session: Pick<ConsoleSession, 'csrfToken'>, presented: unknown): boolean {
  if (typeof presented !== 'string') return false;
  const expected = Buffer.from(session.csrfToken);
  const given = Buffer.from(presented);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
