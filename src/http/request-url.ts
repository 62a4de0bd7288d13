/**
 * A request the HTTP server cannot form a URL for: no `Host` header (an HTTP/1.0 request may send
 * none), an empty one, or one that is no host (`Host: a b`). Bun hands such a request on with a
 * `url` that `new URL` refuses, and every part of the pipeline reads its path through `new URL`: the
 * request is answered here, before any of them runs, with the API's error body.
 */
import { Elysia } from 'elysia';

type Handler = (request: Request) => Response | Promise<Response>;

/** The answer to a request without a usable URL: small, JSON, and the same for every path. */
function malformedRequestResponse(): Response {
  return new Response(JSON.stringify({ detail: 'Invalid or missing Host header.' }), {
    status: 400,
    headers: { 'Content-Type': 'application/json', 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' },
  });
}

/** Whether the server could form a URL for the request (its `Host` names a host). */
const hasUsableUrl = (request: Request): boolean => URL.canParse(request.url);

/**
 * Wraps the app's whole handler; the app registers it last, which makes it the outermost wrapper
 * (Elysia nests each wrapper around the ones registered before it).
 */
export const requestUrlPlugin = () => {
  const wrapper = (handle: Handler) => (request: Request) =>
    hasUsableUrl(request) ? handle(request) : malformedRequestResponse();
  return new Elysia({ name: 'request-url' }).wrap(wrapper as unknown as Parameters<Elysia['wrap']>[0]);
};
