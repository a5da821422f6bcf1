import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, LocalRedis, waitForPort } from '@rein/core/testing';
import { afterAll, describe, expect, it } from 'vitest';

const rein = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'packages', 'cli', 'bin', 'rein.mjs');
const KEYS = JSON.stringify([{ key: 'redis-outage-test-key', tenantId: 't', userId: 'u', roles: ['user'] }]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Service {
  child: ChildProcess;
  stdout: string[];
  stderr: string;
}

const started: ChildProcess[] = [];
function start(command: string, env: Record<string, string>): Service {
  const child = spawn(process.execPath, [rein, command], {
    env: { ...process.env, REIN_API_KEYS: KEYS, REIN_BIND_HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  const service: Service = { child, stdout: [], stderr: '' };
  let partial = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    service.stdout.push(...lines.filter(Boolean));
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    service.stderr += chunk.toString();
  });
  return service;
}
const exited = (child: ChildProcess) =>
  new Promise<number | null>((r) =>
    child.exitCode !== null || child.signalCode !== null ? r(child.exitCode) : child.once('exit', (code) => r(code)),
  );
/** SIGTERM to every service started, while Redis still runs (a graceful close needs it). */
async function stopAll() {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await Promise.all(started.map(exited));
}

afterAll(stopAll);

describe('Redis away, as the operator reads it', () => {
  it('at start: one line naming Redis and REDIS_URL, exit 1', async () => {
    const port = await freePort(); // nothing listens there
    const api = start('api', { REDIS_URL: `redis://rein:s3cret@127.0.0.1:${port}`, API_PORT: String(await freePort()) });
    expect(await exited(api.child)).toBe(1);
    expect(api.stderr.trim()).toBe(
      `rein: Redis at redis://127.0.0.1:${port} (REDIS_URL) is not reachable: connect ECONNREFUSED 127.0.0.1:${port}. Start Redis 7 there, or set REDIS_URL to one that runs`,
    );
  });

  it('during an outage: a structured line per connection when it goes and when it is back, nothing outside the JSON log', async () => {
    const redis = await LocalRedis.start();
    try {
      const apiPort = await freePort();
      const env = { REDIS_URL: redis.url, API_PORT: String(apiPort), WORKER_METRICS_PORT: String(await freePort()) };
      const services = { api: start('api', env), worker: start('worker', env) };
      await waitForPort(apiPort, 60_000);
      // Each has said it started (the API's line may come after its port answers).
      await expect.poll(() => services.api.stdout.some((l) => l.includes('Server listening')), { timeout: 60_000 }).toBe(true);
      await expect.poll(() => services.worker.stdout.some((l) => l.includes('worker started')), { timeout: 60_000 }).toBe(true);
      const before = { api: services.api.stdout.length, worker: services.worker.stdout.length };

      await redis.kill();
      // Long enough for thousands of reconnect attempts and failed fetches, as the log used to show.
      await sleep(5_000);
      await redis.start();
      const connections = { api: ['redis', 'queues'], worker: ['redis', 'queues', 'step workers', 'webhook worker'] };
      for (const [name, service] of Object.entries(services) as Array<[keyof typeof services, Service]>) {
        await expect
          .poll(() => connections[name].every((c) => service.stdout.some((l) => l.includes(`"Redis connection \\"${c}\\" is back"`))), {
            timeout: 60_000,
          })
          .toBe(true);
        const outage = service.stdout.slice(before[name]).map((l) => JSON.parse(l) as { redis?: string; msg: string });
        // Every connection: lost, then back (a reminder comes only after 10 s down).
        for (const c of connections[name]) {
          expect(
            outage.filter((l) => l.redis === c).map((l) => l.msg),
            `${name} ${c}`,
          ).toEqual([`Redis connection "${c}" lost: reconnecting with backoff`, `Redis connection "${c}" is back`]);
        }
        expect(
          outage.filter((l) => !l.redis),
          `${name}: ${JSON.stringify(outage)}`,
        ).toEqual([]);
        expect(service.stderr, name).toBe('');
      }
    } finally {
      await stopAll();
      await redis.stop();
    }
  });
});
