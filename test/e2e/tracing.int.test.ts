import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver, startTestRedis, type TestRedis } from '@rein/core/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';

const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER = `00-${CALLER_TRACE}-00f067aa0ba902b7-01`;

let redis: TestRedis;
let receiver: OtlpReceiver;
let fleet: Fleet | undefined;
beforeAll(async () => {
  redis = await startTestRedis();
  receiver = await startOtlpReceiver();
});
afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
});
afterAll(async () => {
  await receiver.close();
  await redis.stop();
});

async function submit(f: Fleet, headers: Record<string, string> = {}) {
  const res = await fetch(`${f.api}/v1/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEYS.user.key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ input: LATE_ORDER }),
  });
  expect(res.status).toBe(202);
  return (await res.json()) as { id: string; traceId: string };
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('one run, one trace, exported by real processes over OTLP http/protobuf', () => {
  it('joins the caller’s trace and keeps it across two workers and an approval (its decision a span of the approver), with GenAI spans and no contents', async () => {
    fleet = await startFleet({
      redisUrl: redis.url,
      workers: 1,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100', LOG_LEVEL: 'info' },
    });
    const { id, traceId } = await submit(fleet, { traceparent: CALLER });
    expect(traceId).toBe(CALLER_TRACE);
    const parked = await fleet.waitForRun(id, (r) => r.status === 'pending_approval');
    const approvalId = (parked.pendingApprovals as Array<{ id: string }>)[0]?.id as string;

    // The first worker leaves (flushing its spans); a second one takes the resume.
    await fleet.startWorker();
    const first = fleet.workers[0];
    await new Promise((resolve) => {
      first?.once('exit', resolve);
      first?.kill('SIGTERM');
    });
    expect((await fleet.callApprover('POST', `/v1/approvals/${approvalId}/approve`, KEYS.approver.key, {})).status).toBe(200);
    await fleet.waitForRun(id, (r) => r.status === 'succeeded');
    const steps = (await fleet.callApi('GET', `/v1/runs/${id}/trace`)).body.steps as unknown[];

    const of = (name: string) => receiver.spans.filter((s) => s.name === name);
    await until('every step and model call to be exported', () =>
      of('rein.step').some((s) => s.attributes['rein.step.outcome'] === 'finished') &&
      of(`chat rein-scripted`).length >= steps.length &&
      of('rein.approval.decide').length > 0
        ? true
        : undefined,
    );
    expect(receiver.encodings).toContain('protobuf');
    const spans = receiver.spans.filter((s) => s.traceId === CALLER_TRACE);
    expect(spans).toHaveLength(receiver.spans.length); // nothing of this run strayed into another trace

    const [submitSpan] = of('rein.run.submit');
    expect(submitSpan).toMatchObject({
      parentSpanId: '00f067aa0ba902b7',
      attributes: { 'rein.run.id': id },
      resource: { 'service.name': 'rein-api' },
    });
    const stepSpans = of('rein.step');
    expect(new Set(stepSpans.map((s) => s.resource['service.name']))).toEqual(new Set(['rein-worker']));
    expect(new Set(stepSpans.map((s) => s.resource['service.instance.id'])).size).toBe(2); // two workers, one trace
    const resume = stepSpans.find((s) => s.attributes['rein.job'] === 'resume') as ReceivedSpan;
    expect(resume.parentSpanId).toBe(submitSpan?.spanId); // the approver's resume continues the run's context
    const stepIds = new Set(stepSpans.map((s) => s.spanId));

    // The person's decision is a span of the run's trace, exported by the approver: ids, no comment.
    expect(of('rein.approval.decide')).toEqual([
      expect.objectContaining({
        traceId: CALLER_TRACE,
        parentSpanId: submitSpan?.spanId,
        resource: expect.objectContaining({ 'service.name': 'rein-approver' }),
        attributes: {
          'rein.run.id': id,
          'rein.approval.id': approvalId,
          'gen_ai.tool.name': 'create_ticket',
          'rein.approval.decided_by': KEYS.approver.userId,
          'rein.approval.decision': 'approved',
          'rein.approval.edited': false,
        },
      }),
    ]);

    const chats = of('chat rein-scripted');
    expect(chats).toHaveLength(steps.length);
    for (const chat of chats) {
      expect(stepIds.has(chat.parentSpanId)).toBe(true);
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'rein-scripted',
        'gen_ai.response.model': 'rein-scripted',
        'gen_ai.usage.input_tokens': expect.any(Number),
        'gen_ai.usage.output_tokens': expect.any(Number),
        'gen_ai.response.finish_reasons': [expect.stringMatching(/^(stop|tool_calls)$/)],
        'rein.breaker.state': 'closed',
      });
    }

    const tickets = of('execute_tool create_ticket');
    for (const t of tickets) expect(stepIds.has(t.parentSpanId)).toBe(true);
    expect(tickets.map((t) => t.attributes)).toEqual([
      expect.objectContaining({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'create_ticket',
        'gen_ai.tool.call.id': expect.any(String),
        'rein.approval.id': approvalId,
        'rein.approval.decision': 'pending',
        'rein.tool.outcome': 'awaiting_approval',
      }),
      expect.objectContaining({
        'gen_ai.tool.name': 'create_ticket',
        'rein.approval.id': approvalId,
        'rein.approval.decision': 'approved',
        'rein.effect.outcome': 'executed',
        'rein.breaker.state': 'closed',
        'rein.tool.outcome': 'ok',
      }),
    ]);
    expect(of('execute_tool query_order')[0]?.attributes).toMatchObject({ 'rein.effect.outcome': 'executed', 'rein.tool.outcome': 'ok' });

    // No prompt, completion or tool payload left the processes.
    const exported = JSON.stringify(receiver.spans);
    expect(exported).not.toContain('张三');
    expect(exported).not.toMatch(/gen_ai\.(input|output)\.messages|gen_ai\.tool\.call\.(arguments|result)/);

    // Worker log lines of the run carry its trace id, so logs and traces join.
    const lines = fleet.logs
      .filter((l) => l.startsWith('[worker-'))
      .flatMap((l) => l.replace(/^\[worker-\d+\] /, '').split('\n'))
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return [];
        }
      });
    const stepLines = lines.filter((l) => l.runId === id && l.msg === 'model replied');
    expect(stepLines.length).toBe(steps.length);
    for (const l of stepLines) {
      expect(l.trace_id).toBe(CALLER_TRACE);
      expect(stepIds.has(l.span_id as string)).toBe(true);
    }
  });
});

describe('with no OTLP endpoint', () => {
  it('exports nothing, yet every run still has a W3C trace id and joins a caller’s traceparent', async () => {
    const before = receiver.spans.length;
    fleet = await startFleet({ redisUrl: redis.url, workers: 1, env: { OTEL_BSP_SCHEDULE_DELAY: '100', LOG_LEVEL: 'info' } });
    const joined = await submit(fleet, { traceparent: CALLER });
    const fresh = await submit(fleet, { traceparent: 'garbage' });
    expect(joined.traceId).toBe(CALLER_TRACE);
    expect(fresh.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(fresh.traceId).not.toBe(CALLER_TRACE);
    await fleet.waitForRun(fresh.id, (r) => r.status === 'pending_approval');
    const trace = await fleet.callApi('GET', `/v1/runs/${fresh.id}/trace`);
    expect(trace.body.traceId).toBe(fresh.traceId);
    await fleet.stop(); // a clean exit would flush anything batched
    fleet = undefined;
    expect(receiver.spans.length).toBe(before);
  });
});
