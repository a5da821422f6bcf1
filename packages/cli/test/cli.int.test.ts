import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { freePort, startTestRedis, type TestRedis } from '@rein/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const rein = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
const cli = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [rein, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 });

let redis: TestRedis;
beforeAll(async () => {
  redis = await startTestRedis();
});
afterAll(async () => {
  await redis.stop();
});

/** Free ports for everything `rein dev` listens on (the second worker takes metrics + 1). */
async function devPorts() {
  const [model, api, approver] = await Promise.all([freePort(), freePort(), freePort()]);
  let metrics = await freePort();
  while (metrics + 1 === model || metrics + 1 === api || metrics + 1 === approver) metrics = await freePort();
  return {
    SCRIPTED_MODEL_PORT: String(model),
    API_PORT: String(api),
    APPROVER_PORT: String(approver),
    WORKER_METRICS_PORT: String(metrics),
  };
}

describe('rein --help and --version', () => {
  it('lists every command and the environment it reads', () => {
    const out = cli(['--help']);
    expect(out.status).toBe(0);
    for (const command of ['rein dev', 'rein api', 'rein worker', 'rein approver', 'rein run', 'rein watch'])
      expect(out.stdout).toContain(command);
    for (const variable of ['REIN_APP', 'REDIS_URL', 'OPENAI_BASE_URL', 'REIN_API_URL', 'REIN_API_KEY'])
      expect(out.stdout).toContain(variable);
  });

  it.each(['dev', 'api', 'worker', 'approver', 'run', 'watch'])('rein %s --help shows its own usage and starts nothing', (command) => {
    const out = cli([command, '--help'], { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(out.status).toBe(0);
    expect(out.stdout).toMatch(new RegExp(`^usage: rein ${command}`));
    expect(out.stdout).toContain('environment:');
  });

  it('rein run --help names its flags; --version works on every command', () => {
    expect(cli(['run', '--help']).stdout).toMatch(/--watch[\s\S]*--approve[\s\S]*--start-fleet/);
    expect(cli(['--version']).stdout.trim()).toBe(version);
    expect(cli(['run', '--version']).stdout.trim()).toBe(version);
    expect(cli(['nope']).status).toBe(2);
  });
});

/** `rein` as a real process, awaited (spawnSync would block a stub API served from this process). */
const cliAsync = (args: string[], env: Record<string, string>) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [rein, ...args], { env: { ...process.env, ...env } });
    let [stdout, stderr] = ['', ''];
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });

/** An API that answers every cohort it is asked for with `summary` (finished), recording the bodies it got. */
async function stubCohortApi(summary: { total: number; replayed: number; diverged: number; skipped: number }) {
  const bodies: Array<Record<string, unknown>> = [];
  const view = (settings: Record<string, unknown>) => ({
    id: 'cohort-1',
    agent: 'order-assistant',
    status: 'finished',
    createdAt: new Date(0).toISOString(),
    settings,
    summary: {
      ...summary,
      identical: summary.replayed - summary.diverged,
      wouldNeedApprovals: 0,
      nowFail: 0,
      tokens: { original: 0, replay: 0 },
      costUsd: { original: 0, replay: 0 },
    },
    runs: [],
  });
  const server = createHttpServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      if (req.method === 'POST') bodies.push(JSON.parse(raw));
      const settings = bodies.at(-1)?.version ? { version: bodies.at(-1)?.version } : {};
      res.writeHead(req.method === 'POST' ? 202 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(view(settings)));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, bodies, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('rein replay as a deploy gate', () => {
  const gate = ['replay', '--agent', 'order-assistant', '--since', '1h', '--limit', '5'];

  it('--version names the app version the cohort replays on: it is sent, not answered with the CLI version', async () => {
    const api = await stubCohortApi({ total: 2, replayed: 2, diverged: 1, skipped: 0 });
    try {
      const out = await cliAsync([...gate, '--version', 'v2', '--max-diverged', '0%'], { REIN_API_URL: api.url });
      expect(out.stdout.trim()).not.toBe(version);
      expect(api.bodies).toMatchObject([{ agent: 'order-assistant', limit: 5, version: 'v2' }]);
      expect(out.status).toBe(1);
      expect(out.stderr).toContain('over the threshold (0%): 1 of 2 replays diverged');
    } finally {
      await api.close();
    }
  });

  it('fails, loudly, when nothing was replayed: a gate with nothing to judge does not pass', async () => {
    const api = await stubCohortApi({ total: 3, replayed: 0, diverged: 0, skipped: 3 });
    try {
      const out = await cliAsync([...gate, '--version', 'v2', '--max-diverged', '10%'], { REIN_API_URL: api.url });
      expect(out.status).toBe(1);
      expect(out.stderr).toContain('nothing to judge: none of its 3 runs was replayed (3 skipped)');
      expect(out.stdout).toContain('**FAILED**: nothing to judge');
      expect(out.stdout).not.toContain('PASSED');
    } finally {
      await api.close();
    }
  });

  it('still answers --version with the CLI version on a command without a --version of its own', () => {
    expect(cli(['watch', '--version']).stdout.trim()).toBe(version);
  });
});

describe('rein without a fleet', () => {
  it('says there is no Rein API at the URL, not "fetch failed"', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const out = cli(['run', 'hello'], { REIN_API_URL: url });
    expect(out.status).toBe(1);
    expect(out.stderr).toContain(`no Rein API at ${url} (start one with \`rein dev\``);
    expect(out.stderr).not.toContain('fetch failed');
  });
});

