import type { ApprovalLoad, ApprovalLoadQuery, ListApprovalsQuery, Principal } from '@rein/contract';
import { type Approval, budgetRaiseSchema, planStepSchema, type RunRecord, TERMINAL_STATUSES } from '@rein/contract';
import { requirementOf, type Tool } from '@rein/define/internal';
import { z } from 'zod';
import type { RunArchive } from '../../adapters/postgres/run-archive.js';
import { expireJobSchema } from '../../adapters/queue/job-catalog.js';
import type { JobHandlers } from '../../adapters/queue/job-table.js';
import { approvalEvent, escalationEvent } from '../../adapters/redis/approval-feed.js';
import { decodeCursor, encodeCursor } from '../../adapters/redis/index-pager.js';
import { decisionSpan, REIN_ATTR } from '../../adapters/tracing/rein-spans.js';
import { hashArguments } from '../../policy/app/argument-hash.js';
import { toolJsonSchema } from '../../policy/app/tool-digest.js';
import { stricterOf } from '../../policy/approvals/approval-binding.js';
import { runOfApproval } from '../../policy/approvals/approval-id.js';
import { approvalLoad } from '../../policy/approvals/approval-load.js';
import { decisionRefusal, mayDecide, overseesTenant } from '../../policy/approvals/decision-rights.js';
import { type EscalationDefaults, escalated } from '../../policy/approvals/escalation.js';
import { type Tally, tallyApproval } from '../../policy/approvals/quorum.js';
import type { RunRepository } from '../../policy/ports/run-repository.js';
import { decideApprovals, retryOnStale } from '../../policy/run/run-transitions.js';
import { idempotencyKey } from '../../policy/step/call-identity.js';
import { editPlan, planHash } from '../../policy/step/plan.js';
import {
  ConflictError,
  ForbiddenError,
  GoneError,
  InvalidRequestError,
  NotFoundError,
  ReinError,
  StaleStepError,
} from '../../shared/errors.js';
import type { FollowUps, TransitionApplier } from '../../step/apply-transition.js';
import type { Receipts } from '../audit/receipts.js';
import { approvalView } from '../runs/run-service.js';

/** `argsHash`: decide only if the approval still binds these arguments (a link minted for them). */
export type Decision = ({ kind: 'approve'; comment?: string; arguments?: Record<string, unknown> } | { kind: 'reject'; reason: string }) & {
  argsHash?: string;
};

export interface ApprovalServiceDeps {
  store: RunRepository;
  /** Signs each decision of a batch as its own receipt (the single decision routes sign theirs). */
  receipts?: Receipts;
  /** Commits the decisions, counts them, announces them, resumes the step (and tells a finished run's saga). */
  applier: Pick<TransitionApplier, 'apply'>;
  tools: Map<string, Tool>;
  /** The app-wide escalation by role (REIN_APPROVAL_ESCALATION): the next link of an escalation chain. */
  escalation?: EscalationDefaults;
  /** The archive of finished runs: a listed approval whose run's keys are gone is read there. */
  archive?: Pick<RunArchive, 'approvalsById'>;
  /** REIN_APPROVAL_SLA_MS: the decision time the approval load is measured against. */
  slaMs: number;
  now?: () => number;
}

/** The most approvals one load reads (newest first); a busier window is answered `truncated`. */
export const LOAD_MAX_APPROVALS = 5000;

/** Approvals by id, Redis first, the rest from the tenant's archive. */
async function approvalsById(deps: ApprovalServiceDeps, tenantId: string, ids: string[]): Promise<Array<Approval | null>> {
  const hot = await deps.store.approvalsById(ids);
  const missing = ids.filter((_, i) => hot[i] === null);
  if (!deps.archive || missing.length === 0) return hot;
  const cold = new Map((await deps.archive.approvalsById(tenantId, missing)).map((a) => [a.id, a]));
  return hot.map((a, i) => a ?? cold.get(ids[i] as string) ?? null);
}

