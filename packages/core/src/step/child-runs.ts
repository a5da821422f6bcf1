import { type RunRecord, TERMINAL_STATUSES, type ToolCallRecord } from '@rein/contract';
import type { AgentCatalog } from '@rein/define/internal';
import { type Enqueue, jobRoute } from '../adapters/queue/job-catalog.js';
import { activeTraceparent } from '../adapters/tracing/trace-context.js';
import type { EffectLedger } from '../policy/ports/effect-ledger.js';
import type { RunRepository } from '../policy/ports/run-repository.js';
import { runEvent } from '../policy/run/run-event.js';
import type { PlannedCall } from '../policy/step/call-plan.js';
import { boundedByTree, childLimits, childObservation, childRecord, treeTotal } from '../policy/step/sub-agents.js';
import type { ToolCallResult } from './tool-executor.js';

export interface ChildRunsDeps {
  store: RunRepository;
  ledger: EffectLedger;
  agents: AgentCatalog;
  enqueue: Enqueue;
  now?: () => number;
}

type SpawnCall = Extract<PlannedCall, { kind: 'spawn' }>;

/**
 * Carries out a `call_<agent>` call: the child run is started once, through the effect
 * ledger like any write (its id is derived from the parent's run, step and call, so an
 * attempt after a crash finds the same child), and no child starts once the parent has
 * finished. The call's record is the child's end as an observation, or `awaiting_child`
 * while it runs: then the parent's step waits (status `waiting`) and is resumed by the
 * child's end (engine/run-tree.ts).
 */
export function createChildRuns(deps: ChildRunsDeps) {
  const now = deps.now ?? Date.now;

  /** The parent with its limits lowered to what its tree (and each ancestor's) has left: what its children share. */
  async function bounded(parent: RunRecord): Promise<RunRecord> {
    const nodes = await deps.store.treeNodes([...(parent.ancestors ?? []), parent.id]);
    return boundedByTree(
      parent,
      nodes.flatMap((n) => {
        const run = n.id === parent.id ? parent : n.run;
        return run ? [{ limits: run.limits, spent: treeTotal(run, n.descendants) }] : [];
      }),
    );
  }

  /** `siblings`: how many children the parent's step starts together (they split what the tree has left). */
  return async function spawn(parent: RunRecord, p: SpawnCall, siblings = 1): Promise<ToolCallResult> {
    const record = (outcome: ToolCallRecord['outcome'], observation: string): ToolCallResult => ({
      record: { id: p.call.id, name: p.call.name, arguments: p.args, outcome, observation, durationMs: 0, ...p.extra },
    });
    const key = p.ctx.idempotencyKey;
    const prior = await deps.ledger.recordIntent(parent.id, key, p.call.name);
    if (prior === 'finished') return record('rejected', `Not started: the run finished before ${p.call.name} started.`);
    if (prior?.state !== 'done') {
      const traceparent = activeTraceparent();
      const child = childRecord(
        parent,
        {
          id: p.childId,
          agent: p.agent,
          input: p.input,
          limits: childLimits(await bounded(parent), deps.agents.get(p.agent).limits, now(), siblings),
          ...(deps.agents.get(p.agent).versioning === 'upgrade' ? { versioning: 'upgrade' as const } : {}),
          ...(traceparent ? { traceparent } : {}),
        },
        now(),
      );
      await deps.store.createChild(
        child,
        { id: child.id, agent: child.agent, step: parent.step, toolCallId: p.call.id },
        runEvent('run.queued', child.id, 0, { agent: child.agent, traceId: child.traceId, parentRunId: parent.id }),
      );
      // The first step's job is enqueued before the ledger says done: a crash in between starts it again (a no-op if it exists).
      await deps.enqueue(
        'step',
        { runId: child.id, step: 0, tenantId: child.tenantId, ...(child.traceparent ? { traceparent: child.traceparent } : {}) },
        { route: jobRoute(child) },
      );
      await deps.ledger.recordResult(parent.id, key, p.call.name, true, child.id);
    }
    const found = await deps.store.get(p.childId);
    // A run by that id that is not this call's child (an id collision): never read as the child, never waited for.
    if (found && (found.parentRunId !== parent.id || found.tenantId !== parent.tenantId)) {
      return record('error', JSON.stringify({ error: 'subagent_failed', reason: 'id_collision' }));
    }
    const child = found;
    if (child && !TERMINAL_STATUSES.includes(child.status)) {
      return record('awaiting_child', `Waiting for the "${p.agent}" agent (run ${p.childId}).`);
    }
    const ended = childObservation(child);
    return record(ended.outcome, ended.observation);
  };
}

export type SpawnChild = ReturnType<typeof createChildRuns>;
