import { startApi } from '@rein/api';
import { startApprover } from '@rein/approver';
import {
  type ApprovalFeedEvent,
  approvalLoadSchema,
  approvalViewSchema,
  compensationViewSchema,
  runTraceSchema,
  runViewSchema,
  typedRunEventSchema,
} from '@rein/contract';
import type { RunningService } from '@rein/core';
import { loadConfig } from '@rein/core/internal';
import { freePort, startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import { createScriptedModelServer } from '@rein/scripted-model';
import { startWorker } from '@rein/worker';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReinApiError, ReinClient, ReinNetworkError, type RunEvent, type StreamedEvent } from '../src/index.js';

const USER = { key: 'client-test-user-key', tenantId: 'acme', userId: 'alice', roles: ['user'] };
const APPROVER = { key: 'client-test-approver-key', tenantId: 'acme', userId: 'bob', roles: ['approver'] };
const ADMIN = { key: 'client-test-admin-key', tenantId: 'acme', userId: 'root', roles: ['admin'] };
const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';

let redis: TestRedis;
let model: FastifyInstance;
const services: Array<RunningService & { http?: FastifyInstance }> = [];
let apiUrl: string;
let approverUrl: string;
/** Every stream connection the clients opened, with the Last-Event-ID it sent. */
const connections: Array<{ url: string; lastEventId: string | null }> = [];
const tracking: typeof fetch = (input, init) => {
  if (String(input).includes('/events'))
    connections.push({ url: String(input), lastEventId: new Headers(init?.headers).get('last-event-id') });
  return fetch(input, init);
};
const clientFor = (who: { key: string }) =>
  new ReinClient({ apiUrl, approverUrl, apiKey: who.key, fetch: tracking, reconnect: { retryDelayMs: 20 } });

beforeAll(async () => {
  redis = await startTestRedis();
  model = createScriptedModelServer();
  const modelUrl = await model.listen({ port: 0, host: '127.0.0.1' });
  const [apiPort, approverPort, metricsPort] = await Promise.all([freePort(), freePort(), freePort()]);
  const config = loadConfig({
    REDIS_URL: redis.url,
    OPENAI_BASE_URL: `${modelUrl}/v1`,
    REIN_API_KEYS: JSON.stringify([USER, APPROVER, ADMIN]),
    API_PORT: String(apiPort),
    APPROVER_PORT: String(approverPort),
    WORKER_METRICS_PORT: String(metricsPort),
    REIN_BIND_HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    REIN_WEBHOOK_ALLOW_PRIVATE: 'true',
  });
  services.push(await startApi(orderApp, { config, handleSignals: false }));
  services.push(await startApprover(orderApp, { config, handleSignals: false }));
  services.push(await startWorker(orderApp, { config, handleSignals: false }));
  apiUrl = `http://127.0.0.1:${apiPort}`;
  approverUrl = `http://127.0.0.1:${approverPort}`;
});
afterAll(async () => {
  for (const s of services.reverse()) await s.close();
  await model.close();
  await redis.stop();
});

const user = () => clientFor(USER);
const approver = () => clientFor(APPROVER);

async function collect<T>(events: AsyncIterable<StreamedEvent<T>>): Promise<Array<StreamedEvent<T>>> {
  const out: Array<StreamedEvent<T>> = [];
  for await (const e of events) out.push(e);
  return out;
}

