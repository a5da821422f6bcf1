import { lookup as dnsLookup } from 'node:dns';
import { lookup as dnsLookupAll } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { InvalidRequestError } from '../errors.js';

/** Loopback, private, link-local (cloud metadata lives there), shared, multicast and reserved ranges. */
const refused = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const)
  refused.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 127],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  refused.addSubnet(net, prefix, 'ipv6');

/** `::ffff:7f00:1` or `::ffff:127.0.0.1` → `127.0.0.1`: an IPv4 address in IPv6 clothing is judged as IPv4. */
function unmapped(address: string): string {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (dotted) return dotted;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return address;
  const [hi, lo] = [Number.parseInt(hex[1] as string, 16), Number.parseInt(hex[2] as string, 16)];
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/** Whether a webhook may not reach this IP address. */
export function isRefusedAddress(address: string): boolean {
  const ip = unmapped(address.replace(/^\[|\]$/g, ''));
  const family = isIP(ip);
  if (family === 0) return true;
  return refused.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

/** A webhook URL whose host is, or resolves to, a refused address (SSRF). */
export class WebhookUrlRefusedError extends InvalidRequestError {
  constructor(host: string, address: string) {
    super(`webhook host ${host} resolves to ${address}, a loopback, private or link-local address`, 'webhook_url_refused');
  }
}

/** Refuses a URL whose host is or resolves (now) to a refused address; at creation time. */
export async function assertPublicUrl(url: string): Promise<void> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host)
    ? [host]
    : await dnsLookupAll(host, { all: true }).then(
        (list) => list.map((a) => a.address),
        () => {
          throw new InvalidRequestError(`webhook host ${host} does not resolve`, 'webhook_url_unresolvable');
        },
      );
  const bad = addresses.find(isRefusedAddress);
  if (bad) throw new WebhookUrlRefusedError(host, bad);
}

/**
 * A `lookup` for http(s).request that refuses private answers: the address checked is
 * the one connected to, so a DNS answer that changes between check and connect (DNS
 * rebinding) cannot slip through. IP-literal hosts skip lookups: check them with isRefusedAddress.
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, options, (err, address, family) => {
    if (err) return callback(err, address, family);
    const list = Array.isArray(address) ? address.map((a: { address: string }) => a.address) : [address];
    const bad = list.find(isRefusedAddress);
    if (bad) return callback(new WebhookUrlRefusedError(hostname, bad), address, family);
    callback(null, address, family);
  });
};
