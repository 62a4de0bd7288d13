/**
 * The caller's address, as every part of the service that needs it determines it (the console's
 * sign-in throttle, the audit trail): the connection's, or, when `TRUST_PROXY` says a proxy in
 * front appends the client's address to `X-Forwarded-For`, that header's last entry. The header is
 * never believed otherwise: a client can write anything in it.
 */
import { clientRequest } from './versions';

/** What Elysia's context offers as `server` (null when the app is called without one, as in tests). */
type AddressSource = { requestIP(request: Request): { address: string } | null } | null | undefined;

/** The caller's address; null when it cannot be told (no server, and no trusted proxy header). */
export function clientAddress(request: Request, server: AddressSource, trustProxy: boolean): string | null {
  if (trustProxy) {
    const forwarded = request.headers.get('x-forwarded-for')?.split(',').map((part) => part.trim()).filter(Boolean).at(-1);
    if (forwarded) return forwarded;
  }
  // A request re-entered without its /api/vN prefix is not the connection's own: ask about the client's.
  return server?.requestIP(clientRequest(request))?.address ?? null;
}
