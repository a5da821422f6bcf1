import type { RunRecord } from '@rein/contract';
import type { AgentProfile } from '@rein/define/internal';
import { defineTool } from '@rein/define/internal';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RedisEffectLedger } from '../src/adapters/redis/effect-ledger.js';
import { checkRedisSettings } from '../src/adapters/redis/redis.js';
import { Bulkhead } from '../src/adapters/resilience/bulkhead.js';
import { CircuitBreakers, type FleetBreakerState } from '../src/adapters/resilience/circuit-breakers.js';
import { FleetLimit } from '../src/adapters/resilience/fleet-limit.js';
import { createResilientModelGateway } from '../src/adapters/resilience/resilient-model.js';
import { planCalls } from '../src/policy/step/call-plan.js';
import { BreakerOpenError, BulkheadFullError } from '../src/shared/errors.js';
import { breakerKeys } from '../src/shared/keys.js';
import { createMetrics } from '../src/shared/metrics.js';
import { createToolExecutor } from '../src/step/tool-executor.js';
import { LocalRedis, startTestRedis, type TestRedis } from '../src/testing/index.js';

let server: TestRedis;
let redis: Redis;
beforeAll(async () => {
  server = await startTestRedis();
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
});
beforeEach(async () => {
  await redis.flushdb();
});

const logger = pino({ level: 'silent' });
const options = {
  errorThresholdPercentage: 50,
  resetTimeoutMs: 300,
  volumeThreshold: 2,
  rollingCountTimeoutMs: 10_000,
  probeTimeoutMs: 5_000,
  fleetWorkers: 2,
};
/** Two workers' breaker registries over the same Redis. */
const twoWorkers = () =>
  [
    new CircuitBreakers(redis, options, logger, createMetrics('a')),
    new CircuitBreakers(redis, options, logger, createMetrics('b')),
  ] as const;
const failing = async () => {
  throw new Error('503 from the provider');
};
const until = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 200 && !(await check()); i++) await new Promise((r) => setTimeout(r, 20));
};

describe('circuit breakers shared by the fleet', () => {
  it("opens for the fleet once two workers' breakers opened; one worker's failures stop that worker only", async () => {
    const [a, b] = twoWorkers();
    const c = new CircuitBreakers(redis, options, logger, createMetrics('c'));
    let called = 0;
    const answer = async () => {
      called++;
      return 'ok';
    };
    // Worker a's path to the model is broken: its breaker opens, and it reports so.
    await a.call('model:m', failing).catch(() => {});
    await a.call('model:m', failing).catch(() => {});
    await until(async () => (await redis.zcard(breakerKeys('model:m').reporters)) === 1);
    expect(await a.isOpen('model:m')).toBe(false);
    await expect(a.call('model:m', answer)).rejects.toBeInstanceOf(BreakerOpenError);
    expect(called).toBe(0);
    // The others still call the model, and their calls succeed.
    expect(await b.call('model:m', answer)).toBe('ok');
    expect(await c.call('model:m', answer)).toBe('ok');
    expect(called).toBe(2);
    // A second worker's breaker opens within the window: now the fleet's does, and c stops without calling.
    for (let i = 0; i < 3; i++) await b.call('model:m', failing).catch(() => {});
    await until(() => c.isOpen('model:m'));
    await expect(c.call('model:m', answer)).rejects.toBeInstanceOf(BreakerOpenError);
    expect(called).toBe(2);
    for (const w of [a, b, c]) w.shutdown();
  });

  it('lets exactly one probe through after the reset, and its success closes the breaker for all', async () => {
    const [a, b] = twoWorkers();
    for (const w of [a, b]) {
      await w.call('model:m', failing).catch(() => {});
      await w.call('model:m', failing).catch(() => {});
    }
    await until(() => a.isOpen('model:m'));
    await until(async () => !(await a.isOpen('model:m')));
    let probes = 0;
    let release: () => void = () => {};
    const slow = () =>
      new Promise<string>((resolve) => {
        probes++;
        release = () => resolve('ok');
      });
    const settled = Promise.allSettled([a, b, a, b].map((w) => w.call('model:m', slow)));
    await until(async () => probes > 0);
    release();
    const results = await settled;
    expect(probes).toBe(1);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(
      results.filter((r) => r.status === 'rejected').every((r) => (r as PromiseRejectedResult).reason instanceof BreakerOpenError),
    ).toBe(true);
    const c = new CircuitBreakers(redis, options, logger, createMetrics('c'));
    expect(await c.call('model:m', async () => 'closed again')).toBe('closed again');
    for (const w of [a, b, c]) w.shutdown();
  });

  it('does not count failures that say nothing about the dependency (non-retryable 4xx)', async () => {
    const [a] = twoWorkers();
    const { ReinError } = await import('../src/shared/errors.js');
    const badRequest = async () => {
      throw new ReinError('model_rejected', '400 bad request');
    };
    for (let i = 0; i < 5; i++) await a.call('model:m', badRequest).catch(() => {});
    expect(await a.isOpen('model:m')).toBe(false);
    a.shutdown();
  });
});

