import { createFakeModel, freePort } from '@rein/core/testing';
import { describe, expect, it } from 'vitest';
import { workerPerTest } from './worker-harness.js';

const start = workerPerTest();
const TOKEN = 'worker-metrics-test-token';

describe('the worker’s /metrics with REIN_METRICS_TOKEN (issue 24 item 13)', () => {
  it('answers only Bearer <token>; /healthz stays open', async () => {
    const port = await freePort();
    await start({ model: createFakeModel([]), env: { WORKER_METRICS_PORT: String(port), REIN_METRICS_TOKEN: TOKEN } });
    const get = (path: string, authorization?: string) =>
      fetch(`http://127.0.0.1:${port}${path}`, { headers: authorization ? { authorization } : {} });
    for (const authorization of [undefined, 'Bearer wrong-token-of-some-length', `Basic ${TOKEN}`]) {
      const res = await get('/metrics', authorization);
      expect(res.status, String(authorization)).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    }
    const ok = await get('/metrics', `bearer ${TOKEN}`);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('rein_');
    expect((await get('/healthz')).status).toBe(200);
  });
});
