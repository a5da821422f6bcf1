import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort, startTestRedis, type TestRedis, waitForPort } from '@rein/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * A user's view of Rein: the packages as `npm pack` makes them, installed into a fresh
 * project outside the repository by the tutorial's own commands (docs/your-first-agent.md,
 * the block that starts with `REIN=`), an app written there with defineApp / defineAgent /
 * defineTool, and the stock services (`rein api|worker|approver` from the installed bin,
 * plus the scripted model) running it through an approval.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The tutorial's from-a-checkout install, its `REIN=` line pointed at this checkout. */
function tutorialInstall(): string {
  const tutorial = readFileSync(join(root, 'docs', 'your-first-agent.md'), 'utf8');
  const block = [...tutorial.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] as string).find((b) => b.startsWith('REIN='));
  if (!block) throw new Error('docs/your-first-agent.md has no ```sh block starting with REIN=');
  return block.replace(/^REIN=.*$/m, `REIN=${JSON.stringify(root)}`);
}
const run = promisify(execFile);

const USER = { key: 'packed-user-key-ada', tenantId: 'packed', userId: 'ada', roles: ['user'] };
const APPROVER = { key: 'packed-approver-key-bob', tenantId: 'packed', userId: 'bob', roles: ['approver'] };

const APP = `import { appendFileSync } from 'node:fs';
import { defineAgent, defineApp, defineTool } from '@rein/core';
import { z } from 'zod';

const lookup = defineTool({
  name: 'lookup_contact',
  description: 'Find a contact by name.',
  kind: 'read',
  parameters: z.object({ name: z.string().min(1) }),
  execute: ({ name }) => ({ name, email: name.toLowerCase() + '@example.com' }),
});

const invite = defineTool({
  name: 'send_invite',
  description: 'Send an invitation (a person approves it first).',
  kind: 'write',
  parameters: z.object({ name: z.string().min(1) }),
  // requiredRole 'user': the requester may confirm their own invitation as proposed (rein run --approve does).
  approval: ({ name }) => ({ risk: 'high', summary: 'Invite ' + name, requiredRole: 'user' }),
  honoursIdempotencyKey: true,
  execute: ({ name }, ctx) => {
    appendFileSync(new URL('./effects.log', import.meta.url), JSON.stringify({ name, key: ctx.idempotencyKey, by: ctx.userId }) + '\\n');
    return { invited: name };
  },
});

export default defineApp({
  agents: [defineAgent({ name: 'inviter', instructions: 'Look the contact up, then invite them.', tools: ['lookup_contact', 'send_invite'] })],
  tools: [lookup, invite],
});
`;

const BROKEN_APP = `import { defineAgent, defineApp } from '@rein/core';
export default defineApp({ agents: [defineAgent({ name: 'lost', instructions: 'x', tools: ['no_such_tool'] })], tools: [] });
`;

let work: string;
let project: string;
let redis: TestRedis;
const procs: ChildProcess[] = [];
const packedFiles: Record<string, string[]> = {};
/** The `rein` bin npm linked in the user's project. */
const reinBin = () => join(project, 'node_modules', '.bin', 'rein');
const logs: string[] = [];
let installOutput = '';

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'rein-packed-'));
  project = join(work, 'my-agents');
  const install = await run('bash', ['-euo', 'pipefail', '-c', tutorialInstall()], {
    cwd: work,
    env: {
      ...process.env,
      npm_config_prefer_offline: 'true',
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      // warn, not error: engine mismatches are warnings, and the install must print none.
      npm_config_loglevel: 'warn',
    },
    timeout: 600_000,
  });
  installOutput = install.stdout + install.stderr;
  const tarballs = join(project, 'tarballs');
  for (const file of readdirSync(tarballs)) {
    const { stdout } = await run('tar', ['-tzf', join(tarballs, file)]);
    packedFiles[file] = stdout
      .split('\n')
      .filter(Boolean)
      .map((f) => f.replace(/^package\//, ''));
  }
  writeFileSync(join(project, 'app.mjs'), APP);
  writeFileSync(join(project, 'broken-app.mjs'), BROKEN_APP);
  redis = await startTestRedis();
}, 900_000);

afterAll(async () => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM');
  await Promise.all(procs.map((p) => new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(null) : p.once('exit', r)))));
  await redis?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

