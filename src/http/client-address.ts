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
    const forwarded = request.headers
      .get('x-forwarded-for')
      ?.split(',')
      .map((part) => part.trim())
      .filter(Boolean)
      .at(-1);
    if (forwarded) return forwarded;
  }
  // A request re-entered without its /api/vN prefix is not the connection's own: ask about the client's.
  return server?.requestIP(clientRequest(request))?.address ?? null;
}

/** The longest address text a throttle keys by (an IPv6 address with a zone is well under it). */
const MAX_ADDRESS_LENGTH = 100;

/** An IPv6 address's eight groups as numbers; null when it is not one. */
function ipv6Groups(address: string): number[] | null {
  const halves = address.split('::');
  if (halves.length > 2) return null;
  const groupsOf = (part: string) => (part === '' ? [] : part.split(':'));
  const head = groupsOf(halves[0]!);
  const tail = groupsOf(halves[1] ?? '');
  // An embedded IPv4 address (`::ffff:192.0.2.1`) is the last two groups.
  const last = tail.at(-1) ?? head.at(-1) ?? '';
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(last)) {
    const [a = 0, b = 0, c = 0, d = 0] = last.split('.').map(Number);
    (tail.length > 0 ? tail : head).splice(-1, 1, ((a << 8) | b).toString(16), ((c << 8) | d).toString(16));
  }
  const missing = 8 - head.length - tail.length;
  if ((halves.length === 1 && missing !== 0) || (halves.length === 2 && missing < 1)) return null;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  return groups.every((group) => /^[0-9a-f]{1,4}$/i.test(group)) ? groups.map((group) => parseInt(group, 16)) : null;
}

/**
 * What a throttle counts an address as: an IPv4 address alone (an IPv4-mapped IPv6 address is that
 * IPv4 address), an IPv6 address by its /64, the block one site is given, so a host cannot pass a
 * per-address limit by walking the addresses of its own network. Anything else is kept as given, cut
 * to a bounded length.
 */
export function throttledAddress(address: string): string {
  const bare = address
    .trim()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/%.*$/, '');
  const groups = bare.includes(':') ? ipv6Groups(bare) : null;
  if (groups === null) return bare.slice(0, MAX_ADDRESS_LENGTH);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}
