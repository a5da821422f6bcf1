import { z } from 'zod';
import { SCHEMA_VERSION } from './run.js';

/** One undo action of a compensation plan: the completed write it undoes, and where it got to. */
export const compensationStepSchema = z.object({
  /** The run whose write it is, when a descendant's (a sub-agent run of the tree); absent for the run's own. */
  runId: z.string().optional(),
  /** Step and tool call of the write being undone. */
  step: z.number().int().min(0),
  toolCallId: z.string(),
  /** The write tool that ran, and the tool that undoes it (itself for `compensate`, another for `compensateWith`). */
  tool: z.string(),
  undoTool: z.string(),
  arguments: z.unknown(),
  /** `done`: undone; `declined`: its round's approval was rejected or expired, so the write stands. */
  status: z.enum(['pending', 'done', 'failed', 'uncertain', 'declined']),
  observation: z.string().optional(),
  at: z.string().optional(),
  /** How often an approver asked for this undo again after it failed (each try has a ledger key of its own). */
  retry: z.number().int().min(1).optional(),
});
export type CompensationStep = z.infer<typeof compensationStepSchema>;

/**
 * A run's saga compensation. `pending`: waiting for the approval of the plan; `failed`
 * is the `compensation_failed` state a person must look at; `declined`: the plan was
 * rejected or expired. Steps are in the order they run: the reverse of the writes. A
 * write recorded after a round was planned (a call in flight when the run ended) starts
 * the next round; `steps` then holds every write of the run and its tree seen so far,
 * each with where its undo got to, the newest first.
 */
export const compensationSchema = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION),
  /** One more for each start: the first plan, a write recorded after it, an approver's request. */
  round: z.number().int().min(1),
  status: z.enum(['pending', 'running', 'done', 'failed', 'declined']),
  /** Why it started: the agent's policy on a failed or cancelled run, or an approver's request. */
  trigger: z.enum(['auto', 'ask', 'request']),
  requestedBy: z.string(),
  approvalId: z.string().optional(),
  code: z.literal('compensation_failed').optional(),
  steps: z.array(compensationStepSchema),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Compensation = z.infer<typeof compensationSchema>;
export type CompensationStatus = Compensation['status'];
