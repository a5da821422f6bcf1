import type { Tool } from '@rein/define/internal';
import { AgentCatalog, type App, type AppServices, buildTools } from '@rein/define/internal';
import { RunStore } from '../adapters/redis/run-store.js';
import { withFaultInjection } from '../adapters/resilience/fault-injection.js';
import type { RemoteAgents } from '../features/remote-agents/remote-agents.js';
import { createMemoryTools } from '../features/store/memory-tools.js';
import type { StoreService } from '../features/store/store-service.js';
import { createReadResultTool } from '../policy/step/read-result.js';
import { ConfigError } from '../shared/errors.js';
import { createInputFilter, type InputFilter } from '../shared/guards/input-filter.js';

/** What every service (and the test harnesses) runs an app with: one place builds it. */
export interface Registry {
  tools: Map<string, Tool>;
  agents: AgentCatalog;
  inputFilter: InputFilter;
}

/**
 * Builds the app's tools over Rein's services, checks them against its agents (a
 * ConfigError names the offender), and wires the app's input filter. (The PII masker
 * comes from `app.guards.pii` earlier: the logger needs it before Redis is up.)
 */
export function createRegistry(
  app: App,
  services: AppServices,
  opts: { faultInjection?: boolean; memory?: StoreService; remoteAgents?: RemoteAgents } = {},
): Registry {
  const built = buildTools(app, services);
  const tools = new Map(built.map((t) => [t.name, opts.faultInjection ? withFaultInjection(t, services.redis) : t]));
  const agents = new AgentCatalog(app.agents, app.defaultAgent, app.handoffAnswer);
  // read_result only reads step records; the TTL argument of the store is for writes.
  if (app.agents.some((a) => a.context)) {
    const readResult = createReadResultTool(new RunStore(services.redis, 0));
    tools.set(readResult.name, readResult);
  }
  // Agents with memory read and write the store (the same items client.store reads).
  if (app.agents.some((a) => a.memory)) {
    if (!opts.memory) throw new ConfigError('an agent has memory, but this process was given no store for it');
    for (const tool of createMemoryTools(opts.memory, agents)) tools.set(tool.name, tool);
  }
  // Remote A2A agents: a call_<name> tool each, built over the process's clients.
  if (Object.keys(app.remoteAgents).length) {
    if (!opts.remoteAgents) throw new ConfigError('the app declares remote agents, but this process was given no clients for them');
    for (const tool of opts.remoteAgents.tools) tools.set(tool.name, tool);
  }
  return { tools, agents, inputFilter: createInputFilter(app.guards.input) };
}