describe('bulkheads', () => {
  it('bounds concurrency in a process and refuses after the bounded wait', async () => {
    const bulkhead = new Bulkhead('tool:x', 2, 50);
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const running = [bulkhead.run(() => held), bulkhead.run(() => held)];
    expect(bulkhead.inFlight).toBe(2);
    await expect(bulkhead.run(async () => 'third')).rejects.toBeInstanceOf(BulkheadFullError);
    release();
    await Promise.all(running);
    expect(await bulkhead.run(async () => 'now fits')).toBe('now fits');
  });

  it("holds a fleet-wide limit across workers, and a dead holder's lease expires", async () => {
    const [one, two] = [new FleetLimit(redis), new FleetLimit(redis)];
    let release: () => void = () => {};
    const held = one.run('model:m', 1, 60_000, () => new Promise<void>((r) => (release = r)));
    await expect(two.run('model:m', 1, 60_000, async () => 'x')).rejects.toMatchObject({ code: 'bulkhead_full', scope: 'fleet' });
    release();
    await held;
    // A worker that dies holding a lease: its lease simply runs out.
    await redis.zadd('rein:limit:{model:m}', Date.now() + 100, 'dead-worker-lease');
    await expect(two.run('model:m', 1, 60_000, async () => 'x')).rejects.toBeInstanceOf(BulkheadFullError);
    await new Promise((r) => setTimeout(r, 150));
    expect(await two.run('model:m', 1, 60_000, async () => 'after expiry')).toBe('after expiry');
  });

  it("hands the dependency's fleet breaker state to the call it leases for, read in the same round trip", async () => {
    const limit = new FleetLimit(redis);
    expect(await limit.run('model:b', 1, 60_000, async (state) => state)).toEqual([null, null]);
    await redis.set('rein:breaker:{model:b}:tripped', '1');
    await redis.set('rein:breaker:{model:b}:open', '1', 'PX', 60_000);
    expect(await limit.run('model:b', 1, 60_000, async (state) => state)).toEqual(['1', '1']);
  });
});

describe('Redis settings check', () => {
  it('warns about eviction and missing AOF, and is quiet when Redis is set up for Rein', async () => {
    const plain = await LocalRedis.start({ appendOnly: false });
    const durable = await LocalRedis.start({ appendOnly: true });
    const a = new Redis(plain.url);
    const b = new Redis(durable.url);
    await a.config('SET', 'maxmemory-policy', 'allkeys-lru');
    const problems = await checkRedisSettings(a, logger);
    expect(problems).toEqual([expect.stringContaining('noeviction'), expect.stringContaining('appendonly is off')]);
    expect(await checkRedisSettings(b, logger)).toEqual([]);
    a.disconnect();
    b.disconnect();
    await plain.stop();
    await durable.stop();
  });
});

describe('the model gateway', () => {
  it("calls an agent's own models in order instead of the configured ones", async () => {
    const [breakers] = twoWorkers();
    const called: string[] = [];
    const gateway = createResilientModelGateway(
      ['configured'],
      async (model) => {
        called.push(model);
        if (model === 'own-primary') throw new BreakerOpenError('model:own-primary', 10);
        return { model, content: 'ok', toolCalls: [], usage: { promptTokens: 1, completionTokens: 1 } };
      },
      {
        breakers,
        fleetLimit: new FleetLimit(redis),
        metrics: createMetrics('g'),
        processConcurrency: 2,
        maxWaitMs: 100,
        fleetConcurrency: 2,
      },
    );
    const request = { messages: [], tools: [], maxTokens: 10, timeoutMs: 1000 };
    expect((await gateway.complete({ ...request, models: ['own-primary', 'own-fallback'] })).model).toBe('own-fallback');
    expect((await gateway.complete(request)).model).toBe('configured');
    expect(called).toEqual(['own-primary', 'own-fallback', 'configured']);
  });
});

