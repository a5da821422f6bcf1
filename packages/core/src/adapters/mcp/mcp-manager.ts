import type { Tool as McpToolDefinition } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig, McpServers, Tool } from '@rein/define/internal';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { McpServerStartError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Metrics } from '../../shared/metrics.js';
import { McpConnection } from './mcp-connection.js';
import { createMcpTool } from './mcp-tool.js';

// ajv-formats is CommonJS: its default export arrives wrapped under NodeNext.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export interface McpManagerDeps {
  logger: Logger;
  metrics: Metrics;
}

/**
 * The MCP servers of an app, as seen by one process: one client per server, connected
 * at `start`, their tools kept in the process's tool map (added and removed as the
 * servers' lists change, so the next step sees the new list). A required server that
 * cannot start fails `start`; an optional one leaves its tools out and keeps trying.
 */
export class McpManager {
  private readonly connections = new Map<string, McpConnection>();
  /** Names each server's tools hold in the tool map right now. */
  private readonly installed = new Map<string, Set<string>>();
  private readonly ajv = addFormats(new Ajv({ strict: false, validateSchema: false, allErrors: true }));

  constructor(
    private readonly servers: McpServers,
    private readonly tools: Map<string, Tool>,
    private readonly deps: McpManagerDeps,
  ) {}

  async start(): Promise<void> {
    const entries = Object.entries(this.servers);
    const results = await Promise.allSettled(entries.map(([name, config]) => this.open(name, config)));
    const failed = results.findIndex((r, i) => r.status === 'rejected' && !entries[i]?.[1].optional);
    if (failed >= 0) {
      await this.close();
      throw new McpServerStartError(entries[failed]?.[0] ?? '', (results[failed] as PromiseRejectedResult).reason);
    }
  }

  private async open(name: string, config: McpServerConfig): Promise<void> {
    const connection = new McpConnection(
      name,
      config,
      {
        onTools: (defs) => this.install(name, config, defs, connection),
        onUp: (up) => this.deps.metrics.mcpServerUp.set({ server: name }, up ? 1 : 0),
      },
      this.deps.logger,
    );
    this.connections.set(name, connection);
    this.deps.metrics.mcpServerUp.set({ server: name }, 0);
    try {
      await connection.connect();
    } catch (err) {
      if (!config.optional) throw err;
      this.deps.logger.warn(
        { server: name, err: (err as Error).message },
        'optional MCP server unavailable; its tools are absent until it starts',
      );
      connection.scheduleReconnect();
    }
  }

  /** Replaces the server's tools in the map with its current list. */
  private install(server: string, config: McpServerConfig, defs: McpToolDefinition[], connection: McpConnection) {
    const previous = this.installed.get(server) ?? new Set<string>();
    for (const name of previous) this.tools.delete(name);
    const current = new Set<string>();
    for (const def of defs) {
      const { $schema: _dialect, $id: _id, ...schema } = def.inputSchema as Record<string, unknown>;
      let validate: ReturnType<Ajv['compile']>;
      try {
        validate = this.ajv.compile(schema);
      } catch (err) {
        this.deps.logger.warn(
          { server, tool: def.name, err: (err as Error).message },
          'MCP tool left out: its input schema does not compile',
        );
        continue;
      }
      const tool = createMcpTool(def, {
        server,
        override: config.tools?.[def.name],
        trustAnnotations: config.trustAnnotations,
        timeoutMs: config.timeoutMs,
        validate,
        call: (name, args, opts) => connection.call(name, args, opts),
      });
      if (this.tools.has(tool.name)) {
        this.deps.logger.warn({ server, tool: def.name, name: tool.name }, 'MCP tool left out: its Rein name is already taken');
        continue;
      }
      this.tools.set(tool.name, tool);
      current.add(tool.name);
    }
    this.installed.set(server, current);
    const unknown = Object.keys(config.tools ?? {}).filter((t) => !defs.some((d) => d.name === t));
    if (unknown.length) this.deps.logger.warn({ server, tools: unknown }, 'overrides name tools the MCP server does not list');
    this.deps.logger.info({ server, tools: [...current] }, 'MCP tools listed');
  }

  async close(): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.close().catch(() => {})));
    this.connections.clear();
  }
}
