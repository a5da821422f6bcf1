import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
// The built fixture: a child process runs JavaScript, not this package's TypeScript sources.
import { MCP_FIXTURE_MAIN } from '@rein/core/testing';
import type { McpServerConfig, Tool } from '@rein/define/internal';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { McpManager } from '../src/adapters/mcp/mcp-manager.js';
import { McpServerStartError } from '../src/shared/errors.js';
import { createMetrics } from '../src/shared/metrics.js';

// Every test here really starts server processes and checks, by pid, that they are gone.
const logger = pino({ level: 'silent' });
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()?.();
});

/** Alive means signal 0 reaches it and it is not a zombie waiting for a parent that never reaps. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

/** A module of core as built (what a worker runs), for a process of its own. */
const built = (path: string) => pathToFileURL(join(import.meta.dirname, '../dist', path)).href;

/** Polls a condition a bounded number of times (the escalation from EOF to SIGKILL takes two grace periods). */
async function eventually(check: () => boolean, tries = 200) {
  for (let i = 0; i < tries && !check(); i++) await new Promise((r) => setTimeout(r, 50));
  return check();
}

/** A fixture server with its pid written to a file, and what the file says once it is there. */
function fixture(...flags: string[]) {
  const pidFile = join(mkdtempSync(join(tmpdir(), 'rein-mcp-pid-')), 'pid');
  const config: McpServerConfig = { command: process.execPath, args: [MCP_FIXTURE_MAIN, '--pid-file', pidFile, ...flags] };
  const pid = async () => {
    expect(await eventually(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '')).toBe(true);
    const value = Number(readFileSync(pidFile, 'utf8'));
    cleanup.push(() => alive(value) && process.kill(value, 'SIGKILL'));
    return value;
  };
  return { config, pid };
}

const manager = (servers: Record<string, McpServerConfig>) => {
  const m = new McpManager(servers, new Map<string, Tool>(), { logger, metrics: createMetrics('test') });
  cleanup.push(() => m.close());
  return m;
};

describe('MCP stdio servers die with their worker', () => {
  it('a server that never answers initialize is stopped when its start times out, SIGTERM and EOF notwithstanding', async () => {
    const { config, pid } = fixture('--mute', '--stubborn');
    const started = manager({ mute: { ...config, startTimeoutMs: 500 } })
      .start()
      .catch((e: unknown) => e);
    const server = await pid();
    expect(alive(server)).toBe(true);
    expect(await started).toBeInstanceOf(McpServerStartError);
    expect(await eventually(() => !alive(server))).toBe(true);
  });

  it('a server still starting when the worker closes its MCP clients is stopped', async () => {
    const { config, pid } = fixture('--mute', '--stubborn');
    const m = manager({ mute: config });
    const started = m.start().catch((e: unknown) => e);
    const server = await pid();
    await m.close();
    // As below: the group's SIGKILL is sent by close; the kernel ends the server a moment later.
    expect(await eventually(() => !alive(server))).toBe(true);
    expect(await started).toBeInstanceOf(McpServerStartError);
  });

  it('a connected server that ignores EOF and SIGTERM is killed on close', async () => {
    const { config, pid } = fixture('--stubborn');
    const m = manager({ fx: config });
    await m.start();
    const server = await pid();
    expect(alive(server)).toBe(true);
    await m.close();
    // The group's SIGKILL is sent by close; the kernel ends the process a moment later.
    expect(await eventually(() => !alive(server))).toBe(true);
  });

  it.each([
    ['connected', ['--stubborn']],
    ['never answering initialize', ['--mute', '--stubborn']],
  ])('a %s server that ignores EOF and SIGTERM dies when its worker is killed with SIGKILL', async (_what, flags) => {
    const { config, pid } = fixture(...flags);
    // A worker of its own: a process holding an McpManager, killed without a chance to clean up.
    const host = `
      import { McpManager } from '${built('adapters/mcp/mcp-manager.js')}';
      import { createMetrics } from '${built('shared/metrics.js')}';
      import { pino } from 'pino';
      const m = new McpManager({ fx: ${JSON.stringify(config)} }, new Map(), { logger: pino({ level: 'silent' }), metrics: createMetrics('host') });
      await m.start().catch(() => {});
      setInterval(() => {}, 60_000);
    `;
    const worker: ChildProcess = spawn(process.execPath, ['--input-type=module', '-e', host], { stdio: 'ignore' });
    cleanup.push(() => worker.exitCode === null && worker.kill('SIGKILL'));
    const server = await pid();
    expect(alive(server)).toBe(true);
    worker.kill('SIGKILL');
    expect(await eventually(() => !alive(server))).toBe(true);
  });
});
