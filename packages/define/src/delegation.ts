import { z } from 'zod';
import type { AgentProfile } from './agent-profile.js';
import { ConfigError } from './errors.js';

/**
 * How an agent uses other agents, as tools the model sees: `call_<agent>` ({input}) runs
 * the sub-agent as a child run whose answer is the observation; `transfer_to_<agent>`
 * ({reason?}) hands the same run to the other agent. Names and specs only: the engine
 * carries them out (core's engine/call-plan.ts, engine/child-runs.ts).
 */

export const CALL_PREFIX = 'call_';
export const TRANSFER_PREFIX = 'transfer_to_';

/** What of an agent delegation looks at (an AgentProfile). */
export type Delegating = Pick<AgentProfile, 'name' | 'agents' | 'handoffs'>;

export const callArgumentsSchema = z.object({ input: z.string().trim().min(1).max(100_000) }).strict();
export const transferArgumentsSchema = z.object({ reason: z.string().max(2000).optional() }).strict();

/** What a tool name asks of the agent, if it names one of its sub-agents or hand-offs. */
export type Delegation = { kind: 'call' | 'transfer'; agent: string };

export function delegationOf(profile: Omit<Delegating, 'name'>, toolName: string): Delegation | null {
  if (toolName.startsWith(CALL_PREFIX)) {
    const agent = toolName.slice(CALL_PREFIX.length);
    if (profile.agents?.includes(agent)) return { kind: 'call', agent };
  }
  if (toolName.startsWith(TRANSFER_PREFIX)) {
    const agent = toolName.slice(TRANSFER_PREFIX.length);
    if (profile.handoffs?.includes(agent)) return { kind: 'transfer', agent };
  }
  return null;
}

/** Whether a tool name is of the delegation form (an app's own tool may not take such a name). */
export const isDelegationName = (name: string) => name.startsWith(CALL_PREFIX) || name.startsWith(TRANSFER_PREFIX);

const parametersOf = (schema: z.ZodType) => {
  const { $schema: _ignored, ...parameters } = z.toJSONSchema(schema) as Record<string, unknown>;
  return parameters;
};
const CALL_PARAMETERS = parametersOf(callArgumentsSchema);
const TRANSFER_PARAMETERS = parametersOf(transferArgumentsSchema);

/** The tool specs of an agent's sub-agents and hand-offs, described by the target agents' `description`. */
export function delegationSpecs(profile: Delegating, describe: (agent: string) => string | undefined) {
  const spec = (name: string, description: string, parameters: Record<string, unknown>) => ({
    type: 'function' as const,
    function: { name, description, parameters },
  });
  return [
    ...(profile.agents ?? []).map((a) =>
      spec(`${CALL_PREFIX}${a}`, `Ask the "${a}" agent and get its answer. ${describe(a) ?? ''}`.trim(), CALL_PARAMETERS),
    ),
    ...(profile.handoffs ?? []).map((a) =>
      spec(`${TRANSFER_PREFIX}${a}`, `Hand this conversation over to the "${a}" agent. ${describe(a) ?? ''}`.trim(), TRANSFER_PARAMETERS),
    ),
  ];
}

/**
 * An app's agents use each other soundly: every name in `agents` and `handoffs` is an
 * agent of the app, and calls do not go round in a circle (a circle is deeper than any
 * depth limit; a circle of hand-offs is fine: one run, bounded by its steps).
 */
export function checkDelegation(agents: readonly Delegating[]): void {
  const known = new Set(agents.map((a) => a.name));
  for (const a of agents) {
    for (const [field, names] of [
      ['agents', a.agents ?? []],
      ['handoffs', a.handoffs ?? []],
    ] as const) {
      const unknown = names.find((n) => !known.has(n));
      if (unknown)
        throw new ConfigError(
          `app: agent "${a.name}" names ${field === 'agents' ? 'sub-agent' : 'hand-off'} "${unknown}", which the app does not define`,
        );
    }
  }
  const calls = new Map(agents.map((a) => [a.name, a.agents ?? []]));
  const visiting: string[] = [];
  const done = new Set<string>();
  const visit = (name: string): void => {
    if (done.has(name)) return;
    const at = visiting.indexOf(name);
    if (at >= 0) throw new ConfigError(`app: sub-agents call each other in a circle: ${[...visiting.slice(at), name].join(' → ')}`);
    visiting.push(name);
    for (const next of calls.get(name) ?? []) visit(next);
    visiting.pop();
    done.add(name);
  };
  for (const a of agents) visit(a.name);
}