function start(name: string, args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, args, { cwd: project, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (chunk: Buffer) => logs.push(`[${name}] ${chunk.toString().trimEnd()}`);
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  procs.push(child);
  return child;
}

describe('a packed install outside the repository', () => {
  it(`installs on this Node (${process.version}) with no engine warning, and without the repository's overrides`, () => {
    expect(installOutput).not.toMatch(/EBADENGINE/);
    // As docs/deploying-your-app.md asks: Rein and zod are development dependencies of the app (the image provides them).
    const app = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'));
    expect(Object.keys(app.devDependencies ?? {})).toEqual(expect.arrayContaining(['@rein/core', '@rein/cli', 'zod']));
    expect(app.dependencies ?? {}).toEqual({});
    expect(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).overrides).toBeUndefined();
  });

  it('packs every published package, each with built code, its package.json, README and LICENSE, nothing else', () => {
    expect(Object.keys(packedFiles).sort()).toEqual([
      'rein-api-0.1.0.tgz',
      'rein-approver-0.1.0.tgz',
      'rein-cli-0.1.0.tgz',
      'rein-client-0.1.0.tgz',
      'rein-contract-0.1.0.tgz',
      'rein-core-0.1.0.tgz',
      'rein-define-0.1.0.tgz',
      'rein-example-order-assistant-0.1.0.tgz',
      'rein-scripted-model-0.1.0.tgz',
      'rein-worker-0.1.0.tgz',
    ]);
    const licence = readFileSync(join(root, 'LICENSE'), 'utf8');
    for (const [name, files] of Object.entries(packedFiles)) {
      expect(files, name).toEqual(expect.arrayContaining(['package.json', 'README.md', 'LICENSE']));
      expect(
        files.filter((f) => !f.startsWith('dist/') && !['package.json', 'README.md', 'LICENSE', 'bin/rein.mjs'].includes(f)),
        name,
      ).toEqual([]);
      expect(
        files.some((f) => f.endsWith('.d.ts')),
        name,
      ).toBe(true);
    }
    expect(readFileSync(join(project, 'node_modules', '@rein', 'core', 'LICENSE'), 'utf8')).toBe(licence);
    expect(JSON.parse(readFileSync(join(project, 'node_modules', '@rein', 'core', 'package.json'), 'utf8')).license).toBe('Apache-2.0');
  });

  it('installs the client from its tarballs without any server package (and it loads)', async () => {
    const app = join(work, 'browser-app');
    const tarballs = join(project, 'tarballs');
    const npm = (args: string[]) =>
      run('npm', args, { cwd: app, env: { ...process.env, npm_config_prefer_offline: 'true' }, timeout: 300_000 });
    mkdirSync(app);
    await npm(['init', '-y']);
    await npm(['pkg', 'set', 'type=module']);
    // @rein/contract is not in a registry, so its tarball goes along; zod, its peer, comes by itself.
    await npm(['install', '--no-audit', '--no-fund', join(tarballs, 'rein-client-0.1.0.tgz'), join(tarballs, 'rein-contract-0.1.0.tgz')]);
    const { stdout } = await npm(['ls', '--omit=dev', '--all', '--parseable']);
    const installed = stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => line.slice(app.length + 1));
    expect(installed).toEqual(expect.arrayContaining(['node_modules/@rein/client', 'node_modules/@rein/contract', 'node_modules/zod']));
    expect(
      installed.filter((p) =>
        /node_modules\/(fastify|@fastify|bullmq|ioredis|@opentelemetry|@modelcontextprotocol|@rein\/core)(\/|$)/.test(p),
      ),
    ).toEqual([]);
    const { stdout: loaded } = await run(
      process.execPath,
      ['-e', "import('@rein/client').then((c) => console.log(typeof c.ReinClient, typeof c.verifyWebhook))"],
      { cwd: app },
    );
    expect(loaded.trim()).toBe('function function');
  }, 300_000);

  it('installs an app that imports only @rein/define from its tarballs without any server package (and it defines the app)', async () => {
    const app = join(work, 'definitions-only');
    const tarballs = join(project, 'tarballs');
    const npm = (args: string[]) =>
      run('npm', args, { cwd: app, env: { ...process.env, npm_config_prefer_offline: 'true' }, timeout: 300_000 });
    mkdirSync(app);
    await npm(['init', '-y']);
    await npm(['pkg', 'set', 'type=module']);
    await npm([
      'install',
      '--no-audit',
      '--no-fund',
      join(tarballs, 'rein-define-0.1.0.tgz'),
      join(tarballs, 'rein-contract-0.1.0.tgz'),
      'zod@4',
    ]);
    const { stdout } = await npm(['ls', '--omit=dev', '--all', '--parseable']);
    const installed = stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => line.slice(app.length + 1));
    expect(installed).toEqual(expect.arrayContaining(['node_modules/@rein/define', 'node_modules/@rein/contract', 'node_modules/zod']));
    expect(
      installed.filter((p) =>
        /node_modules\/(fastify|@fastify|bullmq|ioredis|@opentelemetry|@modelcontextprotocol|pino|undici|@rein\/core)(\/|$)/.test(p),
      ),
    ).toEqual([]);
    writeFileSync(join(app, 'app.mjs'), APP.replace("from '@rein/core'", "from '@rein/define'"));
    const { stdout: loaded } = await run(
      process.execPath,
      [
        '-e',
        "import('./app.mjs').then(({ default: app }) => console.log(app.kind, app.defaultAgent, app.tools.map((t) => t.name).join()))",
      ],
      { cwd: app },
    );
    expect(loaded.trim()).toBe('rein-app inviter lookup_contact,send_invite');
  }, 300_000);

  it("runs the user's own agent on the stock services, through an approval", async () => {
    const [modelPort, apiPort, approverPort, metricsPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    const env = {
      REDIS_URL: redis.url,
      OPENAI_BASE_URL: `http://127.0.0.1:${modelPort}/v1`,
      REIN_API_KEYS: JSON.stringify([USER, APPROVER]),
      REIN_APP: './app.mjs',
      API_PORT: String(apiPort),
      APPROVER_PORT: String(approverPort),
      WORKER_METRICS_PORT: String(metricsPort),
      REIN_BIND_HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    };
    const rein = reinBin();
    start('model', [join(project, 'node_modules', '@rein', 'scripted-model', 'dist', 'main.js')], {
      SCRIPTED_MODEL_PORT: String(modelPort),
    });
    start('api', [rein, 'api'], env);
    start('worker', [rein, 'worker'], env);
    start('approver', [rein, 'approver'], env);
    await Promise.all([waitForPort(modelPort, 60_000), waitForPort(apiPort, 60_000), waitForPort(approverPort, 60_000)]);

    const call = async (base: number, method: string, path: string, key: string, body?: unknown) => {
      const res = await fetch(`http://127.0.0.1:${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const waitFor = async (id: string, done: (run: Record<string, unknown>) => boolean) => {
      for (let i = 0; i < 600; i++) {
        const { body } = await call(apiPort, 'GET', `/v1/runs/${id}`, USER.key);
        if (done(body)) return body;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`run ${id} never got there\n${logs.slice(-20).join('\n')}`);
    };
    const effects = () => {
      try {
        return readFileSync(join(project, 'effects.log'), 'utf8').trim().split('\n').filter(Boolean);
      } catch {
        return [];
      }
    };

    const other = await call(apiPort, 'POST', '/v1/runs', USER.key, { input: 'hi', agent: 'order-assistant' });
    expect(other.status).toBe(400);
    expect(other.body).toMatchObject({ error: { code: 'unknown_agent' } });

    const submitted = await call(apiPort, 'POST', '/v1/runs', USER.key, { input: 'Please invite "Grace"' });
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;
    const parked = await waitFor(id, (r) => r.status === 'pending_approval');
    expect(parked).toMatchObject({
      agent: 'inviter',
      pendingApprovals: [{ toolName: 'send_invite', summary: 'Invite Grace', risk: 'high' }],
    });
    expect(effects()).toEqual([]); // nothing happened before approval

    const approvalId = (parked.pendingApprovals as Array<{ id: string }>)[0]?.id as string;
    const decided = await call(approverPort, 'POST', `/v1/approvals/${approvalId}/approve`, APPROVER.key, { comment: 'ok' });
    expect(decided.status).toBe(200);
    const finished = await waitFor(id, (r) => ['succeeded', 'failed', 'cancelled'].includes(r.status as string));
    expect(finished.status).toBe('succeeded');
    expect(effects().map((line) => JSON.parse(line))).toEqual([{ name: 'Grace', key: expect.stringContaining(id), by: 'ada' }]);

    // The same through the installed bin: `rein run … --approve` submits as the user, follows, and approves as the approver.
    const { stdout } = await run(process.execPath, [rein, 'run', 'Please invite "Lin"', '--approve'], {
      cwd: project,
      env: {
        ...process.env,
        REIN_API_URL: `http://127.0.0.1:${apiPort}`,
        REIN_APPROVER_URL: `http://127.0.0.1:${approverPort}`,
        REIN_API_KEY: USER.key,
        REIN_APPROVER_KEY: APPROVER.key,
      },
      timeout: 120_000,
    });
    expect(stdout).toContain('[Approval] high — Invite Lin');
    expect(stdout).toMatch(new RegExp(`\\[Decision\\] approved by ${APPROVER.userId}`));
    expect(stdout).toMatch(/final answer \(succeeded, completed\)/);
    expect(effects().map((line) => JSON.parse(line).name)).toEqual(['Grace', 'Lin']);
  });

  it('runs the order-assistant example when REIN_APP is not set (the embedded default)', async () => {
    const port = await freePort();
    start('default-api', [reinBin(), 'api'], {
      REDIS_URL: redis.url,
      REIN_API_KEYS: JSON.stringify([USER]),
      API_PORT: String(port),
      REIN_BIND_HOST: '127.0.0.1',
    });
    await waitForPort(port, 60_000);
    const res = await fetch(`http://127.0.0.1:${port}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${USER.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Where is order A12345?' }),
    });
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ agent: 'order-assistant' });
  });

  it('refuses to start an app whose agent names a tool it lacks, naming both', async () => {
    const child = start('broken-api', [reinBin(), 'api'], {
      REDIS_URL: redis.url,
      REIN_API_KEYS: JSON.stringify([USER]),
      REIN_APP: './broken-app.mjs',
      API_PORT: String(await freePort()),
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise((r) => child.once('exit', r));
    expect(code).toBe(1);
    expect(stderr).toMatch(/agent "lost" names tool "no_such_tool"/);
  });
});