describe('rein dev', () => {
  it('refuses a taken port, naming it, its variable and the process holding it, and prints no banner', async () => {
    const ports = await devPorts();
    const squatter: Server = createServer();
    await new Promise<void>((r) => squatter.listen(Number(ports.API_PORT), '0.0.0.0', r));
    try {
      const out = cli(['dev'], { ...ports, REDIS_URL: redis.url });
      expect(out.status).toBe(1);
      expect(out.stdout).not.toContain('Rein fleet is up');
      expect(out.stderr).toContain(`port ${ports.API_PORT} (api) is already taken by pid ${process.pid}`);
      expect(out.stderr).toContain('API_PORT');
    } finally {
      squatter.close();
    }
  });

  it('listens on loopback only, and its banner gives the console and an approver key', async () => {
    const ports = await devPorts();
    const fleet: ChildProcess = spawn(process.execPath, [rein, 'dev'], {
      env: { ...process.env, ...ports, REDIS_URL: redis.url, REIN_BIND_HOST: '', REIN_LOG_FORMAT: 'json', LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      await new Promise<void>((resolve, reject) => {
        fleet.stdout?.on('data', (chunk) => {
          out += chunk;
          if (out.includes('Rein fleet is up') && out.includes('try')) resolve();
        });
        fleet.on('exit', (code) => reject(new Error(`rein dev exited (${code}): ${out}`)));
      });
      expect(out).toContain(`http://127.0.0.1:${ports.APPROVER_PORT}/console`);
      expect(out).toContain('demo-approver-key-lisi');
      // One-click links need the console's public URL: the fleet sets it, so minting gets past it (to the unknown approval).
      const minted = await fetch(`http://127.0.0.1:${ports.APPROVER_PORT}/v1/approvals/no-such-run.0.0/links`, {
        method: 'POST',
        headers: { authorization: 'Bearer demo-approver-key-lisi', 'content-type': 'application/json' },
        body: '{}',
      });
      expect(((await minted.json()) as { error: { code: string } }).error.code).toBe('not_found');
      // /proc/net/tcp: the API's listening socket is bound to 127.0.0.1 (0100007F), not 0.0.0.0.
      const hex = Number(ports.API_PORT).toString(16).toUpperCase().padStart(4, '0');
      const listening = readFileSync('/proc/net/tcp', 'utf8')
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .filter((c) => c[1]?.endsWith(`:${hex}`) && c[3] === '0A')
        .map((c) => c[1]);
      expect(listening).toEqual([`0100007F:${hex}`]);
    } finally {
      fleet.kill('SIGTERM');
      await new Promise((r) => (fleet.exitCode !== null ? r(null) : fleet.once('exit', r)));
    }
  });
});
