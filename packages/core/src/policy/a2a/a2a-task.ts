import type { RunView } from '@rein/contract';

/**
 * A2A 1.0 as it travels (the protocol's JSON mapping: camelCase fields, enum names as
 * strings, a part is one of `text` / `data` / `url` / `raw`). Only what Rein sends is typed.
 */
export type A2aTaskState =
  | 'TASK_STATE_SUBMITTED'
  | 'TASK_STATE_WORKING'
  | 'TASK_STATE_INPUT_REQUIRED'
  | 'TASK_STATE_COMPLETED'
  | 'TASK_STATE_FAILED'
  | 'TASK_STATE_CANCELED'
  | 'TASK_STATE_REJECTED';

export type A2aPart = { text: string; mediaType?: string } | { data: unknown; mediaType?: string };

export interface A2aMessage {
  messageId: string;
  contextId: string;
  taskId: string;
  role: 'ROLE_AGENT' | 'ROLE_USER';
  parts: A2aPart[];
}

export interface A2aArtifact {
  artifactId: string;
  name: string;
  parts: A2aPart[];
}

export interface A2aTaskStatus {
  state: A2aTaskState;
  message?: A2aMessage;
  timestamp: string;
}

export interface A2aTask {
  id: string;
  contextId: string;
  status: A2aTaskStatus;
  artifacts: A2aArtifact[];
  history: A2aMessage[];
  metadata: { rein: { runId: string; status: RunView['status']; reason?: string } };
}

/** The states after which a task never changes. */
export const A2A_TERMINAL: readonly A2aTaskState[] = [
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
];

/** Where a blocking send answers and a stream ends: terminal, or waiting for someone's input. */
export const a2aSettled = (state: A2aTaskState) => state === 'TASK_STATE_INPUT_REQUIRED' || A2A_TERMINAL.includes(state);

/**
 * The A2A state of a run: parked for approval is input the caller (or an approver) must
 * give — until its last approval is decided and it waits only for its resume; refused
 * input is `rejected`.
 */
export function a2aState(run: Pick<RunView, 'status' | 'reason' | 'pendingApprovals'>): A2aTaskState {
  switch (run.status) {
    case 'queued':
      return 'TASK_STATE_SUBMITTED';
    case 'running':
    case 'waiting':
      return 'TASK_STATE_WORKING';
    case 'pending_approval':
      return run.pendingApprovals.some((a) => a.status === 'pending') ? 'TASK_STATE_INPUT_REQUIRED' : 'TASK_STATE_WORKING';
    case 'succeeded':
      return 'TASK_STATE_COMPLETED';
    case 'cancelled':
      return 'TASK_STATE_CANCELED';
    case 'failed':
      return run.reason === 'input_rejected' ? 'TASK_STATE_REJECTED' : 'TASK_STATE_FAILED';
  }
}

/** The context of a run's task: its session (a run started elsewhere without one is a context of its own). */
export const a2aContextId = (run: Pick<RunView, 'id' | 'sessionId'>) => run.sessionId ?? run.id;

/** The data part a caller answers an `input-required` task with, one per approval it decides. */
export interface A2aDecision {
  approvalId: string;
  decision: 'approve' | 'reject';
  reason?: string;
  arguments?: Record<string, unknown>;
}

/**
 * The agent's status message: for `input-required`, each pending approval's summary and
 * id in words and as data (what a caller needs to answer it); for a failure, Rein's reason.
 */
function statusMessage(run: RunView, state: A2aTaskState): A2aMessage | undefined {
  const message = (parts: A2aPart[]): A2aMessage => ({
    messageId: `${run.id}-${state.toLowerCase()}-${run.step}`,
    contextId: a2aContextId(run),
    taskId: run.id,
    role: 'ROLE_AGENT',
    parts,
  });
  if (state === 'TASK_STATE_INPUT_REQUIRED') {
    const approvals = run.pendingApprovals
      .filter((a) => a.status === 'pending')
      .map((a) => ({
        approvalId: a.id,
        toolName: a.toolName,
        summary: a.summary,
        arguments: a.approvedArguments ?? a.arguments,
        risk: a.risk,
        requiredRole: a.requiredRole,
        deciders: a.deciders,
        expiresAt: a.expiresAt,
      }));
    const lines = approvals.map((a) => `Approval ${a.approvalId} (${a.requiredRole}): ${a.summary}`);
    return message([{ text: `Waiting for approval.\n${lines.join('\n')}` }, { data: { approvals }, mediaType: 'application/json' }]);
  }
  if (state === 'TASK_STATE_FAILED' || state === 'TASK_STATE_REJECTED' || state === 'TASK_STATE_CANCELED') {
    const reason = run.reason ?? run.status;
    return message([{ text: run.finalAnswer ? `${reason}: ${run.finalAnswer}` : reason }, { data: { reason } }]);
  }
  return undefined;
}

/** The final answer as an artifact: the text, and the agent's typed `output` beside it when it declares one. */
export function a2aAnswer(run: RunView): A2aArtifact | undefined {
  if (run.status !== 'succeeded' || run.finalAnswer === undefined) return undefined;
  const parts: A2aPart[] = [{ text: run.finalAnswer }];
  if (run.output !== undefined) parts.push({ data: run.output, mediaType: 'application/json' });
  return { artifactId: `${run.id}-answer`, name: 'answer', parts };
}

/** A run as an A2A task: its id is the run's, its context the session's. */
export function a2aTask(run: RunView): A2aTask {
  const state = a2aState(run);
  const message = statusMessage(run, state);
  const answer = a2aAnswer(run);
  return {
    id: run.id,
    contextId: a2aContextId(run),
    status: { state, ...(message ? { message } : {}), timestamp: run.updatedAt },
    artifacts: answer ? [answer] : [],
    history: [],
    metadata: { rein: { runId: run.id, status: run.status, ...(run.reason ? { reason: run.reason } : {}) } },
  };
}
