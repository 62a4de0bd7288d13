/**
 * The console's own session check, as a named plugin with two macros every console route uses:
 * `{ page: CAPABILITY }` on a GET resolves `session` (or sends the browser to sign in),
 * `{ action: CAPABILITY }` on a POST also reads the form and refuses it (403) unless it carries
 * the session's CSRF token. Either answers 403 unless the user's role holds the capability
 * (domain/roles.ts), which is written into the route's `detail` for the roles tables. An action's
 * `session` carries its audit context: what the form writes is recorded with it.
 *
 * Before there is a session, the sign-in form's CSRF token is signed by the service
 * (`issueSignInForm`, `signInFormAccepted`): a cookie and a field an attacker picked do not pass.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Elysia } from 'elysia';
import { enterOrganization } from '../db/tenancy';
import { CAPABILITY_DETAIL, capabilitiesOf, type Capability } from '../domain/roles';
import { clientAddress } from '../http/client-address';
import type { AppDeps } from '../http/context';
import { bodyOptionsFor, parseRequestBody } from '../http/request';
import { csrfTokenMatches, findSession, type ConsoleSession } from '../services/merchants/console-sessions';
import type { AuditContext } from '../services/platform/deps';
import { SignInRequired, csrfRefused, forbidden, readCookie, sessionCookieName } from './http';

export type FormFields = Record<string, unknown>;

/** Whether the session's user may do what `capability` covers (to show a link or a button). */
export const allows = (session: Pick<ConsoleSession, 'role'>, capability: Capability): boolean =>
  capabilitiesOf(session.role).includes(capability);

/** The current session of a request, or undefined. */
async function currentSession(
  { sql, config }: Pick<AppDeps, 'sql' | 'config'>,
  request: Request,
): Promise<ConsoleSession | undefined> {
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

/** How long a sign-in form may be sent after it was shown. */
export const SIGN_IN_FORM_SECONDS = 3600;
const SIGN_IN_NONCE = /^[A-Za-z0-9_-]{32}$/;
const SIGN_IN_TOKEN = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/;

/** The token's signature: the service's key over the cookie's nonce and the expiry, in a context of its own. */
const signInSignature = (secret: string, nonce: string, expires: number): Buffer =>
  createHmac('sha256', secret).update(`console sign-in form\n${nonce}\n${expires}`).digest();

/**
 * A sign-in form's pair: a random nonce for the pre-session cookie and the form's token, signed for
 * that nonce until `SIGN_IN_FORM_SECONDS` from `now` (milliseconds).
 */
export function issueSignInForm(secret: string, now = Date.now()): { nonce: string; token: string } {
  const nonce = randomBytes(24).toString('base64url');
  const expires = Math.floor(now / 1000) + SIGN_IN_FORM_SECONDS;
  return { nonce, token: `${expires}.${signInSignature(secret, nonce, expires).toString('base64url')}` };
}

/**
 * Whether a sign-in form's token is one this service signed for the cookie's nonce and it has not
 * expired; the signatures are compared in constant time. A pair the client made up never is.
 */
export function signInFormAccepted(
  secret: string,
  nonce: string | undefined,
  presented: unknown,
  now = Date.now(),
): boolean {
  if (nonce === undefined || !SIGN_IN_NONCE.test(nonce) || typeof presented !== 'string') return false;
  const [, expiresText = '', signature = ''] = SIGN_IN_TOKEN.exec(presented) ?? [];
  const expires = Number(expiresText);
  if (signature === '' || expires * 1000 <= now) return false;
  return timingSafeEqual(Buffer.from(signature, 'base64url'), signInSignature(secret, nonce, expires));
}
