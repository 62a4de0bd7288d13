/** The cluster's subnet is one the machine is on by no route or address (test/cluster/network.ts). */
import { expect, test } from 'bun:test';
import { overlapsHostRoutes } from '../cluster/network';

const routes = `default via 192.0.2.1 dev eth0
192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.2
10.213.0.0/16 via 192.0.2.9 dev eth0
172.17.0.0/16 dev docker0 proto kernel scope link src 172.17.0.1
    inet 127.0.0.1/8 scope host lo
    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0`;

test('a /24 inside a routed network, or holding a host address, overlaps; the default route does not count', () => {
  expect(overlapsHostRoutes('10.213.7', routes)).toBe(true);
  expect(overlapsHostRoutes('192.0.2', routes)).toBe(true);
  expect(overlapsHostRoutes('172.17.5', routes)).toBe(true);
  expect(overlapsHostRoutes('127.0.0', routes)).toBe(true);
  expect(overlapsHostRoutes('10.231.41', routes)).toBe(false);
  expect(overlapsHostRoutes('172.30.213', routes)).toBe(false);
});

test('a host route (/32) inside the /24 overlaps it', () => {
  expect(overlapsHostRoutes('10.231.41', '10.231.41.77 dev tun0 scope link')).toBe(true);
  expect(overlapsHostRoutes('10.231.41', '10.231.42.77 dev tun0 scope link')).toBe(false);
});
