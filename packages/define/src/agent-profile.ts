import { type Limits, limitsSchema, type Versioning, versioningSchema } from '@rein/contract';
import { z } from 'zod';
import { type ContextPolicy, contextPolicySchema, READ_RESULT_TOOL } from './context-policy.js';
import { ConfigError, InvalidRequestError } from './errors.js';
import { type OutputSpec, outputSpec } from './output-spec.js';
import { type PlanOptions, planOptionsSchema } from './plan-options.js';
import type { ApprovalRequirement, ToolContext } from './tool.js';
import { zodSchemaProblem } from './zod-schema.js';

/** An agent as the runtime holds it: `defineAgent`'s value, with its defaults filled in. */
export interface AgentProfile {
  name: string;
  /** The system prompt: role and behaviour boundary (soft; the runtime enforces the hard ones). */
  instructions: string;
  /** Tool names this agent may call; anything else the model asks for is refused (I7). */
  tools: readonly string[];
  /** Models in order, instead of REIN_MODEL and REIN_FALLBACK_MODELS; absent means those. */
  models?: readonly string[];
  limits: Limits;
  /** Upper bound of one completion, further capped by what the token budget has left. */
  maxCompletionTokens: number;
  /** The answer a run gets when it stops without one (budget, deadline, failures); absent means the app's. */
  handoffAnswer?: string;
  /** What happens to the completed writes of a run that fails or is cancelled (see `CompensationPolicy`). */
  compensation: CompensationPolicy;
  /** What of the run the prompt keeps: large tool results as summary + handle, old turns summarised. */
  context?: ContextPolicy;
  /** Plan mode: the first model call returns a plan, approved once as a whole and then followed. */
  plan?: PlanOptions;
  /** The final answer's shape: asked for with `response_format` where the provider can, always validated. */
  output?: OutputSpec;
  /** `upgrade`: its runs follow the current app version at each step; absent (`pinned`): they keep the version they started with. */
  versioning?: Versioning;
  /** `ask`: a run about to exceed its token or cost budget parks with a `budget` approval instead of failing. */
  onBudget?: OnBudget;
  /** What the agent does, as a caller's model reads it in the `call_<agent>` / `transfer_to_<agent>` tool. */
  description?: string;
  /** Sub-agents it may call, each offered as the tool `call_<agent>` (a child run). */
  agents?: readonly string[];
  /** Agents it may hand the run to, each offered as the tool `transfer_to_<agent>` (the same run goes on). */
  handoffs?: readonly string[];
  /** Its memory in the store (`memory_get`, `memory_search`, `memory_put`). */
  memory?: MemoryOptions;
}

/**
 * `auto`: undo them at once; `ask` (default): an approver approves the plan of undo
 * actions first; `never`: leave them (an approver can still ask for an undo).
 * `ask` is the default because an undo is itself a real-world write: declaring
 * `compensate` on a tool says how, a person still says whether.
 */
export const compensationPolicySchema = z.enum(['auto', 'ask', 'never']);
export type CompensationPolicy = z.infer<typeof compensationPolicySchema>;

/** What a run out of its token or cost budget does: fail, or ask a person for more. */
export type OnBudget = 'fail' | 'ask';

