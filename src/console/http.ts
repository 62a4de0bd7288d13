/**
 * HTTP for the web console: HTML responses with their security headers, redirects, cookies, and
 * errors rendered as HTML pages (never the API's JSON). The API's error mapping (`errorResponse`)
 * still decides the status and the message, so both agree on what went wrong.
 */
import type { Config } from '../config';
import { ApiError } from '../http/errors';
import { errorResponse } from '../http/request';
import { findApiError } from '../http/errors';
import { html, type Html } from './html';

const CONSOLE_PATH = '/console';

/** Console pages are HTML for browsers: the API's JSON-only Accept rule, auth, throttling and versions do not apply. */
export function isConsolePath(pathOrRequest: string | Request): boolean {
  const pathname = typeof pathOrRequest === 'string' ? pathOrRequest : new URL(pathOrRequest.url).pathname;
  return pathname === CONSOLE_PATH || pathname.startsWith(`${CONSOLE_PATH}/`);
}

/**
 * Every console answer: no caching of pages that show a merchant's data, no framing, no sniffing,
 * and a Content-Security-Policy that runs only the console's own script and style files.
 */
const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "object-src 'none'",
  ].join('; '),
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

export function htmlResponse(body: Html | string, status = 200, cookies: string[] = []): Response {
  const headers = new Headers({ 'Content-Type': 'text/html; charset=utf-8', ...SECURITY_HEADERS });
  for (const cookie of cookies) headers.append('Set-Cookie', cookie);
  return new Response(typeof body === 'string' ? body : body.markup, { status, headers });
}

/** 303 See Other: after a form POST the browser GETs the next page (no resubmission on reload). */
export function redirect(location: string, cookies: string[] = []): Response {
  const headers = new Headers({ Location: location, ...SECURITY_HEADERS });
  for (const cookie of cookies) headers.append('Set-Cookie', cookie);
  return new Response(null, { status: 303, headers });
}

export function readCookie(request: Request, name: string): string | undefined {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const separator = part.indexOf('=');
    if (separator === -1) continue;
    if (part.slice(0, separator).trim() === name) return part.slice(separator + 1).trim();
  }
  return undefined;
}

type CookieOptions = { path?: string; maxAgeSeconds?: number; secure: boolean };

/** HttpOnly and SameSite=Lax always; Secure outside sandbox mode (sandbox runs on plain http://localhost). */
export function cookie(name: string, value: string, { path = '/', maxAgeSeconds, secure }: CookieOptions): string {
  return [
    `${name}=${value}`,
    `Path=${path}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(maxAgeSeconds !== undefined ? [`Max-Age=${maxAgeSeconds}`] : []),
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

/**
 * The session cookie: `__Host-` outside sandbox mode, so the browser only accepts it Secure, for
 * this host alone and for every path.
 */
export const sessionCookieName = (config: Pick<Config, 'sandbox'>): string =>
  config.sandbox ? 'console_session' : '__Host-console_session';

/** Not signed in (or the session ended): GETs go to the sign-in page and come back afterwards. */
export class SignInRequired extends Error {
  constructor(readonly next: string) {
    super('sign-in required');
  }
}

/** A console error page: the status and the sentence a person reads. */
export const consoleError = (status: number, detail: string): ApiError => new ApiError(status, { detail });
export const forbidden = (): ApiError =>
  consoleError(
    403,
    'You do not have permission to open this page. Ask a user who may manage users and organization settings.',
  );
export const csrfRefused = (): ApiError =>
  consoleError(
    403,
    [
      'This form was not sent from a page of your console session (its security token is missing or wrong).',
      'Reload the page and try again.',
    ].join(' '),
  );

/** A local console path to come back to after signing in; anything else (another site, `//host`) is dropped. */
export function safeNext(next: string | null | undefined): string {
  if (!next || !/^\/console(\/[A-Za-z0-9\-._~%/?=&]*)?$/.test(next) || next.includes('//')) return CONSOLE_PATH;
  return next;
}

/** The minimal page an error renders as (no navigation: the session may be what failed). */
function errorPage(status: number, detail: string): Html {
  const title =
    status === 404
      ? 'Not found'
      : status === 403
        ? 'Not allowed'
        : status === 429
          ? 'Too many attempts'
          : status >= 500
            ? 'Something went wrong'
            : 'Cannot do that';
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" \
content="width=device-width, initial-scale=1">
<title>${title} · Console</title><link rel="icon" href="data:,"><link rel="stylesheet" \
href="/console/static/console.css"></head>
<body><main class="narrow"><h1>${title}</h1><p class="error-detail" data-status="${status}">${detail}</p>
<p><a href="/console">Back to the console</a></p></main></body></html>`;
}

/** Anything thrown on a console path, as an HTML page (or the redirect to sign in). */
export async function consoleErrorResponse(
  code: unknown,
  error: unknown,
  request: Request,
  allowedMethods: (path: string) => string[],
): Promise<Response> {
  if (error instanceof SignInRequired)
    return redirect(`${CONSOLE_PATH}/sign-in?next=${encodeURIComponent(error.next)}`);
  const apiError = findApiError(error);
  if (apiError !== undefined && apiError.status === 400 && typeof apiError.body.detail !== 'string') {
    // Field errors a page did not show next to its fields (a bad filter in a link, say).
    const messages = Object.entries(apiError.body).map(
      ([field, problems]) => `${field}: ${([] as string[]).concat(problems as string[]).join(' ')}`,
    );
    return htmlResponse(errorPage(400, messages.join(' ')), 400);
  }
  // The API's mapping decides status and wording (and logs what is unexpected); the console shows it as a page.
  const response = errorResponse(code, error, request, allowedMethods);
  const body = (await response.json().catch(() => ({}))) as { detail?: unknown };
  const page = htmlResponse(
    errorPage(response.status, typeof body.detail === 'string' ? body.detail : 'The request could not be completed.'),
    response.status,
  );
  for (const name of ['Retry-After', 'Allow']) {
    const value = response.headers.get(name);
    if (value !== null) page.headers.set(name, value);
  }
  return page;
}
