import { BlockList, isIP } from 'node:net';

/**
 * Addresses an outgoing request (webhook, verification URL) must not reach outside sandbox mode:
 * loopback, private, link-local, carrier-grade NAT, multicast, documentation and other
 * special-purpose ranges (IANA registries), so a merchant cannot point the service at its own
 * network. IPv6 forms that carry an IPv4 address (mapped, translated, compatible, NAT64, 6to4)
 * are judged by the IPv4 address they carry.
 */
const NOT_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted IPv4 part included), or null. */
function ipv6Groups(address: string): number[] | null {
  if (isIP(address) !== 6) return null;
  let text = address.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parts = (part: string) => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  const left = parts(head);
  const right = tail === undefined ? [] : parts(tail);
  const groups = tail === undefined ? left : [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
  return groups.length === 8 && groups.every((group) => Number.isInteger(group) && group >= 0 && group <= 0xffff)
    ? groups
    : null;
}

const ipv4 = (high: number, low: number): string => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;

/** The IPv4 address an IPv6 address carries, for the forms that route to it; null otherwise. */
function embeddedIpv4(address: string): string | null {
  const g = ipv6Groups(address);
  if (g === null) return null;
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [number, number, number, number, number, number, number, number];
  const zeros = (...groups: number[]) => groups.every((group) => group === 0);
  // ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d (translated), ::a.b.c.d (compatible, deprecated).
  if (
    zeros(g0, g1, g2, g3) &&
    ((g4 === 0 && g5 === 0xffff) || (g4 === 0xffff && g5 === 0) || (g4 === 0 && g5 === 0 && (g6 !== 0 || g7 > 1)))
  ) {
    return ipv4(g6, g7);
  }
  // 64:ff9b::a.b.c.d, the NAT64 well-known prefix (RFC 6052).
  if (g0 === 0x64 && g1 === 0xff9b && zeros(g2, g3, g4, g5)) return ipv4(g6, g7);
  // 2002:AABB:CCDD::/48, 6to4 (RFC 3056): the relay's IPv4 address sits in groups 1 and 2.
  if (g0 === 0x2002) return ipv4(g1, g2);
  return null;
}

/** True for an IP address on the public internet; false for special-purpose ranges and non-addresses. */
export function isPublicAddress(address: string): boolean {
  const unbracketed = address.replace(/^\[(.*)\]$/, '$1');
  const family = isIP(unbracketed);
  if (family === 0) return false;
  if (family === 4) return !NOT_PUBLIC.check(unbracketed, 'ipv4');
  const carried = embeddedIpv4(unbracketed);
  if (carried !== null) return !NOT_PUBLIC.check(carried, 'ipv4');
  return !NOT_PUBLIC.check(unbracketed, 'ipv6');
}

/** A host name that names the local machine whatever DNS says. */
export function isLocalHostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}
