// A chat bridge for Rein's approvals: receives `approval.requested` (and
// `approval.escalated`) webhooks, checks their Standard Webhooks signature, mints a pair of
// one-click links per approver (`POST /v1/approvals/:id/links {userId}`, as a tenant admin)
// and posts them, with the approval's console URL, to a chat's incoming webhook.
//
//   BRIDGE_SECRET=whsec_...            the webhook's secret (the 201 of POST /v1/webhooks)
//   BRIDGE_APPROVER_URL=https://...    Rein's approver service
//   BRIDGE_ADMIN_KEY=...               a tenant admin's API key (mints links for others)
//   BRIDGE_APPROVERS=lisi,zhaoliu      who is asked (each must be able to decide)
//   BRIDGE_CHAT_URL=https://...        the chat's incoming webhook (receives {text, approvalId, links})
//   BRIDGE_PORT=8090                   node docs/approval-links/bridge.mjs
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import { verifyWebhook } from '@rein/contract';

/** The chat message for one approval: what is asked, where to see it, and each approver's links. */
export function chatMessage(data, links) {
  const lines = [`Approval ${data.approvalId} (run ${data.runId}) is waiting.`];
  if (data.consoleUrl) lines.push(`Console: ${data.consoleUrl}`);
  for (const { userId, approveUrl, rejectUrl } of links) lines.push(`${userId}: approve ${approveUrl} · reject ${rejectUrl}`);
  return { text: lines.join('\n'), approvalId: data.approvalId, links };
}

/**
 * Starts the bridge; resolves to `{url, close}`. A delivery with a bad signature gets 401
 * (Rein retries only 5xx and timeouts, so a wrong secret shows in its delivery log); one
 * that fails downstream gets 502, so that Rein delivers it again (same `webhook-id`).
 */
export function startBridge({ secret, approverUrl, adminKey, approvers, chatUrl, port = 0, host = '127.0.0.1' }) {
  const mint = async (approvalId, userId) => {
    const res = await fetch(`${approverUrl}/v1/approvals/${encodeURIComponent(approvalId)}/links`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ userId }),
    });
    // 403: this user may not decide it (their role, or it is their own run): they are not asked.
    // 400: a question (kind `input`), answered in the console only: its message names the console.
    if (res.status === 403 || res.status === 400) return null;
    if (!res.ok) throw new Error(`minting links for ${userId}: ${res.status} ${await res.text()}`);
    return { userId, ...(await res.json()) };
  };

  // Deliveries taken, by `webhook-id`: a signed one replayed within the signature's 5 minutes
  // is answered 204 without minting or posting again; one that failed (502) is let in again.
  const taken = new Set();

  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      let event;
      try {
        event = verifyWebhook(secret, Buffer.concat(chunks), req.headers);
      } catch {
        res.writeHead(401).end();
        return;
      }
      const id = req.headers['webhook-id'];
      if (taken.has(id)) {
        res.writeHead(204).end();
        return;
      }
      taken.add(id);
      if (taken.size > 10_000) taken.delete(taken.values().next().value); // bounded memory: the oldest goes first
      try {
        if (event.type === 'approval.requested' || event.type === 'approval.escalated') {
          const links = (await Promise.all(approvers.map((u) => mint(event.data.approvalId, u)))).filter(Boolean);
          const posted = await fetch(chatUrl, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(chatMessage(event.data, links)),
          });
          if (!posted.ok) throw new Error(`chat answered ${posted.status}`);
        }
        res.writeHead(204).end();
      } catch (err) {
        taken.delete(id);
        res.writeHead(502, { 'content-type': 'text/plain' }).end(String(err.message));
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(port, host, () => resolve({ url: `http://${host}:${server.address().port}`, close: () => server.close() })),
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const env = process.env;
  const bridge = await startBridge({
    secret: env.BRIDGE_SECRET,
    approverUrl: env.BRIDGE_APPROVER_URL,
    adminKey: env.BRIDGE_ADMIN_KEY,
    approvers: (env.BRIDGE_APPROVERS ?? '').split(',').filter(Boolean),
    chatUrl: env.BRIDGE_CHAT_URL,
    port: Number(env.BRIDGE_PORT ?? 8090),
    host: env.BRIDGE_HOST ?? '0.0.0.0',
  });
  console.log(`approval bridge listening on ${bridge.url}`);
}