export interface AgentDefinition {
  name: string;
  instructions: string;
  tools: readonly string[];
  model?: string;
  fallbackModels?: readonly string[];
  limits?: Partial<Limits>;
  maxCompletionTokens?: number;
  handoffAnswer?: string;
  compensation?: CompensationPolicy;
  context?: z.input<typeof contextPolicySchema>;
  /** `plan`: plan, then execute (see `plan`); `react` (default): decide step by step. */
  mode?: 'react' | 'plan';
  /** Bounds of a plan-mode agent's plan (default 2 to 6 steps). */
  plan?: z.input<typeof planOptionsSchema>;
  /** A zod schema the final answer must match (JSON); the run view carries the parsed value as `output`. */
  output?: z.ZodType;
  /** `pinned` (default): a run stays on the app version it started with; `upgrade`: it moves to the current one at its next step. */
  versioning?: Versioning;
  /**
   * `fail` (default): a run out of token or cost budget fails `token_budget` / `cost_budget`;
   * `ask`: it parks with a `budget` approval proposing more, and goes on if a person grants it.
   */
  onBudget?: OnBudget;
  /** What the agent does, for the models of the agents that call it or hand off to it. */
  description?: string;
  /** Sub-agents it may call: each becomes the tool `call_<agent>` with `{input}`, run as a child run. */
  agents?: readonly string[];
  /** Agents it may hand the run to: each becomes the tool `transfer_to_<agent>` with `{reason?}`. */
  handoffs?: readonly string[];
  /**
   * Memory the agent keeps across runs in the store (the LangGraph SDK's `client.store`), in
   * the run's user's space under `namespace`: the tools `memory_get`, `memory_search` (reads)
   * and `memory_put` (a write, asked for approval when `approval` says so).
   */
  memory?: MemoryOptions;
}

/** An agent's memory: where its items live, and the approval policy of its writes. */
export interface MemoryOptions {
  namespace: readonly string[];
  approval?: (
    put: { key: string; value: Record<string, unknown> },
    ctx: Omit<ToolContext, 'signal' | 'logger'>,
  ) => Partial<ApprovalRequirement> | null;
}

/** The tools an agent with `memory` gets (Rein's own names). */
export const MEMORY_TOOLS = ['memory_get', 'memory_search', 'memory_put'] as const;

const DEFAULT_LIMITS: Limits = { maxSteps: 10, maxTokens: 50_000, timeoutMs: 300_000 };
const AGENT_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

const definitionSchema = z.object({
  name: z.string().regex(AGENT_NAME, 'lower-case letters, digits, "_" or "-", at most 64'),
  instructions: z.string().trim().min(1),
  tools: z.array(z.string().min(1)),
  model: z.string().min(1).optional(),
  fallbackModels: z.array(z.string().min(1)).optional(),
  limits: limitsSchema.partial().optional(),
  maxCompletionTokens: z.number().int().min(16).max(1_000_000).optional(),
  handoffAnswer: z.string().trim().min(1).optional(),
  compensation: compensationPolicySchema.optional(),
  context: contextPolicySchema.optional(),
  mode: z.enum(['react', 'plan']).optional(),
  plan: planOptionsSchema.optional(),
  output: z.custom<z.ZodType>((v) => v instanceof z.ZodType, 'must be a zod schema').optional(),
  versioning: versioningSchema.optional(),
  onBudget: z.enum(['fail', 'ask']).optional(),
  description: z.string().trim().min(1).max(1024).optional(),
  agents: z.array(z.string().regex(AGENT_NAME)).optional(),
  handoffs: z.array(z.string().regex(AGENT_NAME)).optional(),
  memory: z
    .object({
      namespace: z
        .array(
          z
            .string()
            .min(1)
            .max(128)
            .regex(/^[^.]*$/, 'no periods (the store separates labels with them)'),
        )
        .min(1)
        .max(8),
      approval: z.custom<MemoryOptions['approval']>((v) => typeof v === 'function').optional(),
    })
    .optional(),
});

