import type { Approval, RunRecord } from '@rein/contract';
import type { ApprovalRequirement, Tool } from '@rein/define/internal';
import { hashArguments } from '../app/argument-hash.js';
import { toolDigest } from '../app/tool-digest.js';
import type { EscalationDefaults } from './escalation.js';
import { governanceOf } from './governance.js';

export interface ApprovalRequest {
  run: RunRecord;
  /** Its id (approval-id.ts) and the call it gates. */
  id: string;
  toolCallId: string;
  tool: Tool;
  /** What runs if approved as proposed. */
  args: unknown;
  requirement: ApprovalRequirement;
  kind?: 'input';
  now: number;
  /** How long it stays decidable unless its tool says otherwise. */
  approvalTtlMs: number;
  escalation?: EscalationDefaults;
}

/** A new pending approval of one call of the run's current step, bound to the arguments and the tool's policy. */
export function approvalRequest(r: ApprovalRequest): Approval {
  const { run, tool } = r;
  return {
    schemaVersion: 1,
    id: r.id,
    ...(r.kind ? { kind: r.kind } : {}),
    runId: run.id,
    ...(run.parentRunId ? { parentRunId: run.parentRunId, rootRunId: run.rootRunId ?? run.parentRunId } : {}),
    step: run.step,
    toolCallId: r.toolCallId,
    tenantId: run.tenantId,
    requestedBy: run.userId,
    toolName: tool.name,
    arguments: r.args,
    argsHash: hashArguments(r.args),
    policyVersion: tool.policyVersion ?? 1,
    toolDigest: toolDigest(tool),
    ...governanceOf(r.requirement, r.escalation ?? {}),
    status: 'pending',
    createdAt: new Date(r.now).toISOString(),
    expiresAt: new Date(r.now + (tool.approvalTtlMs ?? r.approvalTtlMs)).toISOString(),
  };
}
