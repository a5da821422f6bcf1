import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/** The fixture over stdio, as a program: an app declares it as `{command: process.execPath, args: [MCP_FIXTURE_MAIN]}`. */
export const MCP_FIXTURE_MAIN = fileURLToPath(new URL('./mcp-fixture-main.js', import.meta.url));

/** One effect the fixture applied: which tool, with what, under which idempotency key. */
export interface FixtureEffect {
  tool: string;
  args: Record<string, unknown>;
  key: string | undefined;
}

/**
 * What the fixture server remembers, shared by all its sessions: notes, every call it
 * received (with the `_meta` idempotency key), the effects it applied (one per key),
 * and hooks a test uses to hold a write after its effect, as if the reply were lost.
 */
export class McpFixtureState {
  readonly notes = new Map<string, string>([['welcome', 'Hello from the fixture']]);
  readonly calls: Array<{ tool: string; key: string | undefined }> = [];
  readonly effects: FixtureEffect[] = [];
  readonly results = new Map<string, string>();
  /** Calls of `hang` the client cancelled (its abort reached the server). */
  cancelled = 0;
  /** How the server dies mid-call (`append_then_die`): the stdio program exits, the HTTP one drops its sockets. */
  die: () => void = () => {};
  private held: Promise<void> | undefined;
  private releaseHeld: (() => void) | undefined;

  /** Writes apply their effect, then wait to reply until `release()`. */
  holdWrites() {
    this.held = new Promise((resolve) => {
      this.releaseHeld = resolve;
    });
  }

  release() {
    this.releaseHeld?.();
    this.held = undefined;
  }

  /** Applies a write once per idempotency key; a repeat gets the first reply. */
  async write(tool: string, args: Record<string, unknown>, key: string | undefined, apply: () => string): Promise<string> {
    this.calls.push({ tool, key });
    const seen = key === undefined ? undefined : this.results.get(key);
    if (seen !== undefined) return seen;
    const reply = apply();
    this.effects.push({ tool, args, key });
    if (key !== undefined) this.results.set(key, reply);
    await this.held;
    return reply;
  }
}

const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
const keyOf = (meta: Record<string, unknown> | undefined) => meta?.['rein/idempotencyKey'] as string | undefined;

/**
 * The MCP server Rein's tests run against, built with the SDK: a read tool, a
 * destructive and an idempotent write (both de-duplicating on `_meta`), a write after
 * whose effect the server dies, a tool that hangs until cancelled, one that reports an error, and one that adds a tool (so the
 * client gets `tools/list_changed`).
 */
export function createMcpFixtureServer(state: McpFixtureState): McpServer {
  const server = new McpServer({ name: 'rein-fixture', version: '1.0.0' });
  server.registerTool(
    'read_note',
    {
      title: 'Read a note',
      description: 'Returns the text of a note by id.',
      inputSchema: { id: z.string().min(1) },
      outputSchema: { id: z.string(), text: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ id }, extra) => {
      state.calls.push({ tool: 'read_note', key: keyOf(extra._meta) });
      const note = state.notes.get(id);
      if (note === undefined) return { ...text(`no note "${id}"`), isError: true };
      return { ...text(note), structuredContent: { id, text: note } };
    },
  );
  server.registerTool(
    'delete_note',
    {
      description: 'Deletes a note for good.',
      inputSchema: { id: z.string().min(1) },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    async ({ id }, extra) =>
      text(
        await state.write('delete_note', { id }, keyOf(extra._meta), () => {
          state.notes.delete(id);
          return `deleted note ${id} (key ${keyOf(extra._meta)})`;
        }),
      ),
  );
  server.registerTool(
    'append_note',
    {
      description: 'Appends text to a note (creating it).',
      inputSchema: { id: z.string().min(1), text: z.string() },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    },
    async ({ id, text: more }, extra) =>
      text(
        await state.write('append_note', { id, text: more }, keyOf(extra._meta), () => {
          state.notes.set(id, `${state.notes.get(id) ?? ''}${more}`);
          return `note ${id} is now ${JSON.stringify(state.notes.get(id))} (key ${keyOf(extra._meta)})`;
        }),
      ),
  );
  server.registerTool(
    'append_then_die',
    {
      description: 'Appends text to a note, then the server dies before it answers.',
      inputSchema: { id: z.string().min(1), text: z.string() },
      annotations: { readOnlyHint: false, destructiveHint: false },
    },
    async ({ id, text: more }, extra) => {
      await state.write('append_then_die', { id, text: more }, keyOf(extra._meta), () => {
        state.notes.set(id, `${state.notes.get(id) ?? ''}${more}`);
        return 'appended';
      });
      state.die();
      return new Promise<never>(() => {});
    },
  );
  server.registerTool(
    'hang',
    { description: 'Never answers (until the caller gives up).', annotations: { readOnlyHint: true } },
    (extra) =>
      new Promise((_, reject) => {
        extra.signal.addEventListener('abort', () => {
          state.cancelled++;
          reject(new Error('cancelled'));
        });
      }),
  );
  server.registerTool('fail', { description: 'Always reports an error.', annotations: { readOnlyHint: true } }, async () => ({
    ...text('the fail tool always fails'),
    isError: true,
  }));
  server.registerTool(
    'add_tool',
    { description: 'Adds the tool "extra" to this server.', annotations: { readOnlyHint: false, destructiveHint: false } },
    async () => {
      server.registerTool('extra', { description: 'Appeared later.', annotations: { readOnlyHint: true } }, async () => text('extra!'));
      return text('added "extra"');
    },
  );
  return server;
}

/** The fixture over Streamable HTTP on 127.0.0.1 (one McpServer per session, one shared state). */
export async function startMcpFixtureHttp(state: McpFixtureState, port = 0): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http: Server = createServer(async (req, res) => {
    const id = req.headers['mcp-session-id'];
    let transport = typeof id === 'string' ? sessions.get(id) : undefined;
    if (!transport) {
      const fresh = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (sid) => {
          sessions.set(sid, fresh);
        },
      });
      fresh.onclose = () => {
        if (fresh.sessionId) sessions.delete(fresh.sessionId);
      };
      await createMcpFixtureServer(state).connect(fresh);
      transport = fresh;
    }
    await transport.handleRequest(req, res);
  });
  state.die = () => http.closeAllConnections();
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    async close() {
      await Promise.all([...sessions.values()].map((t) => t.close()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
