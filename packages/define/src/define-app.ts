import { appVersionSchema } from '@rein/contract';
import { type AgentProfile, HANDOFF_ANSWER, MEMORY_TOOLS } from './agent-profile.js';
import { READ_RESULT_TOOL } from './context-policy.js';
import { CALL_PREFIX, checkDelegation, isDelegationName, TRANSFER_PREFIX } from './delegation.js';
import { ConfigError } from './errors.js';
import { type InputRules, inputRulesSchema, type PiiRules, piiRulesSchema } from './guard-rules.js';
import { type McpServers, mcpServersSchema } from './mcp-server-config.js';
import { type RemoteAgents, remoteAgentsSchema, remoteAgentTool } from './remote-agent-config.js';
import { type Tool, toolValueSchema } from './tool.js';

/**
 * The types of the services Rein hands an app, filled in by the server package: `@rein/core`
 * declares `redis` its ioredis client (this package knows no server). Without it, `unknown`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: declaration merging fills it in
export interface AppServiceTypes {}

/** What an app's tool factory gets: Rein's Redis (a Cluster client in cluster mode), for tools that keep state (name keys with `appStateKey`: one tenant's keys share a slot). */
export interface AppServices {
  redis: AppServiceTypes extends { redis: infer R } ? R : unknown;
}

export interface AppDefinition {
  /**
   * The app's version (an image tag, a commit): every run records the version it started
   * on, and its steps run only on workers of that version. REIN_APP_VERSION overrides it;
   * without either, a hash of what the app declares (`c-…`).
   */
  version?: string;
  agents: readonly AgentProfile[];
  /** The tools, or a factory building them over Rein's services (called once per process). */
  tools: readonly Tool[] | ((services: AppServices) => readonly Tool[]);
  /** The agent a run gets when it names none (default: the first). */
  defaultAgent?: string;
  /** Input-filter and PII rules replacing core's neutral defaults. */
  guards?: { input?: InputRules; pii?: PiiRules };
  /** The answer of a run that stops without one, for agents that set none. */
  handoffAnswer?: string;
  /**
   * MCP servers whose tools join the app's as `<server>__<tool>`: `{command, args?, env?, cwd?}`
   * (stdio) or `{url, headers?}` (Streamable HTTP), plus `optional`, `timeoutMs`, `trustAnnotations`
   * (`false`: its hints are ignored, every tool is a write) and per-tool overrides of what the
   * server's annotations say (`tools: {<tool>: {kind?, approval?, idempotent?}}`).
   */
  mcpServers?: McpServers;
  /**
   * The `trustAnnotations` of every MCP server that does not set its own. `false` is the safe
   * choice for third-party servers: no hint of theirs can lift an approval. Default `true`.
   */
  trustAnnotations?: boolean;
  /**
   * Remote A2A agents, each the tool `call_<name>` `{input}` for the agents that list it:
   * `{url, headers?, description?, approval?, timeoutMs?, optional?}`. A call is a governed
   * write: journaled (a worker that dies mid-call asks the remote task's state, never sends
   * again), approved unless `approval: false`, and cancelled with its run.
   */
  remoteAgents?: RemoteAgents;
}

/** An app: what `REIN_APP`'s default export is, and what `startApi`/`startWorker`/`startApprover` take. */
export interface App {
  readonly kind: 'rein-app';
  readonly version?: string;
  readonly agents: readonly AgentProfile[];
  readonly tools: AppDefinition['tools'];
  readonly defaultAgent: string;
  readonly guards: { input?: InputRules; pii?: PiiRules };
  readonly handoffAnswer: string;
  readonly mcpServers: McpServers;
  readonly remoteAgents: RemoteAgents;
}

/**
 * An app's agents and tools, checked together: a duplicate name, an agent calling a
 * tool the app lacks, or an unknown default agent throws a ConfigError naming it.
 */
export function defineApp(def: AppDefinition): App {
  if (!def.agents?.length) throw new ConfigError('app: at least one agent is required');
  if (typeof def.tools !== 'function' && !Array.isArray(def.tools))
    throw new ConfigError('app: tools must be an array of tools or a factory returning one');
  const duplicateAgent = def.agents.find((a, i) => def.agents.findIndex((b) => b.name === a.name) !== i);
  if (duplicateAgent) throw new ConfigError(`app: agent "${duplicateAgent.name}" is defined twice`);
  const defaultAgent = def.defaultAgent ?? (def.agents[0] as AgentProfile).name;
  if (!def.agents.some((a) => a.name === defaultAgent))
    throw new ConfigError(`app: defaultAgent "${defaultAgent}" is not one of its agents`);
  checkDelegation(def.agents);
  const guards = {
    ...(def.guards?.input ? { input: parseRules(inputRulesSchema, def.guards.input, 'guards.input') } : {}),
    ...(def.guards?.pii ? { pii: parseRules(piiRulesSchema, def.guards.pii, 'guards.pii') } : {}),
  };
  if (def.version !== undefined && !appVersionSchema.safeParse(def.version).success)
    throw new ConfigError(`app: version "${def.version}" is not 1-64 letters, digits, ".", "_" or "-"`);
  const app: App = {
    kind: 'rein-app',
    ...(def.version !== undefined ? { version: def.version } : {}),
    agents: def.agents,
    tools: def.tools,
    defaultAgent,
    guards,
    handoffAnswer: def.handoffAnswer ?? HANDOFF_ANSWER,
    mcpServers: withTrust(parseRules(mcpServersSchema, def.mcpServers ?? {}, 'mcpServers'), def.trustAnnotations),
    remoteAgents: parseRules(remoteAgentsSchema, def.remoteAgents ?? {}, 'remoteAgents'),
  };
  // call_<name> would be both a sub-agent call and the remote agent's tool.
  const shadowed = Object.keys(app.remoteAgents).find((name) => def.agents.some((a) => a.name === name));
  if (shadowed) throw new ConfigError(`app: remote agent "${shadowed}" has the name of one of the app's agents`);
  // call_<name> must not also be an MCP server's tool (`<server>__<tool>`): one name, two tools.
  const underMcp = Object.keys(app.remoteAgents).find((name) =>
    Object.keys(app.mcpServers).some((server) => remoteAgentTool(name).startsWith(`${server}__`)),
  );
  if (underMcp)
    throw new ConfigError(`app: remote agent "${underMcp}" makes ${remoteAgentTool(underMcp)}, the name of an MCP server's tool`);
  if (typeof def.tools !== 'function') checkTools(app, def.tools);
  return app;
}

