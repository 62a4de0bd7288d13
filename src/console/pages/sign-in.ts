/**
 * Sign-in and sign-out. Passwords are checked with argon2id (Bun.password); attempts are throttled
 * per account and per address before the password is even looked at (429 page); the sign-in form
 * carries its own CSRF token in a short-lived cookie (there is no session yet), so another site
 * cannot sign a browser in to an account of its choosing.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { Elysia } from 'elysia';
import { clientAddress } from '../../http/client-address';
import type { AppDeps } from '../../http/context';
import { parseRequestBody } from '../../http/request';
import { SESSION_HOURS, endSession, startSession } from '../../services/console-sessions';
import { forgiveSignInAttempt, recordSignInFailure, takeSignInAttempt } from '../../services/sign-in-throttle';
import { findUserForSignIn } from '../../services/users';
import { verifyPassword } from '../../auth/passwords';
import { html } from '../html';
import { cookie, htmlResponse, readCookie, redirect, safeNext, sessionCookieName } from '../http';
import { bareLayout, input, notice } from '../layout';
import { consoleSessionPlugin } from '../session';

const SIGN_IN_CSRF_COOKIE = 'console_sign_in';
const SIGN_IN_PATH = '/console/sign-in';

function tokensMatch(expected: string | undefined, presented: unknown): boolean {
  if (expected === undefined || typeof presented !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(presented);
  return a.length === b.length && timingSafeEqual(a, b);
}

export const signInRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const secure = !config.sandbox;

  /** The form, with a fresh sign-in CSRF token in its cookie and its hidden field. */
  function signInPage(options: { next: string; email?: string; message?: string; status?: number }) {
    const token = randomBytes(24).toString('base64url');
    const body = bareLayout('Sign in', html`
${options.message ? notice(options.message, 'error') : ''}
<form method="post" action="${SIGN_IN_PATH}" class="stack">
<input type="hidden" name="_csrf" value="${token}"><input type="hidden" name="next" value="${options.next}">
${input('email', 'Email', { email: options.email ?? '' }, {}, { type: 'email', required: true, autocomplete: 'username' })}
${input('password', 'Password', {}, {}, { type: 'password', required: true, autocomplete: 'current-password' })}
<div class="actions"><button type="submit" class="primary">Sign in</button></div>
</form>`);
    return htmlResponse(body, options.status ?? 200, [cookie(SIGN_IN_CSRF_COOKIE, token, { path: SIGN_IN_PATH, maxAgeSeconds: 3600, secure })]);
  }

  return new Elysia({ name: 'console-sign-in' })
    .use(consoleSessionPlugin(deps))
    .get(SIGN_IN_PATH, ({ request }) => signInPage({ next: safeNext(new URL(request.url).searchParams.get('next')) }))
    .post(SIGN_IN_PATH, async ({ request, server }) => {
      const form = await parseRequestBody(request);
      const next = safeNext(typeof form.next === 'string' ? form.next : null);
      const email = typeof form.email === 'string' ? form.email.trim().slice(0, 254) : '';
      const password = typeof form.password === 'string' ? form.password : '';
      if (!tokensMatch(readCookie(request, SIGN_IN_CSRF_COOKIE), form._csrf)) {
        return signInPage({ next, email, status: 403, message: 'The sign-in form expired or was not sent from this site. Try again.' });
      }
      if (email === '' || password === '') return signInPage({ next, email, status: 400, message: 'Enter your email and password.' });
      const keys = { email, address: clientAddress(request, server, config.console.trustProxy) ?? 'unknown' };
      const slot = await takeSignInAttempt(sql, keys);
      if (!slot.allowed) {
        const minutes = Math.max(1, Math.ceil(slot.retryAfterSeconds / 60));
        const page = signInPage({ next, email, status: 429, message: `Too many failed sign-in attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.` });
        page.headers.set('Retry-After', String(slot.retryAfterSeconds));
        return page;
      }
      const user = await findUserForSignIn(sql, email);
      const valid = await verifyPassword(password, user?.passwordHash);
      if (!user || !valid) {
        await recordSignInFailure(sql, keys);
        return signInPage({ next, email, status: 401, message: 'That email and password do not match a console user.' });
      }
      await forgiveSignInAttempt(sql, keys);
      // A new token on every sign-in: a token planted before sign-in (session fixation) signs nobody in.
      const session = await startSession(sql, user.id);
      return redirect(next, [
        cookie(sessionCookieName(config), session.token, { maxAgeSeconds: SESSION_HOURS * 3600, secure }),
        cookie(SIGN_IN_CSRF_COOKIE, '', { path: SIGN_IN_PATH, maxAgeSeconds: 0, secure }),
      ]);
    }, { parse: 'none' })
    // Sign-out deletes the session row, so the cookie is worthless even where it was copied.
    .post('/console/sign-out', async ({ request }) => {
      const token = readCookie(request, sessionCookieName(config));
      if (token !== undefined) await endSession(sql, token);
      return redirect(SIGN_IN_PATH, [cookie(sessionCookieName(config), '', { maxAgeSeconds: 0, secure })]);
    }, { action: 'view', parse: 'none' });
};
