import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineAgent, defineApp, defineTool } from '@rein/define/internal';
import type { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { z as z3 } from 'zod/v3';
import { loadApp } from '../src/process/load-app.js';
import { createRegistry } from '../src/process/registry.js';
import { ConfigError, ToolError } from '../src/shared/errors.js';

const echo = defineTool({
  name: 'echo',
  description: 'Says it back.',
  kind: 'read',
  parameters: z.object({ text: z.string() }),
  execute: ({ text }) => text,
});
const agent = (tools: string[], name = 'helper') => defineAgent({ name, instructions: 'Help.', tools });
const services = { redis: {} as Redis };

describe('defineTool', () => {
  it('fills the defaults: no approval, not idempotent, an approver decides when a policy names no role', () => {
    const gated = defineTool({
      name: 'gated',
      description: 'Needs a yes.',
      kind: 'write',
      parameters: z.object({ n: z.number() }),
      approval: ({ n }) => (n > 1 ? { risk: 'critical', summary: `n=${n}` } : null),
      execute: () => null,
    });
    const ctx = { tenantId: 't', userId: 'u', roles: ['user' as const], runId: 'r', step: 0, toolCallId: 'c', idempotencyKey: 'k' };
    expect(echo.approval({ text: 'x' }, ctx)).toBeNull();
    expect(echo.honoursIdempotencyKey).toBe(false);
    expect(gated.approval({ n: 2 }, ctx)).toEqual({ risk: 'critical', summary: 'n=2', requiredRole: 'approver' });
    expect(gated.approval({ n: 1 }, ctx)).toBeNull();
  });

  it.each([
    [{ name: 'has space' }, /tool "has space": a tool name/],
    [{ parameters: z.string() }, /tool "t": parameters must be a z.object/],
    [{ parameters: 'nope' }, /tool "t": parameters must be a zod schema/],
    [{ allowedRoles: ['root'] }, /tool "t": unknown role "root"/],
    [{ description: ' ' }, /tool "t": description is required/],
  ])('refuses a bad definition, naming the tool (%o)', (bad, message) => {
    const def = { name: 't', description: 'd', kind: 'read', parameters: z.object({}), execute: () => null, ...bad };
    expect(() => defineTool(def as Parameters<typeof defineTool>[0])).toThrow(message);
  });
  it('names the zod it needs when an app passes a zod 3 schema, instead of failing inside zod 4', () => {
    const def = { name: 't', description: 'd', kind: 'read', parameters: z3.object({ a: z3.string() }), execute: () => null };
    const refused = () => defineTool(def as unknown as Parameters<typeof defineTool>[0]);
    expect(refused).toThrow(ConfigError);
    expect(refused).toThrow(/tool "t": parameters is a zod 3 schema; Rein needs zod >= 4\.1\.5/);
    const output = z3.object({ answer: z3.string() }) as unknown as z.ZodType;
    expect(() => defineAgent({ name: 'a', instructions: 'i', tools: [], output })).toThrow(/agent "a": output is a zod 3 schema/);
  });
});

describe('defineAgent', () => {
  it('turns model and fallbacks into the ordered model list, and fills the limits', () => {
    const a = defineAgent({ name: 'a', instructions: 'i', tools: [], model: 'm1', fallbackModels: ['m2'], limits: { maxSteps: 3 } });
    expect(a.models).toEqual(['m1', 'm2']);
    expect(a.limits).toMatchObject({ maxSteps: 3, maxTokens: 50_000 });
    expect(defineAgent({ name: 'b', instructions: 'i', tools: [] }).models).toBeUndefined();
  });
  it('refuses a bad definition, naming the agent', () => {
    expect(() => defineAgent({ name: 'Bad Name', instructions: 'i', tools: [] })).toThrow(/agent "Bad Name": name/);
    expect(() => defineAgent({ name: 'a', instructions: 'i', tools: ['x', 'x'] })).toThrow(/agent "a": tool "x" is listed twice/);
  });
  it("asks before compensating unless told otherwise, and knows only 'auto', 'ask' and 'never'", () => {
    expect(defineAgent({ name: 'a', instructions: 'i', tools: [] }).compensation).toBe('ask');
    expect(defineAgent({ name: 'a', instructions: 'i', tools: [], compensation: 'auto' }).compensation).toBe('auto');
    expect(() => defineAgent({ name: 'a', instructions: 'i', tools: [], compensation: 'always' as never })).toThrow(/compensation/);
  });
});

describe('defineApp and the registry', () => {
  it('refuses unknown tools, duplicate names and an unknown default agent, naming them', () => {
    expect(() => defineApp({ agents: [agent(['echo', 'ghost'])], tools: [echo] })).toThrow(/agent "helper" names tool "ghost"/);
    expect(() => defineApp({ agents: [agent(['echo'])], tools: [echo, echo] })).toThrow(/tool "echo" is defined twice/);
    expect(() => defineApp({ agents: [agent([]), agent([])], tools: [] })).toThrow(/agent "helper" is defined twice/);
    expect(() => defineApp({ agents: [agent([])], tools: [], defaultAgent: 'other' })).toThrow(/defaultAgent "other"/);
    const undone = { ...echo, kind: 'write' as const, compensateWith: { tool: 'ghost_undo', args: () => ({}) } };
    expect(() => defineApp({ agents: [agent([])], tools: [undone] })).toThrow(/compensated by "ghost_undo"/);
    expect(() => defineApp({ agents: [agent([])], tools: [], guards: { input: { rules: [] } as never } })).toThrow(ConfigError);
  });

  it('checks a tool factory when the registry builds it, as every service does at start', () => {
    const app = defineApp({ agents: [agent(['echo', 'ghost'])], tools: () => [echo] });
    expect(() => createRegistry(app, services)).toThrow(/agent "helper" names tool "ghost"/);
  });

  it('checks what a tool factory returns as strictly as a static list (issue 24 item 5)', () => {
    const built = (tools: () => unknown) => () => createRegistry(defineApp({ agents: [agent([])], tools: tools as never }), services);
    const refusals: Array<[() => unknown, RegExp]> = [
      [
        () => {
          throw new Error('no database');
        },
        /^app: the tools factory threw: no database$/,
      ],
      [() => null, /^app: the tools factory must return an array of tools, not null$/],
      [() => ({ echo }), /^app: the tools factory must return an array of tools, not object$/],
      [async () => [echo], /^app: the tools factory returned a promise/],
      [() => [echo, echo], /^app: tool "echo" is defined twice$/],
      [() => [{ name: 'x' }], /^app: tools\[0\] \("x"\) is not a tool \(description: .+\); build tools with defineTool$/],
      [() => [null], /^app: tools\[0\] is not a tool \(not an object\)/],
      [() => [{ ...echo, execute: 'run' }], /^app: tools\[0\] \("echo"\) is not a tool \(execute: must be a function\)/],
    ];
    for (const [tools, message] of refusals) {
      const attempt = built(tools);
      expect(attempt).toThrow(ConfigError);
      expect(attempt).toThrow(message);
    }
  });

  it('a static list is held to the same shape', () => {
    expect(() => defineApp({ agents: [agent([])], tools: [{ name: 'x' }] as never })).toThrow(/tools\[0\] \("x"\) is not a tool/);
    expect(() => defineApp({ agents: [agent([])], tools: null as never })).toThrow(/app: tools must be an array of tools or a factory/);
  });

  it('gives only the app’s agents; another is unknown_agent; the hand-off is the agent’s, then the app’s', () => {
    const own = defineAgent({ name: 'own', instructions: 'i', tools: [], handoffAnswer: 'Ask Sam.' });
    const { agents, tools } = createRegistry(
      defineApp({ agents: [agent(['echo']), own], tools: [echo], handoffAnswer: 'Ask the desk.' }),
      services,
    );
    expect(agents.defaultAgent).toBe('helper');
    expect([...tools.keys()]).toEqual(['echo']);
    expect(() => agents.get('order-assistant')).toThrow(expect.objectContaining({ code: 'unknown_agent', status: 400 }));
    expect(agents.handoffAnswer('helper')).toBe('Ask the desk.');
    expect(agents.handoffAnswer('own')).toBe('Ask Sam.');
  });
});

describe('loadApp', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rein-app-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const core = new URL('../src/index.ts', import.meta.url).href;

  it('imports a relative file path from the working directory; its default export is the app', async () => {
    writeFileSync(
      join(dir, 'app.mjs'),
      `import { defineApp, defineAgent } from '${core}';\nexport default defineApp({ agents: [defineAgent({ name: 'x', instructions: 'i', tools: [] })], tools: [] });\n`,
    );
    const app = await loadApp('./app.mjs', dir);
    expect(app.agents.map((a) => a.name)).toEqual(['x']);
  }, 30_000); // it imports the whole built core afresh: slow on a loaded machine

  it('says what is wrong with REIN_APP: not an app, not found', async () => {
    writeFileSync(join(dir, 'not-app.mjs'), 'export default { agents: [] };\n');
    await expect(loadApp('./not-app.mjs', dir)).rejects.toThrow(/REIN_APP=.\/not-app.mjs: its default export is not a defineApp/);
    await expect(loadApp('./missing.mjs', dir)).rejects.toThrow(/REIN_APP=.\/missing.mjs: cannot load it/);
    await expect(loadApp('@nobody/no-such-app', dir)).rejects.toThrow(/REIN_APP=@nobody\/no-such-app: no such package/);
  });
});

