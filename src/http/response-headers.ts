/**
 * What every answer carries unless its route set its own: `X-Content-Type-Options: nosniff`
 * (a browser never runs an answer as another type than it says), and `Cache-Control: no-store`
 * (a merchant's records, keys and errors are never kept by a browser or a shared cache). The
 * console's pages and the documentation set theirs (src/console/http.ts, src/api/openapi.ts).
 */
import { Elysia } from 'elysia';

const DEFAULT_HEADERS: Record<string, string> = { 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' };

function withDefaultHeaders(response: Response): Response {
  const missing = Object.entries(DEFAULT_HEADERS).filter(([name]) => !response.headers.has(name));
  if (missing.length === 0) return response;
  try {
    for (const [name, value] of missing) response.headers.set(name, value);
    return response;
  } catch {
    // Immutable headers (a response made by Response.redirect, say): the response is copied.
    const headers = new Headers(response.headers);
    for (const [name, value] of missing) headers.set(name, value);
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  }
}

type Handler = (request: Request) => Response | Promise<Response>;

/** Wraps the app's whole handler, so errors, 404s and every route's answers get the same headers. */
export const responseHeadersPlugin = () => {
  const wrapper = (handle: Handler) => async (request: Request) => withDefaultHeaders(await handle(request));
  return new Elysia({ name: 'response-headers' }).wrap(wrapper as unknown as Parameters<Elysia['wrap']>[0]);
};
