/**
 * The console's own session check, as a named plugin with two macros every console route uses:
 * `{ page: CAPABILITY }` on a GET resolves `session` (or sends the browser to sign in),
 * `{ action: CAPABILITY }` on a POST also reads the form and refuses it (403) unless it carries
 * the session's CSRF token. Either answers 403 unless the user's role holds the capability
 * (domain/roles.ts), which is written into the route's `detail` for the roles tables. An action's
 * `session` carries its audit context: what the form writes is recorded with it.
 */
import { Elysia } from 'elysia';
import { enterOrganization } from '../db/tenancy';
import { CAPABILITY_DETAIL, capabilitiesOf, type Capability } from '../domain/roles';
import { clientAddress } from '../http/client-address';
import type { AppDeps } from '../http/context';
import { bodyOptionsFor, parseRequestBody } from '../http/request';
import { csrfTokenMatches, findSession, type ConsoleSession } from '../services/console-sessions';
import type { AuditContext } from '../services/deps';
import { SignInRequired, csrfRefused, forbidden, readCookie, sessionCookieName } from './http';

export type FormFields = Record<string, unknown>;

/** Whether the session's user may do what `capability` covers (to show a link or a button). */
export const allows = (session: Pick<ConsoleSession, 'role'>, capability: Capability): boolean => capabilitiesOf(session.role).includes(capability);

/** The current session of a request, or undefined. */
async function currentSession({ sql, config }: Pick<AppDeps, 'sql' | 'config'>, request: Request): Promise<ConsoleSession | undefined> {
  const token = readCookie(request, sessionCookieName(config));
  return token === undefined ? undefined : await findSession(sql, token);
}

export const consoleSessionPlugin = (deps: Pick<AppDeps, 'sql' | 'config'>) => {
  async function admit(request: Request, capability: Capability): Promise<ConsoleSession> {
    const session = await currentSession(deps, request);
    if (session === undefined) {
      const url = new URL(request.url);
      throw new SignInRequired(request.method === 'GET' ? url.pathname + url.search : url.pathname);
    }
    if (!allows(session, capability)) throw forbidden();
    // From here on the page's statements run inside the tenant boundary (src/db/tenancy.ts).
    enterOrganization(session.organizationId);
    return session;
  }
  return new Elysia({ name: 'console-session' }).macro({
    page: (capability: Capability) => ({
      detail: { [CAPABILITY_DETAIL]: capability } as Record<string, unknown>,
      resolve: async ({ request }) => ({ session: await admit(request, capability) }),
    }),
    action: (capability: Capability) => ({
      detail: { [CAPABILITY_DETAIL]: capability } as Record<string, unknown>,
      resolve: async ({ request, route, server }) => {
        const session = await admit(request, capability);
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
