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

/**
 * `rein dev`: the whole fleet on this machine with embedded defaults — Redis (the one
 * at REDIS_URL / 127.0.0.1:6379, or a redis-server started here), the scripted model
 * when OPENAI_BASE_URL is unset, the API, two workers and the approver, all running the
 * app of REIN_APP (default: the order-assistant example).
 */
export async function dev(): Promise<void> {
  const env = { ...process.env };
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
    if (scripted) {
      const port = Number(env.SCRIPTED_MODEL_PORT ?? 8090);
      const model = createRequire(import.meta.url).resolve('@rein/scripted-model/main');
      start('model', process.execPath, [model], { SCRIPTED_MODEL_PORT: String(port) });
      await waitFor(port, 'scripted model');
      env.OPENAI_BASE_URL = `http://127.0.0.1:${port}/v1`;
    }
    env.REIN_API_KEYS ??= JSON.stringify(DEMO_KEYS);
    const apiPort = Number(env.API_PORT ?? 8080);
    const approverPort = Number(env.APPROVER_PORT ?? 8081);
    const metricsPort = Number(env.WORKER_METRICS_PORT ?? 9464);
    start('api', process.execPath, [main, 'api']);
    start('worker-1', process.execPath, [main, 'worker'], { WORKER_METRICS_PORT: String(metricsPort) });
    start('worker-2', process.execPath, [main, 'worker'], { WORKER_METRICS_PORT: String(metricsPort + 1) });
    start('approver', process.execPath, [main, 'approver']);
    await Promise.all([waitFor(apiPort, 'api'), waitFor(approverPort, 'approver')]);
    const keys = JSON.parse(env.REIN_API_KEYS) as typeof DEMO_KEYS;
    const first = keys[0] as (typeof DEMO_KEYS)[number];
    process.stdout.write(
      [
        '',
        'Rein fleet is up',
        `  App        ${env.REIN_APP ?? '@rein/example-order-assistant (the default; set REIN_APP for yours)'}`,
        `  API        http://127.0.0.1:${apiPort}/v1/runs`,
        `  Approver   http://127.0.0.1:${approverPort}/v1/approvals`,
        `  Metrics    http://127.0.0.1:${apiPort}/metrics, :${approverPort}/metrics, :${metricsPort}/metrics, :${metricsPort + 1}/metrics`,
        `  Model      ${env.OPENAI_BASE_URL}${scripted ? ' (scripted, not an LLM)' : ''}`,
        `  Redis      ${env.REDIS_URL}`,
        `  API key    ${first.key} (${first.userId}@${first.tenantId}, roles ${first.roles.join(',')})`,
        '',
        ...(env.REIN_APP
          ? ['  try, in another terminal: rein run "<input>" --watch']
          : [
              `  try: curl -s -X POST http://127.0.0.1:${apiPort}/v1/runs -H 'Authorization: Bearer ${first.key}' \\`,
              `         -H 'Content-Type: application/json' -d '{"input":"客户张三投诉订单 2024001 一直没发货，帮他处理一下"}'`,
              '  or, in another terminal: rein run "<input>" --watch   (npm run demo in the repository)',
            ]),
        '',
      ].join('\n'),
    );
  } catch (err) {
    process.stderr.write(`rein: ${(err as Error).message}\n`);
    stop(1);
  }
}
