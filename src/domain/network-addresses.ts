import { BlockList, isIP } from 'node:net';

/**
 * Addresses a webhook must not reach outside sandbox mode: loopback, private, link-local,
 * carrier-grade NAT, multicast, documentation and other special-purpose ranges (IANA registries),
 * so a merchant cannot point a delivery at the service's own network.
 */
const NOT_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32],
  ['fc00::', 7], ['fe80::', 10], ['ff00::', 8],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

/**
 * True for an IP address on the public internet; false for special-purpose ranges and non-addresses.
 * BlockList checks IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`) against the IPv4 rules itself.
 */
export function isPublicAddress(address: string): boolean {
  const unbracketed = address.replace(/^\[(.*)\]$/, '$1');
  const family = isIP(unbracketed);
  if (family === 0) return false;
  return !NOT_PUBLIC.check(unbracketed, family === 4 ? 'ipv4' : 'ipv6');
}

/** A host name that names the local machine whatever DNS says. */
export function isLocalHostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}
