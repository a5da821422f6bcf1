import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort, startTestRedis, type TestRedis } from '@rein/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The example as a user would run it: a plain Node module beside the apps.
import { startBridge } from '../../docs/approval-links/bridge.mjs';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';

const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';
const CONSOLE = 'https://approvals.example.test';

interface ChatPost {
  text: string;
  approvalId: string;
  links: Array<{ userId: string; approveUrl: string; rejectUrl: string }>;
}

/** A chat's incoming webhook, stood in for: it keeps what it was sent. */
function startChat() {
  const got: ChatPost[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      got.push(JSON.parse(body));
      res.writeHead(200).end();
    });
  });
  return new Promise<{ url: string; got: ChatPost[]; close: () => void }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/chat`, got, close: () => server.close() }),
    ),
  );
}

let redis: TestRedis;
let fleet: Fleet;
beforeAll(async () => {
  redis = await startTestRedis();
  fleet = await startFleet({
    redisUrl: redis.url,
    env: { REIN_WEBHOOK_ALLOW_PRIVATE: 'true', REIN_WEBHOOK_RETRY_BASE_MS: '300', REIN_CONSOLE_URL: `${CONSOLE}/` },
  });
});
afterAll(async () => {
  await fleet?.stop();
  await redis?.stop();
});

describe('the approval chat bridge (docs/approval-links)', () => {
  it('verifies the webhook, mints links per approver and posts them with the console URL; a link decides', async () => {
    const chat = await startChat();
    const admin = fleet.client(KEYS.admin.key);
    // The webhook's secret comes with its creation: its address is reserved first, the bridge started on it after.
    const [port, wrongPort] = [await freePort(), await freePort()];
    const hook = await admin.webhooks.create({ url: `http://127.0.0.1:${port}/rein`, events: ['approval.requested'] });
    const wrong = await admin.webhooks.create({ url: `http://127.0.0.1:${wrongPort}/rein`, events: ['approval.requested'] });
    const common = { approverUrl: fleet.approver, adminKey: KEYS.admin.key, chatUrl: chat.url };
    // A ticket's approval may be decided by an approver, or by its requester as proposed: both get links.
    const bridge = await startBridge({ ...common, secret: hook.secret, approvers: [KEYS.approver.userId, KEYS.user.userId], port });
    // A receiver holding another secret: every delivery to it must fail the signature check.
    const forged = await startBridge({
      ...common,
      secret: hook.secret.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
      approvers: [],
      port: wrongPort,
    });
    try {
      const run = await fleet.client().runs.create({ input: LATE_ORDER });
      await fleet.waitForRun(run.id, (r) => r.status === 'pending_approval');
      const end = Date.now() + 45_000;
      while (chat.got.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
      const [post] = chat.got as [ChatPost];
      const { approvals } = await fleet.client(KEYS.approver.key).approvals.list({ status: 'pending' });
      expect(post.approvalId).toBe(approvals.find((a) => a.runId === run.id)?.id);
      expect(post.text).toContain(`Console: ${CONSOLE}/console?approval=${encodeURIComponent(post.approvalId)}`);
      expect(post.links.map((l) => l.userId)).toEqual([KEYS.approver.userId, KEYS.user.userId]);
      const [link] = post.links as [ChatPost['links'][number]];
      // Links name the configured public URL; the proxy there would forward to this approver.
      expect(link.approveUrl.startsWith(`${CONSOLE}/links?token=`)).toBe(true);
      const approveUrl = link.approveUrl.replace(CONSOLE, fleet.approver);
      // GET only shows the confirmation page; POST decides, as that approver.
      expect((await fetch(approveUrl)).status).toBe(200);
      expect((await fleet.client(KEYS.approver.key).approvals.get(post.approvalId)).status).toBe('pending');
      expect((await fetch(approveUrl, { method: 'POST' })).status).toBe(200);
      expect(await fleet.client(KEYS.approver.key).approvals.get(post.approvalId)).toMatchObject({
        status: 'approved',
        decidedBy: KEYS.approver.userId,
      });
      await fleet.waitForRun(run.id, (r) => r.status === 'succeeded');
      // The receiver with the wrong secret refused the delivery, and posted nothing.
      const { attempts } = await admin.webhooks.deliveries(wrong.id);
      expect(attempts[0]).toMatchObject({ type: 'approval.requested', status: 401 });
      expect(chat.got).toHaveLength(1);
    } finally {
      bridge.close();
      forged.close();
      chat.close();
    }
  }, 120_000);
});
