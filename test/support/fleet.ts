import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ReinClient, type RunView } from '@rein/client';
import { freePort, startTestRedis, type TestRedis, waitForPort } from '@rein/core/testing';
import { afterAll, beforeAll } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export const KEYS = {
  user: { key: 'e2e-user-key-zhangsan', tenantId: 'e2e', userId: 'zhangsan', roles: ['user'] },
  approver: { key: 'e2e-approver-key-lisi', tenantId: 'e2e', userId: 'lisi', roles: ['approver'] },
  admin: { key: 'e2e-admin-key-wangwu', tenantId: 'e2e', userId: 'wangwu', roles: ['admin'] },
  operator: { key: 'e2e-operator-key-ops', tenantId: 'e2e', userId: 'ops', roles: ['operator'] },
  other: { key: 'e2e-other-tenant-key', tenantId: 'elsewhere', userId: 'mallory', roles: ['admin'] },
};

export interface FleetOptions {
  redisUrl: string;
  /** REDIS_CLUSTER_NODES: run the fleet on this Redis Cluster instead (REDIS_URL is then ignored). */
  clusterNodes?: string;
  workers?: number;
  /** API processes (default 1); the others listen on ports of their own (`apis`). */
  apis?: number;
  modelLatencyMs?: number;
  /** Environment of the API, workers and approver. */
  env?: Record<string, string>;
  /** Environment of the scripted model (e.g. SCRIPTED_MODEL_FAULTS=on). */
  modelEnv?: Record<string, string>;
  /** Node flags for the workers (e.g. `--cpu-prof`, which NODE_OPTIONS refuses). */
  workerNodeArgs?: string[];
  /**
   * Start the services from an installed Rein instead of this checkout's dist/: the folder
   * holding its node_modules (`rein api|worker|approver` from its bin, the scripted model
   * from its package), which is also their working directory.
   */
  installed?: string;
}

/**
 * A port `freePort` found free can be taken by another test file's server before the
 * service binds it: the service then exits, and a bare port probe would see the other server.
 */
class PortTakenError extends Error {}

/**
 * The real fleet as separate processes (built services from dist/): scripted model,
 * API, N workers and the approver — so tests can SIGKILL any of them. Started on fresh
 * ports again when one was taken under it (see PortTakenError).
 */
export async function startFleet(opts: FleetOptions) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startFleetOnce(opts);
    } catch (err) {
      if (!(err instanceof PortTakenError) || attempt === 3) throw err;
    }
  }
}

/** Whether a Rein HTTP service (not another test's server) answers on the port. */
async function answersAsRein(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5_000) });
    const body = (await res.json()) as { ok?: unknown; pid?: unknown };
    return body.ok === true && typeof body.pid === 'number';
  } catch {
    return false;
  }
}