describe('ToolError', () => {
  it('carries a stable code and whether a retry can help', () => {
    const err = new ToolError('rate_limited', 'slow down', { retryable: true });
    expect(err).toMatchObject({ name: 'ToolError', code: 'rate_limited', retryable: true, message: 'slow down' });
    expect(new ToolError('gone', 'no').retryable).toBe(false);
  });
});

describe('defineApp({ trustAnnotations })', () => {
  const agent = defineAgent({ name: 'a', instructions: 'x', tools: [] });
  it('is the default of every MCP server that sets none; a server setting its own keeps it', () => {
    const app = defineApp({
      agents: [agent],
      tools: [],
      trustAnnotations: false,
      mcpServers: { third: { command: 'node' }, own: { command: 'node', trustAnnotations: true } },
    });
    expect(app.mcpServers.third?.trustAnnotations).toBe(false);
    expect(app.mcpServers.own?.trustAnnotations).toBe(true);
    expect(
      defineApp({ agents: [agent], tools: [], mcpServers: { s: { command: 'node' } } }).mcpServers.s?.trustAnnotations,
    ).toBeUndefined();
  });
});

describe('the definition API in @rein/define', () => {
  it("is what core's root and old module paths re-export: the same functions and classes, so instanceof holds across both", async () => {
    const define = await import('@rein/define');
    const root = await import('../src/index.js');
    for (const name of ['defineTool', 'defineAgent', 'defineApp', 'appStateKey', 'ToolError', 'ConfigError', 'ReinError'] as const) {
      expect(root[name], name).toBe(define[name]);
    }
    expect(defineTool).toBe(define.defineTool);
    expect(new define.ToolError('x', 'y')).toBeInstanceOf(ToolError);
    expect(() => defineApp({ agents: [], tools: [] })).toThrow(define.ConfigError);
  });
});
