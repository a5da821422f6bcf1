import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, expect, it } from 'vitest';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startTestRedis();
});
afterAll(async () => {
  await redis.stop();
});

// The watchdog reads a private field of BullMQ's Worker: an upgrade that renames it fails here.
it("BullMQ's idle worker keeps its pending wait for a job in `waiting` (what the fetch-loop watchdog reads)", async () => {
  const { port, hostname } = new URL(redis.url);
  const worker = new Worker('watchdog-pin', async () => 'done', { connection: { host: hostname, port: Number(port) }, drainDelay: 1 });
  try {
    const waiting = () => (worker as unknown as { waiting: unknown }).waiting;
    while (!waiting()) await new Promise((r) => setTimeout(r, 50));
    expect(waiting()).toBeInstanceOf(Promise);
  } finally {
    await worker.close(true);
  }
});
