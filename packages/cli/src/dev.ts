import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { freePort, waitForPort } from '@rein/core/testing';
import pretty from 'pino-pretty';
import { DEMO_KEYS } from './demo-keys.js';
import { portFree, portOwner } from './ports.js';

const reachable = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host, port, timeout: 500 }, () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });

/** Waits for a local port, naming the service if it never comes up. */
const waitFor = (port: number, what: string, ms = 30_000) =>
  waitForPort(port, ms).catch(() => {
    throw new Error(`${what} did not come up on 127.0.0.1:${port}`);
  });

/** A port `rein dev` means to listen on, and the variable that moves it. */
interface Listener {
  what: string;
  port: number;
  variable: string;
}

/** Refuses to start over a port that is taken, naming the port, its variable and (if visible) its owner. */
async function assertPortsFree(listeners: Listener[], host: string): Promise<void> {
  for (const { what, port, variable } of listeners) {
    if (await portFree(port, host)) continue;
    const owner = portOwner(port);
    throw new Error(
      `port ${port} (${what}) is already taken${owner ? ` by ${owner}` : ''}: stop that process (an earlier \`rein dev\`?) or set ${variable} to another port`,
    );
  }
}

/**
 * Waits until the service `child` started answers `/healthz` with its own pid — not
 * merely until something answers on the port — and fails as soon as the child exits.
 */
