/**
 * An approval's id names its place: `<runId>.<step>.<index of the call in the step>`.
 * Deterministic, so a retried step finds the approval it already asked for, and the
 * approver reaches the run from the id alone. Built and read only here.
 */
export const approvalId = (runId: string, step: number, index: number) => `${runId}.${step}.${index}`;

const APPROVAL_ID = /^([0-9a-f-]{36})\.(\d+)\.(\d+)$/;

/** The run an approval id belongs to, or `null` when the text is not an approval id. */
export function runOfApproval(id: string): string | null {
  return APPROVAL_ID.exec(id)?.[1] ?? null;
}
