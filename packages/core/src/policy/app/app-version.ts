import { createHash } from 'node:crypto';
import { appVersionSchema } from '@rein/contract';
import type { AgentProfile, App, Tool } from '@rein/define/internal';
import { ConfigError } from '../../shared/errors.js';
import { canonicalJson } from './argument-hash.js';
import { toolDigest } from './tool-digest.js';

/** A content version: `c-` and 12 hex digits of the hash of what the app declares. */
export const CONTENT_VERSION_PREFIX = 'c-';

/** What of an agent changes its behaviour: everything it declares (its output schema as JSON Schema). */
function agentContent({ output, ...agent }: AgentProfile) {
  return { ...agent, output: output?.jsonSchema ?? null };
}

/**
 * The version an app's content spells: a stable hash of its canonical declaration —
 * agents (instructions, tools, models, limits, policies), tools (by digest: name, kind,
 * schema, roles, approval policy; and description), MCP server declarations, default
 * agent and hand-off answer. Changing a prompt or a tool's schema changes it; restarting,
 * or a second process over the same app, does not. The tools are the built ones (a
 * factory's), without MCP servers' tools (their declaration stands for them: what a
 * server lists is only known once it answers).
 */
export function contentVersion(app: App, tools: readonly Tool[]): string {
  const declared = {
    agents: app.agents.map(agentContent),
    tools: tools.map((t) => ({ digest: toolDigest(t), description: t.description })).sort((a, b) => (a.digest < b.digest ? -1 : 1)),
    mcpServers: app.mcpServers,
    defaultAgent: app.defaultAgent,
    handoffAnswer: app.handoffAnswer,
  };
  return `${CONTENT_VERSION_PREFIX}${createHash('sha256').update(canonicalJson(declared)).digest('hex').slice(0, 12)}`;
}

/**
 * The version a process runs: REIN_APP_VERSION (`override`, a deploy's image tag), else
 * the app's own `version`, else its content version. A malformed one is a ConfigError.
 */
export function resolveAppVersion(app: App, tools: readonly Tool[], override?: string): string {
  const version = override ?? app.version ?? contentVersion(app, tools);
  const parsed = appVersionSchema.safeParse(version);
  if (!parsed.success) throw new ConfigError(`app version "${version}": ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}
