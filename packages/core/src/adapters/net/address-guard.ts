import { lookup as dnsLookup } from 'node:dns';
import { lookup as dnsLookupAll } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { InvalidRequestError } from '../../shared/errors.js';

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

/** The IPv6 global unicast allocation (RFC 4291 §2.4); everything outside it is refused. */
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');
/** The NAT64 well-known prefix (RFC 6052): the IPv4 address is the last 32 bits. */
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

const v4 = (hi: number, lo: number): IPv4 => new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);

/**
 * The IPv4 address an IPv6 address carries and that a network would route to:
 * IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`,
 * 6to4 `2002:aabb:ccdd::` and IPv4-compatible `::a.b.c.d`. `null`: it embeds one Rein cannot
 * read safely (other NAT64 prefixes, Teredo), so it is refused; `undefined`: it embeds none.
 */
function embeddedIPv4(ip: IPv6): IPv4 | null | undefined {
  const p = ip.parts as [number, number, number, number, number, number, number, number];
  switch (ip.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return v4(p[6], p[7]);
    case 'rfc6052':
      return ip.match(NAT64_WELL_KNOWN) ? v4(p[6], p[7]) : null;
    case '6to4':
      return v4(p[1], p[2]);
    case 'teredo':
      return null;
  }
  if (p.slice(0, 6).every((x) => x === 0)) return v4(p[6], p[7]); // IPv4-compatible (deprecated) and ::, ::1
  return undefined;
}

/**
 * Whether Rein may call this address (webhooks, sinks, remote agents): an allow-list, not a deny-list. IPv4 must be
 * plain unicast (none of the library's special ranges: private, loopback, link-local,
 * carrier-grade NAT, documentation, benchmarking, reserved, ...); IPv6 must be global
 * unicast outside every special range, and an IPv6 address carrying an IPv4 one is judged
 * by the IPv4 address inside.
 */
function isPublicAddress(address: string): boolean {
  const literal = address.replace(/^\[|\]$/g, '');
  const family = isIP(literal); // strict forms only (ipaddr.js would also read octal and hex IPv4)
  if (family === 0) return false;
  const ip = ipaddr.parse(literal);
  if (ip.kind() === 'ipv4') return ip.range() === 'unicast';
  const v6 = ip as IPv6;
  const inner = embeddedIPv4(v6);
  if (inner !== undefined) return inner !== null && inner.range() === 'unicast';
  return v6.range() === 'unicast' && v6.match(GLOBAL_UNICAST_V6);
}

/** Whether Rein may not call this IP address (anything that is not a public unicast address). */
export const isRefusedAddress = (address: string): boolean => !isPublicAddress(address);

/**
 * A host that is, or resolves to, an address Rein does not call (SSRF): a webhook's, a
 * checkpoint sink's, a remote agent's. The message never names the address: the refusal
 * must not tell a caller what an internal name resolves to.
 */
export class AddressRefusedError extends InvalidRequestError {
  constructor(host: string, code = 'address_refused') {
    super(`host ${host} is not a public address (or resolves to one that is not)`, code);
  }
}

/**
 * Refuses a URL whose host is or resolves (now) to a refused address; at creation time.
 * The codes are `<what>_refused` and `<what>_unresolvable` (e.g. `webhook_url_refused`).
 */
export async function assertPublicUrl(url: string, what: string): Promise<void> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host)
    ? [host]
    : await dnsLookupAll(host, { all: true }).then(
        (list) => list.map((a) => a.address),
        () => {
          throw new InvalidRequestError(`host ${host} does not resolve`, `${what}_unresolvable`);
        },
      );
  if (addresses.some(isRefusedAddress)) throw new AddressRefusedError(host, `${what}_refused`);
}

/**
 * A `lookup` for http(s).request and undici that refuses private answers: the address
 * checked is the one connected to, so a DNS answer that changes between check and connect
 * (DNS rebinding) cannot slip through. IP-literal hosts skip lookups: check them with isRefusedAddress.
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, options, (err, address, family) => {
    if (err) return callback(err, address, family);
    const list = Array.isArray(address) ? address.map((a: { address: string }) => a.address) : [address];
    if (list.some(isRefusedAddress)) return callback(new AddressRefusedError(hostname), address, family);
    callback(null, address, family);
  });
};
