import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verifyWebhook } from '../src/verify-webhook.js';

const secret = `whsec_${Buffer.from('a secret of thirty-two bytes!!!!').toString('base64')}`;
const body = JSON.stringify({ type: 'run.finished', timestamp: '2026-01-01T00:00:00.000Z', data: { runId: 'r1', status: 'succeeded' } });

function signed(raw: string) {
  const id = 'msg_1';
  const at = new Date();
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, raw),
  };
}

describe('verifyWebhook', () => {
  it('takes the raw body as a string, as a Node Buffer and as plain bytes (what a browser has)', () => {
    const headers = signed(body);
    const bytes = new TextEncoder().encode(body);
    expect(bytes).not.toBeInstanceOf(Buffer);
    for (const raw of [body, Buffer.from(body), bytes]) expect(verifyWebhook(secret, raw, headers)).toEqual(JSON.parse(body));
  });

  it('throws for a forged body or another secret', () => {
    const headers = signed(body);
    expect(() => verifyWebhook(secret, body.replace('succeeded', 'failed'), headers)).toThrow();
    expect(() => verifyWebhook(`whsec_${Buffer.from('another secret, thirty-two bytes').toString('base64')}`, body, headers)).toThrow();
  });
});
