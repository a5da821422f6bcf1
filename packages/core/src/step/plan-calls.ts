import type { Approval, Decision, RunRecord } from '@rein/contract';
import type { AgentProfile } from '@rein/define/internal';
import { distinctCallIds } from '../policy/step/call-identity.js';
import { type PlannedCall, planCalls } from '../policy/step/call-plan.js';
import { type EarlierCall, guardFromHistory } from '../policy/step/loop-guard.js';
import { isPlanning, planOutcome } from '../policy/step/plan.js';
import { afterDecision, afterPlan, type StepFacts, type Transition } from '../policy/step/step-policy.js';
import type { AgentViews } from './agent-views.js';
import type { StepClock, StepProcessorDeps } from './step-deps.js';

export type PlanCallsDeps = Pick<
  StepProcessorDeps,
  'store' | 'tools' | 'agents' | 'masker' | 'guards' | 'prices' | 'approvalTtlMs' | 'escalation' | 'delegation'
> & { views: AgentViews; clock: StepClock };

/** What the decision leads to: a conclusion without calls, or the calls to run (with the facts the conclusion will read). */
export type StepPlan =
  | { kind: 'concluded'; transition: Transition }
  | { kind: 'calls'; calls: PlannedCall[]; earlier: ReadonlyMap<number, EarlierCall>; facts: () => StepFacts };

/**
 * Reads the step's decision: an answer, a stop (deadline, repeated call), a plan to follow,
 * or tool calls, each planned (run it, refuse it, ask for approval, start a sub-agent).
 * `started`: when the step began, for its duration (the model call's is journaled).
 */
export async function planStep(
  deps: PlanCallsDeps,
  run: RunRecord,
  profile: AgentProfile,
  journaled: Decision,
  approvals: Approval[],
  started: number,
): Promise<StepPlan> {
  const { clock } = deps;
  // Every call of the step has an id of its own before anything runs (the ledger key, the approval, the result message).
  const decision = { ...journaled, toolCalls: distinctCallIds(journaled.toolCalls) };
  // A run's first step has no earlier steps; runs committed before the guard was kept on them rebuild it once from theirs.
  const guard = run.guard ?? guardFromHistory(run.step === 0 ? [] : (await deps.store.steps(run.id)).filter((s) => s.index < run.step));
  const facts = (): StepFacts => ({
    run,
    decision,
    guard,
    limits: deps.guards,
    prices: deps.prices,
    mask: (text: string) => deps.masker.maskText(text),
    handoff: deps.agents.handoffAnswer(run.agent),
    now: clock.now(),
    durationMs: performance.now() - started + decision.durationMs,
    ...(profile.context ? { context: profile.context } : {}),
    ...(profile.output ? { output: profile.output } : {}),
    limitsOf: (agent) => (deps.agents.has(agent) ? deps.agents.get(agent).limits : undefined),
  });
  if (profile.plan && isPlanning(profile.plan, run)) {
    const outcome = planOutcome({
      run,
      content: decision.content,
      tools: deps.views.callable(profile),
      options: profile.plan,
      approvals,
      now: clock.now(),
      approvalTtlMs: deps.approvalTtlMs,
    });
    return { kind: 'concluded', transition: afterPlan(facts(), outcome) };
  }
  const first = afterDecision(facts());
  if (first.kind !== 'tools') return { kind: 'concluded', transition: first };
  const calls = planCalls({
    run,
    profile,
    tools: deps.tools,
    calls: decision.toolCalls,
    approvals,
    now: clock.now(),
    approvalTtlMs: deps.approvalTtlMs,
    ...(deps.escalation ? { escalation: deps.escalation } : {}),
    ...(deps.delegation ? { delegation: deps.delegation } : {}),
  });
  return { kind: 'calls', calls, earlier: first.earlier, facts };
}
