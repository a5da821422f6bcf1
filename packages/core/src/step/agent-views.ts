import type { ChatMessage } from '@rein/contract';
import type { AgentCatalog, AgentProfile, Tool } from '@rein/define/internal';
import { delegationSpecs, toolSpec } from '@rein/define/internal';
import { READ_RESULT_TOOL } from '../policy/step/context-policy.js';

export type ToolSpec = ReturnType<typeof toolSpec>;

/**
 * An agent as the model sees it — its tool specs, their names, its system message, the
 * tools it may call — derived once and kept while the agent's tools stay the same, so a
 * step recomputes nothing (nor the token counts kept beside these objects).
 */
export function createAgentViews(tools: Map<string, Tool>, agents: AgentCatalog) {
  // A tool's JSON schema is derived from its zod schema once, not on every step.
  const specs = new WeakMap<Tool, ToolSpec>();
  // …and an agent's list stays the same array while its tools do (an MCP server's list may
  // change between steps), so what is derived from the list (its token count) is kept too.
  const specLists = new WeakMap<AgentProfile, ToolSpec[]>();
  // Sub-agents and hand-offs are tools too, as the model sees them: fixed per agent.
  const delegations = new WeakMap<AgentProfile, ReturnType<typeof delegationSpecs>>();
  const toolNames = new WeakMap<ToolSpec[], string[]>();
  const systemMessages = new WeakMap<AgentProfile, ChatMessage>();

  const delegationOf = (profile: AgentProfile) => {
    let list = delegations.get(profile);
    if (!list) {
      list = delegationSpecs(profile, (agent) => (agents.has(agent) ? agents.get(agent).description : undefined));
      delegations.set(profile, list);
    }
    return list;
  };

  return {
    /** The tool specs sent with the agent's model calls. */
    specs(profile: AgentProfile): ToolSpec[] {
      const own = profile.tools.flatMap((name) => {
        const tool = tools.get(name);
        if (!tool) return [];
        let spec = specs.get(tool);
        if (!spec) {
          spec = toolSpec(tool);
          specs.set(tool, spec);
        }
        return [spec];
      });
      const list = [...own, ...delegationOf(profile)];
      const last = specLists.get(profile);
      if (last && last.length === list.length && last.every((spec, i) => spec === list[i])) return last;
      specLists.set(profile, list);
      return list;
    },
    /** A spec list's tool names (the journal keeps the list's hash with the array). */
    names(list: ToolSpec[]): string[] {
      let names = toolNames.get(list);
      if (!names) {
        names = list.map((t) => t.function.name);
        toolNames.set(list, names);
      }
      return names;
    },
    /** The system message, one object per agent: its token count is kept with it. */
    system(profile: AgentProfile): ChatMessage {
      let m = systemMessages.get(profile);
      if (m?.content !== profile.instructions) {
        m = { role: 'system', content: profile.instructions };
        systemMessages.set(profile, m);
      }
      return m;
    },
    /** The tools an agent may call (a plan may use nothing else; read_result is not a plan step). */
    callable(profile: AgentProfile): Map<string, Tool> {
      return new Map(
        profile.tools
          .flatMap((name) => (name === READ_RESULT_TOOL ? [] : [[name, tools.get(name)] as const]))
          .filter((e): e is [string, Tool] => e[1] !== undefined),
      );
    },
  };
}

export type AgentViews = ReturnType<typeof createAgentViews>;
