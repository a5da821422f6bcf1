import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { isRefusedAddress } from '../src/adapters/net/address-guard.js';
import { WEBHOOK_ATTEMPTS, webhookRetryDelayMs } from '../src/features/webhooks/webhook-dispatcher.js';

describe('webhook address guard (SSRF)', () => {
  it.each([
    '127.0.0.1',
    '127.8.9.10',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254', // cloud metadata
    '100.100.100.200', // metadata in carrier-grade NAT space
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254', // metadata over IPv6
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    'not-an-ip',
  ])('refuses %s', (address) => {
    expect(isRefusedAddress(address)).toBe(true);
  });

  /** IPv6 forms of private IPv4 addresses, and documentation and reserved ranges. */
  const disguised = [
    '64:ff9b::a9fe:a9fe', // NAT64 of 169.254.169.254
    '64:ff9b::7f00:1', // NAT64 of 127.0.0.1
    '64:ff9b::127.0.0.1',
    '64:ff9b:1::808:808', // local-use NAT64 prefix: the embedding is not known
    '2002:7f00:1::1', // 6to4 of 127.0.0.1
    '2002:a9fe:a9fe::1', // 6to4 of 169.254.169.254
    '2002:0a00:0001::', // 6to4 of 10.0.0.1
    '::127.0.0.1', // IPv4-compatible
    '::a9fe:a9fe',
    '::ffff:0:7f00:1', // IPv4-translated
    '::ffff:0:a9fe:a9fe',
    '2001::1', // Teredo
    '192.0.2.1',
    '198.51.100.7',
    '203.0.113.9',
    '240.0.0.1',
    '2001:db8::1',
    'fec0::1',
    '100::1',
    '3fff::1',
    '5f00::1',
    '4000::1', // outside 2000::/3, the IPv6 global unicast space
    '[::1]',
    'fe80::1%eth0',
    '0177.0.0.1', // octal: not a strict address form
    '2130706433',
  ];
  it.each(disguised)('refuses %s', (address) => {
    expect(isRefusedAddress(address)).toBe(true);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001:82b::200e',
    '::ffff:8.8.8.8',
    '::ffff:0:8.8.8.8',
    '64:ff9b::808:808', // NAT64 of 8.8.8.8
    '2002:808:808::1', // 6to4 of 8.8.8.8
  ])('allows %s', (address) => {
    expect(isRefusedAddress(address)).toBe(false);
  });

  // Every special range the address library knows, by name: the first and the last address
  // of each is refused, alone and inside every IPv6 form that carries an IPv4 address.
  type Ranges = Record<string, [ipaddr.IPv4 | ipaddr.IPv6, number] | Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>>;
  const rangesOf = (proto: object) =>
    Object.entries((proto as { SpecialRanges: Ranges }).SpecialRanges).flatMap(([name, list]) =>
      (Array.isArray(list[0]) ? (list as Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>) : [list as [ipaddr.IPv4, number]]).flatMap(
        ([net, bits]) => {
          const cidr = `${net.toString()}/${bits}`;
          const v4 = net.kind() === 'ipv4';
          const first = (v4 ? ipaddr.IPv4 : ipaddr.IPv6).networkAddressFromCIDR(cidr);
          const last = (v4 ? ipaddr.IPv4 : ipaddr.IPv6).broadcastAddressFromCIDR(cidr);
          return [first, last].map((ip) => ({ name, cidr, ip }));
        },
      ),
    );
  const v4Ranges = rangesOf(ipaddr.IPv4.prototype);
  const v6Ranges = rangesOf(ipaddr.IPv6.prototype);

  it('knows the ranges it is tested over (the library did not lose any)', () => {
    expect(new Set(v4Ranges.map((r) => r.name))).toEqual(
      new Set(['unspecified', 'broadcast', 'multicast', 'linkLocal', 'loopback', 'carrierGradeNat', 'private', 'reserved', 'as112', 'amt']),
    );
    expect(new Set(v6Ranges.map((r) => r.name))).toContain('rfc6052');
    expect(v6Ranges.length).toBeGreaterThan(30);
  });

  it.each(v4Ranges.map((r) => [r.name, r.cidr, r.ip.toString()]))('refuses IPv4 %s (%s): %s', (_name, _cidr, address) => {
    expect(isRefusedAddress(address)).toBe(true);
  });

  it.each(v6Ranges.map((r) => [r.name, r.cidr, r.ip.toNormalizedString()]))('refuses IPv6 %s (%s): %s', (_name, _cidr, address) => {
    expect(isRefusedAddress(address)).toBe(true);
  });

  const carriers: Array<[string, (o: number[]) => string]> = [
    ['IPv4-mapped', (o) => `::ffff:${o.join('.')}`],
    ['IPv4-translated', (o) => `::ffff:0:${o.join('.')}`],
    ['IPv4-compatible', (o) => `::${o.join('.')}`],
    ['NAT64', (o) => `64:ff9b::${o.join('.')}`],
    ['6to4', ([a = 0, b = 0, c = 0, d = 0]) => `2002:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}::1`],
  ];
  it.each(carriers.flatMap(([form, wrap]) => v4Ranges.map((r) => [form, r.name, wrap((r.ip as ipaddr.IPv4).octets)])))(
    'refuses %s of IPv4 %s: %s',
    (_form, _name, address) => {
      expect(isRefusedAddress(address)).toBe(true);
    },
  );
});

describe('webhook retry schedule', () => {
  it('keeps retrying a failing endpoint for more than 24 hours, with growing delays', () => {
    const delays = Array.from({ length: WEBHOOK_ATTEMPTS - 1 }, (_, i) => webhookRetryDelayMs(i + 1, 5_000));
    expect(delays.reduce((a, b) => a + b, 0)).toBeGreaterThan(24 * 3600_000);
    expect(delays[0]).toBe(5_000);
    for (let i = 1; i < delays.length; i++) expect(delays[i]).toBeGreaterThanOrEqual(delays[i - 1] ?? 0);
  });
});