/** An approval the caller may see, with its run and the run's approvals; 404 otherwise. */
async function find(deps: ApprovalServiceDeps, principal: Principal, id: string) {
  const runId = runOfApproval(id);
  const run = runId ? await deps.store.get(runId) : null;
  const approvals = run ? await deps.store.approvals(run.id) : [];
  const approval = approvals.find((a) => a.id === id);
  // Another tenant's approval, or another user's for someone who does not oversee the tenant, is a 404 like a missing one.
  const visible = approval?.tenantId === principal.tenantId && (approval.requestedBy === principal.userId || overseesTenant(principal));
  if (!run || !approval || !visible) throw new NotFoundError(`approval ${id}`);
  return { run, approval, approvals };
}

/**
 * Commits approval transitions on a run (through the applier, which counts them); resumes
 * the step when none is left pending. `approvals`: the run's, as read with it.
 */
async function transition(
  deps: ApprovalServiceDeps,
  run: RunRecord,
  approvals: Approval[],
  changed: Approval[],
  at = (deps.now ?? Date.now)(),
): Promise<void> {
  const change = decideApprovals(run, changed, new Date(at).toISOString());
  const step = changed[0]?.step;
  const resumes = change.to.pendingApprovals.length === 0 && run.status === 'pending_approval' && step !== undefined;
  // Every approval of the step is decided: its expiry timers have nothing left to do.
  const instants = new Set(approvals.filter((a) => a.step === step).map((a) => Date.parse(a.expiresAt)));
  // An approval counted while it still needs more announces nothing; an escalation is announced and timed again.
  const escalated = changed.filter((a) => a.status === 'pending' && a.escalatedAt === change.to.updatedAt);
  const followUps: FollowUps = {
    feed: [...escalated.map(escalationEvent), ...changed.filter((a) => a.status !== 'pending').map((a) => approvalEvent(a, true))],
    ...(escalated.length ? { expiry: escalated } : {}),
    // The resume continues the run's trace, not the approver's request.
    ...(resumes ? { jobs: [{ name: 'resume', payload: { runId: run.id, step, traceparent: run.traceparent } }] } : {}),
    ...(resumes ? { cancelExpiry: [...instants].map((at) => ({ runId: run.id, step, at })) } : {}),
  };
  await deps.applier.apply(run, { kind: 'decide', change, followUps });
}

/** The trusted context an approval policy judges an edit with: the run's identity, the call's key. */
const policyContext = (run: RunRecord, approval: Approval) => ({
  tenantId: run.tenantId,
  userId: run.userId,
  roles: run.roles,
  runId: run.id,
  agent: run.agent,
  step: approval.step,
  toolCallId: approval.toolCallId,
  idempotencyKey: idempotencyKey(run.id, approval.step, approval.toolCallId),
});

/** A plan's edits (`{"<step>": args}`): each step re-policed by its tool, the plan never less strict. */
function applyPlanEdit(
  tools: Map<string, Tool>,
  principal: Principal,
  run: RunRecord,
  approval: Approval,
  edits: Record<string, unknown>,
): Approval {
  const { steps } = z.object({ steps: z.array(planStepSchema) }).parse(approval.approvedArguments ?? approval.arguments);
  const ctx = policyContext(run, approval);
  const edited = editPlan(steps, edits, approval, tools, ctx);
  const argsHash = planHash(edited.steps);
  if (argsHash === approval.argsHash) return approval; // no real change
  return { ...approval, ...edited.requirement, approvedArguments: { steps: edited.steps }, editedBy: principal.userId, argsHash };
}

/**
 * An edit no policy judges again (its requirement stays): a budget approval's other amounts
 * of the same raise, or an `input` approval's answer (its summary is the question, not a call to judge).
 */
function applyUnjudgedEdit(
  schema: z.ZodType,
  mismatch: string,
  principal: Principal,
  approval: Approval,
  edited: Record<string, unknown>,
): Approval {
  const parsed = schema.safeParse(edited);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new InvalidRequestError(`${mismatch}: ${issues}`, 'invalid_arguments');
  }
  const argsHash = hashArguments(parsed.data);
  if (argsHash === approval.argsHash) return approval; // no real change
  return { ...approval, approvedArguments: parsed.data, editedBy: principal.userId, argsHash };
}

/** Whether an `input` approval holds an answer its tool takes (as proposed, it holds none). */
const answers = (tools: Map<string, Tool>, approval: Approval): boolean =>
  tools.get(approval.toolName)?.parameters.safeParse(approval.approvedArguments ?? approval.arguments).success === true;