/** Each server's own `trustAnnotations`, or the app's where it sets none. */
function withTrust(servers: McpServers, trustAnnotations: boolean | undefined): McpServers {
  if (trustAnnotations === undefined) return servers;
  return Object.fromEntries(
    Object.entries(servers).map(([name, server]) => [name, { ...server, trustAnnotations: server.trustAnnotations ?? trustAnnotations }]),
  );
}

/**
 * The tools of an app, its factory called and what it returns checked like a static list:
 * a factory that throws, returns something else than an array of tools, or a promise
 * (tools are built once, synchronously, before the process takes work) is a ConfigError
 * saying so in one line.
 */
export function buildTools(app: App, services: AppServices): readonly Tool[] {
  if (typeof app.tools !== 'function') return app.tools;
  let built: unknown;
  try {
    built = app.tools(services);
  } catch (err) {
    throw new ConfigError(`app: the tools factory threw: ${(err as Error)?.message ?? String(err)}`);
  }
  if (typeof (built as { then?: unknown } | null)?.then === 'function') {
    throw new ConfigError('app: the tools factory returned a promise; it must return the tools (connect lazily inside execute)');
  }
  if (!Array.isArray(built)) throw new ConfigError(`app: the tools factory must return an array of tools, not ${describe(built)}`);
  checkTools(app, built);
  return built;
}

const describe = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value);

/**
 * Every tool is a `defineTool` value, names are unique and cover every agent's allow-list;
 * run again once a factory has built the tools. An MCP server's tools (`<server>__…`) are
 * only known once it answers, so for them the allow-list is checked at execution, as for every call.
 */
export function checkTools(app: App, tools: readonly Tool[]): void {
  const names = new Set<string>();
  for (const [i, tool] of tools.entries()) {
    const shape = toolValueSchema.safeParse(tool);
    if (!shape.success) {
      const name = typeof (tool as { name?: unknown } | null)?.name === 'string' ? ` ("${tool.name}")` : '';
      const issue = shape.error.issues[0];
      const problem = issue?.path.length ? `${issue.path.join('.')}: ${issue.message}` : 'not an object';
      throw new ConfigError(`app: tools[${i}]${name} is not a tool (${problem}); build tools with defineTool`);
    }
    if (tool.name === READ_RESULT_TOOL || (MEMORY_TOOLS as readonly string[]).includes(tool.name))
      throw new ConfigError(`app: tool name "${tool.name}" is Rein's own`);
    if (isDelegationName(tool.name))
      throw new ConfigError(
        `app: tool name "${tool.name}" has the form of a sub-agent call or hand-off (${CALL_PREFIX}…, ${TRANSFER_PREFIX}…)`,
      );
    if (names.has(tool.name)) throw new ConfigError(`app: tool "${tool.name}" is defined twice`);
    names.add(tool.name);
  }
  names.add(READ_RESULT_TOOL); // built in: the registry adds it for agents with a context policy
  for (const t of MEMORY_TOOLS) names.add(t); // built in: the registry adds them for agents with memory
  for (const remote of Object.keys(app.remoteAgents)) names.add(remoteAgentTool(remote)); // built by the registry
  for (const agent of app.agents) {
    const unknown = agent.tools.find((t) => !names.has(t) && !Object.keys(app.mcpServers).some((server) => t.startsWith(`${server}__`)));
    if (unknown) throw new ConfigError(`app: agent "${agent.name}" names tool "${unknown}", which the app does not define`);
  }
  const undo = tools.find((t) => t.compensateWith && !names.has(t.compensateWith.tool));
  if (undo)
    throw new ConfigError(`app: tool "${undo.name}" is compensated by "${undo.compensateWith?.tool}", which the app does not define`);
  // An undo runs after its run, outside the run's ledger: a remote call there could not follow (or resume) its task.
  const remote = Object.keys(app.remoteAgents).map(remoteAgentTool);
  const remoteUndo = tools.find((t) => t.compensateWith && remote.includes(t.compensateWith.tool));
  if (remoteUndo)
    throw new ConfigError(
      `app: tool "${remoteUndo.name}" is compensated by "${remoteUndo.compensateWith?.tool}", a remote agent's call, which cannot be an undo`,
    );
}

export const isApp = (value: unknown): value is App => (value as App | undefined)?.kind === 'rein-app';

function parseRules<T>(
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: Error } },
  value: unknown,
  where: string,
): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ConfigError(`app: ${where} is invalid: ${parsed.error.message}`);
  return parsed.data;
}
