import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { defineAgent, defineApp, mcpServersSchema } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { mcpGovernance } from '../src/adapters/mcp/mcp-governance.js';
import { mcpObservation } from '../src/adapters/mcp/mcp-result.js';
import { createMcpTool } from '../src/adapters/mcp/mcp-tool.js';
import { mcpToolName } from '../src/adapters/mcp/mcp-tool-name.js';
import { ConfigError, McpToolError } from '../src/shared/errors.js';

describe('MCP governance from annotations', () => {
  it('makes a read-only tool a read that may be re-run', () => {
    expect(mcpGovernance({ readOnlyHint: true })).toEqual({ kind: 'read', approval: null, honoursIdempotencyKey: true });
  });

  it('puts a destructive tool behind a critical approval a supervisor decides', () => {
    expect(mcpGovernance({ readOnlyHint: false, destructiveHint: true })).toEqual({
      kind: 'write',
      approval: { risk: 'critical', requiredRole: 'supervisor' },
      honoursIdempotencyKey: false,
    });
  });

  it('puts a non-destructive write behind a high approval the user may give', () => {
    expect(mcpGovernance({ destructiveHint: false }).approval).toEqual({ risk: 'high', requiredRole: 'user' });
  });

  it('treats a tool without annotations as destructive (the protocol default)', () => {
    expect(mcpGovernance(undefined).approval).toEqual({ risk: 'critical', requiredRole: 'supervisor' });
  });

  it('re-runs a cut-off write only with the idempotent hint and the app opting in', () => {
    expect(mcpGovernance({ idempotentHint: true }).honoursIdempotencyKey).toBe(false);
    expect(mcpGovernance({}, { idempotent: true }).honoursIdempotencyKey).toBe(false);
    expect(mcpGovernance({ idempotentHint: true }, { idempotent: true }).honoursIdempotencyKey).toBe(true);
  });

  it('with trustAnnotations false, ignores every hint: a critical write unless the app says otherwise', () => {
    const lenient = { readOnlyHint: true, destructiveHint: false, idempotentHint: true };
    expect(mcpGovernance(lenient, {}, false)).toEqual({
      kind: 'write',
      approval: { risk: 'critical', requiredRole: 'supervisor' },
      honoursIdempotencyKey: false,
    });
    expect(mcpGovernance(lenient, { kind: 'read' }, false).approval).toBeNull();
    expect(mcpGovernance(undefined, { idempotent: true, approval: { risk: 'high' } }, false)).toEqual({
      kind: 'write',
      approval: { risk: 'high', requiredRole: 'user' },
      honoursIdempotencyKey: true,
    });
  });

  it('lets the app override kind, risk and role', () => {
    expect(mcpGovernance({ readOnlyHint: true }, { kind: 'write' }).approval).toEqual({ risk: 'critical', requiredRole: 'supervisor' });
    expect(mcpGovernance({ destructiveHint: true }, { kind: 'read' }).kind).toBe('read');
    expect(mcpGovernance({ destructiveHint: true }, { approval: { risk: 'high' } }).approval).toEqual({
      risk: 'high',
      requiredRole: 'user',
    });
    expect(mcpGovernance({ destructiveHint: false }, { approval: { requiredRole: 'admin' } }).approval).toEqual({
      risk: 'high',
      requiredRole: 'admin',
    });
  });
});

describe('MCP tool names', () => {
  it('prefixes the server and keeps to the model API characters', () => {
    expect(mcpToolName('files', 'read_file')).toBe('files__read_file');
    expect(mcpToolName('files', 'dir.list all')).toBe('files__dir_list_all');
  });

  it('cuts long names to 64 characters, keeping distinct names distinct', () => {
    const a = mcpToolName('server', `${'x'.repeat(80)}a`);
    const b = mcpToolName('server', `${'x'.repeat(80)}b`);
    expect(a).toMatch(/^[a-zA-Z0-9_-]{64}$/);
    expect(b).toHaveLength(64);
    expect(a).not.toBe(b);
  });
});

