import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The stock worker process (dist/main.js) over a bad REIN_APP: every mistake in what a
// tools factory returns, and a top-level await that never settles, end the process with
// exit code 1 and one `rein: …` line on stderr, never a stack (issue 24 item 5).
const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const CORE = new URL('../../../packages/core/dist/index.js', import.meta.url).href;
const ZOD = new URL('../../../node_modules/zod/index.js', import.meta.url).href;

let redis: TestRedis;
let dir: string;
beforeAll(async () => {
  redis = await startTestRedis();
  dir = mkdtempSync(join(tmpdir(), 'rein-bad-app-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await redis.stop();
});

/** An app module whose tools factory body is `factory`. */
const appWith = (factory: string, prelude = '') => `import { z } from '${ZOD}';
import { defineAgent, defineApp, defineTool } from '${CORE}';
${prelude}
const echo = defineTool({ name: 'echo', description: 'Says it back.', kind: 'read', parameters: z.object({}), execute: () => 'hi' });
export default defineApp({ agents: [defineAgent({ name: 'a', instructions: 'i', tools: [] })], tools: () => { ${factory} } });
`;

function runWorker(file: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [MAIN], {
    cwd: dir,
    env: {
      PATH: process.env.PATH,
      REDIS_URL: redis.url,
      REIN_APP: `./${file}`,
      LOG_LEVEL: 'silent',
      WORKER_METRICS_PORT: '0',
      REIN_BIND_HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += String(d);
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

describe('a bad app ends the worker with one line', () => {
  it.each([
    ['throws', "throw new Error('no database');", /^rein: app: the tools factory threw: no database$/],
    ['returns null', 'return null;', /^rein: app: the tools factory must return an array of tools, not null$/],
    ['returns a promise', 'return Promise.resolve([echo]);', /^rein: app: the tools factory returned a promise/],
    ['returns duplicate names', 'return [echo, echo];', /^rein: app: tool "echo" is defined twice$/],
    [
      'returns a hand-built {name}',
      "return [{ name: 'x' }];",
      /^rein: app: tools\[0\] \("x"\) is not a tool \(description: .*\); build tools with defineTool$/,
    ],
  ])('a tools factory that %s', async (what, factory, line) => {
    const file = `factory-${what.replace(/\W+/g, '-')}.mjs`;
    writeFileSync(join(dir, file), appWith(factory));
    const { code, stderr } = await runWorker(file);
    expect(code).toBe(1);
    expect(stderr.trim().split('\n'), stderr).toHaveLength(1);
    expect(stderr.trim()).toMatch(line);
  });

  it('a top-level await that never settles', async () => {
    writeFileSync(join(dir, 'stalls.mjs'), appWith('return [echo];', 'await new Promise(() => {});'));
    const { code, stderr } = await runWorker('stalls.mjs');
    expect(code).toBe(1);
    expect(stderr.trim()).toBe('rein: REIN_APP=./stalls.mjs: its top-level await never settles (it waits on nothing that can finish)');
  });
});
