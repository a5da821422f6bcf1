import { createHmac } from 'node:crypto';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBridge } from '../../docs/approval-links/bridge.mjs';

const SECRET = `whsec_${Buffer.from('a bridge test secret, 32 bytes!!').toString('base64')}`;

/** Signs a delivery as Rein does (Standard Webhooks: HMAC-SHA256 of `id.timestamp.body`). */
function signed(id: string, body: string) {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const key = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` };
}

function serve(handler: RequestListener) {
  const server = createServer(handler);
  return new Promise<{ url: string; close: () => void }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() }),
    ),
  );
}

/** Stand-ins for the approver service (links minted) and the chat (messages posted): each counts what it got. */
const counts = { minted: 0, posted: 0 };
let approver: { url: string; close: () => void };
let chat: { url: string; close: () => void };
beforeAll(async () => {
  approver = await serve((req, res) => {
    req.resume().on('end', () => {
      counts.minted++;
      res
        .writeHead(201, { 'content-type': 'application/json' })
        .end(JSON.stringify({ approveUrl: 'https://a/approve', rejectUrl: 'https://a/reject' }));
    });
  });
  chat = await serve((req, res) => {
    req.resume().on('end', () => {
      counts.posted++;
      res.writeHead(200).end();
    });
  });
});
afterAll(() => {
  approver?.close();
  chat?.close();
});

describe('the approval chat bridge (docs/approval-links) against a replayed delivery', () => {
  it('mints and posts once for one webhook-id: the same signed delivery sent again is answered, not posted again', async () => {
    const bridge = await startBridge({ secret: SECRET, approverUrl: approver.url, adminKey: 'k', approvers: ['lisi'], chatUrl: chat.url });
    try {
      const body = JSON.stringify({
        type: 'approval.requested',
        timestamp: new Date().toISOString(),
        data: { approvalId: 'run-1.0.0', runId: 'run-1' },
      });
      const headers = signed('msg_replayed', body);
      const first = await fetch(`${bridge.url}/rein`, { method: 'POST', headers, body });
      const again = await fetch(`${bridge.url}/rein`, { method: 'POST', headers, body });
      expect([first.status, again.status]).toEqual([204, 204]);
      expect(counts).toEqual({ minted: 1, posted: 1 });
    } finally {
      bridge.close();
    }
  });
});