describe('MCP results as observations', () => {
  it('joins content blocks, summarising binary ones without their bytes', () => {
    const result: CallToolResult = {
      content: [
        { type: 'text', text: 'two files' },
        { type: 'image', data: 'aGVsbG8=', mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'file:///a.txt', text: 'alpha' } },
        { type: 'resource', resource: { uri: 'file:///b.bin', blob: 'AAAA', mimeType: 'application/octet-stream' } },
        { type: 'resource_link', uri: 'file:///c.txt', name: 'c' },
      ],
    };
    expect(mcpObservation(result)).toBe(
      'two files\n[image image/png, 6 bytes]\n[resource file:///a.txt]\nalpha\n[resource file:///b.bin application/octet-stream, binary]\n[resource link file:///c.txt (c)]',
    );
  });

  it('prefers structured content', () => {
    expect(mcpObservation({ content: [{ type: 'text', text: '{"n":1}' }], structuredContent: { n: 1 } })).toEqual({ n: 1 });
  });

  it('turns isError into a tool error carrying the server text', () => {
    expect(() => mcpObservation({ content: [{ type: 'text', text: 'disk full' }], isError: true })).toThrow(McpToolError);
    expect(() => mcpObservation({ content: [{ type: 'text', text: 'disk full' }], isError: true })).toThrow('disk full');
  });
});

describe('MCP server declarations', () => {
  it('accepts stdio and Streamable HTTP servers with their options', () => {
    const parsed = mcpServersSchema.parse({
      files: {
        command: 'npx',
        args: ['server'],
        env: { A: '1' },
        cwd: '/tmp',
        optional: true,
        tools: { write_file: { idempotent: true } },
      },
      crm: { url: 'https://crm.example/mcp', headers: { authorization: 'Bearer x' }, timeoutMs: 5000 },
    });
    expect(Object.keys(parsed)).toEqual(['files', 'crm']);
  });

  it('refuses names that would make ambiguous tool names, and unknown options', () => {
    expect(mcpServersSchema.safeParse({ a__b: { command: 'x' } }).success).toBe(false);
    expect(mcpServersSchema.safeParse({ 'a.b': { command: 'x' } }).success).toBe(false);
    expect(mcpServersSchema.safeParse({ a: { command: 'x', optinal: true } }).success).toBe(false);
    expect(mcpServersSchema.safeParse({ a: { url: 'ftp://x' } }).success).toBe(false);
    expect(mcpServersSchema.safeParse({ a: { command: 'x', tools: { t: { approval: { risk: 'low' } } } } }).success).toBe(false);
  });
});

describe('MCP servers in defineApp', () => {
  const clerk = defineAgent({ name: 'clerk', instructions: 'File notes.', tools: ['files__write_file'] });

  it('lets agents name a declared server tools before the server has listed them', () => {
    const app = defineApp({ agents: [clerk], tools: [], mcpServers: { files: { command: 'mcp-files', args: ['/tmp'] } } });
    expect(app.mcpServers).toEqual({ files: { command: 'mcp-files', args: ['/tmp'] } });
  });

  it('still refuses a tool of an undeclared server', () => {
    expect(() => defineApp({ agents: [clerk], tools: [] })).toThrow('names tool "files__write_file", which the app does not define');
  });

  it('refuses a bad declaration, naming it', () => {
    const bad = () => defineApp({ agents: [clerk], tools: [], mcpServers: { files: { url: 'not a url' } } as never });
    expect(bad).toThrow(ConfigError);
    expect(bad).toThrow('mcpServers');
  });
});

describe('MCP tools with a compensating tool', () => {
  const def = { name: 'log_call', inputSchema: { type: 'object' as const }, annotations: { destructiveHint: false } };
  const base = { server: 'crm', validate: Object.assign(() => true, { errors: null }) as never, call: async () => ({ content: [] }) };
  const compensateWith = { tool: 'crm__delete_call', args: (_a: unknown, r: unknown) => ({ id: (r as { id: string }).id }) };

  it('takes compensateWith from the app, for a write', () => {
    const [override] = Object.values(
      mcpServersSchema.parse({ crm: { url: 'https://crm.example/mcp', tools: { log_call: { compensateWith } } } }).crm?.tools ?? {},
    );
    expect(createMcpTool(def, { ...base, override }).compensateWith?.tool).toBe('crm__delete_call');
    expect(createMcpTool({ ...def, annotations: { readOnlyHint: true } }, { ...base, override }).compensateWith).toBeUndefined();
  });

  it('refuses a compensateWith without an args function', () => {
    const bad = { crm: { url: 'https://crm.example/mcp', tools: { log_call: { compensateWith: { tool: 'x', args: {} } } } } };
    expect(mcpServersSchema.safeParse(bad).success).toBe(false);
  });
});
