import type { Principal, RunView, SubmitRunBody } from '@rein/contract';
import { submitRunBodySchema } from '@rein/contract';
import { inputText } from '../../policy/langgraph/lg-shapes.js';
import { awaitsDecision } from '../../policy/run/run-settled.js';
import { ConflictError, InvalidRequestError, NotFoundError } from '../../shared/errors.js';
import type { Decision } from '../approvals/approval-service.js';
import { type LangGraphServiceDeps, NotServedError } from './lg-common.js';
import { REFUSED_RUN_FIELDS, type ResumeDecision, type RunCreateBody, resumeSchema, SERVED_STREAM_MODES } from './lg-schemas.js';
import type { ThreadReader } from './lg-thread-reader.js';

/** Fields and stream modes this door does not serve are refused by name, before anything starts. */
function refuseUnserved(body: RunCreateBody) {
  for (const field of REFUSED_RUN_FIELDS)
    if (body[field] !== undefined && body[field] !== null) throw new NotServedError(`"${field}"`, 'see docs/langgraph-sdk.md');
  const unknown = (body.stream_mode ?? []).filter((m) => !SERVED_STREAM_MODES.includes(m));
  if (unknown.length)
    throw new InvalidRequestError(
      `stream_mode ${unknown.join(', ')} is not served; use ${SERVED_STREAM_MODES.join(', ')}`,
      'stream_mode_unsupported',
    );
}

/** The approvals a resume decides: one decision for the only pending approval, or a map naming each. */
function decisionsOf(resume: unknown, pending: string[]): Array<[string, ResumeDecision]> {
  const parsed = resumeSchema.safeParse(resume);
  if (!parsed.success)
    throw new InvalidRequestError(
      'command.resume is {approved, arguments?, reason?} or a map of approval id → that decision',
      'invalid_resume',
    );
  const value = parsed.data;
  if (typeof value.approved === 'boolean') {
    if (pending.length !== 1)
      throw new InvalidRequestError(
        `${pending.length} approvals are pending (${pending.join(', ')}): resume with a map of approval id → decision`,
        'invalid_resume',
      );
    return [[pending[0] as string, value as ResumeDecision]];
  }
  return Object.entries(value as Record<string, ResumeDecision>);
}

const decision = (d: ResumeDecision): Decision =>
  d.approved
    ? { kind: 'approve', ...(d.arguments ? { arguments: d.arguments } : {}), ...(d.reason ? { comment: d.reason } : {}) }
    : { kind: 'reject', reason: d.reason ?? 'rejected' };

/** Starts runs on threads, and resumes a thread's parked run by deciding its approvals. */
export function createRunStarter(deps: LangGraphServiceDeps, reader: ThreadReader) {
  const { iso, newThread, sessionRuns } = reader;

  /** The id of the run's newest event now: a resume is followed from there. */
  async function lastEventId(principal: Principal, runId: string): Promise<string> {
    const entries = await (await deps.runs.events(principal, runId)).read('0');
    return entries[entries.length - 1]?.id ?? '0';
  }

  /**
   * `command: {resume}` decides the thread's pending approvals with the caller's rights
   * (the approval service re-polices edits and checks who may decide); `goto` and `update`
   * would steer the run past its rules and are refused.
   */
  async function resume(principal: Principal, threadId: string, command: NonNullable<RunCreateBody['command']>) {
    if (command.goto !== undefined || command.update !== undefined)
      throw new InvalidRequestError(
        'command.goto and command.update would move a run past its rules; Rein resumes a run only by deciding its approvals (command.resume)',
        'command_refused',
      );
    if (command.resume === undefined) throw new InvalidRequestError('command needs resume', 'invalid_resume');
    const runs = await sessionRuns(principal, threadId);
    const parked = [...runs].reverse().find(awaitsDecision);
    if (!parked) throw new ConflictError('nothing_to_resume', `thread ${threadId} has no run waiting for a decision`);
    const pending = parked.pendingApprovals.filter((a) => a.status === 'pending').map((a) => a.id);
    const decisions = decisionsOf(command.resume, pending);
    for (const [id] of decisions)
      if (!pending.includes(id)) throw new InvalidRequestError(`approval ${id} is not pending on thread ${threadId}`, 'invalid_resume');
    const from = await lastEventId(principal, parked.id);
    for (const [id, d] of decisions) await deps.approvals.decide(principal, id, decision(d));
    return { run: await deps.runs.get(principal, parked.id), from };
  }

  /**
   * Starts a run (or resumes the thread's parked one): what `runs.create`, `wait` and
   * `stream` share. `from`: the event id the run is followed from.
   */
  async function start(
    principal: Principal,
    threadId: string | null,
    body: RunCreateBody,
    idempotencyKey?: string,
  ): Promise<{ run: RunView; from: string }> {
    refuseUnserved(body);
    if (!deps.agents.has(body.assistant_id)) throw new NotFoundError(`assistant ${body.assistant_id}`);
    if (threadId !== null) {
      const exists = await deps.threads.get(principal.tenantId, principal.userId, threadId);
      if (!exists) {
        if (body.if_not_exists !== 'create') throw new NotFoundError(`thread ${threadId}`);
        await newThread(principal, threadId, {});
      }
    }
    if (body.command) {
      if (threadId === null) throw new InvalidRequestError('a resume command needs a thread', 'invalid_resume');
      if (body.input !== undefined && body.input !== null)
        throw new InvalidRequestError('send input or command, not both', 'invalid_resume');
      return resume(principal, threadId, body.command);
    }
    const text = inputText(body.input);
    if (text === undefined) throw new InvalidRequestError('input needs a human message ({messages: [{role: "user", content}]})');
    const submit: SubmitRunBody = submitRunBodySchema.parse({
      agent: body.assistant_id,
      input: text,
      ...(threadId !== null ? { sessionId: threadId } : {}),
      ...(body.metadata ? { metadata: body.metadata } : {}),
      ...(body.multitask_strategy ? { ifBusy: body.multitask_strategy } : {}),
    });
    const { run } = await deps.runs.submit(principal, submit, idempotencyKey);
    if (threadId !== null) {
      const record = await deps.threads.get(principal.tenantId, principal.userId, threadId);
      if (record) await deps.threads.put({ ...record, updatedAt: iso() });
    }
    return { run, from: '0' };
  }

  return start;
}