/** Approve with edits: validated by the tool's schema, judged again, never less strict. */
function applyEdit(
  tools: Map<string, Tool>,
  principal: Principal,
  run: RunRecord,
  approval: Approval,
  edited: Record<string, unknown>,
): Approval {
  if (approval.kind === 'plan') return applyPlanEdit(tools, principal, run, approval, edited);
  if (approval.kind === 'budget')
    return applyUnjudgedEdit(budgetRaiseSchema, 'edited amounts do not match a budget raise', principal, approval, edited);
  const tool = tools.get(approval.toolName);
  if (!tool) throw new InvalidRequestError(`tool ${approval.toolName} is not available for edits`, 'invalid_arguments');
  if (approval.kind === 'input')
    return applyUnjudgedEdit(tool.parameters, `the answer does not match ${tool.name}`, principal, approval, edited);
  const parsed = tool.parameters.safeParse(edited);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new InvalidRequestError(`edited arguments do not match ${tool.name}: ${issues}`, 'invalid_arguments');
  }
  const argsHash = hashArguments(parsed.data);
  if (argsHash === approval.argsHash) return approval; // no real change
  const ctx = policyContext(run, approval);
  const requirement = stricterOf(approval, requirementOf(tool, parsed.data, ctx));
  return { ...approval, ...requirement, approvedArguments: parsed.data, editedBy: principal.userId, argsHash };
}

/** Reading approvals: the tenant's list (triage filters), one approval, the approval load. */
function approvalReads(deps: ApprovalServiceDeps) {
  const now = deps.now ?? Date.now;
  return {
    /**
     * The tenant's approvals, newest first, from the per-status index. Someone who does
     * not oversee the tenant sees only the ones their own runs asked for; their page may
     * come back short with a cursor to go on.
     */
    async list(principal: Principal, q: ListApprovalsQuery) {
      const { ids, next } = await deps.store.pageApprovals(principal.tenantId, q.status, {
        limit: q.limit,
        cursor: q.cursor ? decodeCursor(q.cursor) : undefined,
      });
      const found = (await approvalsById(deps, principal.tenantId, ids)).filter(
        (a): a is Approval =>
          a !== null &&
          (!q.status || a.status === q.status) &&
          (overseesTenant(principal) || a.requestedBy === principal.userId) &&
          matchesTriage(a, q),
      );
      // The agent is the run's: read only when asked for.
      const agents = q.agent ? await deps.store.getMany([...new Set(found.map((a) => a.runId))]) : [];
      const approvals = q.agent ? found.filter((a) => agents.find((r) => r?.id === a.runId)?.agent === q.agent) : found;
      return { approvals: approvals.map(approvalView), ...(next ? { nextCursor: encodeCursor(next) } : {}) };
    },

    async get(principal: Principal, id: string) {
      return approvalView((await find(deps, principal, id)).approval);
    },

    /** The tenant's approval load over the last `hours` (approvers and up: it names who decided how much). */
    async load(principal: Principal, q: ApprovalLoadQuery): Promise<ApprovalLoad> {
      if (!overseesTenant(principal)) throw new ForbiddenError('approval load is readable by approvers and admins');
      const to = now();
      const from = to - q.hours * 3_600_000;
      const found: Approval[] = [];
      let cursor: Parameters<typeof deps.store.pageApprovals>[2]['cursor'];
      // Newest first, a page at a time, until the window or the cap ends.
      do {
        const page = await deps.store.pageApprovals(principal.tenantId, undefined, { limit: 500, after: from - 1, before: to + 1, cursor });
        const approvals = await approvalsById(deps, principal.tenantId, page.ids);
        found.push(...approvals.filter((a): a is Approval => a !== null && a.tenantId === principal.tenantId));
        cursor = page.next;
      } while (cursor && found.length < LOAD_MAX_APPROVALS);
      const counted = found.slice(0, LOAD_MAX_APPROVALS);
      return {
        ...approvalLoad(counted, { from, to, slaMs: deps.slaMs }),
        ...(cursor || found.length > LOAD_MAX_APPROVALS ? { truncated: true as const } : {}),
      };
    },
  };
}

