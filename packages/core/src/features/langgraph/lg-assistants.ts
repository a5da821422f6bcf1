import type { z } from 'zod';
import { toolJsonSchema } from '../../policy/app/tool-digest.js';
import { NODES } from '../../policy/langgraph/lg-shapes.js';
import { NotFoundError } from '../../shared/errors.js';
import { given, type LangGraphServiceDeps, matches, page } from './lg-common.js';
import type { assistantSearchSchema } from './lg-schemas.js';

/** Assistants are the app's agents: listed, read, drawn as a graph, described by schemas. */
export function lgAssistants(deps: Pick<LangGraphServiceDeps, 'agents' | 'tools' | 'appVersion'>) {
  function assistant(name: string) {
    if (!deps.agents.has(name)) throw new NotFoundError(`assistant ${name}`);
    const profile = deps.agents.get(name);
    const at = new Date(0).toISOString();
    return {
      assistant_id: profile.name,
      graph_id: profile.name,
      name: profile.name,
      ...(profile.description ? { description: profile.description } : {}),
      config: {},
      context: {},
      metadata: { rein_app_version: deps.appVersion, tools: [...profile.tools] },
      version: 1,
      created_at: at,
      updated_at: at,
    };
  }

  return {
    search(q: z.infer<typeof assistantSearchSchema>) {
      const all = deps.agents
        .names()
        .map(assistant)
        .filter((a) => (!given(q.graph_id) || a.graph_id === q.graph_id) && (!given(q.name) || a.name === q.name))
        .filter((a) => matches(a.metadata, q.metadata));
      return page(all, q);
    },
    get: assistant,
    graph(name: string) {
      const profile = deps.agents.get(assistant(name).graph_id);
      return {
        nodes: [
          { id: '__start__', name: '__start__' },
          { id: NODES.agent, name: NODES.agent, data: { model: profile.models?.[0] ?? null } },
          { id: NODES.tools, name: NODES.tools, data: { tools: [...profile.tools] } },
          { id: '__end__', name: '__end__' },
        ],
        edges: [
          { source: '__start__', target: NODES.agent },
          { source: NODES.agent, target: NODES.tools, conditional: true },
          { source: NODES.tools, target: NODES.agent },
          { source: NODES.agent, target: '__end__', conditional: true },
        ],
      };
    },
    /** Input is a human message; state and output are messages (and the agent's declared output); the tools' schemas are the config. */
    schemas(name: string) {
      const profile = deps.agents.get(assistant(name).graph_id);
      const messages = {
        type: 'object' as const,
        properties: { messages: { type: 'array' as const, items: { type: 'object' as const } } },
      };
      const tools = Object.fromEntries(
        profile.tools.flatMap((t) => {
          const tool = deps.tools.get(t);
          return tool ? [[t, toolJsonSchema(tool)]] : [];
        }),
      );
      return {
        graph_id: profile.name,
        input_schema: { ...messages, required: ['messages'] },
        output_schema: profile.output ? profile.output.jsonSchema.schema : messages,
        state_schema: messages,
        config_schema: { type: 'object' as const, properties: {}, 'x-rein-tools': tools },
        context_schema: null,
      };
    },
  };
}
