import { type RunReason, type RunRecord, TERMINAL_STATUSES } from '@rein/contract';
import type { AgentProfile } from '@rein/define/internal';
import { budgetVerdict, raisedLimits } from '../policy/budget/budget-ask.js';
import type { StepRead } from '../policy/ports/run-repository.js';
import { raiseBudget, startRun } from '../policy/run/run-transitions.js';
import { askForBudget, exhaustedBudget, failRun } from '../policy/step/step-policy.js';
import { boundedByTree, treeTotal } from '../policy/step/sub-agents.js';
import type { Logger } from '../shared/logger.js';
import type { StepApply } from './apply-step.js';
import type { StepClock, StepOutcome, StepProcessorDeps } from './step-deps.js';

export type AdmitDeps = Pick<
  StepProcessorDeps,
  'store' | 'applier' | 'agents' | 'quotas' | 'inputFilter' | 'masker' | 'approvalTtlMs' | 'budgetFourEyes'
> & {
  clock: StepClock;
  apply: StepApply;
};

/** What the step found before its model call: ended here, or admitted with the limits its tree leaves it. */
export type Admission =
  | { kind: 'ended'; outcome: StepOutcome }
  | {
      kind: 'admitted';
      run: RunRecord;
      /** The run with the limits its tree leaves it: what the prompt must fit. */
      budget: RunRecord;
      /** Ends (or, `onBudget: 'ask'`, parks) the run when the next prompt does not fit. */
      outOfTokens(): Promise<StepOutcome>;
    };

/**
 * Before the model call: a run of a tree ends with its ancestors and spends within what
 * each has left; a run out of budget fails, or asks a person (a granted ask raises its
 * limits first); a first step's input passes the input filter; a queued run starts.
 * `quotaExhausted` was read with the step's read when the job named the tenant.
 */
export async function admit(
  deps: AdmitDeps,
  read: StepRead,
  run: RunRecord,
  profile: AgentProfile,
  quotaExhausted: boolean | undefined,
  log: Logger,
): Promise<Admission> {
  const { apply, clock } = deps;
  const mask = (text: string) => deps.masker.maskText(text);
  const ended = (outcome: StepOutcome): Admission => ({ kind: 'ended', outcome });
  const exhausted = quotaExhausted ?? (await deps.quotas.exhausted(run.tenantId));
  // A run of a tree is bounded by its ancestors too: it ends with them, and spends within what each has left.
  const ancestors = await deps.store.treeNodes(run.ancestors ?? []);
  const endedAncestor = ancestors.find((a) => !a.run || TERMINAL_STATUSES.includes(a.run.status));
  if (endedAncestor) return ended(await apply.cancelled(run, `run:${endedAncestor.id}`, log));
  const bounds = (r: RunRecord) => [
    ...(read.descendants.length ? [{ limits: r.limits, spent: treeTotal(r, read.descendants) }] : []),
    ...ancestors.map((a) => ({ limits: (a.run as RunRecord).limits, spent: treeTotal(a.run as RunRecord, a.descendants) })),
  ];
  // `onBudget: 'ask'`: a run out of budget asks a person; a granted ask raises its limits first.
  const verdictOf = (r: RunRecord, reason: RunReason | null) =>
    budgetVerdict(r, read.approvals, reason, profile.onBudget === 'ask', clock.now(), deps.approvalTtlMs, deps.budgetFourEyes);
  const budgetFacts = { now: clock.now(), quotaExhausted: exhausted, waitingOn: read.waitingOn };
  let budget = boundedByTree(run, bounds(run));
  let verdict = verdictOf(run, exhaustedBudget(budget, budgetFacts));
  if (verdict.kind === 'raise') {
    run = await deps.applier.apply(run, {
      kind: 'raise',
      change: raiseBudget(run, raisedLimits(run.limits, verdict.raise), clock.now()),
      followUps: {},
    });
    budget = boundedByTree(run, bounds(run));
    verdict = verdictOf(run, exhaustedBudget(budget, budgetFacts));
  }
  if (verdict.kind === 'ask') return ended(await apply.applied(run, askForBudget(run, verdict.approval, verdict.reason, clock.iso()), log));
  if (verdict.kind === 'fail') {
    const failed = failRun(run, verdict.reason, deps.agents.handoffAnswer(run.agent), mask, clock.iso(), {
      level: 'info',
      msg: 'budget exhausted before the model call',
      fields: { reason: verdict.reason },
    });
    return ended(await apply.applied(run, failed, log));
  }
  if (run.step === 0) {
    const filtered = deps.inputFilter(run.input);
    if (!filtered.ok) {
      const rejected = failRun(run, 'input_rejected', filtered.answer, mask, clock.iso(), {
        level: 'warn',
        msg: 'input rejected before any model call',
        fields: { rule: filtered.ruleId, kind: filtered.kind },
      });
      return ended(await apply.applied(run, rejected, log));
    }
  }
  if (run.status === 'queued') run = await deps.applier.apply(run, { kind: 'start', change: startRun(run, clock.iso()) });
  const started = run;
  return {
    kind: 'admitted',
    run: started,
    budget: { ...started, limits: budget.limits },
    async outOfTokens() {
      const short = verdictOf(started, 'token_budget');
      if (short.kind === 'ask') return apply.applied(started, askForBudget(started, short.approval, short.reason, clock.iso()), log);
      const failed = failRun(started, 'token_budget', deps.agents.handoffAnswer(started.agent), mask, clock.iso(), {
        level: 'info',
        msg: 'the next prompt does not fit the token budget; not calling the model',
      });
      return apply.applied(started, failed, log);
    },
  };
}
