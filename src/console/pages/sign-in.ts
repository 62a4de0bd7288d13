/**
 * Sign-in and sign-out. Passwords are checked with argon2id (Bun.password); emails breaking the
 * rule of src/domain/emails.ts are refused (400) before anything is counted; attempts are throttled
 * per account from each address, per address, and per account over all addresses before the
 * password is even looked at (429 page). The sign-in form carries its own CSRF token (there is no
 * session yet): a random nonce in a pre-session cookie and, in the form, a token the service signed
 * for that nonce with an expiry (session.ts), so another site can neither sign a browser in to an
 * account of its choosing nor pass with a cookie and a field it made up.
 */
import { Elysia } from 'elysia';
import { clientAddress, throttledAddress } from '../../http/client-address';
import type { AppDeps } from '../../http/context';
import { parseRequestBody } from '../../http/request';
import { EMAIL_MAX_LENGTH, emailCharactersProblem, normalizeEmail } from '../../domain/emails';
import { SESSION_HOURS, endSession, startSession } from '../../services/merchants/console-sessions';
import {
  forgiveSignInAttempt,
  recordSignInFailure,
  takeSignInAttempt,
} from '../../services/merchants/sign-in-throttle';
import { findUserForSignIn } from '../../services/merchants/users';
import { verifyPassword } from '../../auth/passwords';
import { html } from '../html';
import { cookie, htmlResponse, readCookie, redirect, safeNext, sessionCookieName } from '../http';
import { bareLayout, input, notice } from '../layout';
import { SIGN_IN_FORM_SECONDS, consoleSessionPlugin, issueSignInForm, signInFormAccepted } from '../session';

const SIGN_IN_PATH = '/console/sign-in';

/**
 * The pre-session cookie: outside sandbox mode `__Host-` prefixed (so Secure, for this host alone
 * and, as the prefix requires, every path), which keeps a neighbouring subdomain from planting one;
 * in sandbox mode (plain http) only sent to the sign-in page.
 */
const signInCookieOf = (sandbox: boolean) =>
  sandbox ? { name: 'console_sign_in', path: SIGN_IN_PATH } : { name: '__Host-console_sign_in', path: '/' };

export const signInRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const secure = !config.sandbox;
  const signInCookie = signInCookieOf(config.sandbox);

  /** The form, with a fresh nonce in its cookie and the token signed for it in its hidden field. */
  function signInPage(options: {
    next: string;
    email?: string;
    message?: string;
    emailError?: string;
    status?: number;
  }) {
    const { nonce, token } = issueSignInForm(config.console.secret);
    const body = bareLayout(
      'Sign in',
      html`
${options.message ? notice(options.message, 'error') : ''}
<form method="post" action="${SIGN_IN_PATH}" class="stack">
<input type="hidden" name="_csrf" value="${token}"><input type="hidden" name="next" value="${options.next}">
${input('email', 'Email', { email: options.email ?? '' }, options.emailError ? { email: [options.emailError] } : {}, {
  type: 'email',
  required: true,
  autocomplete: 'username',
})}
${input('password', 'Password', {}, {}, { type: 'password', required: true, autocomplete: 'current-password' })}
<div class="actions"><button type="submit" class="primary">Sign in</button></div>
</form>`,
    );
    return htmlResponse(body, options.status ?? 200, [
      cookie(signInCookie.name, nonce, { path: signInCookie.path, maxAgeSeconds: SIGN_IN_FORM_SECONDS, secure }),
    ]);
  }

  return (
    new Elysia({ name: 'console-sign-in' })
      .use(consoleSessionPlugin(deps))
      .get(SIGN_IN_PATH, ({ request }) => signInPage({ next: safeNext(new URL(request.url).searchParams.get('next')) }))
      .post(
        SIGN_IN_PATH,
        async ({ request, server }) => {
          const form = await parseRequestBody(request);
          const next = safeNext(typeof form.next === 'string' ? form.next : null);
          const email = typeof form.email === 'string' ? form.email.trim().slice(0, EMAIL_MAX_LENGTH) : '';
          const password = typeof form.password === 'string' ? form.password : '';
          if (!signInFormAccepted(config.console.secret, readCookie(request, signInCookie.name), form._csrf)) {
            return signInPage({
              next,
              email,
              status: 403,
              message: 'The sign-in form expired or was not sent from this site. Try again.',
            });
          }
          if (email === '' || password === '')
            return signInPage({ next, email, status: 400, message: 'Enter your email and password.' });
          // No account holds such an address (every way in refuses it), so it costs no attempt.
          const emailIssue = emailCharactersProblem(normalizeEmail(email));
          if (emailIssue !== null) return signInPage({ next, email, status: 400, emailError: emailIssue });
          // An IPv6 client counts by its /64: walking the addresses of its own network gains no attempts.
          const keys = {
            email,
            address: throttledAddress(clientAddress(request, server, config.console.trustProxy) ?? 'unknown'),
          };
          const slot = await takeSignInAttempt(sql, keys);
          if (!slot.allowed) {
            const minutes = Math.max(1, Math.ceil(slot.retryAfterSeconds / 60));
            const page = signInPage({
              next,
              email,
              status: 429,
              message: `Too many failed sign-in attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
            });
            page.headers.set('Retry-After', String(slot.retryAfterSeconds));
            return page;
          }
          const user = await findUserForSignIn(sql, email);
          const valid = await verifyPassword(password, user?.passwordHash);
          if (!user || !valid) {
            await recordSignInFailure(sql, keys);
            return signInPage({
              next,
              email,
              status: 401,
              message: 'That email and password do not match a console user.',
            });
          }
          await forgiveSignInAttempt(sql, keys);
          // A new token on every sign-in: a token planted before sign-in (session fixation) signs nobody in.
          const session = await startSession(sql, user.id);
          return redirect(next, [
            cookie(sessionCookieName(config), session.token, { maxAgeSeconds: SESSION_HOURS * 3600, secure }),
            cookie(signInCookie.name, '', { path: signInCookie.path, maxAgeSeconds: 0, secure }),
          ]);
        },
        { parse: 'none' },
      )
      // Sign-out deletes the session row, so the cookie is worthless even where it was copied.
      .post(
        '/console/sign-out',
        async ({ request }) => {
          const token = readCookie(request, sessionCookieName(config));
          if (token !== undefined) await endSession(sql, token);
          return redirect(SIGN_IN_PATH, [cookie(sessionCookieName(config), '', { maxAgeSeconds: 0, secure })]);
        },
        { action: 'view', parse: 'none' },
      )
  );
};
