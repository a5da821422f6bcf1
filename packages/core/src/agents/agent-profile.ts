import { InvalidRequestError } from '../errors.js';
import type { Limits } from '../schemas/run.js';

/** An agent: its role and behaviour boundary (soft), its tool allow-list and limits (hard). */
export interface AgentProfile {
  name: string;
  systemPrompt: string;
  /** Tool names this agent may call; anything else the model asks for is refused. */
  tools: readonly string[];
  defaultLimits: Limits;
  /** Upper bound of one completion, further capped by what the token budget has left. */
  maxCompletionTokens: number;
}

export class AgentCatalog {
  private readonly profiles: Map<string, AgentProfile>;

  constructor(
    profiles: AgentProfile[],
    readonly defaultAgent: string,
  ) {
    this.profiles = new Map(profiles.map((p) => [p.name, p]));
  }

  get(name: string): AgentProfile {
    const profile = this.profiles.get(name);
    if (!profile) {
      throw new InvalidRequestError(`unknown agent "${name}"; available: ${[...this.profiles.keys()].join(', ')}`, 'unknown_agent');
    }
    return profile;
  }
}
