import type { Principal } from '@rein/contract';
import { type AgentCatalog, defineTool, type Tool } from '@rein/define/internal';
import { z } from 'zod';
import { ToolError } from '../../shared/errors.js';
import type { StoreService } from './store-service.js';

const jsonObject = z.record(z.string(), z.unknown());

/**
 * The memory tools of agents with `memory` (defineAgent): items of the store — the same
 * ones `client.store` reads — in the run's user's space, under the agent's namespace. The
 * store's rules hold (value size, items per tenant); `memory_put` is a write like any other
 * (the agent's approval policy, the effect ledger, the decision log when it asks).
 */
export function createMemoryTools(store: StoreService, agents: AgentCatalog): Tool[] {
  const namespaceOf = (agent: string | undefined) => {
    const memory = agent === undefined ? undefined : agents.get(agent).memory;
    if (!memory) throw new ToolError('memory_off', `agent ${agent} has no memory`);
    return [...memory.namespace];
  };
  const owner = (ctx: Principal): Principal => ({ tenantId: ctx.tenantId, userId: ctx.userId, roles: ctx.roles });
  const refused = (err: unknown): never => {
    const e = err as { code?: string; message?: string };
    throw new ToolError(e.code ?? 'memory_failed', e.message ?? String(err));
  };
  // memory_put asks under each agent's own policy: its digest must change when any of them does,
  // so an approval asked under one policy is withdrawn on an upgrade to another (policy/run/version-route.ts).
  const policies = JSON.stringify(
    agents.names().flatMap((name) => {
      const memory = agents.get(name).memory;
      return memory ? [[name, memory.approval?.toString() ?? null]] : [];
    }),
  );
  return [
    defineTool({
      name: 'memory_get',
      description: 'Read one item you remembered earlier, by its key. Returns the value, or null when there is none.',
      kind: 'read',
      parameters: z.object({ key: z.string().min(1).max(512).describe('The key it was remembered under') }),
      honoursIdempotencyKey: true,
      async execute({ key }, ctx) {
        const item = await store.get(owner(ctx), namespaceOf(ctx.agent), key).catch(refused);
        return item ? { key, value: item.value, updated_at: item.updated_at } : null;
      },
    }),
    defineTool({
      name: 'memory_search',
      description:
        'Search what you remembered earlier: items whose value holds every word of the query (all of them, newest first, without one).',
      kind: 'read',
      parameters: z.object({
        query: z.string().max(500).optional().describe('Words the remembered value should contain'),
        limit: z.number().int().min(1).max(50).optional().describe('At most this many items (default 10)'),
      }),
      honoursIdempotencyKey: true,
      async execute({ query, limit }, ctx) {
        const { items } = await store
          .search(owner(ctx), { namespace_prefix: namespaceOf(ctx.agent), query, limit: limit ?? 10, offset: 0 })
          .catch(refused);
        return items.map((i) => ({ key: i.key, value: i.value, updated_at: i.updated_at }));
      },
    }),
    {
      ...defineTool({
        name: 'memory_put',
        description: 'Remember something for later runs of this user: a JSON object under a key (replaces what the key held).',
        kind: 'write',
        parameters: z.object({
          key: z.string().min(1).max(512).describe('A short key, e.g. "preferred_language"'),
          value: jsonObject.describe('What to remember, as a JSON object'),
        }),
        // A put of the same value under the same key leaves the store as it was: safe to repeat.
        honoursIdempotencyKey: true,
        approval: (put, ctx) => {
          const wanted = ctx.agent === undefined ? undefined : agents.get(ctx.agent).memory?.approval?.(put, ctx);
          if (!wanted) return null;
          return { risk: 'high', summary: `Remember "${put.key}"`, ...wanted };
        },
        async execute({ key, value }, ctx) {
          await store.put(owner(ctx), { namespace: namespaceOf(ctx.agent), key, value }).catch(refused);
          return { remembered: key };
        },
      }),
      policySource: policies,
    },
  ];
}
