import { riskSchema, tenantRoleSchema } from '@rein/contract';
import { z } from 'zod';
import { CALL_PREFIX } from './delegation.js';

/**
 * A remote A2A agent an app calls as the tool `call_<name>` `{input}`: a write on someone
 * else's system, so journaled, asked for approval (unless `approval: false`), budgeted and
 * cancelled with its run like any other write (core's features/remote-agents).
 */
export const remoteAgentSchema = z.strictObject({
  /** Where its Agent Card is: the agent's base URL (the card at `/.well-known/agent-card.json` under it) or the card's own URL. */
  url: z.url({ protocol: /^https?$/ }),
  /** Sent with every request to it (its credentials), and only to the origin of `url`. */
  headers: z.record(z.string(), z.string()).optional(),
  /** What the model reads about it; the card's description and skills are added once the card is read. */
  description: z.string().max(2_000).optional(),
  /**
   * Who must approve a call: `{risk?, requiredRole?}` (default: high risk, an `approver` decides),
   * or `false` for none. The input is what is approved: an approver's edit is what is sent.
   */
  approval: z
    .union([z.literal(false), z.strictObject({ risk: riskSchema.optional(), requiredRole: tenantRoleSchema.optional() })])
    .optional(),
  /** Longest a call waits for the remote task to finish (default 5 minutes); then the remote task is cancelled. */
  timeoutMs: z.number().int().positive().max(86_400_000).optional(),
  /**
   * What a remote task that asks for more input (A2A `input-required`) does to the call:
   * `observe` (default) ends the call with the question as its observation; `ask` parks the
   * run on an approval of kind `input` that shows the question, whose approver answers by
   * approving with edited arguments `{input}` (sent into the same remote task, which the
   * call then waits on again) or rejects (the remote task is cancelled). An agent asking
   * for authentication always ends the call: credentials never go through an approval.
   */
  onInputRequired: z.enum(['observe', 'ask']).optional(),
  /** If its card cannot be read at start, the worker starts anyway and calls fail until it can (default: the start fails). */
  optional: z.boolean().optional(),
});
export type RemoteAgentConfig = z.infer<typeof remoteAgentSchema>;

/** `call_<name>` must be a tool name the model API takes: letters, digits, "_" and "-", 64 at most. */
export const remoteAgentsSchema = z.record(
  z
    .string()
    .max(64 - CALL_PREFIX.length)
    .regex(/^[a-zA-Z0-9_-]+$/, 'letters, digits, "_" and "-" only (the tool is call_<name>)'),
  remoteAgentSchema,
);
export type RemoteAgents = z.infer<typeof remoteAgentsSchema>;

/** The tool an agent lists to call a remote agent. */
export const remoteAgentTool = (name: string) => `${CALL_PREFIX}${name}`;
