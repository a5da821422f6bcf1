import { describe, expect, it } from 'vitest';
import { isRefusedAddress } from '../src/webhooks/address-guard.js';
import { WEBHOOK_ATTEMPTS, webhookRetryDelayMs } from '../src/webhooks/webhook-dispatcher.js';

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

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('allows %s', (address) => {
    expect(isRefusedAddress(address)).toBe(false);
  });
});

describe('webhook retry schedule', () => {
  it('keeps retrying a failing endpoint for more than 24 hours, with growing delays', () => {
    const delays = Array.from({ length: WEBHOOK_ATTEMPTS - 1 }, (_, i) => webhookRetryDelayMs(i + 1, 5_000));
    expect(delays.reduce((a, b) => a + b, 0)).toBeGreaterThan(24 * 3600_000);
    expect(delays[0]).toBe(5_000);
    for (let i = 1; i < delays.length; i++) expect(delays[i]).toBeGreaterThanOrEqual(delays[i - 1] ?? 0);
  });
});