/** The approvals' timers: expiry and escalation, due whether or not anyone is looking. */
function approvalTimers(deps: ApprovalServiceDeps) {
  const now = deps.now ?? Date.now;
  return {
    /**
     * Turns the step's overdue approvals EXPIRED, whether or not anyone is looking;
     * the model is told on resume and the run goes on.
     */
    async expireDue(runId: string, step: number): Promise<number> {
      return retryOnStale(async () => {
        const run = await deps.store.get(runId);
        // A parked step's approvals, or a finished run's (the plan of its compensation).
        const decidable = run && (TERMINAL_STATUSES.includes(run.status) || (run.status === 'pending_approval' && run.step === step));
        if (!run || !decidable) return 0;
        const at = now();
        const approvals = await deps.store.approvals(runId);
        const due = approvals
          .filter((a) => a.step === step && a.status === 'pending' && Date.parse(a.expiresAt) <= at)
          .map((a): Approval => ({ ...a, status: 'expired', decidedAt: new Date(at).toISOString() }));
        if (due.length === 0) return 0;
        await transition(deps, run, approvals, due);
        return due.length;
      });
    },

    /** Escalates the step's approvals whose escalation is due (the `escalate` timer); announced and timed again. */
    async escalateDue(runId: string, step: number): Promise<number> {
      return retryOnStale(async () => {
        const run = await deps.store.get(runId);
        if (run?.status !== 'pending_approval' || run.step !== step) return 0;
        const at = now();
        const approvals = await deps.store.approvals(runId);
        const due = approvals
          .filter((a) => a.step === step)
          .map((a) => escalated(a, at, deps.escalation ?? {}))
          .filter((a): a is Approval => a !== null);
        if (due.length === 0) return 0;
        await transition(deps, run, approvals, due, at);
        return due.length;
      });
    },
  };
}

/**
 * List, decide and expire approvals. Every transition is a compare-and-set on the run
 * (applied by the applier), so it happens exactly once; the one that leaves the step
 * without pending approvals enqueues the step's resume.
 */
