import type { CompensationStep, RunRecord } from '@rein/contract';
import { resultText, type Tool, thrownMessage, toolDependency } from '@rein/define/internal';
import type { CircuitBreakers } from '../../adapters/resilience/circuit-breakers.js';
import type { EffectLedger } from '../../policy/ports/effect-ledger.js';
import type { TurnJournal } from '../../policy/ports/turn-journal.js';
import { capToolResult } from '../../policy/step/tool-result-cap.js';
import { DEFAULT_MAX_TOOL_RESULT_BYTES } from '../../shared/config.js';
import { BreakerOpenError, BulkheadFullError, ToolOutcomeUnknownError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Metrics } from '../../shared/metrics.js';

/** The ledger key of an undo: its own, beside the write's `run:step:toolCallId` (I4); each retry of a failed undo has its own too. */
export const compensationKey = (runId: string, step: number, toolCallId: string, retry?: number) =>
  `${runId}:comp:${step}:${toolCallId}${retry ? `:retry-${retry}` : ''}`;

/** What one undo call needs: the tools, the ledger, the write's step record, its guards and limits. */
export interface UndoDeps {
  store: Pick<TurnJournal, 'stepRecord'>;
  ledger: EffectLedger;
  tools: Map<string, Tool>;
  metrics: Metrics;
  logger: Logger;
  toolTimeoutMs: number;
  maxResultBytes?: number;
  breakers?: CircuitBreakers;
}

/** Outcome of one undo call (`replayed`: its result came from the ledger). */
export type UndoOutcome = Pick<CompensationStep, 'status' | 'observation'> & { replayed?: boolean };

const parseResult = (observation: string): unknown => {
  try {
    return JSON.parse(observation);
  } catch {
    return observation;
  }
};

/** Runs one undo through the ledger, the tool's breaker and a timeout; throws to have the job retried. */
export async function runUndo(deps: UndoDeps, run: RunRecord, s: CompensationStep, lastAttempt: boolean): Promise<UndoOutcome> {
  const tool = deps.tools.get(s.tool);
  const undoTool = deps.tools.get(s.undoTool);
  if (!tool || !undoTool) return { status: 'failed', observation: `tool ${s.undoTool} is not available in this app` };
  // A descendant's write is undone in the descendant's name: its ledger, its step record, its run id.
  const owner = s.runId ?? run.id;
  const key = compensationKey(owner, s.step, s.toolCallId, s.retry);
  const prior = await deps.ledger.recordIntent(owner, key, s.undoTool, 'undo');
  if (prior?.state === 'done') return { status: prior.ok ? 'done' : 'failed', observation: prior.observation, replayed: true };
  if (prior?.state === 'intent' && !undoTool.honoursIdempotencyKey) {
    deps.metrics.effectsUncertain.inc({ tool: s.undoTool });
    return {
      status: 'uncertain',
      observation: 'a worker stopped while this undo ran, and it is not safe to run it again: check by hand',
    };
  }
  const step = await deps.store.stepRecord(owner, s.step);
  const result = parseResult(step?.toolCalls.find((c) => c.id === s.toolCallId)?.observation ?? 'null');
  const timeoutMs = undoTool.timeoutMs ?? deps.toolTimeoutMs;
  const signal = AbortSignal.timeout(timeoutMs);
  const ctx = {
    tenantId: run.tenantId,
    userId: run.userId,
    roles: run.roles,
    runId: owner,
    agent: run.agent,
    step: s.step,
    toolCallId: s.toolCallId,
    idempotencyKey: key,
    signal,
    logger: deps.logger.child({ runId: owner, step: s.step, tool: s.undoTool, compensation: true }),
  };
  const call = () =>
    tool.compensateWith
      ? undoTool.execute(tool.compensateWith.args(s.arguments, result), ctx)
      : (tool.compensate?.(s.arguments, result, ctx) ?? null);
  const invoke = () =>
    Promise.race([
      call(),
      new Promise<never>((_, reject) =>
        signal.addEventListener('abort', () => reject(new Error(`timed out after ${timeoutMs} ms`)), { once: true }),
      ),
    ]);
  try {
    const dependency = toolDependency(undoTool);
    const value = deps.breakers ? await deps.breakers.call(dependency, invoke) : await invoke();
    const observation = capToolResult(resultText(undoTool, value), deps.maxResultBytes ?? DEFAULT_MAX_TOOL_RESULT_BYTES);
    await deps.ledger.recordResult(owner, key, s.undoTool, true, observation, 'undo');
    return { status: 'done', observation };
  } catch (err) {
    if (err instanceof ToolOutcomeUnknownError) {
      // Like a worker stopped mid-undo: the intent stays, and a person checks.
      deps.metrics.effectsUncertain.inc({ tool: s.undoTool });
      return { status: 'uncertain', observation: `${err.message}: check by hand` };
    }
    const { code, retryable: toolSays } = (err ?? {}) as { code?: unknown; retryable?: unknown };
    const retryable = err instanceof BreakerOpenError || err instanceof BulkheadFullError || toolSays === true;
    if (retryable && !lastAttempt) {
      // It did not run, or its tool says running it again is safe: withdraw the intent and let BullMQ retry.
      await deps.ledger.clearIntent(owner, key);
      throw err;
    }
    const observation = JSON.stringify({ error: typeof code === 'string' ? code : 'tool_failed', message: thrownMessage(err) });
    await deps.ledger.recordResult(owner, key, s.undoTool, false, observation, 'undo');
    return { status: 'failed', observation };
  }
}