async function waitForOwnHealth(child: ChildProcess, host: string, port: number, what: string, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${what} exited before it answered on ${host}:${port}`);
    const health = await fetch(`http://${host}:${port}/healthz`).then(
      (r) => r.json() as Promise<{ pid?: number }>,
      () => undefined,
    );
    if (health?.pid === child.pid) return;
    if (health)
      throw new Error(`another process (pid ${health.pid ?? 'unknown'}) answers on port ${port} instead of the ${what} started here`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not come up on ${host}:${port}`);
}

export interface DevOptions {
  /** The address the services listen on; loopback unless REIN_BIND_HOST or this says otherwise. */
  host?: string;
}

/**
 * `rein dev`: the whole fleet on this machine with embedded defaults — Redis (the one
 * at REDIS_URL / 127.0.0.1:6379, or a redis-server started here), the scripted model
 * when OPENAI_BASE_URL is unset, the API, two workers and the approver, all running the
 * app of REIN_APP (default: the order-assistant example). The services listen on
 * loopback (the demo keys are public) unless `--host` or REIN_BIND_HOST says otherwise.
 */
export async function dev(opts: DevOptions = {}): Promise<void> {
  const env = { ...process.env };
  env.REIN_BIND_HOST = opts.host || env.REIN_BIND_HOST || '127.0.0.1';
  const children: ChildProcess[] = [];
  const main = fileURLToPath(new URL('./main.js', import.meta.url));
  // Humans read pretty logs; REIN_LOG_FORMAT=json keeps the services' raw JSON lines.
  const prettyLogs = process.env.REIN_LOG_FORMAT !== 'json';
  let stopping = false;

  const stop = (code = 0) => {
    if (stopping) return;
    stopping = true;
    for (const child of [...children].reverse()) child.kill('SIGTERM');
    setTimeout(() => process.exit(code), 3000).unref();
    Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.on('exit', r))))).then(() => process.exit(code));
  };
  process.on('SIGINT', () => stop(0));
  process.on('SIGTERM', () => stop(0));

  const start = (name: string, command: string, args: string[], extraEnv: Record<string, string> = {}) => {
    const child = spawn(command, args, { env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    const prefix = `[${name}] `;
    const relay = (stream: Readable, out: Writable) => {
      let buffer = '';
      stream.on('data', (chunk) => {
        buffer += chunk;
        const lines = buffer.split('\n');
        buffer = lines.pop() ?? '';
        for (const line of lines) out.write(`${prefix + line}\n`);
      });
    };
    if (prettyLogs) {
      child.stdout.pipe(
        pretty({
          colorize: process.stdout.isTTY,
          translateTime: 'HH:MM:ss.l',
          ignore: 'pid,hostname,service',
          messageFormat: `${prefix}{msg}`,
          destination: 1,
          sync: true,
        }),
      );
    } else {
      relay(child.stdout, process.stdout);
    }
    relay(child.stderr, process.stderr);
    child.on('exit', (code, signal) => {
      if (!stopping) {
        process.stderr.write(`${prefix}exited (${signal ?? code}); stopping the fleet\n`);
        stop(1);
      }
    });
    children.push(child);
    return child;
  };

  const resolveRedis = async () => {
    const url = new URL(env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    if (await reachable(url.hostname, Number(url.port || 6379))) return url.toString();
    if (env.REDIS_URL) throw new Error(`REDIS_URL=${env.REDIS_URL} is not reachable`);
    const port = await freePort();
    const dir = join(process.cwd(), '.rein', 'redis');
    mkdirSync(dir, { recursive: true });
    const child = start('redis', 'redis-server', [
      ...['--port', String(port), '--bind', '127.0.0.1', '--dir', dir],
      ...['--appendonly', 'yes', '--maxmemory-policy', 'noeviction'],
    ]);
    await new Promise((resolve, reject) => {
      child.on('error', () =>
        reject(new Error('no Redis at 127.0.0.1:6379 and no redis-server binary to start one: install Redis 7 or set REDIS_URL')),
      );
      waitFor(port, 'redis-server').then(resolve, reject);
    });
    return `redis://127.0.0.1:${port}`;
  };

  try {
    env.REDIS_URL = await resolveRedis();
    const scripted = !env.OPENAI_BASE_URL;
    // Where this machine reaches the services: loopback when they listen on every address.
    const shown = env.REIN_BIND_HOST === '0.0.0.0' || env.REIN_BIND_HOST === '::' ? '127.0.0.1' : env.REIN_BIND_HOST;
    const modelPort = Number(env.SCRIPTED_MODEL_PORT ?? 8090);
    const apiPort = Number(env.API_PORT ?? 8080);
    const approverPort = Number(env.APPROVER_PORT ?? 8081);
    const metricsPort = Number(env.WORKER_METRICS_PORT ?? 9464);
    await assertPortsFree(
      [
        ...(scripted ? [{ what: 'scripted model', port: modelPort, variable: 'SCRIPTED_MODEL_PORT' }] : []),
        { what: 'api', port: apiPort, variable: 'API_PORT' },
        { what: 'approver', port: approverPort, variable: 'APPROVER_PORT' },
        { what: 'worker-1 metrics', port: metricsPort, variable: 'WORKER_METRICS_PORT' },
        { what: 'worker-2 metrics', port: metricsPort + 1, variable: 'WORKER_METRICS_PORT' },
      ],
      env.REIN_BIND_HOST,
    );
    if (scripted) {
      const script = createRequire(import.meta.url).resolve('@rein/scripted-model/main');
      const model = start('model', process.execPath, [script], {
        SCRIPTED_MODEL_PORT: String(modelPort),
        SCRIPTED_MODEL_HOST: '127.0.0.1',
      });
      await waitFor(modelPort, 'scripted model');
      if (model.exitCode !== null) throw new Error(`the scripted model exited before it answered on 127.0.0.1:${modelPort}`);
      env.OPENAI_BASE_URL = `http://127.0.0.1:${modelPort}/v1`;
    }
    env.REIN_API_KEYS ??= JSON.stringify(DEMO_KEYS);
    // One-click approval links name the console's public URL, never a request's Host: locally, the approver's own.
    env.REIN_CONSOLE_URL ||= `http://${shown?.includes(':') ? `[${shown}]` : shown}:${approverPort}`;
    const services = [
      { child: start('api', process.execPath, [main, 'api']), port: apiPort, what: 'the api' },
      {
        child: start('worker-1', process.execPath, [main, 'worker'], { WORKER_METRICS_PORT: String(metricsPort) }),
        port: metricsPort,
        what: 'worker-1',
      },
      {
        child: start('worker-2', process.execPath, [main, 'worker'], { WORKER_METRICS_PORT: String(metricsPort + 1) }),
        port: metricsPort + 1,
        what: 'worker-2',
      },
      { child: start('approver', process.execPath, [main, 'approver']), port: approverPort, what: 'the approver' },
    ];
    await Promise.all(services.map((s) => waitForOwnHealth(s.child, shown, s.port, s.what)));
    if (stopping) return;
    const keys = JSON.parse(env.REIN_API_KEYS) as typeof DEMO_KEYS;
    const first = keys[0] as (typeof DEMO_KEYS)[number];
    const approverKey = keys.find((k) => k.roles.some((r) => r === 'approver' || r === 'supervisor' || r === 'admin'));
    const operatorKey = keys.find((k) => k.roles.includes('operator'));
    process.stdout.write(
      [
        '',
        'Rein fleet is up',
        `  App        ${env.REIN_APP ?? '@rein/example-order-assistant (the default; set REIN_APP for yours)'}`,
        `  API        http://${shown}:${apiPort}/v1/runs`,
        `  Approver   http://${shown}:${approverPort}/v1/approvals`,
        `  Console    http://${shown}:${approverPort}/console   (runs, live timelines, approvals, usage, versions)`,
        `  Metrics    http://${shown}:${apiPort}/metrics, :${approverPort}/metrics, :${metricsPort}/metrics, :${metricsPort + 1}/metrics`,
        `  Model      ${env.OPENAI_BASE_URL}${scripted ? ' (scripted, not an LLM)' : ''}`,
        `  Redis      ${env.REDIS_URL}`,
        `  API key    ${first.key} (${first.userId}@${first.tenantId}, roles ${first.roles.join(',')})`,
        ...(approverKey && approverKey !== first
          ? [`  Approve as ${approverKey.key} (${approverKey.userId}@${approverKey.tenantId}, roles ${approverKey.roles.join(',')})`]
          : []),
        ...(operatorKey
          ? [`  Operate as ${operatorKey.key} (app versions: rein versions; the queue board: http://${shown}:${apiPort}/admin/queues)`]
          : []),
        `  Listening  on ${env.REIN_BIND_HOST}${env.REIN_BIND_HOST === '127.0.0.1' ? ' only (rein dev --host 0.0.0.0 to expose; the demo keys are public)' : ''}`,
        '',
        ...(env.REIN_APP
          ? ['  try, in another terminal: npx rein run "<input>" --watch']
          : [
              `  try: curl -s -X POST http://${shown}:${apiPort}/v1/runs -H 'Authorization: Bearer ${first.key}' \\`,
              `         -H 'Content-Type: application/json' -d '{"input":"客户张三投诉订单 2024001 一直没发货，帮他处理一下"}'`,
              '  or, in another terminal: npx rein run "<input>" --watch   (npm run demo in the repository)',
            ]),
        '',
      ].join('\n'),
    );
  } catch (err) {
    process.stderr.write(`rein: ${(err as Error).message}\n`);
    stop(1);
  }
}
