import type { ChatMessage, StepRecord } from '@rein/contract';

/**
 * The turns of a run: its committed step records and its conversation. Written by the
 * run's compare-and-set (RunRepository.compareAndSet) with the run document; read here.
 */
export interface TurnJournal {
  /** One committed step record (a read tool's earlier result is answered from it). */
  stepRecord(runId: string, index: number): Promise<StepRecord | null>;
  /** Every step record, by index. */
  steps(runId: string): Promise<StepRecord[]>;
  messages(runId: string): Promise<ChatMessage[]>;
  /**
   * Records a step whose calls ran while its run was being finished (its commit came too
   * late), with a `step.finished` event; nothing if the run is live or the step has a record.
   */
  recordAfterFinish(runId: string, step: StepRecord): Promise<boolean>;
}
