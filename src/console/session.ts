/**
 * The console's own session check, as a named plugin with two macros every console route uses:
 * `{ page: 'member' | 'manager' }` on a GET resolves `session` (or sends the browser to sign in),
 * `{ action: 'member' | 'manager' }` on a POST also reads the form and refuses it (403) unless it
 * carries the session's CSRF token. 'manager' needs "Manage Users and Organization Settings". An
 * action's `session` carries its audit context: what the form writes is recorded with it.
 */
import { Elysia } from 'elysia';
import { MANAGE_ORGANIZATION } from '../domain/permissions';
import { clientAddress } from '../http/client-address';
import type { AppDeps } from '../http/context';
import { bodyOptionsFor, parseRequestBody } from '../http/request';
import { csrfTokenMatches, findSession, type ConsoleSession } from '../services/console-sessions';
import type { AuditContext } from '../services/deps';
import { SignInRequired, csrfRefused, forbidden, readCookie, sessionCookieName } from './http';

export type Access = 'member' | 'manager';
export type FormFields = Record<string, unknown>;

export const canManage = (session: Pick<ConsoleSession, 'permissions'>): boolean => session.permissions.includes(MANAGE_ORGANIZATION);

/** The current session of a request, or undefined. */
async function currentSession({ sql, config }: Pick<AppDeps, 'sql' | 'config'>, request: Request): Promise<ConsoleSession | undefined> {
  const token = readCookie(request, sessionCookieName(config));
  return token === undefined ? undefined : await findSession(sql, token);
}

export const consoleSessionPlugin = (deps: Pick<AppDeps, 'sql' | 'config'>) => {
  async function admit(request: Request, access: Access): Promise<ConsoleSession> {
    const session = await currentSession(deps, request);
    if (session === undefined) {
      const url = new URL(request.url);
      throw new SignInRequired(request.method === 'GET' ? url.pathname + url.search : url.pathname);
    }
    if (access === 'manager' && !canManage(session)) throw forbidden();
    return session;
  }
  return new Elysia({ name: 'console-session' }).macro({
    page: (access: Access) => ({
      resolve: async ({ request }) => ({ session: await admit(request, access) }),
    }),
    action: (access: Access) => ({
      resolve: async ({ request, route, server }) => {
        const session = await admit(request, access);
        const { _csrf: presented, ...form } = await parseRequestBody(request, bodyOptionsFor(request.method, route));
        if (!csrfTokenMatches(session, presented)) throw csrfRefused();
        // What the form writes is recorded with who sent it, from where, through which form.
        const audit: AuditContext = {
          userId: session.userId,
          apiKeyId: null,
          channel: 'console',
          clientAddress: clientAddress(request, server, deps.config.console.trustProxy),
          action: `${request.method.toUpperCase()} ${route}`,
        };
        return { session: { ...session, audit }, form: form as FormFields };
      },
    }),
  });
};
