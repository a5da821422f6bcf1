import type { Tool } from '@rein/define/internal';
import { AgentCatalog, type App, type AppServices, buildTools } from '@rein/define/internal';
import { RunStore } from '../adapters/redis/run-store.js';
import { withFaultInjection } from '../adapters/resilience/fault-injection.js';
import { createReadResultTool } from '../policy/step/read-result.js';
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
export function createRegistry(app: App, services: AppServices, opts: { faultInjection?: boolean } = {}): Registry {
  const built = buildTools(app, services);
  const tools = new Map(built.map((t) => [t.name, opts.faultInjection ? withFaultInjection(t, services.redis) : t]));
  // read_result only reads step records; the TTL argument of the store is for writes.
  if (app.agents.some((a) => a.context)) {
    const readResult = createReadResultTool(new RunStore(services.redis, 0));
    tools.set(readResult.name, readResult);
  }
  return {
    tools,
    agents: new AgentCatalog(app.agents, app.defaultAgent, app.handoffAnswer),
    inputFilter: createInputFilter(app.guards.input),
  };
}