/** An agent of an app: instructions, the tools it may call (by name), its model and limits. */
export function defineAgent(def: AgentDefinition): AgentProfile {
  const outputProblem = def?.output === undefined ? undefined : zodSchemaProblem(def.output);
  if (outputProblem) throw new ConfigError(`agent "${String(def.name)}": output ${outputProblem}`);
  const parsed = definitionSchema.safeParse(def);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new ConfigError(`agent "${String(def?.name)}": ${problems}`);
  }
  const a = parsed.data;
  if (!a.model && a.fallbackModels?.length) throw new ConfigError(`agent "${a.name}": fallbackModels needs a model`);
  if (a.plan && a.mode !== 'plan') throw new ConfigError(`agent "${a.name}": plan options need mode: 'plan'`);
  const duplicate = a.tools.find((t, i) => a.tools.indexOf(t) !== i);
  if (duplicate) throw new ConfigError(`agent "${a.name}": tool "${duplicate}" is listed twice`);
  for (const [field, names] of [
    ['agents', a.agents ?? []],
    ['handoffs', a.handoffs ?? []],
  ] as const) {
    if (names.includes(a.name)) throw new ConfigError(`agent "${a.name}": ${field} names the agent itself`);
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice) throw new ConfigError(`agent "${a.name}": ${field} lists "${twice}" twice`);
  }
  const ownMemory = a.tools.find((t) => (MEMORY_TOOLS as readonly string[]).includes(t));
  if (ownMemory && !a.memory) throw new ConfigError(`agent "${a.name}": ${ownMemory} is built in, and only for agents with memory`);
  if (a.tools.includes(READ_RESULT_TOOL) && !a.context)
    throw new ConfigError(`agent "${a.name}": ${READ_RESULT_TOOL} is built in, and only for agents with a context policy`);
  return {
    name: a.name,
    instructions: a.instructions,
    // A context policy brings the tool that reads summarised results back, allowed and unapproved.
    tools: [
      ...a.tools,
      ...(a.context && !a.tools.includes(READ_RESULT_TOOL) ? [READ_RESULT_TOOL] : []),
      // Memory brings its tools; memory_put is a write like any other.
      ...(a.memory ? MEMORY_TOOLS.filter((t) => !a.tools.includes(t)) : []),
    ],
    ...(a.model ? { models: [a.model, ...(a.fallbackModels ?? [])] } : {}),
    limits: { ...DEFAULT_LIMITS, ...a.limits },
    maxCompletionTokens: a.maxCompletionTokens ?? 1024,
    ...(a.handoffAnswer ? { handoffAnswer: a.handoffAnswer } : {}),
    compensation: a.compensation ?? 'ask',
    ...(a.context ? { context: a.context } : {}),
    ...(a.mode === 'plan' ? { plan: a.plan ?? planOptionsSchema.parse({}) } : {}),
    ...(a.output ? { output: outputSpec(a.name, a.output) } : {}),
    ...(a.versioning === 'upgrade' ? { versioning: a.versioning } : {}),
    ...(a.onBudget === 'ask' ? { onBudget: a.onBudget } : {}),
    ...(a.description ? { description: a.description } : {}),
    ...(a.agents?.length ? { agents: a.agents } : {}),
    ...(a.handoffs?.length ? { handoffs: a.handoffs } : {}),
    ...(a.memory ? { memory: a.memory as MemoryOptions } : {}),
  };
}

/** Core's neutral hand-off; an app or agent with a domain says it in its own words. */
export const HANDOFF_ANSWER = 'Sorry, I could not finish this request automatically. It has been handed to a person, who will follow up.';

export class AgentCatalog {
  private readonly profiles: Map<string, AgentProfile>;

  constructor(
    profiles: readonly AgentProfile[],
    readonly defaultAgent: string,
    private readonly defaultHandoff: string = HANDOFF_ANSWER,
  ) {
    this.profiles = new Map(profiles.map((p) => [p.name, p]));
  }

  /** What a run of `agent` answers when it stops without an answer of its own. */
  handoffAnswer(agent: string): string {
    return this.profiles.get(agent)?.handoffAnswer ?? this.defaultHandoff;
  }

  /** The app's agents, in the order it defines them. */
  names(): string[] {
    return [...this.profiles.keys()];
  }

  /** Whether the app defines the agent. */
  has(name: string): boolean {
    return this.profiles.has(name);
  }

  get(name: string): AgentProfile {
    const profile = this.profiles.get(name);
    if (!profile) {
      throw new InvalidRequestError(`unknown agent "${name}"; available: ${[...this.profiles.keys()].join(', ')}`, 'unknown_agent');
    }
    return profile;
  }
}
