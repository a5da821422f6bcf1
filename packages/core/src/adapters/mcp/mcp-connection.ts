import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type CallToolResult, ErrorCode, McpError, type Tool as McpToolDefinition } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '@rein/define/internal';
import { McpToolError, McpUnavailableError, ToolOutcomeUnknownError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { McpStdioTransport } from './mcp-stdio-transport.js';

export interface McpConnectionEvents {
  /** The server's current tool list: after every (re)connect and every `tools/list_changed`. */
  onTools(tools: McpToolDefinition[]): void;
  onUp(up: boolean): void;
}

const RECONNECT_MIN_MS = 250;
const START_TIMEOUT_MS = 30_000;
const RECONNECT_MAX_MS = 30_000;
/** The executor's abort signal bounds every call; this only lifts the SDK's own 60 s default out of its way. */
const SDK_REQUEST_TIMEOUT_MS = 24 * 3600 * 1000;

/** A connection refused: the request never reached the server (any other link failure may have). */
function refused(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if ((e as NodeJS.ErrnoException).code === 'ECONNREFUSED') return true;
  }
  return false;
}

/**
 * The one MCP client of this process for one server. `connect` is the first attempt
 * (its failure is the caller's to judge); after a connection is lost — the stdio
 * process died, the HTTP session ended — it reconnects in the background with a
 * growing delay until `close`, and calls meanwhile fail fast as McpUnavailableError.
 */
export class McpConnection {
  private client: Client | undefined;
  private connecting: Client | undefined;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = RECONNECT_MIN_MS;

  constructor(
    readonly server: string,
    private readonly config: McpServerConfig,
    private readonly events: McpConnectionEvents,
    private readonly logger: Logger,
  ) {}

  private transport(): Transport {
    if ('command' in this.config) {
      const { command, args, env, cwd } = this.config;
      // Process groups are POSIX: elsewhere the SDK's transport, which signals the server itself only.
      if (process.platform !== 'win32') return new McpStdioTransport({ command, args, env, cwd });
      return new StdioClientTransport({ command, ...(args ? { args } : {}), ...(env ? { env } : {}), ...(cwd ? { cwd } : {}) });
    }
    const { url, headers } = this.config;
    return new StreamableHTTPClientTransport(new URL(url), headers ? { requestInit: { headers } } : {});
  }

  async connect(): Promise<void> {
    const client = new Client(
      { name: 'rein', version: '1' },
      {
        listChanged: {
          tools: {
            autoRefresh: false, // refreshTools pages through the whole list
            onChanged: (err) => {
              if (err) this.logger.warn({ server: this.server, err: err.message }, 'MCP tools/list_changed failed');
              else
                void this.refreshTools().catch((e: Error) =>
                  this.logger.warn({ server: this.server, err: e.message }, 'MCP tool refresh failed'),
                );
            },
          },
        },
      },
    );
    client.onclose = () => this.lost(client);
    client.onerror = (err) => this.logger.debug({ server: this.server, err: err.message }, 'MCP transport error');
    // A server that does not answer `initialize` and its tool list in time is stopped, as is
    // one still starting when this connection is closed.
    this.connecting = client;
    try {
      await client.connect(this.transport(), { timeout: this.config.startTimeoutMs ?? START_TIMEOUT_MS });
      if (this.closed) throw new Error('closed while connecting');
      this.client = client;
      await this.refreshTools();
    } catch (err) {
      this.client = undefined;
      client.onclose = undefined;
      await client.close().catch(() => {});
      throw err;
    } finally {
      this.connecting = undefined;
    }
    this.retryDelayMs = RECONNECT_MIN_MS;
    this.events.onUp(true);
    this.logger.info({ server: this.server }, 'MCP server connected');
  }

  private async refreshTools(): Promise<void> {
    const client = this.client;
    if (!client) return;
    const tools: McpToolDefinition[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.config.startTimeoutMs ?? START_TIMEOUT_MS });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    if (client === this.client) this.events.onTools(tools);
  }

  private lost(client: Client) {
    if (client !== this.client) return;
    this.client = undefined;
    this.events.onUp(false);
    if (this.closed) return;
    this.logger.warn({ server: this.server }, 'MCP server connection lost; reconnecting');
    this.scheduleReconnect();
  }

  /** Keeps trying after a failed optional start or a lost connection, until `close`. */
  scheduleReconnect() {
    if (this.closed || this.retryTimer) return;
    this.retryTimer = setTimeout(async () => {
      this.retryTimer = undefined;
      try {
        await this.connect();
      } catch (err) {
        this.logger.warn({ server: this.server, err: (err as Error).message, retryInMs: this.retryDelayMs }, 'MCP reconnect failed');
        this.retryDelayMs = Math.min(RECONNECT_MAX_MS, this.retryDelayMs * 2);
        this.scheduleReconnect();
      }
    }, this.retryDelayMs);
    this.retryTimer.unref();
  }

  async call(tool: string, args: Record<string, unknown>, opts: { signal: AbortSignal; idempotencyKey: string }): Promise<CallToolResult> {
    const client = this.client;
    if (!client) throw new McpUnavailableError(this.server);
    try {
      const result = await client.callTool(
        { name: tool, arguments: args, _meta: { 'rein/idempotencyKey': opts.idempotencyKey } },
        undefined,
        { signal: opts.signal, timeout: SDK_REQUEST_TIMEOUT_MS },
      );
      return result as CallToolResult;
    } catch (err) {
      if (opts.signal.aborted) throw err;
      // A JSON-RPC error is the server answering: the call failed, with the server's reason.
      if (err instanceof McpError && err.code !== ErrorCode.ConnectionClosed) throw new McpToolError(err.message);
      this.lost(client);
      void client.close().catch(() => {});
      if (refused(err)) throw new McpUnavailableError(this.server, err);
      // Anything else (the process died, the session or the socket is gone) is the link, lost
      // with the request out: the server may have applied it. Either way, start over.
      throw new ToolOutcomeUnknownError(`the connection to MCP server "${this.server}" was lost while the call ran`, err);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const clients = [this.client, this.connecting];
    this.client = undefined;
    await Promise.all(clients.map((c) => c?.close()));
  }
}