export function createApprovalService(deps: ApprovalServiceDeps) {
  const now = deps.now ?? Date.now;
  const service = {
    ...approvalReads(deps),

    /**
     * What approving with `edited` would ask for, deciding nothing: the approval judged
     * again as `decide` would judge it, whether the caller may then decide it (and if
     * not, why), and the JSON Schema of each tool it calls (a budget raise's own), for a form.
     */
    async preview(principal: Principal, id: string, edited?: Record<string, unknown>) {
      const { run, approval } = await find(deps, principal, id);
      const judged = edited ? applyEdit(deps.tools, principal, run, approval, edited) : approval;
      const withEdits = judged.editedBy !== undefined;
      const allowed = mayDecide(principal, judged, { withEdits });
      const names =
        approval.kind === 'plan'
          ? z
              .object({ steps: z.array(planStepSchema) })
              .parse(approval.arguments)
              .steps.map((s) => s.action)
          : [approval.toolName];
      // A budget raise is judged by no tool: its form is the raise's own schema.
      const parameters =
        approval.kind === 'budget'
          ? { [approval.toolName]: z.toJSONSchema(budgetRaiseSchema) as Record<string, unknown> }
          : Object.fromEntries(
              names.flatMap((name) => {
                const tool = deps.tools.get(name);
                return tool ? [[name, toolJsonSchema(tool)]] : [];
              }),
            );
      return {
        approval: approvalView(judged),
        mayDecide: allowed,
        ...(allowed ? {} : { refusal: decisionRefusal(judged, withEdits) }),
        parameters,
      };
    },

    /** Exactly one decision wins; the others get 409 (decided) or 410 (expired). */
    async decide(principal: Principal, id: string, decision: Decision) {
      // A lost commit means something else changed the run: re-read and re-check.
      return retryOnStale(async () => {
        const { run, approval, approvals } = await find(deps, principal, id);
        if (approval.status === 'expired') throw new GoneError('approval_expired', `approval ${id} expired at ${approval.expiresAt}`);
        if (approval.status !== 'pending') throw new ConflictError('approval_decided', `approval ${id} is already ${approval.status}`);
        if (decision.argsHash !== undefined && decision.argsHash !== approval.argsHash)
          throw new ConflictError('approval_decided', `the arguments of approval ${id} were edited since`);
        const at = now();
        if (at >= Date.parse(approval.expiresAt)) {
          await transition(deps, run, approvals, [{ ...approval, status: 'expired', decidedAt: new Date(at).toISOString() }]).catch(
            (err) => {
              if (!(err instanceof StaleStepError)) throw err;
            },
          );
          throw new GoneError('approval_expired', `approval ${id} expired at ${approval.expiresAt}`);
        }
        const judged =
          decision.kind === 'approve' && decision.arguments
            ? applyEdit(deps.tools, principal, run, approval, decision.arguments)
            : approval;
        const withEdits = judged.editedBy !== undefined;
        if (!mayDecide(principal, judged, { withEdits })) throw new ForbiddenError(decisionRefusal(judged, withEdits));
        if (decision.kind === 'approve' && approval.kind === 'input' && !answers(deps.tools, judged))
          throw new InvalidRequestError(`approval ${id} asks a question: approve it with the answer as its arguments`, 'invalid_arguments');
        const decidedAt = new Date(at).toISOString();
        const tally: Tally =
          decision.kind === 'approve'
            ? tallyApproval(approval, judged, {
                by: principal.userId,
                at: decidedAt,
                ...(decision.comment ? { comment: decision.comment } : {}),
              })
            : {
                kind: 'decided',
                approval: { ...judged, status: 'rejected', decidedBy: principal.userId, decidedAt, comment: decision.reason },
              };
        if (tally.kind === 'already_approved')
          throw new ConflictError('approval_already_approved', `${principal.userId} already approved ${id}; it needs someone else`);
        const decided = tally.approval;
        await decisionSpan(run, decided, principal.userId, async (span) => {
          span.setAttributes({ [REIN_ATTR.approvalDecision]: decided.status, [REIN_ATTR.approvalEdited]: withEdits });
          await transition(deps, run, approvals, [decided], at);
        });
        return approvalView(decided);
      });
    },

    /** `POST /v1/approvals/decide`: each id decided on its own, with its own rights; one result per id, in order. */
    async decideMany(principal: Principal, ids: readonly string[], verdict: 'approve' | 'reject', comment?: string) {
      const decision: Decision =
        verdict === 'approve' ? { kind: 'approve', ...(comment ? { comment } : {}) } : { kind: 'reject', reason: comment ?? '' };
      const results = [];
      for (const id of ids) {
        try {
          // Each decision its own receipt: the entry it wrote, signed (features/audit/receipts.ts).
          const decided = deps.receipts
            ? await deps.receipts.of(principal.tenantId, () => service.decide(principal, id, decision))
            : { value: await service.decide(principal, id, decision) };
          results.push({ id, ok: true, approval: decided.value, ...(decided.receipt ? { receipt: decided.receipt } : {}) });
        } catch (err) {
          if (!(err instanceof ReinError) || err.status >= 500) throw err;
          results.push({ id, ok: false, error: { code: err.code, message: err.message } });
        }
      }
      return { results };
    },

    ...approvalTimers(deps),
  };
  return service;
}

export type ApprovalService = ReturnType<typeof createApprovalService>;

/** The approvals' jobs: expiry and escalation when their instant comes. */
export const approvalJobs = (approvals: Pick<ApprovalService, 'expireDue' | 'escalateDue'>): JobHandlers<'expire' | 'escalate'> => ({
  expire: { schema: expireJobSchema, run: async ({ runId, step }) => `expired ${await approvals.expireDue(runId, step)}` },
  escalate: { schema: expireJobSchema, run: async ({ runId, step }) => `escalated ${await approvals.escalateDue(runId, step)}` },
});

/** The triage filters of `GET /v1/approvals` an approval itself can answer (the agent is its run's). */
const matchesTriage = (a: Approval, q: ListApprovalsQuery) =>
  (!q.risk || a.risk === q.risk) &&
  (!q.tool || a.toolName === q.tool) &&
  (!q.requestedBy || a.requestedBy === q.requestedBy) &&
  (!q.createdBefore || Date.parse(a.createdAt) < Date.parse(q.createdBefore));