describe('@rein/client against a real api, approver and worker', () => {
  it('creates, waits for and reads a run; answers match the schemas the OpenAPI document is generated from', async () => {
    const created = await user().runs.create({ input: 'What is your return policy?' }, { idempotencyKey: 'client-test-1' });
    expect(created.status).toBe('queued');
    // Parsing strips undocumented fields: equality means the answer has none.
    expect(runViewSchema.parse(created)).toEqual(created);
    expect((await user().runs.create({ input: 'What is your return policy?' }, { idempotencyKey: 'client-test-1' })).id).toBe(created.id);
    const done = await user().runs.wait(created.id, { timeoutMs: 30_000 });
    expect(done.status).toBe('succeeded');
    expect(done.finalAnswer).toBeTruthy();
    const trace = await user().runs.trace(created.id);
    expect(runTraceSchema.parse(trace)).toEqual(trace);
    const listed = await user().runs.list({ status: 'succeeded', limit: 10 });
    expect(listed.runs.map((r) => r.id)).toContain(created.id);
  });

  it('throws ReinApiError with the stable code and status', async () => {
    const missing = await user()
      .runs.get('no-such-run')
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ReinApiError);
    expect(missing).toMatchObject({ status: 404, code: 'not_found' });
    await expect(user().runs.create({ input: '' })).rejects.toMatchObject({ status: 400, code: 'invalid_request' });
    await expect(user().webhooks.list()).rejects.toMatchObject({ status: 403, code: 'forbidden' });
    await expect(new ReinClient({ apiUrl, apiKey: 'wrong-key-0000' }).me()).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
  });

  it('throws ReinNetworkError naming the URL when nothing answers there', async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const client = new ReinClient({ apiUrl: nowhere, apiKey: USER.key, reconnect: { retryDelayMs: 1, maxRetries: 1 } });
    const err = await client.runs.get('r-1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReinNetworkError);
    expect(err).toMatchObject({ code: 'network_error', url: `${nowhere}/v1/runs/r-1` });
    expect((err as Error).message).toContain(nowhere);
    await expect(collect(client.runs.stream('r-1'))).rejects.toBeInstanceOf(ReinNetworkError);
  });

  it('waits until a run parks, approves it with the client, and the approval feed tells of both', async () => {
    const feedStop = new AbortController();
    const feed: ApprovalFeedEvent[] = [];
    const following = (async () => {
      for await (const { event } of approver().approvals.stream({ signal: feedStop.signal })) {
        feed.push(event);
        if (event.type === 'approval.decided') feedStop.abort();
      }
    })();
    const run = await user().runs.create({ input: LATE_ORDER });
    // Waiting for the end only: the park is not it.
    await expect(user().runs.wait(run.id, { until: 'finished', timeoutMs: 1_000 })).rejects.toMatchObject({ code: 'wait_timeout' });
    const parked = await user().runs.wait(run.id, { timeoutMs: 30_000 });
    expect(parked.status).toBe('pending_approval');
    const approvalId = parked.pendingApprovals[0]?.id ?? '';
    const pending = await approver().approvals.list({ status: 'pending' });
    expect(pending.approvals.map((a) => a.id)).toContain(approvalId);
    const approval = await approver().approvals.get(approvalId);
    expect(approvalViewSchema.parse(approval)).toEqual(approval);
    expect((await approver().approvals.approve(approvalId, { comment: 'ok' })).status).toBe('approved');
    await expect(approver().approvals.reject(approvalId, 'late')).rejects.toMatchObject({ status: 409, code: 'approval_decided' });
    await following;
    expect(feed.map((e) => e.type)).toEqual(expect.arrayContaining(['approval.requested', 'approval.decided']));
    // Right after the decision the run may still read pending_approval (not yet resumed): a park
    // with nothing left to decide is not what `wait` returns, so it waits on to the end.
    expect((await user().runs.wait(run.id, { timeoutMs: 30_000 })).status).toBe('succeeded');
    // The approval load counts the decision (as its schema says), by its approver; a plain user is refused it.
    const load = approvalLoadSchema.parse(await approver().approvals.load({ hours: 1 }));
    expect(load.decided).toBeGreaterThanOrEqual(1);
    expect(load.deciders.map((d) => d.userId)).toContain('bob');
    await expect(user().approvals.load()).rejects.toMatchObject({ status: 403, code: 'forbidden' });
    const events = (await collect(user().runs.stream(run.id))).map((e) => e.event);
    expect(events.at(-1)?.type).toBe('run.finished');
    expect((await user().runs.get(run.id)).status).toBe('succeeded');
    // Every payload has the fields its type promises; narrowing on `type` types `data`.
    for (const e of events) expect(typedRunEventSchema.safeParse(e).error, e.type).toBeUndefined();
    const observations = events.flatMap((e: RunEvent) => (e.type === 'tool.result' ? [e.data.observation] : []));
    expect(observations.length).toBeGreaterThan(0);
    const decided = events.find((e) => e.type === 'approval.decided');
    expect(decided?.type === 'approval.decided' && decided.data.status).toBe('approved');
    // The approver undoes the finished run's ticket through the client.
    const compensation = await approver().runs.compensate(run.id);
    expect(compensationViewSchema.parse(compensation)).toEqual(compensation);
    expect(compensation.steps.length).toBeGreaterThan(0);
  });

  it('resumes a run stream killed mid-way with Last-Event-ID: no event lost, none repeated', async () => {
    const client = user();
    const run = await client.runs.create({ input: LATE_ORDER });
    const api = services[0]?.http?.server;
    const seen: Array<StreamedEvent<RunEvent>> = [];
    const opened = connections.length;
    let killed = false;
    for await (const e of client.runs.stream(run.id)) {
      seen.push(e);
      if (e.event.type === 'approval.requested' && !killed) {
        killed = true;
        api?.closeAllConnections(); // the server drops the stream under the client's feet
        const approvalId = String(e.event.data.approvalId ?? (await client.runs.get(run.id)).pendingApprovals[0]?.id);
        await approver().approvals.approve(approvalId);
      }
    }
    expect(killed).toBe(true);
    const mine = connections.slice(opened).filter((c) => c.url.includes(run.id));
    expect(mine.length).toBeGreaterThanOrEqual(2);
    // It came back after the last event it had seen (those the socket delivered before it died).
    expect(seen.map((e) => e.id)).toContain(mine[1]?.lastEventId);
    // A fresh read from the start is the reference: the same events, in order, once each.
    const reference = await collect(client.runs.stream(run.id));
    expect(seen.map((e) => e.id)).toEqual(reference.map((e) => e.id));
    expect(new Set(seen.map((e) => e.id)).size).toBe(seen.length);
    expect(seen.at(-1)?.event.type).toBe('run.finished');
  });

  it('manages webhooks (admins) and returns the secret only on creation', async () => {
    const admin = clientFor(ADMIN);
    const hook = await admin.webhooks.create({ url: 'http://127.0.0.1:9/rein', events: ['run.finished'] });
    expect(hook.secret).toMatch(/^whsec_/);
    const listed = await admin.webhooks.list();
    expect(listed.map((h) => h.id)).toEqual([hook.id]);
    expect(listed[0]).not.toHaveProperty('secret');
    await admin.webhooks.delete(hook.id);
    expect(await admin.webhooks.list()).toEqual([]);
  });
});