async function startFleetOnce(opts: FleetOptions) {
  const procs: ChildProcess[] = [];
  const logs: string[] = [];
  const [modelPort, apiPort, approverPort] = await Promise.all([freePort(), freePort(), freePort()]);
  const env = {
    ...process.env,
    REDIS_URL: opts.redisUrl,
    ...(opts.clusterNodes ? { REDIS_CLUSTER_NODES: opts.clusterNodes } : {}),
    OPENAI_BASE_URL: `http://127.0.0.1:${modelPort}/v1`,
    REIN_API_KEYS: JSON.stringify(Object.values(KEYS)),
    API_PORT: String(apiPort),
    APPROVER_PORT: String(approverPort),
    REIN_BIND_HOST: '127.0.0.1',
    REIN_JOB_LOCK_MS: '2000',
    LOG_LEVEL: 'warn',
    ...opts.env,
  };
  const installed = opts.installed;
  const entry = (service: 'model' | 'api' | 'worker' | 'approver') => {
    if (!installed) return [join(root, service === 'model' ? 'packages/scripted-model' : `services/${service}`, 'dist/main.js')];
    if (service === 'model') return [join(installed, 'node_modules/@rein/scripted-model/dist/main.js')];
    return [join(installed, 'node_modules/.bin/rein'), service];
  };
  const spawnService = (name: string, args: string[], extra: Record<string, string> = {}, nodeArgs: string[] = []) => {
    const child = spawn(process.execPath, [...nodeArgs, ...args], {
      ...(installed ? { cwd: installed } : {}),
      env: { ...env, ...extra },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer) => logs.push(`[${name}] ${chunk.toString().trimEnd()}`);
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    procs.push(child);
    return child;
  };

  const model = spawnService('model', entry('model'), {
    SCRIPTED_MODEL_PORT: String(modelPort),
    SCRIPTED_MODEL_LATENCY_MS: String(opts.modelLatencyMs ?? 0),
    ...opts.modelEnv,
  });
  const apiProcess = spawnService('api', entry('api'));
  const extraApiPorts = await Promise.all(Array.from({ length: (opts.apis ?? 1) - 1 }, () => freePort()));
  const extraApis = extraApiPorts.map((port, i) => spawnService(`api-${i + 2}`, entry('api'), { API_PORT: String(port) }));
  /** The processes that listen on the ports found free above. */
  const servers = [model, apiProcess, ...extraApis, spawnService('approver', entry('approver'))];
  const workers: ChildProcess[] = [];
  const workerMetricsPorts: number[] = [];
  /** `extra`: this worker's own environment on top of the fleet's (e.g. another app version). */
  const startWorker = async (extra: Record<string, string> = {}) => {
    const port = await freePort();
    workerMetricsPorts.push(port);
    const worker = spawnService(
      `worker-${workers.length + 1}`,
      entry('worker'),
      { WORKER_METRICS_PORT: String(port), ...extra },
      opts.workerNodeArgs,
    );
    workers.push(worker);
    return worker;
  };
  /** One more API process on the fleet's Redis (its URL), e.g. to see that a promotion reaches every API process. */
  const startApi = async (extra: Record<string, string> = {}) => {
    const port = await freePort();
    spawnService('api-extra', entry('api'), { API_PORT: String(port), ...extra });
    await waitForPort(port, 60_000);
    return `http://127.0.0.1:${port}`;
  };
  for (let i = 0; i < (opts.workers ?? 2); i++) await startWorker();
  const stop = () =>
    Promise.all(
      procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            p.once('exit', () => resolve());
            p.kill('SIGTERM');
            setTimeout(() => p.kill('SIGKILL'), 5000).unref();
          }),
      ),
    );
  try {
    // Generous: on a loaded machine a service's start (imports, Redis checks) can take a while.
    await Promise.all([modelPort, apiPort, approverPort, ...extraApiPorts].map((port) => waitForPort(port, 60_000)));
    const answered = await Promise.all([apiPort, approverPort, ...extraApiPorts].map(answersAsRein));
    const lostPort = servers.some((p) => p.exitCode !== null) && logs.some((line) => line.includes('EADDRINUSE'));
    if (lostPort || answered.includes(false))
      throw new PortTakenError(`another process answered on a port of the fleet\n${logs.slice(-20).join('\n')}`);
  } catch (err) {
    await stop(); // a fleet that did not come up leaves no process behind
    if (err instanceof PortTakenError) throw err;
    throw new Error(`${(err as Error).message}\n${logs.slice(-20).join('\n')}`);
  }

  const api = `http://127.0.0.1:${apiPort}`;
  const approver = `http://127.0.0.1:${approverPort}`;
  /** Rein as a user of the fleet calls it: `@rein/client` with one of the KEYS. */
  const client = (key = KEYS.user.key) => new ReinClient({ apiUrl: api, approverUrl: approver, apiKey: key });
  /** A raw request, for tests about what the HTTP layer answers to malformed or unauthorised calls. */
  const call = async (base: string, method: string, path: string, key: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };

  return {
    api,
    /** Every API process's base URL, the first being `api`. */
    apis: [api, ...extraApiPorts.map((port) => `http://127.0.0.1:${port}`)],
    /** The first API process (the bench reads its CPU time). */
    apiProcess,
    approver,
    redisUrl: opts.redisUrl,
    model: `http://127.0.0.1:${modelPort}`,
    logs,
    workers,
    workerMetricsPorts,
    startWorker,
    startApi,
    client,
    callApi: (method: string, path: string, key = KEYS.user.key, body?: unknown) => call(api, method, path, key, body),
    /** A raw request to any of the fleet's HTTP services (an extra API process). */
    callAt: (base: string, method: string, path: string, key = KEYS.user.key, body?: unknown) => call(base, method, path, key, body),
    callApprover: (method: string, path: string, key = KEYS.user.key, body?: unknown) => call(approver, method, path, key, body),
    /** Polls a run until `done` holds (or fails after a generous bound, printing the fleet's logs). */
    async waitForRun(id: string, done: (run: RunView) => boolean, timeoutMs = 45_000): Promise<RunView> {
      const until = Date.now() + timeoutMs;
      let last: unknown;
      while (Date.now() < until) {
        const run = await client().runs.get(id);
        last = run;
        if (done(run)) return run;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`run ${id} never got there; last seen ${JSON.stringify(last)}\n${logs.slice(-30).join('\n')}`);
    },
    stop,
  };
}
export type Fleet = Awaited<ReturnType<typeof startFleet>>;

/**
 * A Redis of its own and a fleet on it for the test file (or describe block) that calls
 * this, started before its tests and stopped after them; the getter is for use in tests.
 */
export function fleetPerFile(opts: Omit<FleetOptions, 'redisUrl'> = {}): () => Fleet {
  let redis: TestRedis | undefined;
  let fleet: Fleet | undefined;
  beforeAll(async () => {
    redis = await startTestRedis();
    fleet = await startFleet({ ...opts, redisUrl: redis.url });
  });
  afterAll(async () => {
    await fleet?.stop();
    await redis?.stop();
  });
  return () => {
    if (!fleet) throw new Error('the fleet did not start');
    return fleet;
  };
}