describe("a tool call cut by its run's deadline", () => {
  it("is the model's observation, and does not count against the tool's breaker", async () => {
    let ran = 0;
    const tool = defineTool({
      name: 'slow',
      description: 'answers when its signal says stop',
      kind: 'read',
      parameters: z.object({}),
      execute: async (_args, ctx) => {
        ran++;
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        return 'late';
      },
    });
    const [breakers] = twoWorkers();
    const execute = createToolExecutor({
      ledger: new RedisEffectLedger(redis),
      metrics: createMetrics('t'),
      logger,
      toolTimeoutMs: 60_000,
      protection: { breakers, bulkhead: () => new Bulkhead('tool:slow', 4, 100) },
    });
    const profile = { tools: ['slow'] } as unknown as AgentProfile;
    const call = (id: string, msLeft: number) =>
      execute(
        planCalls({
          run: {
            id: 'r-cut',
            tenantId: 't',
            userId: 'u',
            roles: ['user'],
            step: 0,
            deadlineAt: new Date(Date.now() + msLeft).toISOString(),
          } as RunRecord,
          profile,
          tools: new Map([['slow', tool]]),
          calls: [{ id, name: 'slow', arguments: '{}' }],
          approvals: [],
          now: Date.now(),
          approvalTtlMs: 60_000,
        })[0]!,
      );
    // More cuts than the breaker's volume: each one the run's deadline, none the tool's own timeout.
    const records = [];
    for (const id of ['c1', 'c2', 'c3', 'c4']) records.push((await call(id, 30)).record);
    // The breaker stayed closed: the next call runs the tool.
    records.push((await call('c5', 30)).record);
    expect(ran).toBe(5);
    expect(await breakers.isOpen('tool:slow')).toBe(false);
    for (const record of records) {
      expect(record).toMatchObject({ outcome: 'error' });
      expect(JSON.parse(record.observation)).toMatchObject({ error: 'run_deadline', retryable: false });
    }
    breakers.shutdown();
  });
});

describe('a tool call given the breaker state its step already read', () => {
  it('goes by that state: an open breaker stops the call without another read and without running the tool', async () => {
    let ran = 0;
    const tool = defineTool({
      name: 'ping',
      description: 'answers pong',
      kind: 'read',
      parameters: z.object({}),
      execute: async () => {
        ran++;
        return 'pong';
      },
    });
    const [breakers] = twoWorkers();
    const tools = new Map([['ping', tool]]);
    const execute = createToolExecutor({
      ledger: new RedisEffectLedger(redis),
      metrics: createMetrics('t'),
      logger,
      toolTimeoutMs: 1000,
      protection: { breakers, bulkhead: () => new Bulkhead('tool:ping', 4, 100) },
    });
    const run = {
      id: 'r-breaker',
      tenantId: 't',
      userId: 'u',
      roles: ['user'],
      step: 0,
      deadlineAt: new Date(Date.now() + 60_000).toISOString(),
    } as RunRecord;
    const profile = { tools: ['ping'] } as unknown as AgentProfile;
    const call = (id: string, states?: Map<string, FleetBreakerState>) =>
      execute(
        planCalls({
          run,
          profile,
          tools,
          calls: [{ id, name: 'ping', arguments: '{}' }],
          approvals: [],
          now: Date.now(),
          approvalTtlMs: 60_000,
        })[0]!,
        states,
      );
    // Redis says closed; the state read with the journal write says open.
    await expect(call('c1', new Map([['tool:ping', ['1', '1']]]))).rejects.toBeInstanceOf(BreakerOpenError);
    expect(ran).toBe(0);
    // Without one, the call reads the fleet's state itself (closed) and runs.
    expect((await call('c2')).record.outcome).toBe('ok');
    expect(ran).toBe(1);
    breakers.shutdown();
  });
});
